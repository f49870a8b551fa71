"""Unit B's known-bad learner implementations: a second generation, delivery and its key, retries of
the model, held work, the operator's numbers and the Telegram intake, each a small edit of one learner
cell (some of Unit A's cells, as Unit B's rows see them). They follow Unit A's in ``cases.CASES``,
in this order, the order of ``lucy cases`` and of the kill matrix.
"""

from __future__ import annotations

from .case_edits import SESSION_LOOKUP, Case, Edit, _case, _finish_guarded_by, _split_finish

UNIT_B_CASES: tuple[Case, ...] = (
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
