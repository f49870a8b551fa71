"""Known-bad learner implementations, each a small edit of one learner cell.

An edit is applied to the reference cell taken from ``source/``, so a case is never a
second copy of the solution: it names the lines it changes. ``expected`` lists the
rows that must catch the case; ``lucy verify-grader`` proves they do.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..errors import EditDoesNotApply, UnknownCase
from ..notebooks.cells import solution_region


@dataclass(frozen=True)
class Edit:
    """Replace ``old`` with ``new`` in one cell; ``old`` must occur exactly once.

    With ``old=None`` the whole solution region is replaced by ``new``.
    """

    cell: str
    old: str | None
    new: str

    def apply(self, source: str) -> str:
        if self.old is None:
            region = solution_region(source)
            if not region:
                raise EditDoesNotApply(f"cell {self.cell!r} has no solution region to replace")
            indent = region[: len(region) - len(region.lstrip())]
            body = "\n".join(indent + line if line else line for line in self.new.splitlines())
            return source.replace(region, body, 1)
        count = source.count(self.old)
        if count != 1:
            raise EditDoesNotApply(f"edit of cell {self.cell!r}: expected the text once, found it {count} times: {self.old[:60]!r}")
        return source.replace(self.old, self.new, 1)


@dataclass(frozen=True)
class Case:
    name: str
    unit: str
    edits: tuple[Edit, ...]
    breaks: str
    expected: tuple[str, ...]
    teaching: str


def _case(name, unit, edits, breaks, expected, teaching) -> Case:
    return Case(name, unit, tuple(edits), breaks, tuple(expected), teaching)


SESSION_LOOKUP = "        row = tx.execute(\"SELECT session_id FROM work WHERE work_id = ?\", (work_id,)).fetchone()\n"
"""Where the reference finish reads the session after its fence: a case that commits first opens a second transaction here."""

CLAIM_MOVE = ("        moved = tx.execute(\n"
              "            \"UPDATE work SET state = 'running', worker_id = ? WHERE work_id = ? AND state = 'pending'\",\n"
              "            (worker_id, row[\"work_id\"]),\n"
              "        ).rowcount\n")
"""The reference claim's guarded move to running."""

FENCE = ("\"WHERE work_id = ? AND state = 'running' AND worker_id = ? AND generation = ?\",\n"
         "            (work_id, assignment.worker_id, generation),")
"""The reference finish's guard: the state it leaves, and the claim that must be current."""


def _finish_guarded_by(where: str, params: str) -> Edit:
    """The reference finish with another WHERE clause on its move to done."""
    return Edit("finish", FENCE, f"\"{where}\",\n            {params},")


def _split_finish() -> Edit:
    """Commit the move to done before the report is written: Unit A's finish in two transactions."""
    return Edit("finish", SESSION_LOOKUP, "    with queue.store.transaction() as tx:\n" + SESSION_LOOKUP)


CASES: tuple[Case, ...] = (
    _case(
        "noop-finish", "ch07_unit_a",
        [Edit("finish", None, "return Report(f\"r-{assignment.work_id}-1\", assignment.work_id, 1, \"\", "
                          "getattr(result, \"text\", \"\"))")],
        "finish returns a plausible Report but writes nothing: the work stays running and no report exists.",
        ["integrated-path", "finish-durable", "finish-atomic"],
        "The return value looks right; only the file tells the truth. This is why verdicts come from the observer.",
    ),
    _case(
        "finish-two-transactions", "ch07_unit_a",
        [_split_finish()],
        "Marks the work done and commits before inserting the report: a crash in between loses the answer.",
        ["finish-atomic"],
        "Each transaction is all-or-nothing on its own; two of them are not one.",
    ),
    _case(
        "finish-swallows-error", "ch07_unit_a",
        [Edit("finish", "    with queue.store.transaction() as tx:\n        moved = tx.execute(",
              "    try:\n      with queue.store.transaction() as tx:\n        moved = tx.execute("),
         Edit("finish", "    return report\n",
              "    except Exception:\n        report = Report(f\"r-{work_id}-1\", work_id, 1, \"\", result.text)\n"
              "    return report\n")],
        "Catches every exception inside finish and reports success, so misuse and database errors vanish.",
        ["finish-misuse"],
        "An error a caller never sees is an error nobody can repair. Let it propagate after the rollback.",
    ),
    _case(
        "swallowed-error", "ch07_unit_a",
        [Edit("finish", "    with queue.store.transaction() as tx:\n        moved = tx.execute(",
              "    try:\n      with queue.store.transaction() as tx:\n        moved = tx.execute("),
         Edit("finish", "    return report\n", "      return report\n    except Exception:\n        return None\n")],
        "Wraps finish in `try: … except Exception: return None`: misuse and database errors become a quiet None.",
        ["finish-misuse"],
        "The staff red flag 'swallowed error': the caller gets None, not the error, and cannot tell what went wrong. "
        "An except that returns instead of re-raising hides the failure.",
    ),
    _case(
        "finish-bare-pass", "ch07_unit_a",
        [Edit("finish", None, "pass")],
        "finish is `pass`: it writes nothing, returns None and raises nothing, even for work nobody claimed.",
        ["integrated-path", "report-to-admitted-session", "finish-binds-work", "finish-misuse", "finish-fenced",
         "report-identity", "finish-atomic", "finish-durable", "refused-leaves-no-trace"],
        "A function that does nothing fails every row about it, the one that asks for an error included: "
        "returning None is not refusing. Work it never marks done keeps its place, so capacity never frees.",
    ),
    _case(
        "finish-unbound", "ch07_unit_a",
        [_finish_guarded_by("WHERE state = 'running'", "()"),
         Edit("finish", "        if moved != 1:\n", "        if moved == 0:\n")],
        "Marks every running request done, not the one it was given.",
        ["finish-binds-work"],
        "Completion is about one identity. A WHERE clause without it is a bulk update.",
    ),
    _case(
        "report-from-loop-address", "ch07_unit_a",
        [Edit("finish", "session_id=row[\"session_id\"],", "session_id=result.addressed_to,")],
        "Addresses the report to whatever session the generated text names.",
        ["report-to-admitted-session"],
        "Generated text is not an authenticated identity: the stored session decides.",
    ),
    _case(
        "report-id-is-work-id", "ch07_unit_a",
        [Edit("finish", "report_id=f\"r-{work_id}-{generation}\",", "report_id=str(work_id),")],
        "Uses the work id as the report id, so a later generation cannot have a report of its own.",
        ["report-identity"],
        "Two things with two lifetimes need two identities.",
    ),
    _case(
        "finish-accepts-unclaimed", "ch07_unit_a",
        [_finish_guarded_by("WHERE work_id = ?", "(work_id,)")],
        "Finishes work that was never claimed (or is already done): the move to done has no guard at all.",
        ["finish-misuse", "finish-fenced"],
        "The state machine allows running → done only; finish must check it.",
    ),
    _case(
        "finish-ignores-claim", "ch07_unit_a",
        [_finish_guarded_by("WHERE work_id = ? AND state = 'running'", "(work_id,)")],
        "Guards the state but not the claim: any worker, holding any generation, finishes whatever running work "
        "id it is given.",
        ["finish-fenced"],
        "Running is not enough: the result belongs to one claim. The fence compares the worker and the generation "
        "too, so a stale or foreign worker changes nothing.",
    ),
    _case(
        "finish-ignores-generation", "ch07_unit_a",
        [_finish_guarded_by("WHERE work_id = ? AND state = 'running' AND worker_id = ?",
                            "(work_id, assignment.worker_id)")],
        "Fences on the worker but not the generation: a worker holding an Assignment from an earlier run of the "
        "work finishes the current one.",
        ["finish-fenced"],
        "A worker name can come back; a generation cannot. Only both together name the claim.",
    ),
    _case(
        "finish-guard-unchecked", "ch07_unit_a",
        [Edit("finish", "        if moved != 1:\n", "        if False:\n")],
        "Guards the move to done but never looks at the row count, so it writes a report for work it did not move.",
        ["finish-misuse", "finish-fenced"],
        "A guarded UPDATE that changed no row is a refusal; carrying on as if it had moved the row undoes the guard.",
    ),
    _case(
        "list-backed-admit", "ch07_unit_a",
        [Edit("admit", "def admit(queue, source_id, session_id, text):\n",
              "INBOX = []\n\n\ndef admit(queue, source_id, session_id, text):\n"),
         Edit("admit", None,
              "for item in INBOX:\n"
              "    if item[0] == source_id:\n"
              "        same = item[1:] == (session_id, text)\n"
              "        return Admission(Outcome.DUPLICATE if same else Outcome.CONFLICT, item[0])\n"
              "INBOX.append((source_id, session_id, text))\n"
              "return Admission(Outcome.ACCEPTED, source_id)")],
        "Step 1 of the chapter: admission into a Python list. Every answer looks right until the process restarts.",
        ["restart-keeps-work"],
        "Memory dies with the process; only a committed row outlives it.",
    ),
    _case(
        "schema-bypasses-store", "ch07_unit_a",
        [Edit("schema", None,
              "import sqlite3\n"
              "own = sqlite3.connect(store.path + '.mine')\n"
              "own.executescript(WORK_SCHEMA)\n"
              "own.close()")],
        "Creates the tables in a database file of its own instead of the store it was given.",
        ["schema-columns"],
        "Work written where nobody else looks is invisible: the checker, the Telegram adapter and the next "
        "chapter all read the injected store.",
    ),
    _case(
        "admit-no-duplicate-check", "ch07_unit_a",
        [Edit("admit", "        if known is not None:\n", "        if False:\n")],
        "Inserts without looking: a repeated delivery fails on the UNIQUE constraint instead of answering DUPLICATE.",
        ["duplicate-identical", "duplicate-conflict"],
        "Repeated delivery is normal on a network; it must be an expected outcome, not an exception.",
    ),
    _case(
        "admit-overwrites-conflict", "ch07_unit_a",
        [Edit("admit", "            return Admission(Outcome.CONFLICT, known[\"work_id\"], \"source_id reused with different content\")",
              "            tx.execute(\"UPDATE work SET session_id = ?, text = ? WHERE source_id = ?\", (session_id, text, source_id))\n"
              "            return Admission(Outcome.CONFLICT, known[\"work_id\"], \"source_id reused with different content\")")],
        "Answers CONFLICT but overwrites the stored request with the new content.",
        ["duplicate-conflict"],
        "A conflict is evidence that something is wrong; the first version must stay as it was.",
    ),
    _case(
        "admit-dedup-by-text", "ch07_unit_a",
        [Edit("admit", "\"SELECT work_id, session_id, text FROM work WHERE source_id = ?\", (source_id,)",
              "\"SELECT work_id, session_id, text FROM work WHERE text = ?\", (text,)")],
        "Treats two messages with equal text as one occurrence.",
        ["distinct-occurrences"],
        "Occurrence identity is the source id. Equal words can be two different requests.",
    ),
    _case(
        "admit-check-then-act", "ch07_unit_a",
        [Edit("admit", "        reason = refusal(tx, queue, session_id)\n",
              "    with queue.store.transaction() as tx:\n        reason = refusal(tx, queue, session_id)\n")],
        "Looks up the source id in one transaction and inserts in another: two intake processes can both insert.",
        ["admit-concurrent"],
        "A look and an act in separate transactions let another process act in between.",
    ),
    _case(
        "capacity-ignored", "ch07_unit_a",
        [Edit("refusal", None, "return None")],
        "Admits everything: no capacity, no per-session limit.",
        ["capacity-bounded", "refused-leaves-no-trace"],
        "Bounded admission is the only place to say no before the model is paid for.",
    ),
    _case(
        "capacity-exact-match", "ch07_unit_a",
        [Edit("refusal", "    if unfinished >= queue.capacity:", "    if unfinished == queue.capacity:"),
         Edit("refusal", "    if in_session >= queue.per_session_limit:", "    if in_session == queue.per_session_limit:")],
        "Refuses only when the count equals the limit: after a restart with a lower limit the queue never says no.",
        ["capacity-bounded"],
        "A limit is a ceiling, not a target: 'reached or past it' is the test.",
    ),
    _case(
        "conflict-by-ordering", "ch07_unit_a",
        [Edit("admit", "            if (known[\"session_id\"], known[\"text\"]) == (session_id, text):",
              "            if (known[\"session_id\"], known[\"text\"]) >= (session_id, text):")],
        "Compares the stored and the new request with >= instead of ==: content that sorts lower passes as a duplicate.",
        ["duplicate-conflict"],
        "Equal means equal. The row stores a request that sorts between two conflicting ones, so >= or <= cannot pass.",
    ),
    _case(
        "refused-still-stored", "ch07_unit_a",
        [Edit("admit", "        reason = refusal(tx, queue, session_id)\n        if reason is not None:\n",
              "        reason = refusal(tx, queue, session_id)\n        if reason is not None:\n"
              "            tx.execute(\"INSERT INTO work (source_id, session_id, text) VALUES (?, ?, ?)\", (source_id, session_id, text))\n")],
        "Answers REFUSED but stores the request anyway, so it occupies capacity and is worked (the model is called).",
        ["capacity-bounded", "refused-leaves-no-trace"],
        "A refusal must leave no trace: no row, no model call, no place taken.",
    ),
    _case(
        "done-work-holds-capacity", "ch07_unit_a",
        [Edit("refusal", "\"SELECT COUNT(*) FROM work WHERE state NOT IN ('done', 'failed')\"", "\"SELECT COUNT(*) FROM work\"")],
        "Counts finished work against capacity, so the queue fills up for good.",
        ["refused-leaves-no-trace"],
        "Only unfinished work occupies a place.",
    ),
    _case(
        "model-called-when-idle", "ch07_unit_a",
        [Edit("work_once", "    assignment = claim(queue, worker_id)\n",
              "    loop.run(worker_id, \"brief ACME\")\n    assignment = claim(queue, worker_id)\n")],
        "Calls the model before it knows whether there is any work.",
        ["empty-poll"],
        "An empty poll must cost nothing.",
    ),
    _case(
        "claim-without-marking", "ch07_unit_a",
        [Edit("claim", CLAIM_MOVE, "        moved = 1\n")],
        "Hands out a pending request without moving it to running, so the next claim gets it again.",
        ["claim-one"],
        "The claim is the move to running; a look alone is not a claim.",
    ),
    _case(
        "claim-check-then-act", "ch07_unit_a",
        [Edit("claim", "        if row is None:\n            return None\n",
              "        if row is None:\n            return None\n    with queue.store.transaction() as tx:\n"),
         Edit("claim", "WHERE work_id = ? AND state = 'pending'\"", "WHERE work_id = ?\"")],
        "Selects a pending request in one transaction and marks it in another, with no state guard on the move: "
        "two workers can claim the same one.",
        ["claim-concurrent"],
        "Two workers can both see the same pending row unless the look and the move are one transaction, or "
        "the move is guarded (AND state = 'pending', row count checked) and a lost race tries again.",
    ),
    _case(
        "claim-replays-running", "ch07_unit_a",
        [Edit("claim", "WHERE state = 'pending' ORDER BY work_id LIMIT 1", "WHERE state IN ('pending', 'running') ORDER BY work_id LIMIT 1"),
         Edit("claim", "WHERE work_id = ? AND state = 'pending'\"", "WHERE work_id = ? AND state IN ('pending', 'running')\"")],
        "Claims running work too, so a dead worker's request is replayed automatically (and so is a live one's).",
        ["running-crash-visible", "claim-one"],
        "Without ownership (Chapter 12) a running row may belong to a live worker. Replaying it is a guess.",
    ),
    _case(
        "hardcoded-report", "ch07_unit_a",
        [Edit("work_once", "    result = loop.run(assignment.session_id, assignment.text)\n",
              "    result = LoopResult(\"ACME closed at 100.00, up 1.00% over 5 trading days.\", assignment.session_id, 0)\n")],
        "Never calls the loop: every report is the same canned brief.",
        ["integrated-path"],
        "The checker's loop answers with a marker only it knows; a report without it was not produced by the loop.",
    ),
    _case(
        "tamper-with-checker", "ch07_unit_a",
        [Edit("finish", "def finish(queue, assignment, result):\n",
              "import lucy_runtime.checker as _checker\n"
              "import lucy_runtime.checker.observe as _observe\n"
              "_checker.grade = lambda *args, **kwargs: None\n"
              "globals()['grade'] = lambda *args, **kwargs: None\n"
              "_observe.observe_many = lambda targets, **kw: []\n\n\n"
              "def finish(queue, assignment, result):\n"),
         Edit("finish", None, "return Report(f\"r-{assignment.work_id}-1\", assignment.work_id, 1, \"\", result.text)")],
        "A no-op finish in a cell that also rebinds grade() and the observer, hoping the hidden tests pass.",
        ["integrated-path", "finish-durable", "finish-atomic"],
        "Learner code runs in the kernel, so a kernel can be fooled; the verdict is recomputed outside it.",
    ),
    _case(
        "finish-rewrites-first-report", "ch07_unit_b",
        [Edit("finish", "report_id=f\"r-{work_id}-{generation}\",", "report_id=f\"r-{work_id}\","),
         Edit("finish", "\"INSERT INTO report (report_id,", "\"INSERT OR REPLACE INTO report (report_id,")],
        "A second generation replaces the first report under the same id (Unit A's finish, caught in Unit B).",
        ["second-generation"],
        "An issued report is history: a new generation gets a new report, and the old one stays as it was.",
    ),
    _case(
        "stale-finish-after-requeue", "ch07_unit_b",
        [_finish_guarded_by("WHERE work_id = ? AND state = 'running'", "(work_id,)"),
         Edit("finish", SESSION_LOOKUP,
              SESSION_LOOKUP.replace("SELECT session_id FROM", "SELECT session_id, generation FROM")
              + "        generation = row[\"generation\"]\n")],
        "Unit A's finish as it was before the fence: guarded by the state alone, with the generation read from the "
        "store. After a requeue, the old worker's late finish completes the new generation with its old answer.",
        ["stale-finish-refused"],
        "Running is not enough after a requeue: the work is running again, under someone else's claim.",
    ),
    _case(
        "requeue-keeps-generation", "ch07_unit_b",
        [Edit("requeue", "generation = generation + 1 ", "generation = generation ")],
        "Runs the work again under the same generation, so the second report collides with the first.",
        ["second-generation"],
        "The generation is what lets two answers to one request be told apart.",
    ),
    _case(
        "requeue-any-state", "ch07_unit_b",
        [Edit("requeue", "\"WHERE work_id = ? AND state = 'done'\",", "\"WHERE work_id = ?\",")],
        "Sends work back to pending whatever its state: running work gets a second worker, and nothing says no.",
        ["second-generation"],
        "Only finished work may run again; asking for anything else is a mistake to report, not to carry out.",
    ),
    _case(
        "finish-swallows-db-error", "ch07_unit_b",
        [Edit("finish", "    with queue.store.transaction() as tx:\n        moved = tx.execute(",
              "    import sqlite3\n    try:\n      with queue.store.transaction() as tx:\n        moved = tx.execute("),
         Edit("finish", "    return report\n",
              "    except sqlite3.Error:\n        report = Report(f\"r-{work_id}-1\", work_id, 1, \"\", result.text)\n"
              "    return report\n")],
        "Rolls back on a database error but then reports success, so the caller believes the report is stored.",
        ["finish-rollback"],
        "Rolling back is half the repair; the error must also reach the caller.",
    ),
    _case(
        "swallowed-error-in-repair", "ch07_unit_b",
        [Edit("finish", "    with queue.store.transaction() as tx:\n        moved = tx.execute(",
              "    try:\n      with queue.store.transaction() as tx:\n        moved = tx.execute("),
         Edit("finish", "    return report\n", "      return report\n    except Exception:\n        pass\n")],
        "Unit A's finish with `try: … except Exception: pass`: the store rolls back, and the caller gets None "
        "instead of the error.",
        ["finish-rollback"],
        "Rolling back is half the repair; an except that does not re-raise hides the other half.",
    ),
    _case(
        "requeue-swallows-error", "ch07_unit_b",
        [Edit("requeue", "    with queue.store.transaction() as tx:\n",
              "    try:\n      with queue.store.transaction() as tx:\n"),
         Edit("requeue", "    if changed != 1:\n        raise LookupError(f\"work {work_id!r} is not done, so it cannot run again\")\n",
              "      if changed != 1:\n        raise LookupError(f\"work {work_id!r} is not done, so it cannot run again\")\n"
              "    except Exception:\n        return None\n")],
        "requeue refuses work that is not done, then catches its own error: the caller believes the work runs again.",
        ["second-generation"],
        "An error raised and caught in the same function tells nobody anything.",
    ),
    _case(
        "delivery-confirms-before-send", "ch07_unit_b",
        [Edit("deliver_one", "\"UPDATE report SET delivery = 'sending', attempts = attempts + 1 \"",
              "\"UPDATE report SET delivery = 'confirmed', attempts = attempts + 1 \"")],
        "Marks the report confirmed before the transport is called: a crash before the send loses the report "
        "while it looks delivered.",
        ["delivery-never-confirmed-unsent"],
        "Record what you know when you know it: 'confirmed' needs a receipt.",
    ),
    _case(
        "delivery-forgets-receipt", "ch07_unit_b",
        [Edit("deliver_one", "\"UPDATE report SET delivery = 'confirmed', receipt = ? WHERE report_id = ? AND delivery = 'sending'\"",
              "\"UPDATE report SET receipt = ? WHERE report_id = ? AND delivery = 'sending'\"")],
        "Answers CONFIRMED but leaves the stored report 'sending': the outbox never learns it was delivered.",
        ["delivery-confirmed"],
        "The disposition you return and the one you store must be the same fact.",
    ),
    _case(
        "refusal-stored-as-unknown", "ch07_unit_b",
        [Edit("deliver_one", "\"UPDATE report SET delivery = 'pending', due_at = ? WHERE",
              "\"UPDATE report SET delivery = 'unknown', due_at = ? WHERE")],
        "Files a known refusal as UNKNOWN, so a report that was certainly not sent is never sent.",
        ["delivery-refused-retry"],
        "Refused is knowledge, not uncertainty: nothing was sent, so sending again is safe.",
    ),
    _case(
        "delivery-resends-unknown", "ch07_unit_b",
        [Edit("deliver_one", "\"WHERE delivery = 'pending' AND due_at <= ? AND NOT EXISTS (\"",
              "\"WHERE delivery IN ('pending', 'unknown', 'sending') AND due_at <= ? AND NOT EXISTS (\"")],
        "Treats UNKNOWN (and in-flight) reports as sendable, so a lost reply becomes a second send.",
        ["lost-reply-unknown", "delivery-crash-after-accept"],
        "UNKNOWN is not permission to resend: the first send may have arrived.",
    ),
    _case(
        "fresh-idempotency-key", "ch07_unit_b",
        [Edit("deliver_one", "idempotency_key=policy.key(report_id)", "idempotency_key=__import__(\"uuid\").uuid4().hex")],
        "Makes a new idempotency key for every attempt, so the service sees each retry as a new message.",
        ["idempotency-key-stable", "reconcile-unknown"],
        "A key names the message, not the attempt.",
    ),
    _case(
        "poison-report", "ch07_unit_b",
        [Edit("deliver_one", "\"WHERE delivery = 'pending' AND due_at <= ? AND NOT EXISTS (\"",
              "\"WHERE delivery = 'pending' AND NOT EXISTS (\""),
         Edit("deliver_one", "\"ORDER BY due_at, rowid LIMIT 1\",\n                (policy.now(),),",
              "\"ORDER BY rowid LIMIT 1\","),
         Edit("deliver_one", "            due = policy.next_due(row[\"attempts\"] + 1, outcome)\n            if due is None:",
              "            due = policy.now()\n            if due is None:")],
        "Always takes the oldest pending report and puts every refusal straight back: a report the service always "
        "refuses is taken on every call, and the reports behind it are never sent.",
        ["delivery-no-poison"],
        "One report must never hold up another: retry when it is due, and give up when retrying cannot help.",
    ),
    _case(
        "retry-for-ever", "ch07_unit_b",
        [Edit("deliver_one", "            due = policy.next_due(row[\"attempts\"] + 1, outcome)\n",
              "            due = policy.next_due(1, outcome) or policy.now() + 60\n")],
        "Backs off, but never gives up: a chat that blocked the bot is asked again every minute for ever, and no "
        "report ever reaches 'failed' where a person would see it.",
        ["delivery-no-poison"],
        "A permanent refusal will not change; a retryable one that keeps failing needs a person, not another try.",
    ),
    _case(
        "later-report-overtakes", "ch07_unit_b",
        [Edit("deliver_one", "AND NOT EXISTS (\"\n"
              "                \"SELECT 1 FROM report AS earlier WHERE earlier.session_id = this.session_id \"\n"
              "                \"AND earlier.rowid < this.rowid AND earlier.delivery IN ('pending', 'sending')) \"",
              "\"")],
        "Takes the report due the longest and never looks at its chat: while a chat's first answer waits out a 429, "
        "its second goes out first, into the same limit.",
        ["delivery-chat-order"],
        "A rate limit belongs to the chat, so the wait does too: a chat's reports leave in the order they were stored.",
    ),
    _case(
        "chat-held-by-due-time", "ch07_unit_b",
        [Edit("deliver_one", "\"AND earlier.rowid < this.rowid AND", "\"AND earlier.due_at < this.due_at AND")],
        "Holds a report behind the chat's reports that are due sooner, not those stored before it: the 429 moved the "
        "chat's first report later, so its second, due since it was stored, overtakes it.",
        ["delivery-chat-order"],
        "Order in a chat is the order the reports were stored; a due time says when to try, not which comes first.",
    ),
    _case(
        "per-attempt-key", "ch07_unit_b",
        [Edit("deliver_one", "idempotency_key=policy.key(report_id)",
              "idempotency_key=policy.key(f\"{report_id}-{row['attempts'] + 1}\")")],
        "Numbers the key by attempt (r-1-1-1, r-1-1-2, …): each retry is a new message to the service, and "
        "reconcile's look-up by the report's key finds nothing.",
        ["idempotency-key-stable", "reconcile-unknown"],
        "A key names the message, not the attempt, however tidy the attempt number looks.",
    ),
    _case(
        "key-without-namespace", "ch07_unit_b",
        [Edit("deliver_one", "idempotency_key=policy.key(report_id)", "idempotency_key=report_id"),
         Edit("reconcile", "transport.lookup(policy.key(row[\"report_id\"]))", "transport.lookup(row[\"report_id\"])")],
        "Uses the bare report id as the key: a second store's r-1-1 looks like a replay of the first store's, and the "
        "service never delivers it.",
        ["idempotency-key-stable"],
        "A key must be unique at the service, not only in your table: put the store's name in front.",
    ),
    _case(
        "delivery-ignores-row-count", "ch07_unit_b",
        [Edit("deliver_one", "        if moved != 1:\n            raise WrongState(", "        if False:\n            raise WrongState(")],
        "Answers CONFIRMED after its guarded move changed no row: an operator's reconcile had put the report back "
        "to pending while it was on the wire, and the caller is told a state the table does not hold.",
        ["delivery-moved-meanwhile"],
        "A guarded move is half the rule; the row count is the other half.",
    ),
    _case(
        "delivery-resends-forgotten-key", "ch07_unit_b",
        [Edit("deliver_one", "if row[\"first_sent_at\"] is None or policy.key_remembered(row[\"first_sent_at\"]):",
              "if True:")],
        "Sends a report again after the service's key retention: a report reconciled back to pending that met a "
        "429 goes out when its key no longer protects it, and may be a second message.",
        ["delivery-key-forgotten"],
        "A key protects a retry only while the service remembers it; past that, a person decides.",
    ),
    _case(
        "requeue-ignores-row-count", "ch07_unit_b",
        [Edit("requeue", "    if changed != 1:\n        raise LookupError(f\"work {work_id!r} is not done, so it cannot run again\")\n",
              "")],
        "Guards the update on 'done' but never checks that it changed a row: requeue of running or pending work "
        "changes nothing and says nothing.",
        ["second-generation"],
        "A conditional update is only a guard when you read its row count.",
    ),
    _case(
        "reconcile-by-resending", "ch07_unit_b",
        [Edit("reconcile", None,
              "with store.transaction() as tx:\n"
              "    tx.execute(\"UPDATE report SET delivery = 'pending' WHERE delivery IN ('unknown', 'sending')\")\n"
              "return 0")],
        "'Reconciles' by putting every UNKNOWN back to pending: the resend policy under another name.",
        ["reconcile-unknown"],
        "Only the service's own record can settle an UNKNOWN.",
    ),
    _case(
        "model-cap-of-its-own", "ch07_unit_b",
        [Edit("fail_attempt", "        due = policy.next_due(attempts, error)\n",
              "        due = policy.next_due(attempts, error) if attempts < 3 else None\n")],
        "Gives up after three model errors whatever the policy says: a ten-minute outage fails every request "
        "that arrives in it, and the customers get apologies for an outage the schedule was sized to ride out.",
        ["model-rides-out-outage"],
        "The total of the backoff must exceed the outage you mean to ride out; a cap of your own cuts it short.",
    ),
    _case(
        "fail-attempt-unfenced", "ch07_unit_b",
        [Edit("fail_attempt", "WHERE work_id = ? AND state = 'running' AND worker_id = ? AND generation = ?\",\n"
                              "            (work_id, assignment.worker_id, generation),",
              "WHERE work_id = ? AND state = 'running'\",\n            (work_id,),")],
        "Records a failed attempt on the work whatever claim reports it: after a release, the first worker's late "
        "model error fails the request the new claim is running, and its customer gets an apology meanwhile.",
        ["model-fails-for-good"],
        "A failure is a move like finish: only the current claim may make it.",
    ),
    _case(
        "work-stuck-after-model-error", "ch07_unit_b",
        [Edit("work_once_retrying", "        fail_attempt(queue, assignment, error, policy)\n        return None\n",
              "        return None\n")],
        "Catches the model error and returns, recording nothing: the work stays running, with its worker, for ever.",
        ["model-recovers", "model-fails-for-good"],
        "Catching an error is not handling it. The work must leave 'running' with its attempt recorded, or nothing "
        "will ever move it, and it holds its chat's place.",
    ),
    _case(
        "model-errors-retried-without-end", "ch07_unit_b",
        [Edit("fail_attempt", "        due = policy.next_due(attempts, error)\n",
              "        due = policy.next_due(1, error)\n")],
        "Asks the schedule as if every failure were the first: the work backs off, but never runs out of attempts, "
        "so a model that is down is asked for ever and the customer never hears a word.",
        ["model-fails-for-good"],
        "A retry needs an end. Count the attempts on the row and pass the count; the cap turns silence into a "
        "failed state and an apology.",
    ),
    _case(
        "failure-reported-outside-transaction", "ch07_unit_b",
        [Edit("fail_attempt", "        tx.execute(\"UPDATE work SET state = 'failed', attempts = ? WHERE work_id = ? "
                              "AND state = 'running'\",\n                   (attempts, work_id))\n",
              "        tx.execute(\"UPDATE work SET state = 'failed', attempts = ? WHERE work_id = ? "
              "AND state = 'running'\",\n                   (attempts, work_id))\n"
              "    with queue.store.transaction() as tx:\n")],
        "Commits the move to failed, then stores the apology in a second transaction: a crash in between leaves "
        "failed work and a customer who is never told.",
        ["model-failure-atomic"],
        "The apology is the failed work's report: like finish, the state and its report commit together.",
    ),
    _case(
        "refusal-counts-failed-work", "ch07_unit_b",
        [Edit("refusal", "WHERE state NOT IN ('done', 'failed')\")", "WHERE state != 'done'\")"),
         Edit("refusal", "WHERE state NOT IN ('done', 'failed') AND session_id = ?", "WHERE state != 'done' AND session_id = ?")],
        "Unit A's refusal counts everything that is not done, failed work included: a chat whose request failed "
        "stays locked, and a few outages fill the queue for good.",
        ["model-fails-for-good"],
        "A place is for work that can still finish. Failed work never will.",
    ),
    _case(
        "bug-left-running", "ch07_unit_b",
        [Edit("work_once_retrying", "    except Exception as error:  # a bug:", "    except ZeroDivisionError as error:  # a bug:")],
        "Lets a bug leave work_once_retrying and records nothing: the request stays running for ever, holding its "
        "chat's place, and no number moves.",
        ["bug-held"],
        "An error a person cannot find is an error nobody fixes: keep it on the row, in a state someone counts.",
    ),
    _case(
        "bug-swallowed", "ch07_unit_b",
        [Edit("work_once_retrying", "            )\n        raise\n", "            )\n        return None\n")],
        "Records the bug and holds the work, but swallows the error: the worker's log never shows it.",
        ["bug-held"],
        "Recording an error is not handling it: let it leave as well.",
    ),
    _case(
        "bug-retried-as-outage", "ch07_unit_b",
        [Edit("work_once_retrying", "    except ModelUnavailable as error:\n        fail_attempt(queue, assignment, error, policy)",
              "    except Exception as error:\n        fail_attempt(queue, assignment, ModelUnavailable(str(error)), policy)")],
        "Treats a bug as a model outage: the request is retried up to the cap, the loop fails the same way every "
        "time, and the bug hides in a backoff until the work fails.",
        ["bug-held"],
        "A retry helps only what can change by itself; a bug cannot.",
    ),
    _case(
        "fail-held-unfenced", "ch07_unit_b",
        [Edit("fail_held", "WHERE work_id = ? AND state = 'needs_person' AND generation = ?\",\n                         (work_id, generation)).fetchone()",
              "WHERE work_id = ? AND state = 'needs_person'\",\n                         (work_id,)).fetchone()"),
         Edit("fail_held", "WHERE work_id = ? AND state = 'needs_person' AND generation = ?\",\n                   (work_id, generation))",
              "WHERE work_id = ? AND state = 'needs_person'\",\n                   (work_id,))")],
        "Fails held work whatever generation the operator read: a person acting on an old look fails work that was "
        "released and held again meanwhile.",
        ["held-failed-with-apology"],
        "An operator's action is a move like any other: fence it on what the person saw.",
    ),
    _case(
        "fail-held-without-apology", "ch07_unit_b",
        [Edit("fail_held", "        tx.execute(\n            \"INSERT INTO report", "        0 and tx.execute(\n            \"INSERT INTO report")],
        "Fails held work without its apology: the customer is never told.",
        ["held-failed-with-apology"],
        "A failed request still owes its customer a word, in the same transaction.",
    ),
    _case(
        "release-keeps-generation", "ch07_unit_b",
        [Edit("release", "generation = generation + 1 ", "generation = generation ")],
        "Releases running work under the same generation: when the same worker name claims it again, the first "
        "worker's late finish passes the fence and its stale answer is stored.",
        ["release-fenced"],
        "A worker's name can come back; only a new generation makes the old claim stale.",
    ),
    _case(
        "release-running-only", "ch07_unit_b",
        [Edit("release", "state IN ('running', 'needs_person')", "state = 'running'")],
        "Releases running work only: work held for a person after a bug stays held once the bug is fixed, and "
        "the only way out left is to fail it with an apology.",
        ["release-fenced"],
        "An operator's action is a move the diagram draws: release leaves needs_person as it leaves running.",
    ),
    _case(
        "operator-age-of-newest", "ch07_unit_b",
        [Edit("operator_numbers", "SELECT MIN(admitted_at)", "SELECT MAX(admitted_at)")],
        "Measures the newest pending request's wait: a queue where one request has waited an hour looks fresh.",
        ["operator-numbers"],
        "The number to watch is the longest wait, the customer who has waited most.",
    ),
    _case(
        "operator-counts-only-ends", "ch07_unit_b",
        [Edit("operator_numbers", "return OperatorNumbers(0.0 if oldest is None else now - oldest, **{name: counts[name] for name in counts.keys()})",
              "return OperatorNumbers(0.0 if oldest is None else now - oldest, counts[\"unknown_reports\"], "
              "counts[\"failed_reports\"], counts[\"failed_work\"])")],
        "Counts UNKNOWN and failed rows only: a report a dead sender left 'sending', a report or a request "
        "waiting for a person, a request stuck 'running' and waiting work move no number.",
        ["operator-sees-every-stuck-state"],
        "A stuck state nobody counts is as silent as a lost answer.",
    ),
    _case(
        "operator-stuck-at-once", "ch07_unit_b",
        [Edit("operator_numbers", "(now - STUCK_AFTER, now - STUCK_AFTER)", "(now, now)")],
        "Counts every report on the wire and every running request as stuck, however young: the number cries "
        "wolf on every send.",
        ["operator-sees-every-stuck-state"],
        "A stuck count needs a bound, stated, that no healthy request reaches.",
    ),
    _case(
        "reconcile-resends-after-retention", "ch07_unit_b",
        [Edit("reconcile", "remembered = policy.key_remembered(row[\"first_sent_at\"])", "remembered = True")],
        "Puts every report without a receipt back to pending, however long ago it was first sent: past the "
        "service's key retention the retry is a new message, and the customer gets the answer twice.",
        ["reconcile-after-retention"],
        "No receipt means 'not yet' or 'no longer'; a retry is safe only while the service remembers the key.",
    ),
    _case(
        "message-identity-without-chat", "ch07_unit_b",
        [Edit("admit_message", "f\"tg:{chat_id}:{message_id}\"", "f\"tg:{message_id}\"")],
        "Identifies a message by its message id alone; message ids restart in every chat.",
        ["transfer-intake"],
        "An occurrence identity must be unique across every source that feeds the queue.",
    ),
    _case(
        "message-not-authorized", "ch07_unit_b",
        [Edit("admit_message", "    session_id = allowed_chats.get(chat_id)\n",
              "    session_id = allowed_chats.get(chat_id, f\"chat-{chat_id}\")\n")],
        "Admits any chat, inventing a session for strangers: deduplication without authorization.",
        ["transfer-intake"],
        "Knowing a message is new says nothing about whether its chat may use Lucy (the allow-list authorizes).",
    ),
    _case(
        "split-finish-under-sweep", "ch07_unit_b",
        [_split_finish()],
        "Unit A's finish in two transactions, as Unit B's sweep and model see it.",
        ["crash-sweep", "model-based"],
        "The sweep finds the gap without being told where it is: it tries every statement.",
    ),
    _case(
        "limits-ignored-under-model", "ch07_unit_b",
        [Edit("refusal", None, "return None")],
        "Unit A's refusal never refuses; the model-based check finds a short sequence that shows it.",
        ["model-based"],
        "A plain model of the rules, played at random, finds cases nobody thought to write down.",
    ),
    _case(
        "break-that-is-no-break", "ch07_unit_b",
        [Edit("broken_finish", "def broken_finish(queue, assignment, result):\n",
              "_real_finish = finish\n\n\ndef broken_finish(queue, assignment, result):\n"),
         Edit("broken_finish", None, "return _real_finish(queue, assignment, result)")],
        "The 'broken' finish is the real one, so the deliberate break proves nothing.",
        ["deliberate-break-caught"],
        "A test you have never seen fail has not shown it can.",
    ),
)


def by_name(name: str) -> Case:
    for case in CASES:
        if case.name == name:
            return case
    raise UnknownCase(f"no educator case {name!r}; see `lucy cases`")
