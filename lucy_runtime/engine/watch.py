"""The parent's look at a run's database file, for writes that bypass the store.

Between two reports the parent reads ``PRAGMA data_version`` of the scenario's
database. The file may change only across a COMMIT that was reported through the
store; any other change is a write that bypassed ``queue.store``. SQLite's own count of
committed transactions (in the WAL index) tells how many commits one reported COMMIT let through.
"""

from __future__ import annotations

import os
import sqlite3
import struct

_versions: dict[str, sqlite3.Connection] = {}


def data_version(db: str) -> int | None:
    """``PRAGMA data_version`` of ``db``, through one read-only connection per file; None before the WAL files exist."""
    # Read-only, and only once the child's own connection has made the WAL files: a connection
    # of the parent's must never create a file the child (another user, when sandboxed) then cannot write.
    if not all(os.path.exists(db + suffix) for suffix in ("", "-wal", "-shm")):
        return None
    try:
        conn = _versions.get(db)
        if conn is None:
            conn = _versions[db] = sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=5,
                                                   isolation_level=None, check_same_thread=False)
        return conn.execute("PRAGMA data_version").fetchone()[0]
    except sqlite3.Error:
        return None


def commits(db: str) -> int | None:
    """How many write transactions have been committed to ``db``, by any connection.

    The WAL index (the ``-shm`` file) starts with a header that SQLite keeps twice, in the
    machine's byte order; its third word counts committed transactions and survives
    checkpoints. None while the header is missing or being rewritten.
    """
    try:
        with open(db + "-shm", "rb") as fh:
            header = fh.read(_WAL_INDEX_HEADER)
    except OSError:
        return None
    if len(header) < _WAL_INDEX_HEADER:
        return None
    first, second = (struct.unpack_from("=I", header, at)[0] for at in (8, 8 + _WAL_INDEX_HEADER // 2))
    return first if first == second else None


_WAL_INDEX_HEADER = 96
"""Two copies of SQLite's 48-byte WalIndexHdr: iVersion, unused, iChange, ..."""


def forget(db: str) -> None:
    """Close the connection ``data_version`` kept for ``db``: its run has ended."""
    conn = _versions.pop(db, None)
    if conn is not None:
        conn.close()
