"""Chapter 5's session and context records.

A *session* groups one customer's conversation (a Telegram chat, a schedule's
owner). Turns are what was said in it, in order; ``context`` returns the last few
for the loop's prompt. Session identity is not occurrence identity: one session
holds many separate requests.
"""

from __future__ import annotations

from dataclasses import dataclass

from .errors import InvalidField, UnknownName
from .fields import require_id, require_int, require_str
from .store import Migration, Store

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
