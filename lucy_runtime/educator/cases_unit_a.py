"""Unit A's known-bad learner implementations: admission, the claim, finish and the worker, each a
small edit of one learner cell of ``source/ch07_unit_a``. Their order, the order of ``cases.CASES``,
is the order of ``lucy cases`` and of the kill matrix: a new case goes beside those of the same function.
"""

from __future__ import annotations

from .case_edits import Case, Edit, _case, _finish_guarded_by, _split_finish

CLAIM_MOVE = ("        moved = tx.execute(\n"
              "            \"UPDATE work SET state = 'running', worker_id = ? WHERE work_id = ? AND state = 'pending'\",\n"
              "            (worker_id, row[\"work_id\"]),\n"
              "        ).rowcount\n")
"""The reference claim's guarded move to running."""

UNIT_A_CASES: tuple[Case, ...] = (
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
)
