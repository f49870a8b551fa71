"""The state store on PostgreSQL: the same protocol as ``store.Store``, for several workers on a server.

Chapter 7 runs on one SQLite file, where ``BEGIN IMMEDIATE`` takes the file's single
write lock and so serializes every writer. Chapter 12 runs several workers against
one server database. ``PgStore`` gives their code the handle it already knows:

* ``with store.transaction() as tx:`` runs ``BEGIN`` … ``COMMIT`` on one connection,
  and ``ROLLBACK`` on any exception (then re-raises it);
* ``tx.execute(sql, params)`` takes the ``?`` placeholders SQLite takes, and returns a
  cursor with ``fetchone()``, ``fetchall()``, ``rowcount`` and ``lastrowid``; a row is
  read by position or by column name, as a ``sqlite3.Row`` is;
* ``store.query(sql, params)`` reads committed rows outside any transaction;
* the statement hook (``set_hook``) sees every statement first, as in ``store.Store``.

What does not carry over is the lock. A PostgreSQL transaction at the default
isolation, READ COMMITTED, does not stop another transaction from writing at the same
time. Two admissions can both count the unfinished work, both see room, and both
insert. Code that must decide from a count takes a lock first (a locked counter row,
``SELECT … FOR UPDATE``), or runs at ``isolation="serializable"`` and retries the
transaction that the server cancels (``psycopg.errors.SerializationFailure``).
``chapters/ch07/manuscript.md`` (*Going further: the same queue on PostgreSQL*) and
``tests/test_pg_queue.py`` show both.
"""

from __future__ import annotations

import re
from contextlib import contextmanager
from typing import Any, Iterable, Iterator, Sequence

import psycopg
from psycopg.rows import RowMaker

from . import store as _store
from .errors import StoreMisuse, UnknownName
from .fields import require_str
from .store import Migration, StatementHook, split_statements, statement_kind

PG_STORE_IDENTITY = (
    Migration(1, "the store's own random id", (
        "CREATE TABLE lucy_store_identity (one_row INTEGER PRIMARY KEY CHECK (one_row = 1), store_id TEXT NOT NULL)",
        "INSERT INTO lucy_store_identity (one_row, store_id) VALUES (1, replace(gen_random_uuid()::text, '-', ''))",
    )),
)
"""``store.STORE_IDENTITY`` in PostgreSQL's words."""
ISOLATION_LEVELS = {"read committed": "READ COMMITTED", "repeatable read": "REPEATABLE READ",
                    "serializable": "SERIALIZABLE"}
_PIECES = re.compile(r"('(?:[^']|'')*'|\"(?:[^\"]|\"\")*\"|--[^\n]*|/\*.*?\*/|\?|%)", re.S)


def placeholders(sql: str) -> str:
    """SQLite's ``?`` placeholders as psycopg's ``%s`` outside quotes and comments; every literal ``%`` as ``%%``."""
    def swap(match: re.Match[str]) -> str:
        piece = match.group(0)
        return {"?": "%s"}.get(piece, piece.replace("%", "%%"))

    return _PIECES.sub(swap, require_str("sql", sql, max_bytes=1_000_000))


def plain_url(url: str) -> str:
    """A SQLAlchemy URL (``postgresql+psycopg://…``) as libpq takes it (``postgresql://…``)."""
    require_str("url", url, max_bytes=4096)
    return re.sub(r"^postgres(?:ql)?\+\w+://", "postgresql://", url)


class Row(tuple):
    """One row, read by position (``row[0]``) or by column name (``row["work_id"]``), like ``sqlite3.Row``."""

    _names: tuple[str, ...] = ()

    def __getitem__(self, key: Any) -> Any:
        if isinstance(key, str):
            try:
                return tuple.__getitem__(self, self._names.index(key))
            except ValueError:
                raise UnknownName(f"no column named {key!r}; the row has {', '.join(self._names)}") from None
        return tuple.__getitem__(self, key)

    def keys(self) -> list[str]:
        return list(self._names)


def _row_factory(cursor: psycopg.Cursor[Any]) -> RowMaker[Row]:
    names = tuple(column.name for column in cursor.description or ())
    kind = type("Row", (Row,), {"_names": names, "__slots__": ()})
    return lambda values: kind(values)


class Cursor:
    """What ``tx.execute`` returns: the rows of the statement, its row count, and ``lastrowid``."""

    def __init__(self, transaction: "Transaction", cursor: psycopg.Cursor[Row], verb: str):
        self._transaction = transaction
        self._cursor = cursor
        self._verb = verb

    def fetchone(self) -> Row | None:
        return self._cursor.fetchone() if self._cursor.description else None

    def fetchall(self) -> list[Row]:
        return self._cursor.fetchall() if self._cursor.description else []

    def __iter__(self) -> Iterator[Row]:
        return iter(self.fetchall())

    @property
    def rowcount(self) -> int:
        return self._cursor.rowcount

    @property
    def lastrowid(self) -> int | None:
        """The id the last INSERT took from a sequence (an identity column), as SQLite's ``lastrowid``.

        Read it straight after the INSERT, as with sqlite3. ``None`` when the statement was
        not an INSERT or used no sequence."""
        if self._verb != "INSERT":
            return None
        return self._transaction._last_value()


class Transaction:
    """The handle a ``with store.transaction() as tx:`` block works with."""

    def __init__(self, store: "PgStore", conn: psycopg.Connection[Row]):
        self._store = store
        self._conn = conn
        self._open = True

    def execute(self, sql: str, params: Sequence[Any] = ()) -> Cursor:
        if not self._open:
            raise StoreMisuse("this transaction has ended; open a new one with store.transaction()")
        if isinstance(params, dict) or not isinstance(params, (list, tuple)):
            raise StoreMisuse(f"params: expected a tuple or list for the ? placeholders, got {type(params).__name__}")
        self._store._before(statement_kind(sql), sql)
        cursor = self._conn.cursor()
        cursor.execute(placeholders(sql), tuple(params))
        words = re.findall(r"[A-Za-z]+", _store._COMMENT.sub(" ", sql))
        return Cursor(self, cursor, words[0].upper() if words else "")

    def executemany(self, sql: str, rows: Iterable[Sequence[Any]]) -> Cursor:
        last: Cursor | None = None
        for params in rows:
            last = self.execute(sql, params)
        if last is None:
            raise StoreMisuse("executemany() was given no rows")
        return last

    def execute_script(self, script: str) -> None:
        """Run several ``;``-separated statements inside this transaction, one at a time."""
        for statement in split_statements(script):
            self.execute(statement)

    def _last_value(self) -> int | None:
        with self._conn.cursor() as cursor:
            cursor.execute("SAVEPOINT lucy_lastval")
            try:
                cursor.execute("SELECT lastval()")
                row = cursor.fetchone()
            except psycopg.errors.ObjectNotInPrerequisiteState:  # no sequence was used in this session
                cursor.execute("ROLLBACK TO SAVEPOINT lucy_lastval")
                return None
            cursor.execute("RELEASE SAVEPOINT lucy_lastval")
        return None if row is None else int(row[0])


class PgStore(_store.Migrating):
    """One connection to a PostgreSQL database, for one worker (a thread or a process of its own).

    ``url`` is a ``postgresql://`` address (``postgresql+psycopg://`` is taken too).
    ``isolation`` is the level every transaction begins with: ``read committed`` (the
    server's default), ``repeatable read`` or ``serializable``.
    """

    def __init__(self, url: str, *, isolation: str = "read committed", hook: StatementHook | None = None,
                 connect_timeout: int = 10):
        self._url = plain_url(url)
        if isolation not in ISOLATION_LEVELS:
            raise StoreMisuse(f"isolation: expected one of {sorted(ISOLATION_LEVELS)}, got {isolation!r}")
        self.isolation = isolation
        self._hook = hook
        self._in_transaction = False
        self.statements_seen = 0
        # autocommit: psycopg opens no implicit transactions; BEGIN and COMMIT are ours, as in store.Store.
        self._conn: psycopg.Connection[Row] | None = psycopg.connect(
            self._url, autocommit=True, row_factory=_row_factory, connect_timeout=connect_timeout)

    @property
    def url(self) -> str:
        return self._url

    @property
    def backend_pid(self) -> int:
        """The server process that serves this connection (``pg_stat_activity.pid``)."""
        return self._connection().info.backend_pid

    def set_hook(self, hook: StatementHook | None) -> None:
        self._hook = hook

    def _before(self, kind: str, sql: str) -> None:
        self.statements_seen += 1
        if self._hook is not None:
            self._hook(kind, sql)
        if _store._process_hook is not None:
            _store._process_hook(kind, sql)

    def _connection(self) -> psycopg.Connection[Row]:
        if self._conn is None:
            raise StoreMisuse("the store is closed")
        return self._conn

    @contextmanager
    def transaction(self) -> Iterator[Transaction]:
        """``BEGIN ISOLATION LEVEL …`` … ``COMMIT``; ``ROLLBACK`` on any exception, then re-raise."""
        conn = self._connection()
        if self._in_transaction:
            raise StoreMisuse(
                "a transaction is already open on this store; finish it before opening another "
                "(nested transactions would commit the outer work early)"
            )
        self._in_transaction = True
        tx = Transaction(self, conn)
        begin = f"BEGIN ISOLATION LEVEL {ISOLATION_LEVELS[self.isolation]}"
        try:
            self._before("begin", begin)
            conn.execute(begin)
            try:
                yield tx
                tx._open = False
                self._before("commit", "COMMIT")
                conn.execute("COMMIT")
                self._before("committed", "COMMIT")
            except BaseException:
                tx._open = False
                if not conn.closed:
                    conn.execute("ROLLBACK")
                raise
        finally:
            tx._open = False
            self._in_transaction = False

    def query(self, sql: str, params: Sequence[Any] = ()) -> list[Row]:
        """Read committed rows outside any transaction (a read cannot change the database)."""
        conn = self._connection()
        if statement_kind(sql) != "read":
            raise StoreMisuse("query() only reads; write inside `with store.transaction() as tx:`")
        self._before("read", sql)
        return conn.execute(placeholders(sql), tuple(params)).fetchall()

    def tables(self) -> list[str]:
        rows = self._connection().execute(
            "SELECT table_name FROM information_schema.tables WHERE table_schema = current_schema() "
            "ORDER BY table_name").fetchall()
        return [row[0] for row in rows]

    def schema_version(self, component: str) -> int:
        """The migration step ``component`` has reached in this database (0 when none ran)."""
        with self.transaction() as tx:
            tx.execute(_store._VERSION_TABLE)
            row = tx.execute("SELECT version FROM lucy_schema_version WHERE component = ?", (component,)).fetchone()
        return row[0] if row else 0

    def store_id(self) -> str:
        """This database's random id, created the first time it is asked for and never changed afterwards."""
        self.migrate("store identity", PG_STORE_IDENTITY)
        return str(self.query("SELECT store_id FROM lucy_store_identity")[0][0])

    def close(self) -> None:
        if self._conn is not None:
            self._conn.close()
            self._conn = None

    def __enter__(self) -> "PgStore":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"PgStore({re.sub(r'://[^@/]*@', '://…@', self._url)!r})"
