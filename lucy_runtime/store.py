"""Chapter 4's state store: one SQLite file, explicit transactions, versioned migrations.

What a fresh process sees when it reopens the file is exactly what was committed:
``transaction()`` commits only when its block ends normally and rolls back on any
exception, ``KeyboardInterrupt`` and ``SystemExit`` included.

Every statement sent through a transaction passes a *statement hook* first. The
runtime installs none; the checker uses it to stop a process at a chosen statement.
"""

from __future__ import annotations

import os
import re
import sqlite3
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, ContextManager, Iterable, Iterator, Protocol, Sequence, runtime_checkable

from .errors import StoreMisuse
from .fields import require_id, require_int, require_str

StatementHook = Callable[[str, str], None]
"""Called as ``hook(kind, sql)`` before a statement runs. ``kind`` is one of
``begin``, ``read``, ``write``, ``commit``, ``rollback`` or ``other``; once more, as
``committed``, just after a COMMIT has succeeded."""

_WRITE_VERBS = {"INSERT", "UPDATE", "DELETE", "REPLACE", "CREATE", "DROP", "ALTER"}
_COMMENT = re.compile(r"(--[^\n]*\n?|/\*.*?\*/)", re.S)
_WORD = re.compile(r"[A-Za-z]+")
_STRING = re.compile(r"'(?:[^']|'')*'")
_VERSION_TABLE = (
    "CREATE TABLE IF NOT EXISTS lucy_schema_version (component TEXT PRIMARY KEY, version INTEGER NOT NULL)"
)


def statement_kind(sql: str) -> str:
    """Classify one SQL statement by what it does to the file."""
    text = _COMMENT.sub(" ", sql).strip()
    first = _WORD.match(text)
    verb = first.group(0).upper() if first else ""
    if verb in _WRITE_VERBS:
        return "write"
    if verb == "WITH":
        # A common table expression may end in a write: look past the string literals.
        words = {w.upper() for w in _WORD.findall(_STRING.sub("''", text))}
        return "write" if words & _WRITE_VERBS else "read"
    if verb in {"SELECT", "VALUES", "EXPLAIN"}:
        return "read"
    if verb == "BEGIN":
        return "begin"
    if verb in {"COMMIT", "END"}:
        return "commit"
    if verb == "ROLLBACK":
        return "rollback"
    if verb == "PRAGMA" and "=" not in text:
        return "read"  # PRAGMA name and PRAGMA name(arg) report; PRAGMA name = value changes the file
    return "other"


@dataclass(frozen=True)
class Migration:
    """One numbered step of a schema. Steps run in order, each in its own transaction."""

    version: int
    name: str
    statements: tuple[str, ...]

    def __post_init__(self) -> None:
        require_int("version", self.version, minimum=1)
        require_str("name", self.name)
        if isinstance(self.statements, str) or not all(isinstance(s, str) for s in self.statements):
            raise StoreMisuse("Migration.statements must be a tuple of SQL strings, one statement each")


STORE_IDENTITY = (
    Migration(
        1,
        "the store's own random id",
        (
            """CREATE TABLE lucy_store_identity (
                   one_row  INTEGER PRIMARY KEY CHECK (one_row = 1),
                   store_id TEXT NOT NULL
               )""",
            "INSERT INTO lucy_store_identity (one_row, store_id) VALUES (1, lower(hex(randomblob(16))))",
        ),
    ),
)
"""A one-row table holding a random id, written once, with its version row, in the file it names.

A file deleted and created again under the same name gets a new id, so its ``r-1-1``
is never taken for the old file's ``r-1-1`` (``DeliveryPolicy.for_store``)."""

_process_hook: StatementHook | None = None


def set_process_hook(hook: StatementHook | None) -> None:
    """A hook for every store this process opens (the checker's children set one for their whole life)."""
    global _process_hook
    _process_hook = hook


class Transaction:
    """The handle a ``with store.transaction() as tx:`` block works with."""

    def __init__(self, store: "Store", conn: sqlite3.Connection):
        self._store = store
        self._conn = conn
        self._open = True

    def _run(self, sql: str) -> None:
        if not self._open:
            raise StoreMisuse("this transaction has ended; open a new one with store.transaction()")
        if not isinstance(sql, str):
            raise StoreMisuse(f"sql: expected a str, got {type(sql).__name__}")
        self._store._before(statement_kind(sql), sql)

    def execute(self, sql: str, params: Sequence[Any] | dict[str, Any] = ()) -> sqlite3.Cursor:
        self._run(sql)
        return self._conn.execute(sql, params)

    def executemany(self, sql: str, rows: Iterable[Sequence[Any]]) -> sqlite3.Cursor:
        self._run(sql)
        return self._conn.executemany(sql, rows)

    def execute_script(self, script: str) -> None:
        """Run several ``;``-separated statements inside this transaction, one at a time."""
        for statement in split_statements(script):
            self.execute(statement)

    def executescript(self, script: str) -> None:
        raise StoreMisuse(
            "sqlite3's executescript() commits the open transaction before it runs; "
            "use tx.execute_script(...) to keep every statement inside this transaction"
        )


def split_statements(script: str) -> list[str]:
    """Split an SQL script into complete statements (triggers with inner ``;`` stay whole)."""
    require_str("script", script)
    statements, pending = [], ""
    for line in script.splitlines(keepends=True):
        pending += line
        if sqlite3.complete_statement(pending):
            if pending.strip():
                statements.append(pending.strip())
            pending = ""
    if pending.strip():
        if _COMMENT.sub("", pending).strip():
            raise StoreMisuse(f"the script ends with an incomplete statement: {pending.strip()[:80]!r}")
    return statements


def read_only(path: str) -> sqlite3.Connection:
    """A connection of its own to the file at ``path`` that SQLite refuses to write with (``mode=ro``);
    autocommit, so a reader opens its read transaction with ``BEGIN`` where it wants one snapshot."""
    return sqlite3.connect(Path(path).resolve().as_uri() + "?mode=ro", uri=True, isolation_level=None, timeout=10)


@runtime_checkable
class StateStore(Protocol):
    """What the queue functions are given: ``Store`` (one SQLite file) or ``pg_store.PgStore`` (a server database)."""

    def transaction(self) -> ContextManager[Any]: ...

    def query(self, sql: str, params: Sequence[Any] = ()) -> Sequence[Any]: ...


class _Versioned(Protocol):
    def schema_version(self, component: str) -> int: ...

    def transaction(self) -> ContextManager[Any]: ...


class Migrating:
    """``migrate`` for a store that has ``schema_version`` and ``transaction``: SQLite's and PostgreSQL's alike."""

    def migrate(self: _Versioned, component: str, migrations: Sequence[Migration]) -> int:
        """Apply ``component``'s steps that are newer than the store has; return its version.

        Each component (sessions, the Telegram cursor, ...) keeps its own version, so
        several can share one file. A step and its version bump commit together.
        """
        versions = [m.version for m in migrations]
        if versions != sorted(set(versions)):
            raise StoreMisuse(f"migration versions must be unique and increasing, got {versions}")
        for step in migrations:
            if step.version <= self.schema_version(component):
                continue
            with self.transaction() as tx:
                for statement in step.statements:
                    tx.execute(statement)
                tx.execute(
                    "INSERT INTO lucy_schema_version (component, version) VALUES (?, ?) "
                    "ON CONFLICT (component) DO UPDATE SET version = excluded.version",
                    (component, step.version),
                )
        return self.schema_version(component)



class Store(Migrating):
    """A SQLite file opened for one process, with WAL, a busy timeout and foreign keys on."""

    def __init__(self, path: str | os.PathLike[str], *, busy_timeout_ms: int = 5000, hook: StatementHook | None = None):
        if isinstance(path, os.PathLike):
            path = os.fspath(path)
        self._path = require_str("path", path, max_bytes=4096)
        require_int("busy_timeout_ms", busy_timeout_ms, minimum=0)
        self._hook = hook
        self._in_transaction = False
        self.statements_seen = 0
        # isolation_level=None: sqlite3 opens no implicit transactions; BEGIN and COMMIT are ours.
        self._conn = sqlite3.connect(
            self._path, isolation_level=None, timeout=busy_timeout_ms / 1000, check_same_thread=False
        )
        self._conn.row_factory = sqlite3.Row
        self._conn.execute(f"PRAGMA busy_timeout = {busy_timeout_ms}")
        self._conn.execute("PRAGMA journal_mode = WAL")
        self._conn.execute("PRAGMA synchronous = FULL")
        self._conn.execute("PRAGMA foreign_keys = ON")

    @property
    def path(self) -> str:
        return self._path

    def set_hook(self, hook: StatementHook | None) -> None:
        self._hook = hook

    def _before(self, kind: str, sql: str) -> None:
        self.statements_seen += 1
        if self._hook is not None:
            self._hook(kind, sql)
        if _process_hook is not None:
            _process_hook(kind, sql)

    @contextmanager
    def transaction(self) -> Iterator[Transaction]:
        """``BEGIN IMMEDIATE`` … ``COMMIT``; ``ROLLBACK`` on any exception, then re-raise."""
        if self._conn is None:
            raise StoreMisuse("the store is closed")
        if self._in_transaction:
            raise StoreMisuse(
                "a transaction is already open on this store; finish it before opening another "
                "(nested transactions would commit the outer work early)"
            )
        self._in_transaction = True
        tx = Transaction(self, self._conn)
        try:
            self._before("begin", "BEGIN IMMEDIATE")
            self._conn.execute("BEGIN IMMEDIATE")
            try:
                yield tx
                tx._open = False
                self._before("commit", "COMMIT")
                self._conn.execute("COMMIT")
                self._before("committed", "COMMIT")
            except BaseException:
                tx._open = False
                if self._conn.in_transaction:
                    self._conn.execute("ROLLBACK")
                raise
        finally:
            tx._open = False
            self._in_transaction = False

    def query(self, sql: str, params: Sequence[Any] | dict[str, Any] = ()) -> list[sqlite3.Row]:
        """Read committed rows outside any transaction (a read cannot change the file)."""
        if self._conn is None:
            raise StoreMisuse("the store is closed")
        if statement_kind(sql) != "read":
            raise StoreMisuse("query() only reads; write inside `with store.transaction() as tx:`")
        self._before("read", sql)
        return self._conn.execute(sql, params).fetchall()

    def tables(self) -> list[str]:
        rows = self._conn.execute(
            "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' ORDER BY name").fetchall()
        return [row["name"] for row in rows]

    def schema_version(self, component: str) -> int:
        """The migration step ``component`` has reached in this file (0 when none ran)."""
        require_id("component", component)
        if not self._conn.execute("SELECT 1 FROM sqlite_master WHERE name = 'lucy_schema_version'").fetchone():
            if self._in_transaction:
                self._before("write", _VERSION_TABLE)
                self._conn.execute(_VERSION_TABLE)
            else:
                with self.transaction() as tx:
                    tx.execute(_VERSION_TABLE)
        row = self._conn.execute(
            "SELECT version FROM lucy_schema_version WHERE component = ?", (component,)
        ).fetchone()
        return row[0] if row else 0

    def store_id(self) -> str:
        """This file's random id, created the first time it is asked for and never changed afterwards."""
        self.migrate("store identity", STORE_IDENTITY)
        return str(self._conn.execute("SELECT store_id FROM lucy_store_identity").fetchone()[0])

    def close(self) -> None:
        if self._conn is not None:
            self._conn.close()
            self._conn = None  # type: ignore[assignment]  # closed: every later use fails loudly

    def __enter__(self) -> "Store":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"Store({self._path!r})"
