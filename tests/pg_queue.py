"""The reference queue translated to PostgreSQL: the one place the translation lives.

The reference ``admit``, ``refusal``, ``claim`` and ``finish`` are taken from the
solution cells of ``source/`` (their only copy) and run unchanged on a ``PgStore``,
which takes SQLite's ``?`` placeholders and ``lastrowid``. What does not carry over
is written here, and nowhere else:

* the schema: ``INTEGER PRIMARY KEY AUTOINCREMENT`` becomes an identity column, and
  ``REAL`` a ``DOUBLE PRECISION``, SQLite's clock in a default PostgreSQL's; a one-row
  table, ``admission_gate``, is added;
* ``gated_refusal``: the reference ``refusal`` after ``SELECT … FOR UPDATE`` of the
  gate row, so admissions that count and then insert run one at a time (on SQLite,
  ``BEGIN IMMEDIATE`` did that for every writer);
* ``claim_skip_locked``: the reference claim with ``FOR UPDATE SKIP LOCKED``, so a
  worker passes over a row another worker is claiming instead of waiting for it.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Callable

from lucy_runtime.notebooks.notebook import learner_implementation
from lucy_runtime.work import Assignment

REPO = Path(__file__).resolve().parent.parent
QUEUE_CELLS = ("imports", "schema", "admit", "refusal", "claim", "finish")

GATE = """
CREATE TABLE IF NOT EXISTS admission_gate (gate TEXT PRIMARY KEY);
INSERT INTO admission_gate (gate) VALUES ('work') ON CONFLICT (gate) DO NOTHING;
"""


def reference() -> dict:
    """A namespace with Unit A's reference queue in it, taken from source/."""
    cells = dict(learner_implementation(REPO / "source"))
    namespace: dict = {"__name__": "reference_on_postgres"}
    for name in QUEUE_CELLS:
        exec(compile(cells[f"ch07_unit_a:{name}"], f"ch07_unit_a:{name}", "exec"), namespace)
    return namespace


def postgres_schema(sqlite_schema: str) -> str:
    """The reference schema in PostgreSQL's words."""
    schema = re.sub(r"INTEGER\s+PRIMARY\s+KEY\s+AUTOINCREMENT", "BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY",
                    sqlite_schema, flags=re.I)
    schema = re.sub(r"\bREAL\b", "DOUBLE PRECISION", schema)
    # SQLite's "seconds since the epoch, now" is PostgreSQL's EXTRACT(EPOCH …).
    schema = re.sub(r"\(\(julianday\('now'\)\s*-\s*2440587\.5\)\s*\*\s*86400\.0\)",
                    "(EXTRACT(EPOCH FROM clock_timestamp()))", schema)
    assert "AUTOINCREMENT" not in schema.upper() and "JULIANDAY" not in schema.upper(), \
        "a column the translation does not know"
    return schema + GATE


def create_schema(namespace: dict, store) -> None:
    with store.transaction() as tx:
        tx.execute_script(postgres_schema(namespace["WORK_SCHEMA"]))


def gated_refusal(refusal: Callable) -> Callable:
    """``refusal`` after the gate row is locked: the second admission waits until the first commits."""
    def refusal_behind_the_gate(tx, queue, session_id):
        tx.execute("SELECT gate FROM admission_gate WHERE gate = 'work' FOR UPDATE")
        return refusal(tx, queue, session_id)

    return refusal_behind_the_gate


def claim_skip_locked(queue, worker_id):
    """The reference claim, with the oldest pending row no other transaction has locked."""
    with queue.store.transaction() as tx:
        row = tx.execute(
            "SELECT work_id, source_id, session_id, text, generation FROM work "
            "WHERE state = 'pending' ORDER BY work_id LIMIT 1 FOR UPDATE SKIP LOCKED"
        ).fetchone()
        if row is None:
            return None
        moved = tx.execute(
            "UPDATE work SET state = 'running', worker_id = ? WHERE work_id = ? AND state = 'pending'",
            (worker_id, row["work_id"]),
        ).rowcount
    if moved != 1:
        return None
    return Assignment(row["work_id"], row["source_id"], row["session_id"], row["text"], worker_id, row["generation"])
