"""The practice notebook's known-bad implementations, and correct ones arranged differently.

Each is an edit of one reference cell of ``source/ch07_practice`` (``cases.Edit``), so
no case is a second copy of the solution. ``PRACTICE_CASES`` must each lose the points
of the rows named in ``expected``; ``PRACTICE_ALTERNATIVES`` must get full marks.
"""

from __future__ import annotations

from .case_edits import Case, Edit, _case

UNIT = "ch07_practice"

PRACTICE_CASES: tuple[Case, ...] = (
    _case(
        "practice-per-attempt-key", UNIT,
        [Edit("grant_seat", "idempotency_key=key)", "idempotency_key=f\"{key}:{attempt}\")")],
        "grant_seat makes a new idempotency key for every attempt: a lost answer and its retry grant two seats.",
        ["practice-grant-at-most-once"],
        "A key names the request, not the attempt. With a key per attempt every retry is a new grant.",
    ),
    _case(
        "practice-retry-timeout-without-key", UNIT,
        [Edit("grant_seat", "idempotency_key=key)", "idempotency_key=None)")],
        "grant_seat retries a timeout with no key at all: the service cannot tell a retry from a new request.",
        ["practice-grant-at-most-once"],
        "A timeout means unknown. Retrying an unknown POST is safe only when the service can recognise the retry.",
    ),
    _case(
        "practice-409-is-a-failure", UNIT,
        [Edit("grant_seat", "answer.status == 409 or answer.status >= 500", "answer.status >= 500")],
        "grant_seat refuses on 409, although 409 says the first request with this key is still being processed.",
        ["practice-grant-error-classes"],
        "A 409 for your own key is \"not yet\": come back later with the same key, as after a 429.",
    ),
    _case(
        "practice-409-is-the-same-seat", UNIT,
        [Edit("grant_seat", "elif answer.status == 201:", "elif answer.status in (201, 409):")],
        "grant_seat takes a 409 for a seat granted earlier, and answers GRANTED with no seat while the first "
        "request is still being processed.",
        ["practice-grant-error-classes"],
        "In the Idempotency-Key draft a finished retry gets the stored 201; a 409 says the first request is not "
        "finished yet.",
    ),
    _case(
        "practice-retry-everything", UNIT,
        [Edit("grant_seat", "elif answer.status not in (408, 425, 429):", "elif False:")],
        "grant_seat retries 400 and 403 as if they were temporary.",
        ["practice-grant-error-classes"],
        "A request that can never work only gets slower with retries: tell the error classes apart.",
    ),
    _case(
        "practice-timeout-is-failure", UNIT,
        [Edit("grant_seat", "            in_doubt = True\n",
              "            return GrantResult(SeatOutcome.REFUSED, None, attempt)\n")],
        "grant_seat treats a timeout as a refusal and stops: the seat the service granted is never reported.",
        ["practice-grant-error-classes"],
        "No answer is not 'no'. A timeout after the service committed is a success nobody heard about.",
    ),
    _case(
        "practice-503-exhausted", UNIT,
        [Edit("grant_seat", "            in_doubt = True  # still being processed, or failed after it may have committed\n",
              "            pass\n")],
        "grant_seat answers EXHAUSTED after 409s or 503s, although the seat may have been granted behind them.",
        ["practice-grant-error-classes"],
        "EXHAUSTED says nothing was done. Only answers that prove it (429) allow it; after a 409 or a 5xx the "
        "honest answer is UNKNOWN.",
    ),
    _case(
        "practice-poison-left-in-flight", UNIT,
        [Edit("publish_one", "\"UPDATE outbox SET status = 'failed' WHERE status = 'publishing' AND attempts >= ?\"",
              "\"UPDATE outbox SET status = 'publishing' WHERE status = 'publishing' AND attempts >= ?\""),
         Edit("publish_one", "\"SELECT row_id, payload FROM outbox WHERE status IN ('pending', 'publishing') ORDER BY rowid LIMIT 1\"",
              "\"SELECT row_id, payload FROM outbox WHERE status IN ('pending', 'publishing') AND attempts < \" "
              "+ str(max_attempts) + \" ORDER BY rowid LIMIT 1\"")],
        "publish_one stops picking a row the worker dies on once its attempts are spent, but leaves it "
        "'publishing': it looks like a row in flight for ever, and no person is told.",
        ["practice-publish-no-head-of-line"],
        "A dead letter needs a state of its own; a row that only stops moving is not set aside.",
    ),
    _case(
        "practice-retry-permanent-refusal", UNIT,
        [Edit("publish_one", """    try:
        ack = broker.publish(row["row_id"], row["payload"])
    except BrokerRejected:  # refused for good: a retry would be refused again
        with store.transaction() as tx:
            tx.execute("UPDATE outbox SET status = 'failed' WHERE row_id = ? AND status = 'publishing'",
                       (row["row_id"],))
        raise
""", """    ack = broker.publish(row["row_id"], row["payload"])
""")],
        "publish_one lets a BrokerRejected leave the row 'publishing': a payload the broker refuses every time is "
        "sent again on every run until the attempt cap sets it aside, and each retry delays the rows behind it.",
        ["practice-publish-no-head-of-line"],
        "A refusal that will never change is not a transient failure: the cap is for what may yet succeed.",
    ),
    _case(
        "practice-500-refused-at-once", UNIT,
        [Edit("grant_seat", "elif answer.status == 409 or answer.status >= 500:",
              "elif answer.status == 409 or answer.status in (502, 503, 504):")],
        "grant_seat takes a 500 for a refusal and stops, although the server may have granted the seat before it "
        "failed: the seat is never reported, and the request is never retried.",
        ["practice-grant-error-classes"],
        "A 5xx is not a refusal: the request may have arrived. As in Unit B, it is unknown, and retried under the key.",
    ),
    _case(
        "practice-no-jitter", UNIT,
        [Edit("grant_seat", "sleep(rng.uniform(0, min(8.0, 0.1 * 2 ** attempt)))", "sleep(min(8.0, 0.1 * 2 ** attempt))")],
        "grant_seat backs off exponentially with no jitter: clients that failed together retry together.",
        ["practice-grant-backoff"],
        "The synchronized herd: without a random part, backoff moves the spike instead of spreading it.",
    ),
    _case(
        "practice-uncapped-retries", UNIT,
        [Edit("grant_seat", "for attempt in range(1, max_attempts + 1):", "for attempt in range(1, 8):")],
        "grant_seat ignores max_attempts and always tries seven times.",
        ["practice-grant-backoff"],
        "A retry budget belongs to the caller: a client that ignores it turns one outage into a longer one.",
    ),
    _case(
        "practice-status-before-publish", UNIT,
        [Edit("publish_one", "\"UPDATE outbox SET status = 'publishing', attempts",
              "\"UPDATE outbox SET status = 'sent', attempts")],
        "publish_one writes 'sent' before the broker has the message, as the buggy worker did.",
        ["practice-in-flight-resume", "practice-publish-sweep"],
        "Record what you know when you know it: 'sent' needs the broker's answer.",
    ),
    _case(
        "practice-publish-no-cap", UNIT,
        [Edit("publish_one", "        tx.execute(\"UPDATE outbox SET status = 'failed' WHERE status = 'publishing' "
                             "AND attempts >= ?\",\n                   (max_attempts,))\n", "")],
        "publish_one always takes the oldest unsent row, with no attempt cap: a row the worker dies on while "
        "publishing is picked again on every run, and every row behind it waits (a head-of-line block).",
        ["practice-publish-no-head-of-line"],
        "A retry needs a budget and a place to end: a dead letter a person can see, not the front of the queue.",
    ),
    _case(
        "practice-nothing-before-publish", UNIT,
        [Edit("publish_one", "\"UPDATE outbox SET status = 'publishing', attempts = attempts + 1 \"",
              "\"UPDATE outbox SET status = status \""),
         Edit("publish_one", "\"UPDATE outbox SET status = 'sent' WHERE row_id = ? AND status = 'publishing'\"",
              "\"UPDATE outbox SET status = 'sent' WHERE row_id = ?\"")],
        "publish_one commits nothing before the broker call: a row on its way looks exactly like a row never tried, "
        "and a row the worker dies on is tried on every run, as no attempt of it was ever counted.",
        ["practice-in-flight-resume", "practice-publish-no-head-of-line"],
        "What the next run can know is what was committed before the call. Write the row's new state first.",
    ),
    _case(
        "practice-publish-per-attempt-key", UNIT,
        [Edit("publish_one", "broker.publish(row[\"row_id\"], row[\"payload\"])",
              "broker.publish(f\"{row['row_id']}-{__import__('uuid').uuid4().hex[:8]}\", row[\"payload\"])")],
        "publish_one keys each publish with a fresh suffix: a resumed row is published twice.",
        ["practice-in-flight-resume", "practice-publish-sweep"],
        "The broker dedupes on the key. A key that changes per attempt turns a safe resume into a duplicate.",
    ),
    _case(
        "practice-hook-never-fires", UNIT,
        [Edit("kill_after_status_write", None, "return None")],
        "The kill hook does nothing: the worker runs cleanly and the table looks fine.",
        ["practice-kill-window"],
        "A clean run proves nothing about the gap. The evidence is the stranded row.",
    ),
    _case(
        "practice-hook-stops-at-any-commit", UNIT,
        [Edit("kill_after_status_write", None, "if kind == \"committed\":\n    stop_here()")],
        "The kill hook stops at the first commit it sees, before the worker ever ran.",
        ["practice-kill-window"],
        "The hook must place the kill inside the gap you are looking for, not just anywhere.",
    ),
    _case(
        "practice-reconcile-from-ledger", UNIT,
        [Edit("recover_cases", "        answer = service.lookup(key)\n", "        answer = None\n")],
        "recover_cases resends every stranded row without asking the service: a second request for work it had done.",
        ["practice-recover-from-receipt"],
        "The ledger says what you meant to do; only the service knows what it did. Ask it first.",
    ),
    _case(
        "practice-recover-trusts-any-receipt", UNIT,
        [Edit("recover_cases", "        if answer is not None and answer.digest != case_digest(row[\"proposal\"]):\n",
              "        if False:\n")],
        "recover_cases stores whatever receipt the service holds under the key, without comparing the proposal's "
        "digest: another proposal's action is recorded as this case's.",
        ["practice-recover-from-receipt"],
        "A key says where to look; the digest says whether what you found is yours.",
    ),
    _case(
        "practice-recover-drops-refusal", UNIT,
        [Edit("recover_cases", "                tx.execute(\"UPDATE ledger SET intent = 'refused', note = ? \"\n"
                               "                           \"WHERE case_id = ? AND intent = 'sent' AND receipt IS NULL\", "
                               "(answer.reason, row[\"case_id\"]))\n", "")],
        "recover_cases skips a refused case without a word: the ledger still says 'sent', and nobody learns that "
        "the service refused it.",
        ["practice-recover-from-receipt"],
        "A refusal is an outcome too: record it where a person will see it.",
    ),
    _case(
        "practice-trust-the-ledger", UNIT,
        [Edit("recover_cases", None,
              "with store.transaction() as tx:\n"
              "    return tx.execute(\"UPDATE ledger SET receipt = 'assumed' WHERE intent = 'sent' AND receipt IS NULL\").rowcount")],
        "recover_cases takes 'sent' in the ledger as proof: no receipt from the service, and a request that never "
        "arrived is never sent.",
        ["practice-recover-from-receipt", "practice-recover-sweep"],
        "An intent is not an outcome. A case whose request was lost would wait forever.",
    ),
)

_PUBLISH_RETURNING = '''with store.transaction() as tx:
    tx.execute("UPDATE outbox SET status = 'dead' WHERE status = 'in_flight' AND attempts >= ?", (max_attempts,))
    row = tx.execute(
        "UPDATE outbox SET status = 'in_flight', attempts = attempts + 1 WHERE row_id = "
        "(SELECT row_id FROM outbox WHERE status IN ('pending', 'in_flight') AND attempts < ? ORDER BY rowid LIMIT 1) "
        "RETURNING row_id, payload", (max_attempts,)
    ).fetchone()
if row is None:
    return None
try:
    ack = broker.publish(row[0], row[1])
except BrokerRejected as refused:
    with store.transaction() as tx:
        tx.execute("UPDATE outbox SET status = 'dead' WHERE row_id = ? AND status = 'in_flight'", (row[0],))
    raise refused
with store.transaction() as tx:
    tx.execute("UPDATE outbox SET status = 'sent' WHERE row_id = ? AND status = 'in_flight'", (row[0],))
return ack'''

_GRANT_EQUAL_JITTER = '''retry_later, done = {408, 409, 425, 429, 500, 502, 503, 504}, {201}
heard_nothing = False
for attempt in range(max_attempts):
    if attempt:
        ceiling = min(5.0, 0.2 * 2 ** (attempt - 1))
        sleep(ceiling / 2 + rng.random() * ceiling / 2)
    answer = service.post_grant(event.workspace_id, event.user_id, idempotency_key=event.request_id)
    if isinstance(answer, Answered) and answer.status in done:
        return GrantResult(SeatOutcome.GRANTED, answer.seat_id, attempt + 1)
    if isinstance(answer, Answered) and answer.status not in retry_later:
        return GrantResult(SeatOutcome.REFUSED, None, attempt + 1)
    heard_nothing = heard_nothing or isinstance(answer, NoAnswer) or answer.status == 409 or answer.status >= 500
return GrantResult(SeatOutcome.UNKNOWN if heard_nothing else SeatOutcome.EXHAUSTED, None, max_attempts)'''

_PUBLISH_STATE_MACHINE = '''with store.transaction() as tx:
    tx.execute_script("""
        CREATE TRIGGER IF NOT EXISTS outbox_moves BEFORE UPDATE OF status ON outbox
        WHEN NOT ((OLD.status = 'pending' AND NEW.status = 'claimed')
               OR (OLD.status = 'claimed' AND NEW.status IN ('claimed', 'sent', 'dead')))
        BEGIN SELECT RAISE(ABORT, 'outbox: a move the diagram does not draw'); END;
    """)
    while True:
        row = tx.execute("SELECT row_id, payload, attempts FROM outbox WHERE status IN ('pending', 'claimed') "
                         "ORDER BY rowid LIMIT 1").fetchone()
        if row is None:
            return None
        if row["attempts"] < max_attempts:
            break
        tx.execute("UPDATE outbox SET status = 'dead' WHERE row_id = ?", (row["row_id"],))
    tx.execute("UPDATE outbox SET status = 'claimed', attempts = attempts + 1 WHERE row_id = ?", (row["row_id"],))
try:
    ack = broker.publish(row["row_id"], row["payload"])
except BrokerRejected:
    with store.transaction() as tx:
        tx.execute("UPDATE outbox SET status = 'dead' WHERE row_id = ?", (row["row_id"],))
    raise
with store.transaction() as tx:
    tx.execute("UPDATE outbox SET status = 'sent' WHERE row_id = ?", (row["row_id"],))
return ack'''

_RECOVER_ONE_UPDATE = '''settled = 0
for row in store.query("SELECT case_id, tenant, proposal FROM ledger WHERE intent = 'sent' AND receipt IS NULL"):
    key, mine = case_key(row["tenant"], row["case_id"]), case_digest(row["proposal"])
    held = service.lookup(key)
    if held is None:
        held = service.submit(key, row["proposal"])
    if isinstance(held, CaseReceipt) and held.digest == mine:
        outcome = ("sent", held.receipt_id, None)
    elif isinstance(held, CaseReceipt):
        outcome = ("conflict", None, f"{key} holds another proposal (digest {held.digest}, ours {mine})")
    else:
        outcome = ("refused", None, held.reason)
    with store.transaction() as tx:
        tx.execute("UPDATE ledger SET intent = ?, receipt = ?, note = ? "
                   "WHERE case_id = ? AND intent = 'sent' AND receipt IS NULL", (*outcome, row["case_id"]))
    settled += outcome[1] is not None
return settled'''

_PUBLISH_COUNT_ONLY = '''with store.transaction() as tx:
    tx.execute("UPDATE outbox SET status = 'failed' WHERE status = 'pending' AND attempts >= ?", (max_attempts,))
    row = tx.execute("SELECT row_id, payload FROM outbox WHERE status = 'pending' ORDER BY rowid LIMIT 1").fetchone()
    if row is None:
        return None
    tx.execute("UPDATE outbox SET attempts = attempts + 1 WHERE row_id = ? AND status = 'pending'", (row["row_id"],))
try:
    ack = broker.publish(row["row_id"], row["payload"])
except BrokerRejected:
    with store.transaction() as tx:
        tx.execute("UPDATE outbox SET status = 'failed' WHERE row_id = ? AND status = 'pending'", (row["row_id"],))
    raise
with store.transaction() as tx:
    tx.execute("UPDATE outbox SET status = 'sent' WHERE row_id = ? AND status = 'pending'", (row["row_id"],))
return ack'''

_PUBLISH_TRIES_TABLE = '''with store.transaction() as tx:
    tx.execute_script("CREATE TABLE IF NOT EXISTS publish_try (row_id TEXT PRIMARY KEY, tries INTEGER NOT NULL);")
    while True:
        row = tx.execute("SELECT o.row_id, o.payload, COALESCE(t.tries, 0) AS tries FROM outbox AS o "
                         "LEFT JOIN publish_try AS t USING (row_id) WHERE o.status = 'pending' "
                         "ORDER BY o.rowid LIMIT 1").fetchone()
        if row is None:
            return None
        if row["tries"] < max_attempts:
            break
        tx.execute("UPDATE outbox SET status = 'failed' WHERE row_id = ?", (row["row_id"],))
    tx.execute("INSERT INTO publish_try (row_id, tries) VALUES (?, 1) "
               "ON CONFLICT (row_id) DO UPDATE SET tries = tries + 1", (row["row_id"],))
try:
    ack = broker.publish(row["row_id"], row["payload"])
except BrokerRejected:
    with store.transaction() as tx:
        tx.execute("UPDATE outbox SET status = 'failed' WHERE row_id = ?", (row["row_id"],))
    raise
with store.transaction() as tx:
    tx.execute("UPDATE outbox SET status = 'sent' WHERE row_id = ?", (row["row_id"],))
return ack'''

PRACTICE_ALTERNATIVES: tuple[Case, ...] = (
    Case("practice-publish-update-returning", UNIT, (Edit("publish_one", None, _PUBLISH_RETURNING),),
         "Claims the row with one UPDATE … RETURNING into a state named 'in_flight'; a row out of attempts is no "
         "longer picked; a refused row goes to 'dead' at once.", (), ""),
    Case("practice-grant-equal-jitter", UNIT, (Edit("grant_seat", None, _GRANT_EQUAL_JITTER),),
         "The request id itself as the key, pauses before each retry with 'equal jitter', status classes as sets.",
         (), ""),
    Case("practice-publish-state-machine-trigger", UNIT, (Edit("publish_one", None, _PUBLISH_STATE_MACHINE),),
         "States of its own (claimed, dead), guarded by a trigger that refuses every move its diagram does not draw "
         "instead of guards in each WHERE; a spent row is set aside when it is next found, not in a sweep.", (), ""),
    Case("practice-publish-count-only", UNIT, (Edit("publish_one", None, _PUBLISH_COUNT_ONLY),),
         "No state for 'on its way': the row stays 'pending' and its attempt count, raised in the commit before the "
         "publish, is what tells the next run it may be at the broker.", (), ""),
    Case("practice-publish-tries-table", UNIT, (Edit("publish_one", None, _PUBLISH_TRIES_TABLE),),
         "The outbox row is left alone until it is sent or set aside: each attempt is counted, before the publish, "
         "in a table of the learner's own (publish_try), with INSERT … ON CONFLICT.", (), ""),
    Case("practice-recover-one-update", UNIT, (Edit("recover_cases", None, _RECOVER_ONE_UPDATE),),
         "Decides each case's outcome first and settles it in one UPDATE; a digest mismatch is kept as 'conflict' "
         "with both digests in the note, a refusal as 'refused'.", (), ""),
)
