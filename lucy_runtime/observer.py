"""The independent observer's reading side: what a fresh process finds on disk.

``lucy_runtime.checker.observe.observe_many`` runs this file as a script,
``python -I -S -B lucy_runtime/observer.py``, with a JSON list of ``{"db": …, "log": …, "calls": …}``
on standard input; it prints one snapshot per entry. It never imports learner code,
nor anything else of this package: it needs the standard library alone, so a fresh
interpreter without ``site`` starts it in a fraction of the checker's import time
(every row starts one or more). It trusts
nothing a learner's objects say: the work and report tables are found by their
columns in the database file, the accepted sends are read from the fake service's own
log, and the model calls are counted in the invocation log.
"""

from __future__ import annotations

import json
import os
import sqlite3
import sys
from collections import namedtuple
from contextlib import closing

WORK_COLUMNS = ("work_id", "source_id", "session_id", "text", "state")
"""Columns the observer reads from the learner's work table (other columns are the learner's own)."""

REPORT_COLUMNS = ("report_id", "work_id", "generation", "session_id", "body", "delivery")
"""Columns the observer reads from the learner's report table."""

_OPTIONAL_WORK = ("generation", "worker_id", "attempts", "error", "error_at")
_OPTIONAL_REPORT = ("receipt",)


def _plain(value):
    return value if isinstance(value, (int, float, str)) or value is None else repr(value)


_Candidate = namedtuple("_Candidate", "name kind columns")  # kind: 'table' or 'view'


def find_table(conn: sqlite3.Connection, required: tuple[str, ...], what: str, problems: list[str],
                ambiguous: list[str]):
    """The learner's ``what`` table: the one relation with every required column.

    Base tables win over views (a view such as ``outbox`` shows rows of a table, it
    holds none), and among several base tables the one named ``what`` wins. When
    that still leaves more than one, the observer says which it found and reads none.
    """
    found = []
    for name, kind in conn.execute(
            "SELECT name, type FROM sqlite_master WHERE type IN ('table', 'view') "
            "AND name NOT LIKE 'sqlite_%' AND name NOT LIKE 'lucy_%' ORDER BY name"):
        columns = tuple(r[1] for r in conn.execute(f'PRAGMA table_info("{name}")'))
        if all(c in columns for c in required):
            found.append(_Candidate(name, kind, columns))
    if not found:
        problems.append(f"no {what} table: none has all of the columns {', '.join(required)}")
        return None, []
    candidates = [c for c in found if c.kind == "table"] or found
    if len(candidates) > 1:
        candidates = [c for c in candidates if c.name == what] or candidates
    if len(candidates) > 1:
        kind = "tables" if candidates[0].kind == "table" else "views"
        listed = "; ".join(f"{c.name} ({', '.join(c.columns)})" for c in candidates)
        views = [c.name for c in found if c.kind == "view" and c not in candidates]
        problems.append(f"{len(candidates)} {kind} that could each be the {what} table, and none is named "
                        f"{what!r}: {listed}" + (f" (the views {', '.join(views)} were set aside)" if views else ""))
        ambiguous.append(what)
        return None, []
    return candidates[0].name, list(candidates[0].columns)


def _rows(conn, table, columns, wanted):
    chosen = [c for c in wanted if c in columns]
    query = f'SELECT {", ".join(chosen)} FROM "{table}"'
    try:
        cursor = conn.execute(query + " ORDER BY rowid")
    except sqlite3.OperationalError:  # a view, or a WITHOUT ROWID table: no insertion order to read
        cursor = conn.execute(query)
    return [{c: _plain(v) for c, v in zip(chosen, row)} for row in cursor]


def snapshot(db: str, log: str | None = None, calls: str | None = None) -> dict:
    result: dict = {"work": [], "reports": [], "accepted": [], "requests": [], "model_calls": 0,
                    "problems": [], "ambiguous": [], "tables": {}}
    problems, ambiguous = result["problems"], result["ambiguous"]
    if not os.path.exists(db):
        problems.append("the database file does not exist: nothing was ever committed to it")
    else:
        with closing(sqlite3.connect(db, timeout=10)) as conn:
            table, columns = find_table(conn, WORK_COLUMNS, "work", problems, ambiguous)
            if table:
                result["tables"]["work"] = table
                result["work"] = _rows(conn, table, columns, WORK_COLUMNS + _OPTIONAL_WORK)
            table, columns = find_table(conn, REPORT_COLUMNS, "report", problems, ambiguous)
            if table:
                result["tables"]["report"] = table
                result["reports"] = _rows(conn, table, columns, REPORT_COLUMNS + _OPTIONAL_REPORT)
    if log and os.path.exists(log):
        with closing(sqlite3.connect(log, timeout=10)) as conn:
            result["accepted"] = [
                dict(zip(("remote_id", "report_id", "session_id", "body", "idempotency_key"), row))
                for row in conn.execute(
                    "SELECT remote_id, report_id, session_id, body, idempotency_key FROM accepted ORDER BY rowid")
            ]
            result["requests"] = [
                dict(zip(("seq", "report_id", "idempotency_key", "behaviour"), row))
                for row in conn.execute("SELECT seq, report_id, idempotency_key, behaviour FROM request ORDER BY seq")
            ]
    if calls and os.path.exists(calls):
        with open(calls, "rb") as fh:
            result["model_calls"] = sum(1 for _ in fh)
    return result


def main() -> None:
    targets = json.load(sys.stdin)
    json.dump([snapshot(t["db"], t.get("log"), t.get("calls")) for t in targets], sys.stdout)


if __name__ == "__main__":
    main()
