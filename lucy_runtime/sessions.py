"""Chapter 5's session and context records.

A *session* groups one customer's conversation (a Telegram chat, a schedule's
owner). Turns are what was said in it, in order; ``context`` returns the last few
for the loop's prompt. Session identity is not occurrence identity: one session
holds many separate requests.

Chapter 7 keeps the conversation in the queue instead. ``Sessions.add_turn`` commits
each turn in a transaction of its own, before ``finish`` commits the report: a crash
between the two leaves an answer in the history that the customer never got, and a
replay adds a second one. ``DeliveredHistory`` writes nothing. It reads the
conversation from the queue's own tables: what the customer asked (the session's
admitted work) and what Lucy's answers were (the reports the service confirmed), so
it always agrees with what was delivered.
"""

from __future__ import annotations

import sqlite3
from contextlib import closing
from dataclasses import dataclass

from .errors import InvalidField, ObserverFailed, UnknownName
from .fields import require_id, require_int, require_str
from .observer import REPORT_COLUMNS, WORK_COLUMNS, find_table
from .store import Migration, Store, read_only

ROLES = ("customer", "lucy")

MIGRATIONS = (
    Migration(
        1,
        "session and turn records",
        (
            """CREATE TABLE lucy_session (
                   session_id TEXT PRIMARY KEY,
                   owner      TEXT NOT NULL,
                   opened_at  TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now'))
               )""",
            """CREATE TABLE lucy_turn (
                   session_id TEXT NOT NULL REFERENCES lucy_session (session_id),
                   seq        INTEGER NOT NULL,
                   role       TEXT NOT NULL CHECK (role IN ('customer', 'lucy')),
                   text       TEXT NOT NULL,
                   PRIMARY KEY (session_id, seq)
               )""",
        ),
    ),
)


@dataclass(frozen=True)
class SessionRecord:
    session_id: str
    owner: str


@dataclass(frozen=True)
class Turn:
    seq: int
    role: str
    text: str


class Sessions:
    def __init__(self, store: Store):
        self._store = store
        store.migrate("sessions", MIGRATIONS)

    def open(self, session_id: str, *, owner: str) -> SessionRecord:
        """Create the session if it is new; an existing session keeps its first owner."""
        require_id("session_id", session_id)
        require_id("owner", owner)
        with self._store.transaction() as tx:
            tx.execute(
                "INSERT INTO lucy_session (session_id, owner) VALUES (?, ?) ON CONFLICT (session_id) DO NOTHING",
                (session_id, owner),
            )
            row = tx.execute("SELECT owner FROM lucy_session WHERE session_id = ?", (session_id,)).fetchone()
        return SessionRecord(session_id, row["owner"])

    def get(self, session_id: str) -> SessionRecord | None:
        require_id("session_id", session_id)
        rows = self._store.query("SELECT owner FROM lucy_session WHERE session_id = ?", (session_id,))
        return SessionRecord(session_id, rows[0]["owner"]) if rows else None

    def add_turn(self, session_id: str, role: str, text: str) -> Turn:
        require_id("session_id", session_id)
        if role not in ROLES:
            raise InvalidField("role", f"expected one of {ROLES}, got {role!r}")
        require_str("text", text)
        with self._store.transaction() as tx:
            if tx.execute("SELECT 1 FROM lucy_session WHERE session_id = ?", (session_id,)).fetchone() is None:
                raise UnknownName(f"session_id: no session {session_id!r}; open it first")
            seq = tx.execute(
                "SELECT COALESCE(MAX(seq), 0) + 1 FROM lucy_turn WHERE session_id = ?", (session_id,)
            ).fetchone()[0]
            tx.execute(
                "INSERT INTO lucy_turn (session_id, seq, role, text) VALUES (?, ?, ?, ?)",
                (session_id, seq, role, text),
            )
        return Turn(seq, role, text)

    def context(self, session_id: str, last: int = 6) -> tuple[Turn, ...]:
        require_id("session_id", session_id)
        require_int("last", last, minimum=0)
        rows = self._store.query(
            "SELECT seq, role, text FROM lucy_turn WHERE session_id = ? ORDER BY seq DESC LIMIT ?",
            (session_id, last),
        )
        return tuple(Turn(r["seq"], r["role"], r["text"]) for r in reversed(rows))


class DeliveredHistory:
    """A session's conversation, derived from the work and report tables of ``store``; it never writes.

    The tables are found by their columns, as the checker's observer finds them. The
    customer's turns are the session's work, in the order it was admitted; Lucy's turns
    are the bodies of that work's reports whose delivery is ``confirmed``, one for each
    generation the customer received. A report that is pending, unknown or failed is
    not part of the conversation: nobody knows the customer read it.

    ``context(session_id, last)`` reads only the session's last ``last`` requests (each
    gives at least one turn), through an index on the work table's ``session_id``
    (Unit A's ``work_by_session``) and the report table's ``UNIQUE (work_id, generation)``,
    so a model call costs the same whether the tables hold a day or a year. It reads on a
    connection of its own, opened read-only, inside one read transaction.
    """

    def __init__(self, store: Store):
        if not isinstance(store, Store):
            raise InvalidField("store", f"expected a Store, got {type(store).__name__}")
        self._path = store.path

    def turns(self, session_id: str) -> tuple[Turn, ...]:
        """The whole conversation of one session (it reads every request of the session)."""
        return self._read(session_id, None)

    def context(self, session_id: str, last: int = 6) -> tuple[Turn, ...]:
        """The last ``last`` turns, numbered from 1 within them; it reads at most ``last`` requests."""
        require_int("last", last, minimum=0)
        return self._read(session_id, last) if last else ()

    def _read(self, session_id: str, last: int | None) -> tuple[Turn, ...]:
        require_id("session_id", session_id)
        with closing(read_only(self._path)) as conn:
            problems: list[str] = []
            work, _ = find_table(conn, WORK_COLUMNS, "work", problems, [])
            report, _ = find_table(conn, REPORT_COLUMNS, "report", problems, [])
            if problems:
                raise ObserverFailed("the conversation cannot be read from the queue: " + "; ".join(problems))
            conn.execute("BEGIN")  # one snapshot for both reads
            asked = _last_requests(conn, work, session_id, last)
            marks = ", ".join("?" for _ in asked)
            answers: dict[object, list[str]] = {}
            for work_id, body in conn.execute(
                    f'SELECT work_id, body FROM "{report}" WHERE work_id IN ({marks}) AND delivery = \'confirmed\' '
                    "ORDER BY work_id, generation", [work_id for work_id, _ in asked]):
                answers.setdefault(work_id, []).append(str(body))
            conn.execute("COMMIT")
        said: list[tuple[str, str]] = []
        for work_id, text in asked:
            said.append(("customer", str(text)))
            said.extend(("lucy", body) for body in answers.get(work_id, []))
        if last is not None:
            said = said[len(said) - last:]
        return tuple(Turn(seq, role, text) for seq, (role, text) in enumerate(said, start=1))


def _last_requests(conn: sqlite3.Connection, work: str, session_id: str, last: int | None) -> list[tuple]:
    """The session's last ``last`` requests (all of them for ``None``) as (work_id, text), oldest first."""
    limit = "" if last is None else f" LIMIT {int(last)}"
    query = f'SELECT work_id, text FROM "{work}" WHERE session_id = ? ORDER BY {{}} DESC{limit}'
    try:  # the order of admission; a WITHOUT ROWID table has no rowid, and its work_id stands in
        rows = conn.execute(query.format("rowid"), (session_id,)).fetchall()
    except sqlite3.OperationalError:
        rows = conn.execute(query.format("work_id"), (session_id,)).fetchall()
    return [tuple(row) for row in reversed(rows)]
