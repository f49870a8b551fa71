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

from dataclasses import dataclass

from .errors import InvalidField, ObserverFailed, UnknownName
from .fields import require_id, require_int, require_str
from .observer import snapshot
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


class DeliveredHistory:
    """A session's conversation, derived from the work and report tables of ``store``; it never writes.

    The tables are found by their columns, as the checker's observer finds them. The
    customer's turns are the session's work, in the order it was admitted; Lucy's turns
    are the bodies of that work's reports whose delivery is ``confirmed``, one for each
    generation the customer received. A report that is pending, unknown or failed is
    not part of the conversation: nobody knows the customer read it.
    """

    def __init__(self, store: Store):
        if not isinstance(store, Store):
            raise InvalidField("store", f"expected a Store, got {type(store).__name__}")
        self._path = store.path

    def turns(self, session_id: str) -> tuple[Turn, ...]:
        require_id("session_id", session_id)
        seen = snapshot(self._path)
        if seen["problems"]:
            raise ObserverFailed("the conversation cannot be read from the queue: " + "; ".join(seen["problems"]))
        answers: dict[str, list[dict]] = {}
        for report in seen["reports"]:
            if report["delivery"] == "confirmed":
                answers.setdefault(str(report["work_id"]), []).append(report)
        said: list[tuple[str, str]] = []
        for work in seen["work"]:
            if work["session_id"] != session_id:
                continue
            said.append(("customer", str(work["text"])))
            for report in sorted(answers.get(str(work["work_id"]), []), key=lambda r: r["generation"]):
                said.append(("lucy", str(report["body"])))
        return tuple(Turn(seq, role, text) for seq, (role, text) in enumerate(said, start=1))

    def context(self, session_id: str, last: int = 6) -> tuple[Turn, ...]:
        require_int("last", last, minimum=0)
        turns = self.turns(session_id)
        return turns[len(turns) - last:] if last else ()
