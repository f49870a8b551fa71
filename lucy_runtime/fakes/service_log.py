"""A fake service's own record: a SQLite file the client never writes to.

Every call opens the file afresh, does its work in one immediate transaction and
closes it, so the record survives the death of any client process and a fresh
process can read it without trusting anything the client says.

The log keeps SQLite's rollback journal, not WAL: a reader then creates no file. Under
grading the observer runs as another user than the child that writes the log, and a
WAL reader would leave ``-wal`` and ``-shm`` files the next writer cannot open.
"""

from __future__ import annotations

import os
import sqlite3
from contextlib import closing, contextmanager
from typing import Callable, Iterator

from ..fields import require_str

Probe = Callable[[str, str], None]
"""``probe(kind, description)``: told "send" before a request reaches the service and
"accepted" once the service has committed its effect. The checker passes its own."""


def no_probe(kind: str, description: str) -> None:
    return None


class ServiceLog:
    def __init__(self, path: str | os.PathLike[str], schema: tuple[str, ...]):
        self.path = require_str("log_path", os.fspath(path), max_bytes=4096)
        with self.transaction() as conn:
            for statement in schema:
                conn.execute(statement)

    @contextmanager
    def transaction(self) -> Iterator[sqlite3.Connection]:
        conn = sqlite3.connect(self.path, isolation_level=None, timeout=10)
        try:
            conn.execute("PRAGMA synchronous = FULL")
            conn.execute("BEGIN IMMEDIATE")
            try:
                yield conn
            except BaseException:
                conn.execute("ROLLBACK")
                raise
            conn.execute("COMMIT")
        finally:
            conn.close()


def read_rows(path: str | os.PathLike[str], sql: str) -> list[tuple]:
    """Rows of a SQLite file read by a connection of its own ([] when the file or the table was never made).

    Not ``mode=ro``: on a WAL file (the learner's store) a read-only connection cannot
    remove the ``-wal`` and ``-shm`` files it opened; a plain one, the last to close, does.
    """
    path = os.fspath(path)
    if not os.path.exists(path):
        return []
    with closing(sqlite3.connect(path, timeout=10)) as conn:
        try:
            return conn.execute(sql).fetchall()
        except sqlite3.OperationalError:  # the table was never created: the service never ran
            return []
