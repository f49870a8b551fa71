"""Correct implementations arranged differently from the reference.

The grader must give each of these full marks: it judges observable behaviour,
never the reference's statement order, SQL style or schema.
"""

from __future__ import annotations

from .alternatives_unit_b import (CHAT_HOLD_TABLE, CHAT_SEQ_COLUMN, CHAT_SEQ_EARLIER, CHAT_SEQ_NUMBERED,
                                  DELIVER_BY_SCHEDULE, DELIVER_PESSIMISTIC, DELIVER_WITH_CHAT_HOLDS,
                                  FAIL_ATTEMPT_RETURNING, REPORT_INSERTED, SCHEDULE_TABLE, WORK_ONCE_WAKING_ONE)
from .cases import Case, Edit

_ADMIT_ON_CONFLICT = '''with queue.store.transaction() as tx:
    reason = None
    if tx.execute("SELECT 1 FROM work WHERE source_id = ?", (source_id,)).fetchone() is None:
        reason = refusal(tx, queue, session_id)
    if reason is not None:
        return Admission(Outcome.REFUSED, None, reason)
    inserted = tx.execute(
        "INSERT INTO work (source_id, session_id, text) VALUES (?, ?, ?) "
        "ON CONFLICT (source_id) DO NOTHING RETURNING work_id",
        (source_id, session_id, text),
    ).fetchone()
    if inserted is not None:
        return Admission(Outcome.ACCEPTED, inserted[0])
    known = tx.execute("SELECT work_id, session_id, text FROM work WHERE source_id = ?", (source_id,)).fetchone()
    same = (known["session_id"], known["text"]) == (session_id, text)
    return Admission(Outcome.DUPLICATE if same else Outcome.CONFLICT, known["work_id"])'''

_CLAIM_RETURNING = '''with queue.store.transaction() as tx:
    row = tx.execute(
        "UPDATE work SET state = 'running', worker_id = ? WHERE work_id = "
        "(SELECT work_id FROM work WHERE state = 'pending' ORDER BY work_id LIMIT 1) "
        "RETURNING work_id, source_id, session_id, text, generation",
        (worker_id,),
    ).fetchone()
if row is None:
    return None
return Assignment(row["work_id"], row["source_id"], row["session_id"], row["text"], worker_id, row["generation"])'''

ADMITTED_AT = "    admitted_at REAL NOT NULL DEFAULT ((julianday('now') - 2440587.5) * 86400.0)\n);"
"""The reference schema's last work column, and the end of the work table."""

_TRIGGER_SCHEMA = '''    admitted_at REAL NOT NULL DEFAULT ((julianday('now') - 2440587.5) * 86400.0),
    result     TEXT
);
CREATE TRIGGER IF NOT EXISTS work_done_writes_report
AFTER UPDATE OF state ON work WHEN new.state = 'done' AND old.state = 'running'
BEGIN
    INSERT INTO report (report_id, work_id, generation, session_id, body)
    VALUES ('r-' || new.work_id || '-' || new.generation, new.work_id, new.generation, new.session_id, new.result);
END;'''

_FINISH_BY_TRIGGER = '''work_id, generation = assignment.work_id, assignment.generation
with queue.store.transaction() as tx:
    changed = tx.execute(
        "UPDATE work SET state = 'done', result = ? "
        "WHERE work_id = ? AND state = 'running' AND worker_id = ? AND generation = ?",
        (result.text, work_id, assignment.worker_id, generation),
    ).rowcount
    if changed != 1:
        raise LookupError(f"work {work_id!r} is not running under this claim")
    row = tx.execute(
        "SELECT report_id, work_id, generation, session_id, body FROM report WHERE work_id = ? AND generation = ?",
        (work_id, generation),
    ).fetchone()
return Report(row["report_id"], row["work_id"], row["generation"], row["session_id"], row["body"])'''

_INSERT_REPORT = '''    tx.execute(
        "INSERT INTO report (report_id, work_id, generation, session_id, body) VALUES (?, ?, ?, ?, ?)",
        (report.report_id, report.work_id, report.generation, report.session_id, report.body),
    )'''

_REPORT_BEFORE_STATE = '''work_id, generation = assignment.work_id, assignment.generation
with queue.store.transaction() as tx:
    row = tx.execute("SELECT session_id FROM work WHERE work_id = ?", (work_id,)).fetchone()
    if row is None:
        raise FenceError(f"there is no work {work_id!r}")
    report = Report(f"r-{work_id}-{generation}", work_id, generation, row["session_id"], result.text)
''' + _INSERT_REPORT + '''
    moved = tx.execute(
        "UPDATE work SET state = 'done' "
        "WHERE work_id = ? AND state = 'running' AND worker_id = ? AND generation = ?",
        (work_id, assignment.worker_id, generation),
    ).rowcount
    if moved != 1:  # the rollback takes the report back out
        raise FenceError(f"work {work_id!r} is not running under this claim")
return report'''

_FINISH_RETURNING = '''work_id, generation = assignment.work_id, assignment.generation
with queue.store.transaction() as tx:
    row = tx.execute(
        "UPDATE work SET state = 'done' "
        "WHERE work_id = ? AND state = 'running' AND worker_id = ? AND generation = ? RETURNING session_id",
        (work_id, assignment.worker_id, generation),
    ).fetchone()
    if row is None:
        raise FenceError(f"work {work_id!r} is not running under this claim")
    report = Report(f"r-{work_id}-{generation}", work_id, generation, row["session_id"], result.text)
''' + _INSERT_REPORT + '''
return report'''

_CLAIM_LOOK = '''"SELECT work_id, source_id, session_id, text, generation FROM work "
        "WHERE state = 'pending' ORDER BY work_id LIMIT 1"'''

_CLAIM_RETRYING = '''while True:
    with queue.store.transaction() as tx:
        row = tx.execute(
        ''' + _CLAIM_LOOK + '''
        ).fetchone()
    if row is None:
        return None
    with queue.store.transaction() as tx:  # the guard, not the transaction, keeps two workers apart
        moved = tx.execute(
            "UPDATE work SET state = 'running', worker_id = ? WHERE work_id = ? AND state = 'pending'",
            (worker_id, row["work_id"]),
        ).rowcount
    if moved == 1:
        return Assignment(row["work_id"], row["source_id"], row["session_id"], row["text"], worker_id,
                          row["generation"])'''

_CLAIMS_TABLE = '''CREATE TABLE IF NOT EXISTS claim (
    work_id    INTEGER NOT NULL REFERENCES work (work_id),
    generation INTEGER NOT NULL,
    worker_id  TEXT NOT NULL,
    PRIMARY KEY (work_id, generation)
);
'''

_CLAIM_INTO_TABLE = '''with queue.store.transaction() as tx:
    row = tx.execute(
        ''' + _CLAIM_LOOK + '''
    ).fetchone()
    if row is None:
        return None
    # The work row names its worker too (Unit B's fail_attempt fences on it); finish fences on the claim table.
    if tx.execute("UPDATE work SET state = 'running', worker_id = ? WHERE work_id = ? AND state = 'pending'",
                  (worker_id, row["work_id"])).rowcount != 1:
        return None
    # A retry claims the same generation again: the newest claim of a generation is the current one.
    tx.execute("INSERT OR REPLACE INTO claim (work_id, generation, worker_id) VALUES (?, ?, ?)",
               (row["work_id"], row["generation"], worker_id))
return Assignment(row["work_id"], row["source_id"], row["session_id"], row["text"], worker_id, row["generation"])'''

_FINISH_BY_CLAIMS_TABLE = '''work_id, generation = assignment.work_id, assignment.generation
with queue.store.transaction() as tx:
    moved = tx.execute(
        "UPDATE work SET state = 'done' WHERE work_id = ? AND state = 'running' AND generation = ? AND EXISTS "
        "(SELECT 1 FROM claim WHERE claim.work_id = work.work_id AND claim.generation = work.generation "
        "AND claim.worker_id = ?)",
        (work_id, generation, assignment.worker_id),
    ).rowcount
    if moved != 1:
        raise FenceError(f"work {work_id!r} is not running under this claim")
    row = tx.execute("SELECT session_id FROM work WHERE work_id = ?", (work_id,)).fetchone()
    report = Report(f"r-{work_id}-{generation}", work_id, generation, row["session_id"], result.text)
''' + _INSERT_REPORT + '''
return report'''

_TEXT_ID_SCHEMA = """with store.transaction() as tx:
    tx.execute_script('''
CREATE TABLE IF NOT EXISTS work (
    work_id     TEXT PRIMARY KEY,
    source_id   TEXT NOT NULL UNIQUE,
    session_id  TEXT NOT NULL,
    text        TEXT NOT NULL,
    state       TEXT NOT NULL DEFAULT 'pending'
                CHECK (state IN ('pending', 'running', 'done', 'waiting', 'failed', 'needs_person')),
    worker_id   TEXT,
    generation  INTEGER NOT NULL DEFAULT 1,
    attempts    INTEGER NOT NULL DEFAULT 0,
    due_at      REAL NOT NULL DEFAULT 0,
    error       TEXT,
    error_at    REAL,
    admitted_at REAL NOT NULL DEFAULT (strftime('%s', 'now'))
);
CREATE TABLE IF NOT EXISTS report (
    report_id  TEXT PRIMARY KEY,
    work_id    TEXT NOT NULL REFERENCES work (work_id),
    generation INTEGER NOT NULL,
    session_id TEXT NOT NULL,
    body       TEXT NOT NULL,
    delivery   TEXT NOT NULL DEFAULT 'pending',
    attempts   INTEGER NOT NULL DEFAULT 0,
    due_at     REAL NOT NULL DEFAULT 0,
    first_sent_at REAL,
    receipt    TEXT,
    UNIQUE (work_id, generation)
);
''')"""

_FINISH_HELPERS = '''from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class HeldClaim:
    work_id: object
    worker_id: str
    generation: int


def insert_report(tx, report: Report) -> None:
    """Store one report, pending delivery."""
    tx.execute("INSERT INTO report (report_id, work_id, generation, session_id, body, delivery) "
               "VALUES (:report_id, :work_id, :generation, :session_id, :body, 'pending')", vars(report))


def finish(queue: Queue, assignment: Assignment, result: LoopResult) -> Report:
'''

_FINISH_IN_SAVEPOINT = '''held = HeldClaim(assignment.work_id, assignment.worker_id, assignment.generation)
with queue.store.transaction() as tx:
    tx.execute("SAVEPOINT finishing")
    row = tx.execute("SELECT session_id FROM work WHERE work_id = ? AND state = 'running' AND worker_id = ? "
                     "AND generation = ?", (held.work_id, held.worker_id, held.generation)).fetchone()
    if row is None:
        tx.execute("ROLLBACK TO finishing")
        raise FenceError(f"{held} is not the current claim")
    report = Report(f"r-{held.work_id}-{held.generation}", held.work_id, held.generation, row["session_id"],
                    result.text)
    insert_report(tx, report)
    moved = tx.execute("UPDATE work SET state = 'done' WHERE work_id = :work_id AND state = 'running' "
                       "AND worker_id = :worker_id AND generation = :generation", vars(held)).rowcount
    if moved != 1:
        tx.execute("ROLLBACK TO finishing")
        raise FenceError(f"{held} lost its claim")
    tx.execute("RELEASE finishing")
return report'''

_STATE_MACHINE_TRIGGERS = """    UNIQUE (work_id, generation)
);
CREATE TRIGGER IF NOT EXISTS work_moves_along_the_diagram BEFORE UPDATE OF state ON work
WHEN OLD.state != NEW.state AND (OLD.state, NEW.state) NOT IN (VALUES
    ('pending', 'running'), ('running', 'done'), ('running', 'waiting'), ('waiting', 'pending'),
    ('running', 'failed'), ('running', 'needs_person'), ('needs_person', 'failed'), ('needs_person', 'pending'),
    ('done', 'pending'), ('running', 'pending'))
BEGIN SELECT RAISE(ABORT, 'a move the work diagram does not allow'); END;
CREATE TRIGGER IF NOT EXISTS report_moves_along_the_diagram BEFORE UPDATE OF delivery ON report
WHEN OLD.delivery != NEW.delivery AND (OLD.delivery, NEW.delivery) NOT IN (VALUES
    ('pending', 'sending'), ('sending', 'confirmed'), ('sending', 'pending'), ('sending', 'failed'),
    ('sending', 'unknown'), ('unknown', 'confirmed'), ('unknown', 'pending'), ('unknown', 'needs_person'),
    ('sending', 'needs_person'), ('pending', 'needs_person'))
BEGIN SELECT RAISE(ABORT, 'a move the report diagram does not allow'); END;
"""

ALTERNATIVES: tuple[Case, ...] = (
    Case("report-before-state", "ch07_unit_a", (Edit("finish", None, _REPORT_BEFORE_STATE),),
         "Inserts the report before the fenced move to done, in the same transaction; a refused fence rolls the "
         "report back.", (), ""),
    Case("finish-update-returning", "ch07_unit_a", (Edit("finish", None, _FINISH_RETURNING),),
         "The fence and the session lookup are one UPDATE … RETURNING; no row back means the claim is not current.",
         (), ""),
    Case("claim-guarded-retry", "ch07_unit_a", (Edit("claim", None, _CLAIM_RETRYING),),
         "Looks and moves in two transactions: the guarded move (row count checked) loses a race safely, and the "
         "claim looks again.", (), ""),
    Case("claims-table", "ch07_unit_a", (
        Edit("schema", "CREATE TABLE IF NOT EXISTS report (", _CLAIMS_TABLE + "CREATE TABLE IF NOT EXISTS report ("),
        Edit("claim", None, _CLAIM_INTO_TABLE),
        Edit("finish", None, _FINISH_BY_CLAIMS_TABLE),
    ), "Claims are kept in a table of their own too (work, generation, worker); finish fences on a join with it.",
       (), ""),
    Case("admit-insert-on-conflict", "ch07_unit_a", (Edit("admit", None, _ADMIT_ON_CONFLICT),),
         "Admits with INSERT … ON CONFLICT DO NOTHING RETURNING, then classifies a duplicate.", (), ""),
    Case("claim-update-returning", "ch07_unit_a", (Edit("claim", None, _CLAIM_RETURNING),),
         "Claims with a single UPDATE … RETURNING statement.", (), ""),
    Case("report-by-trigger", "ch07_unit_a", (
        Edit("schema", ADMITTED_AT, _TRIGGER_SCHEMA),
        Edit("finish", None, _FINISH_BY_TRIGGER),
    ), "A trigger writes the report when work becomes done; finish is one UPDATE.", (), ""),
    Case("schema-with-extras", "ch07_unit_a", (
        Edit("schema", ADMITTED_AT,
             ADMITTED_AT[:-3] + ",\n"
             "    received_at TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now')),\n"
             "    priority   INTEGER NOT NULL DEFAULT 0\n);\n"
             "CREATE INDEX IF NOT EXISTS work_by_state ON work (state, session_id);"),
    ), "Extra columns and an index the observer does not read.", (), ""),
    Case("outbox-view", "ch07_unit_a", (
        Edit("schema", "    UNIQUE (work_id, generation)\n);\n",
             "    UNIQUE (work_id, generation)\n);\n"
             "CREATE VIEW IF NOT EXISTS outbox AS\n"
             "    SELECT * FROM report WHERE delivery IN ('pending', 'sending', 'unknown');\n"),
    ), "A view named outbox over the report table: it has every report column, and holds no rows of its own.",
         (), ""),
    Case("finish-raises-its-own-error", "ch07_unit_a", (
        Edit("finish", "def finish(queue, assignment, result):\n",
             "class NotRunning(Exception):\n    \"\"\"finish was asked to complete work this claim does not hold.\"\"\"\n\n\n"
             "def finish(queue, assignment, result):\n"),
        Edit("finish", "raise FenceError(f\"work {work_id!r} is not running under {assignment.worker_id!r}'s claim \"\n"
                       "                             f\"of generation {generation}\")",
             "raise NotRunning(work_id)"),
    ), "finish refuses a claim that is not current with an exception class of its own.", (), ""),
    Case("requeue-defers-running-work", "ch07_unit_b", (
        Edit("requeue", "    with queue.store.transaction() as tx:\n",
             "    with queue.store.transaction() as tx:\n"
             "        found = tx.execute(\"SELECT state FROM work WHERE work_id = ?\", (work_id,)).fetchone()\n"
             "        if found is not None and found[0] == \"running\":\n"
             "            raise NotImplementedError(\"taking over running work needs chapter 12\")\n"),
    ), "requeue says running work cannot be taken over yet with NotImplementedError; other work as usual.", (), ""),
    Case("delivery-marks-unknown-first", "ch07_unit_b", (Edit("deliver_one", None, DELIVER_PESSIMISTIC),),
         "Claims the report with one UPDATE … RETURNING, marks it 'unknown' before sending (pessimistic), takes the "
         "oldest report that is due (by rowid alone), and settles it in one update from 'unknown'.", (), ""),
    Case("text-ids", "ch07_unit_a", (
        Edit("schema", None, _TEXT_ID_SCHEMA),
        Edit("admit", """        work_id = tx.execute(
            "INSERT INTO work (source_id, session_id, text) VALUES (?, ?, ?)", (source_id, session_id, text)
        ).lastrowid""", """        work_id = f"w-{uuid.uuid4().hex}"
        tx.execute("INSERT INTO work (work_id, source_id, session_id, text) VALUES (?, ?, ?, ?)",
                   (work_id, source_id, session_id, text))"""),
        Edit("admit", "def admit(", "import uuid\n\n\ndef admit("),
        Edit("claim", "ORDER BY work_id LIMIT 1", "ORDER BY admitted_at, rowid LIMIT 1"),
        Edit("finish", 'report_id=f"r-{work_id}-{generation}",', "report_id=str(uuid.uuid4()),"),
    ), "Work ids are text (w-<uuid>) in a TEXT primary key and report ids are fresh UUIDs, so every run names "
       "them anew; claim takes the request admitted first by its admission time.", (), ""),
    Case("finish-savepoint-dataclass", "ch07_unit_a", (
        Edit("finish", None, _FINISH_IN_SAVEPOINT),
        Edit("finish", "def finish(queue, assignment, result):\n", _FINISH_HELPERS),
    ), "finish's cell has postponed annotations, a frozen dataclass and a helper of its own, and works inside an "
       "explicit SAVEPOINT it rolls back to before raising FenceError.", (), ""),
    Case("schedule-table", "ch07_unit_b", (
        Edit("schema", "    UNIQUE (work_id, generation)\n);\n", SCHEDULE_TABLE),
        Edit("finish", REPORT_INSERTED, REPORT_INSERTED +
             "        tx.execute(\"INSERT INTO schedule (report_id) VALUES (?)\", (report.report_id,))\n"),
        Edit("deliver_one", None, DELIVER_BY_SCHEDULE),
    ), "A delivery schedule (tries, due) in a table of its own: finish gives each report a row there, and "
       "deliver_one joins it, so a report without its schedule row is never sent.", (), ""),
    Case("chat-hold-table", "ch07_unit_b", (
        Edit("schema", "    UNIQUE (work_id, generation)\n);\n", CHAT_HOLD_TABLE),
        Edit("deliver_one", None, DELIVER_WITH_CHAT_HOLDS),
    ), "Chats that asked to wait are kept in a table of their own (chat, the report it waits for): a retryable "
       "refusal holds the chat, any other outcome frees it, and deliver_one takes only reports of free chats or the "
       "report a chat waits for. A nested helper frees a chat, and one update settles every outcome.",
       (), ""),
    Case("chat-numbered-by-inserts", "ch07_unit_b", (
        Edit("schema", "    receipt    TEXT,\n    UNIQUE (work_id, generation)\n);\n", CHAT_SEQ_COLUMN),
        Edit("finish", REPORT_INSERTED, CHAT_SEQ_NUMBERED),
        Edit("deliver_one", *CHAT_SEQ_EARLIER),
    ), "finish numbers each report within its chat (chat_seq, a column of the learner's own), and deliver_one holds "
       "a report behind the lower numbers of its chat, not behind lower rowids.", (), ""),
    Case("fail-attempt-returning", "ch07_unit_b", (Edit("fail_attempt", None, FAIL_ATTEMPT_RETURNING),),
         "fail_attempt fences and counts the attempt in one UPDATE … RETURNING, and stores the apology before the "
         "move to failed, in the same transaction.", (), ""),
    Case("retry-wakes-when-idle", "ch07_unit_b", (Edit("work_once_retrying", None, WORK_ONCE_WAKING_ONE),),
         "work_once_retrying claims first, and wakes one waiting request (the one due the longest) only when "
         "nothing is pending.", (), ""),
    Case("state-machine-triggers", "ch07_unit_a", (
        Edit("schema", "    UNIQUE (work_id, generation)\n);\n", _STATE_MACHINE_TRIGGERS),
    ), "Triggers refuse every move of work and of a report that the chapter's diagrams do not draw.", (), ""),
    Case("work-counter-renamed", "ch07_unit_b", (
        Edit("schema", "    attempts   INTEGER NOT NULL DEFAULT 0,\n    due_at     REAL NOT NULL DEFAULT 0,\n    error",
             "    tries      INTEGER NOT NULL DEFAULT 0,\n    due_at     REAL NOT NULL DEFAULT 0,\n    error"),
        Edit("fail_attempt", "\"SELECT attempts, session_id FROM work \"", "\"SELECT tries AS attempts, session_id FROM work \""),
        Edit("fail_attempt", "SET state = 'waiting', attempts = ?", "SET state = 'waiting', tries = ?"),
        Edit("fail_attempt", "SET state = 'failed', attempts = ?", "SET state = 'failed', tries = ?"),
    ), "The work table counts model attempts in a column named tries, a name the chapter leaves to the learner.",
       (), ""),
    Case("refusal-lists-open-states", "ch07_unit_a", (
        Edit("refusal", "WHERE state NOT IN ('done', 'failed')\")", "WHERE state IN ('pending', 'running', 'waiting', 'needs_person')\")"),
        Edit("refusal", "WHERE state NOT IN ('done', 'failed') AND session_id = ?",
             "WHERE session_id = ? AND state IN ('pending', 'running', 'waiting', 'needs_person')"),
    ), "refusal names the states that can still finish instead of the two that cannot.", (), ""),
)
