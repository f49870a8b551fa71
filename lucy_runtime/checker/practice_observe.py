"""The practice rows' observer: what a fresh process finds in the learner's tables and a fake's own log.

Run as ``python -m lucy_runtime.checker.practice_observe`` with a JSON list of
``{"db": …, "log": …}`` on standard input. It never imports learner code: the outbox
and the ledger are read from the database file, and the broker's messages, the
seats and the case service's actions from the log file only that fake writes.
"""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
from contextlib import closing
from dataclasses import dataclass, field

from ..practice.service_log import read_rows

_LEARNER_TABLES = {"outbox": ("row_id", "payload", "status"), "ledger": ("case_id", "intent", "receipt")}


def _learner_rows(db: str, problems: list[str]) -> dict[str, list[dict]]:
    found: dict[str, list[dict]] = {name: [] for name in _LEARNER_TABLES}
    if not os.path.exists(db):
        problems.append("the database file does not exist: nothing was ever committed to it")
        return found
    with closing(sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=10)) as conn:
        for table, columns in _LEARNER_TABLES.items():
            try:
                rows = conn.execute(f"SELECT {', '.join(columns)} FROM {table} ORDER BY rowid").fetchall()
            except sqlite3.OperationalError as error:
                problems.append(f"the {table} table cannot be read ({error})")
                continue
            found[table] = [dict(zip(columns, row)) for row in rows]
    return found


def snapshot(db: str, log: str) -> dict:
    problems: list[str] = []
    tables = _learner_rows(db, problems)
    return {
        "outbox": tables["outbox"], "ledger": tables["ledger"], "problems": problems,
        "messages": [dict(zip(("offset", "key", "body"), r))
                     for r in read_rows(log, "SELECT offset, key, body FROM message ORDER BY offset")],
        "publishes": [k for (k,) in read_rows(log, "SELECT key FROM request ORDER BY seq")]
        if read_rows(log, "SELECT name FROM sqlite_master WHERE name = 'message'") else [],
        "seats": [dict(zip(("seat_id", "workspace_id", "user_id", "key"), r)) for r in read_rows(
            log, "SELECT seat_id, workspace_id, user_id, idempotency_key FROM seat ORDER BY rowid")],
        "posts": [dict(zip(("user_id", "key", "behaviour", "status"), r)) for r in read_rows(
            log, "SELECT user_id, idempotency_key, behaviour, status FROM post ORDER BY seq")],
        "actions": [dict(zip(("receipt_id", "key"), r)) for r in read_rows(
            log, "SELECT receipt_id, key FROM action ORDER BY rowid")],
        "case_requests": [dict(zip(("verb", "key"), r)) for r in read_rows(
            log, "SELECT verb, key FROM request ORDER BY seq")]
        if read_rows(log, "SELECT name FROM sqlite_master WHERE name = 'action'") else [],
    }


@dataclass(frozen=True)
class PracticeSnapshot:
    outbox: list[dict]
    ledger: list[dict]
    messages: list[dict]
    publishes: list[str]
    seats: list[dict]
    posts: list[dict]
    actions: list[dict]
    case_requests: list[dict]
    problems: list[str] = field(default_factory=list)

    def row(self, row_id: str) -> dict | None:
        return next((r for r in self.outbox if r["row_id"] == row_id), None)

    def messages_for(self, row_id: str) -> int:
        """Messages that carry this outbox row: under its key, or with its payload under another key."""
        row = self.row(row_id)
        return sum(1 for m in self.messages if m["key"] == row_id or (row is not None and m["body"] == row["payload"]))

    def case(self, case_id: str) -> dict | None:
        return next((r for r in self.ledger if r["case_id"] == case_id), None)

    def submits(self, key: str) -> int:
        return sum(1 for r in self.case_requests if r["verb"] == "submit" and r["key"] == key)


def observe_practice(targets: list[dict], *, timeout: float = 30.0) -> list[PracticeSnapshot]:
    """Start one fresh Python process that reads every target and reports what it found."""
    env = dict(os.environ)
    package_root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    env["PYTHONPATH"] = package_root + os.pathsep + env.get("PYTHONPATH", "")
    done = subprocess.run([sys.executable, "-B", "-m", "lucy_runtime.checker.practice_observe"],
                          input=json.dumps(targets), capture_output=True, text=True, timeout=timeout, env=env)
    if done.returncode != 0:
        raise RuntimeError(f"the observer process failed: {done.stderr.strip()[-2000:]}")
    return [PracticeSnapshot(**item) for item in json.loads(done.stdout)]


def main() -> None:
    json.dump([snapshot(t["db"], t["log"]) for t in json.load(sys.stdin)], sys.stdout)


if __name__ == "__main__":
    main()
