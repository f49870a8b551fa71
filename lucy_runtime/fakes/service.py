"""A fake remote service and the ``Transport`` in front of it, standing in for ``transport.Transport``.

``FakeService`` plays the remote side with scripted behaviours (``Behaviour``), an
idempotency key it may honour for a retention window, and a look-up by key.
``FakeTransport`` is the ``Transport`` protocol of ``lucy_runtime.transport`` over it,
answering with that module's ``Receipt``, ``Refused`` and ``Uncertain``. The service's
accepted-send log is a SQLite file of its own, opened afresh for every call, so it
survives the death of a client process and can be read by a fresh process that trusts
nothing in the client.
"""

from __future__ import annotations

import os
import sqlite3
import time
from contextlib import closing
from dataclasses import dataclass
from enum import Enum
from typing import Callable, Iterable, Mapping

from ..errors import InvalidField, TransportMisuse
from ..fields import require_id, require_number, require_str
from ..transport import OutgoingReport, Receipt, Refused, SendOutcome, Uncertain


class Behaviour(Enum):
    """What the fake service does with one request, and what the client can know of it."""

    ACCEPT = "accept"
    REFUSE = "refuse"  # 429 too many requests: Refused, retryable, with retry_after
    REFUSE_PERMANENTLY = "refuse-permanently"  # 403 forbidden: Refused, not retryable
    CONNECT_FAILS = "connect-fails"  # no connection was made: Refused, retryable, nothing arrived
    LOSE_REPLY = "lose-reply"  # accept and record the send, then the reply times out: Uncertain
    SERVER_ERROR = "server-error"  # 500 before anything was recorded: Uncertain, for the client cannot tell

RETRY_AFTER = 30.0
"""The wait the fake service asks for when it answers 'too many requests'."""


@dataclass(frozen=True)
class AcceptedSend:
    remote_id: str
    report_id: str
    session_id: str
    body: str
    idempotency_key: str | None


_SERVICE_SCHEMA = (
    """CREATE TABLE IF NOT EXISTS request (
           seq INTEGER PRIMARY KEY, report_id TEXT NOT NULL, idempotency_key TEXT, behaviour TEXT NOT NULL)""",
    """CREATE TABLE IF NOT EXISTS accepted (
           remote_id TEXT PRIMARY KEY, report_id TEXT NOT NULL, session_id TEXT NOT NULL,
           body TEXT NOT NULL, idempotency_key TEXT, accepted_at REAL NOT NULL)""",
    """CREATE TABLE IF NOT EXISTS script (seq INTEGER PRIMARY KEY, behaviour TEXT NOT NULL)""",
)


class FakeService:
    """A remote service with scripted behaviour and an independent accepted-send log.

    ``script`` gives the behaviour of the next calls in order; calls past its end
    accept. ``None`` keeps whatever script the log already holds, so a second client
    (another process) sees the same service; a list replaces the calls still to come.
    With ``idempotent=True`` the service honours an idempotency key: the same key with
    the same content returns the original receipt and sends nothing new; the same key
    with different content is refused and never executed; ``lookup(key)`` finds the
    receipt of an accepted send.

    ``sessions`` maps a session id to the behaviour every request for it gets, whatever
    the script says: a chat that blocked the bot, or one that is always rate limited.

    A real service keeps keys for a while, not for ever. ``retention`` (seconds, by
    ``clock``) is that window: after it, ``lookup`` finds nothing and the same key is
    a new message again. ``None`` keeps keys for ever.
    """

    def __init__(self, log_path: str | os.PathLike[str], *, script: Iterable[Behaviour] | None = None,
                 idempotent: bool = False, retention: float | None = None,
                 clock: Callable[[], float] = time.time, sessions: Mapping[str, Behaviour] | None = None):
        self._path = require_str("log_path", os.fspath(log_path), max_bytes=4096)
        if not isinstance(idempotent, bool):
            raise InvalidField("idempotent", f"expected a bool, got {type(idempotent).__name__}")
        if retention is not None and require_number("retention", retention) <= 0:
            raise InvalidField("retention", "must be more than 0 seconds")
        if not callable(clock):
            raise InvalidField("clock", "expected a function that returns the time in seconds")
        self._sessions = dict(sessions or {})
        for session_id, behaviour in self._sessions.items():
            require_id("sessions", session_id)
            if not isinstance(behaviour, Behaviour):
                raise InvalidField("sessions", f"expected Behaviour values, got {type(behaviour).__name__}")
        self.idempotent = idempotent
        self.retention = retention
        self._clock = clock
        steps = None if script is None else list(script)
        for step in steps or ():
            if not isinstance(step, Behaviour):
                raise InvalidField("script", f"expected Behaviour values, got {type(step).__name__}")
        with self._connect() as conn:
            for statement in _SERVICE_SCHEMA:
                conn.execute(statement)
            if steps is not None:
                base = conn.execute("SELECT COUNT(*) FROM request").fetchone()[0]
                conn.execute("DELETE FROM script WHERE seq >= ?", (base,))
                conn.executemany("INSERT INTO script (seq, behaviour) VALUES (?, ?)",
                                 [(base + i, step.value) for i, step in enumerate(steps)])

    @property
    def log_path(self) -> str:
        return self._path

    def _connect(self):
        conn = sqlite3.connect(self._path, isolation_level=None, timeout=10)
        conn.execute("PRAGMA journal_mode = WAL")
        conn.execute("PRAGMA synchronous = FULL")
        return _Tx(conn)

    def _remembered(self, conn: sqlite3.Connection, key: str):
        """The accepted send under ``key`` that the service still remembers, if any."""
        since = -float("inf") if self.retention is None else float(self._clock()) - self.retention
        return conn.execute(
            "SELECT remote_id, report_id, session_id, body FROM accepted "
            "WHERE idempotency_key = ? AND accepted_at >= ? ORDER BY rowid DESC LIMIT 1",
            (key, since),
        ).fetchone()

    def receive(self, report: OutgoingReport) -> "SendOutcome | _Lost":
        """Handle one request. Returns the service's answer, or ``_Lost`` around a receipt whose reply is lost.

        ``request`` logs every attempt the script saw, including one whose connection
        failed: it is the fake's record for the checker, not something the service knew.
        """
        if not isinstance(report, OutgoingReport):
            raise TransportMisuse(f"report: expected an OutgoingReport, got {type(report).__name__}")
        with self._connect() as conn:
            seq = conn.execute("SELECT COUNT(*) FROM request").fetchone()[0]
            row = conn.execute("SELECT behaviour FROM script WHERE seq = ?", (seq,)).fetchone()
            behaviour = Behaviour(row[0]) if row else Behaviour.ACCEPT
            behaviour = self._sessions.get(report.session_id, behaviour)
            conn.execute(
                "INSERT INTO request (seq, report_id, idempotency_key, behaviour) VALUES (?, ?, ?, ?)",
                (seq, report.report_id, report.idempotency_key, behaviour.value),
            )
            refused = _REFUSALS.get(behaviour)
            if refused is not None:
                return refused(report.report_id)
            if behaviour is Behaviour.SERVER_ERROR:
                return Uncertain(report.report_id, "the service answered 500: it may or may not have acted")
            receipt = self._accept(conn, report)
        if isinstance(receipt, Receipt) and behaviour is Behaviour.LOSE_REPLY:
            return _Lost(receipt)
        return receipt

    def _accept(self, conn: sqlite3.Connection, report: OutgoingReport) -> Receipt | Refused:
        if self.idempotent:
            if report.idempotency_key is None:
                return Refused(report.report_id, "this service needs an idempotency key", retryable=False)
            earlier = self._remembered(conn, report.idempotency_key)
            if earlier is not None:
                if tuple(earlier[1:]) != (report.report_id, report.session_id, report.body):
                    return Refused(report.report_id, "idempotency key reused with different content",
                                   retryable=False)
                return Receipt(report.report_id, earlier[0], replayed=True)
        remote_id = f"m-{conn.execute('SELECT COUNT(*) FROM accepted').fetchone()[0] + 1}"
        conn.execute(
            "INSERT INTO accepted (remote_id, report_id, session_id, body, idempotency_key, accepted_at) "
            "VALUES (?, ?, ?, ?, ?, ?)",
            (remote_id, report.report_id, report.session_id, report.body,
             report.idempotency_key if self.idempotent else None, float(self._clock())),
        )
        return Receipt(report.report_id, remote_id)

    def lookup(self, idempotency_key: str) -> Receipt | None:
        """Reconciliation: the receipt of the send accepted under this key, while the service remembers it.

        ``None`` means "no receipt *now*": never accepted, not accepted yet (a first
        request may still be in flight), or accepted so long ago the key has expired.
        """
        if not self.idempotent:
            raise TransportMisuse("this service offers no look-up: it does not record idempotency keys")
        require_id("idempotency_key", idempotency_key)
        with self._connect() as conn:
            row = self._remembered(conn, idempotency_key)
        return Receipt(row[1], row[0], replayed=True) if row else None

    def accepted(self) -> list[AcceptedSend]:
        return read_accepted(self._path)


@dataclass(frozen=True)
class _Lost:
    """The service accepted, and its reply never reached the client."""

    receipt: Receipt


_REFUSALS: dict[Behaviour, Callable[[str], Refused]] = {
    Behaviour.REFUSE: lambda report_id: Refused(report_id, "429 too many requests", retryable=True,
                                                retry_after=RETRY_AFTER),
    Behaviour.REFUSE_PERMANENTLY: lambda report_id: Refused(report_id, "403 forbidden: the chat blocked the bot",
                                                            retryable=False),
    Behaviour.CONNECT_FAILS: lambda report_id: Refused(report_id, "no connection to the service: nothing was sent",
                                                       retryable=True),
}


def read_accepted(log_path: str) -> list[AcceptedSend]:
    """Read a service's accepted-send log straight from its file."""
    if not os.path.exists(log_path):
        return []
    with closing(sqlite3.connect(f"file:{log_path}?mode=ro", uri=True)) as conn:
        rows = conn.execute(
            "SELECT remote_id, report_id, session_id, body, idempotency_key FROM accepted ORDER BY rowid"
        ).fetchall()
    return [AcceptedSend(*row) for row in rows]


class _Tx:
    """One immediate transaction on a connection that is closed afterwards."""

    def __init__(self, conn: sqlite3.Connection):
        self._conn = conn

    def __enter__(self) -> sqlite3.Connection:
        self._conn.execute("BEGIN IMMEDIATE")
        return self._conn

    def __exit__(self, exc_type, exc, tb) -> None:
        try:
            self._conn.execute("COMMIT" if exc_type is None else "ROLLBACK")
        finally:
            self._conn.close()


class FakeTransport:
    """A ``Transport`` in front of a ``FakeService``; ``attempts`` records what it was asked to send.

    ``before_send`` runs before the request reaches the service, and ``on_accepted``
    after the service has recorded an accepted send and before the answer returns to
    the caller; the checker uses them to stop the process at those two moments.
    """

    def __init__(self, service: FakeService, *, before_send: Callable[[OutgoingReport], None] | None = None,
                 on_accepted: Callable[[Receipt], None] | None = None):
        if not isinstance(service, FakeService):
            raise InvalidField("service", f"expected a FakeService, got {type(service).__name__}")
        self._service = service
        self._before_send = before_send
        self._on_accepted = on_accepted
        self.attempts: list[OutgoingReport] = []

    def send(self, report: OutgoingReport) -> SendOutcome:
        if not isinstance(report, OutgoingReport):
            raise TransportMisuse(
                f"send() takes an OutgoingReport(report_id, session_id, body), got {type(report).__name__}"
            )
        self.attempts.append(report)
        if self._before_send is not None:
            self._before_send(report)
        answer = self._service.receive(report)
        accepted = answer.receipt if isinstance(answer, _Lost) else answer
        if isinstance(accepted, Receipt) and self._on_accepted is not None:
            self._on_accepted(accepted)
        if isinstance(answer, _Lost):
            return Uncertain(report.report_id, "the reply timed out: the service may have accepted the report")
        return answer

    def lookup(self, idempotency_key: str) -> Receipt | None:
        return self._service.lookup(idempotency_key)
