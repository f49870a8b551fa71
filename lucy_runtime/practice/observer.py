"""The practice rows' observer, reading side: what a fresh process finds on disk.

``lucy_runtime.checker.practice_observe.observe_practice`` runs this module as
``python -m lucy_runtime.practice.observer`` with a JSON list of ``{"db": …, "log": …}``
on standard input. It never imports learner code nor the checker: the outbox and the
ledger are read from the database file, and the broker's messages, the seats and the
case service's actions from the log file only that fake writes.
"""

from __future__ import annotations

import hashlib
import json
import os
import sqlite3
import sys
from contextlib import closing

from ..fakes.service_log import read_rows

_LEARNER_TABLES = {"outbox": ("row_id", "payload", "status"), "ledger": ("case_id", "intent", "receipt")}
"""The columns the practice notebook names. A learner's table may have more (an attempt count, a time):
``_database_digest`` sees those, and every other table of the learner's own."""


def _learner_rows(conn: sqlite3.Connection, problems: list[str]) -> dict[str, list[dict]]:
    found: dict[str, list[dict]] = {name: [] for name in _LEARNER_TABLES}
    for table, named in _LEARNER_TABLES.items():
        try:
            cursor = conn.execute(f'SELECT * FROM "{table}" ORDER BY rowid')
        except sqlite3.OperationalError as error:
            problems.append(f"the {table} table cannot be read ({error})")
            continue
        columns = [d[0] for d in cursor.description]
        missing = [name for name in named if name not in columns]
        if missing:
            problems.append(f"the {table} table has no {', '.join(missing)} column")
            continue
        found[table] = [{name: row[columns.index(name)] for name in named} for row in cursor.fetchall()]
    return found


def _database_digest(conn: sqlite3.Connection) -> str:
    """One digest of every table of the learner's database, rows in a stable order: equal for two files only
    when they hold the same tables with the same rows."""
    digest = hashlib.sha256()
    names = [n for (n,) in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table' "
                                        "AND name NOT LIKE 'sqlite_%' ORDER BY name")]
    for name in names:
        rows = sorted(repr(tuple(row)) for row in conn.execute(f'SELECT * FROM "{name}"'))
        digest.update(repr((name, rows)).encode("utf-8", "surrogatepass"))
    return digest.hexdigest()


def _learner_database(db: str, problems: list[str]) -> tuple[dict[str, list[dict]], str | None]:
    """The learner's named tables and the digest of the whole file, read through one connection; no digest
    when there is no file."""
    if not os.path.exists(db):
        problems.append("the database file does not exist: nothing was ever committed to it")
        return {name: [] for name in _LEARNER_TABLES}, None
    with closing(sqlite3.connect(db, timeout=10)) as conn:  # not mode=ro: see service_log.read_rows
        return _learner_rows(conn, problems), _database_digest(conn)


def _has(log: str, table: str) -> bool:
    return bool(read_rows(log, f"SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = '{table}'"))


def snapshot(db: str, log: str) -> dict:
    """The learner's two tables, and whichever fake's record ``log`` holds (the others read as empty)."""
    problems: list[str] = []
    tables, database = _learner_database(db, problems)
    broker, cases = _has(log, "message"), _has(log, "action")
    return {
        "outbox": tables["outbox"], "ledger": tables["ledger"], "problems": problems,
        "database": database,
        "messages": [dict(zip(("offset", "key", "body"), r))
                     for r in read_rows(log, "SELECT offset, key, body FROM message ORDER BY offset")],
        "publishes": [dict(zip(("key", "body"), r)) for r in read_rows(
            log, "SELECT key, body FROM request ORDER BY seq")] if broker else [],
        "seats": [dict(zip(("seat_id", "workspace_id", "user_id", "key"), r)) for r in read_rows(
            log, "SELECT seat_id, workspace_id, user_id, idempotency_key FROM seat ORDER BY rowid")],
        "posts": [dict(zip(("user_id", "key", "behaviour", "status"), r)) for r in read_rows(
            log, "SELECT user_id, idempotency_key, behaviour, status FROM post ORDER BY seq")],
        "actions": [dict(zip(("receipt_id", "key"), r)) for r in read_rows(
            log, "SELECT receipt_id, key FROM action ORDER BY rowid")],
        "case_requests": [dict(zip(("verb", "key"), r)) for r in read_rows(
            log, "SELECT verb, key FROM request ORDER BY seq")] if cases else [],
    }


def main() -> None:
    json.dump([snapshot(t["db"], t["log"]) for t in json.load(sys.stdin)], sys.stdout)


if __name__ == "__main__":
    main()
