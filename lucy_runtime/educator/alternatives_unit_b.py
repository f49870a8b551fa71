"""The Unit B sources of the correct arrangements in ``alternatives``: delivery, the chat hold and
retries written differently from the reference."""

DELIVER_PESSIMISTIC = '''with store.transaction() as tx:
    for old in tx.execute("SELECT report_id, first_sent_at FROM report WHERE delivery = 'pending' "
                          "AND first_sent_at IS NOT NULL").fetchall():
        if not policy.key_remembered(old[1]):  # its key may be forgotten: never on the wire again
            tx.execute("UPDATE report SET delivery = 'needs_person' WHERE report_id = ? AND delivery = 'pending'",
                       (old[0],))
    row = tx.execute(
        "UPDATE report SET delivery = 'unknown', attempts = attempts + 1, "
        "first_sent_at = COALESCE(first_sent_at, ?) WHERE report_id = "
        "(SELECT r.report_id FROM report AS r WHERE r.delivery = 'pending' AND r.due_at <= ? AND NOT EXISTS "
        "(SELECT 1 FROM report AS e WHERE e.session_id = r.session_id AND e.rowid < r.rowid "
        "AND e.delivery = 'pending') ORDER BY r.rowid LIMIT 1) "
        "RETURNING report_id, session_id, body, attempts",
        (policy.now(), policy.now()),
    ).fetchone()
if row is None:
    return Disposition.NOTHING_TO_SEND
key = policy.key(row["report_id"])
outcome = transport.send(OutgoingReport(row["report_id"], row["session_id"], row["body"], idempotency_key=key))
if isinstance(outcome, Uncertain):
    return Disposition.UNKNOWN
state, receipt, due, disposition = "confirmed", None, 0, Disposition.CONFIRMED
if isinstance(outcome, Receipt):
    receipt = outcome.remote_id
else:
    due = policy.next_due(row["attempts"], outcome)
    state, disposition = ("failed", Disposition.FAILED) if due is None else ("pending", Disposition.REFUSED)
with store.transaction() as tx:
    if tx.execute("UPDATE report SET delivery = ?, receipt = ?, due_at = ? WHERE report_id = ? AND delivery = 'unknown'",
                  (state, receipt, due or 0, row["report_id"])).rowcount == 0:
        raise RuntimeError("someone settled this report while it was on the wire")
return disposition'''

SCHEDULE_TABLE = """    UNIQUE (work_id, generation)
);
CREATE TABLE IF NOT EXISTS schedule (
    report_id TEXT PRIMARY KEY REFERENCES report (report_id),
    tries     INTEGER NOT NULL DEFAULT 0,
    due       REAL NOT NULL DEFAULT 0
);
"""

REPORT_INSERTED = """            (report.report_id, report.work_id, report.generation, report.session_id, report.body),
        )
"""

DELIVER_BY_SCHEDULE = '''with store.transaction() as tx:
    for row in tx.execute(
            "SELECT r.report_id, r.session_id, r.body, s.tries, r.first_sent_at FROM report r JOIN schedule s "
            "USING (report_id) WHERE r.delivery = 'pending' AND s.due <= ? AND r.session_id NOT IN "
            "(SELECT e.session_id FROM report e WHERE e.rowid < r.rowid AND e.delivery IN ('pending', 'sending')) "
            "ORDER BY s.due, r.rowid",
            (policy.now(),)).fetchall():
        if row["first_sent_at"] is None or policy.key_remembered(row["first_sent_at"]):
            break
        tx.execute("UPDATE report SET delivery = 'needs_person' WHERE report_id = ?", (row["report_id"],))
    else:
        return Disposition.NOTHING_TO_SEND
    tx.execute("UPDATE report SET delivery = 'sending', first_sent_at = COALESCE(first_sent_at, ?) "
               "WHERE report_id = ? AND delivery = 'pending'", (policy.now(), row["report_id"]))
    tx.execute("UPDATE schedule SET tries = tries + 1 WHERE report_id = ?", (row["report_id"],))
report_id, tries = row["report_id"], row["tries"] + 1
outcome = transport.send(OutgoingReport(report_id, row["session_id"], row["body"], idempotency_key=policy.key(report_id)))
with store.transaction() as tx:  # a raise below rolls the schedule back with the rest
    if isinstance(outcome, Receipt):
        state, receipt, disposition = "confirmed", outcome.remote_id, Disposition.CONFIRMED
    elif isinstance(outcome, Refused):
        due = policy.next_due(tries, outcome)
        state, receipt, disposition = ("failed", None, Disposition.FAILED) if due is None else (
            "pending", None, Disposition.REFUSED)
        if due is not None:
            tx.execute("UPDATE schedule SET due = ? WHERE report_id = ?", (due, report_id))
    else:
        state, receipt, disposition = "unknown", None, Disposition.UNKNOWN
    if not tx.execute("UPDATE report SET delivery = ?, receipt = COALESCE(?, receipt) "
                      "WHERE report_id = ? AND delivery = 'sending'", (state, receipt, report_id)).rowcount:
        raise WrongState(f"{report_id} was moved while it was on the wire")
return disposition'''

CHAT_HOLD_TABLE = """    UNIQUE (work_id, generation)
);
CREATE TABLE IF NOT EXISTS chat_hold (
    session_id TEXT PRIMARY KEY,
    held_by    TEXT NOT NULL
);
"""

DELIVER_WITH_CHAT_HOLDS = '''def release_chat(tx, report_id):
    """The report no longer waits for a retry: its chat's next report may go."""
    tx.execute("DELETE FROM chat_hold WHERE held_by = ?", (report_id,))

with store.transaction() as tx:
    while True:
        row = tx.execute(  # a chat that asked to wait sends nothing but the report it waits for, while that one waits
            "SELECT report_id, session_id, body, attempts, first_sent_at FROM report "
            "WHERE delivery = 'pending' AND due_at <= ? AND session_id NOT IN ("
            "SELECT h.session_id FROM chat_hold AS h JOIN report AS waiting ON waiting.report_id = h.held_by "
            "WHERE h.held_by != report.report_id AND waiting.delivery IN ('pending', 'sending')) "
            "ORDER BY due_at, rowid LIMIT 1",
            (policy.now(),),
        ).fetchone()
        if row is None:
            return Disposition.NOTHING_TO_SEND
        if row["first_sent_at"] is None or policy.key_remembered(row["first_sent_at"]):
            break
        release_chat(tx, row["report_id"])
        if tx.execute("UPDATE report SET delivery = 'needs_person' WHERE report_id = ? AND delivery = 'pending'",
                      (row["report_id"],)).rowcount != 1:
            raise WrongState(row["report_id"])
    if tx.execute("UPDATE report SET delivery = 'sending', attempts = attempts + 1, "
                  "first_sent_at = COALESCE(first_sent_at, ?) WHERE report_id = ? AND delivery = 'pending'",
                  (policy.now(), row["report_id"])).rowcount != 1:
        raise WrongState(row["report_id"])
report_id = row["report_id"]
outcome = transport.send(OutgoingReport(report_id, row["session_id"], row["body"], idempotency_key=policy.key(report_id)))
due = policy.next_due(row["attempts"] + 1, outcome) if isinstance(outcome, Refused) else None
with store.transaction() as tx:
    if isinstance(outcome, Refused) and due is not None:
        tx.execute("INSERT OR REPLACE INTO chat_hold (session_id, held_by) VALUES (?, ?)",
                   (row["session_id"], report_id))
        state, disposition = "pending", Disposition.REFUSED
    else:
        release_chat(tx, report_id)
        state, disposition = {Receipt: ("confirmed", Disposition.CONFIRMED), Refused: ("failed", Disposition.FAILED),
                              Uncertain: ("unknown", Disposition.UNKNOWN)}[type(outcome)]
    moved = tx.execute("UPDATE report SET delivery = ?, due_at = COALESCE(?, due_at), "
                       "receipt = CASE WHEN ? = 'confirmed' THEN ? ELSE receipt END "
                       "WHERE report_id = ? AND delivery = 'sending'",
                       (state, due, state, getattr(outcome, "remote_id", None), report_id)).rowcount
    if moved != 1:  # the rollback keeps the hold as it was
        raise WrongState(f"{report_id} was moved while it was on the wire")
return disposition'''

FAIL_ATTEMPT_RETURNING = '''with queue.store.transaction() as tx:
    row = tx.execute(
        "UPDATE work SET attempts = attempts + 1, worker_id = NULL "
        "WHERE work_id = ? AND state = 'running' AND worker_id = ? AND generation = ? RETURNING attempts, session_id",
        (assignment.work_id, assignment.worker_id, assignment.generation),
    ).fetchone()
    if row is None:
        raise FenceError(f"{assignment} is not the current claim")
    due = policy.next_due(row["attempts"], error)
    if due is None:  # the apology first, then the state: one transaction either way
        tx.execute("INSERT INTO report (report_id, work_id, generation, session_id, body) VALUES (?, ?, ?, ?, ?)",
                   (f"r-{assignment.work_id}-{assignment.generation}", assignment.work_id, assignment.generation,
                    row["session_id"], APOLOGY))
        tx.execute("UPDATE work SET state = 'failed' WHERE work_id = ?", (assignment.work_id,))
        return AfterError.FAILED
    tx.execute("UPDATE work SET state = 'waiting', due_at = ? WHERE work_id = ?", (due, assignment.work_id))
return AfterError.RETRY'''

WORK_ONCE_WAKING_ONE = '''assignment = claim(queue, worker_id)
if assignment is None:  # nothing pending: wake the request that has been due the longest, and try once more
    with queue.store.transaction() as tx:
        due = tx.execute("SELECT work_id FROM work WHERE state = 'waiting' AND due_at <= ? ORDER BY due_at LIMIT 1",
                         (policy.now(),)).fetchone()
        if due is not None:
            tx.execute("UPDATE work SET state = 'pending' WHERE work_id = ? AND state = 'waiting'", (due[0],))
    assignment = claim(queue, worker_id) if due is not None else None
if assignment is None:
    return None
try:
    answer = loop.run(assignment.session_id, assignment.text)
except ModelUnavailable as error:
    fail_attempt(queue, assignment, error, policy)
    return None
except Exception as bug:
    with queue.store.transaction() as tx:  # kept for a person: what went wrong, and when
        tx.execute("UPDATE work SET state = 'needs_person', worker_id = NULL, error = ?, error_at = ? "
                   "WHERE work_id = ? AND state = 'running' AND generation = ? AND worker_id = ?",
                   (repr(bug), policy.now(), assignment.work_id, assignment.generation, worker_id))
    raise
return finish(queue, assignment, answer)'''

CHAT_SEQ_COLUMN = """    receipt    TEXT,
    chat_seq   INTEGER,
    UNIQUE (work_id, generation)
);
"""
"""A report's place among its chat's reports, which finish numbers (nullable: a plain insert leaves it empty)."""

CHAT_SEQ_NUMBERED = REPORT_INSERTED + """        tx.execute(
            "UPDATE report SET chat_seq = (SELECT COALESCE(MAX(chat_seq), 0) + 1 FROM report WHERE session_id = ?) "
            "WHERE report_id = ?",
            (report.session_id, report.report_id),
        )
"""

CHAT_SEQ_EARLIER = ("\"AND earlier.rowid < this.rowid AND earlier.delivery IN ('pending', 'sending')) \"",
                    "\"AND earlier.chat_seq < this.chat_seq AND earlier.delivery IN ('pending', 'sending')) \"")
"""deliver_one's hold, by the chat's own numbering instead of the rowid."""
