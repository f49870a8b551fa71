"""The sender boundary, and a fake remote service that keeps its own record.

``Transport.send`` takes one retained report and returns what is known about it:

* ``Receipt``   the service confirmed it accepted the report;
* ``Refused``   the service confirmed it did *not* accept it (safe to try again);
* ``Uncertain`` no answer came back: the service may or may not have accepted it.

``FakeService`` stands in for the remote side. Its accepted-send log is a SQLite file
of its own, opened afresh for every call, so it survives the death of a client
process and can be read by a fresh process that trusts nothing in the client.
"""

from __future__ import annotations

import os
import sqlite3
from contextlib import closing
from dataclasses import dataclass
from enum import Enum
from typing import Callable, Iterable, Protocol, Union

from .errors import InvalidField, TransportMisuse
from .fields import require_id, require_str


@dataclass(frozen=True)
class OutgoingReport:
    report_id: str
    session_id: str
    body: str
    idempotency_key: str | None = None

    def __post_init__(self) -> None:
        require_id("report_id", self.report_id)
        require_id("session_id", self.session_id)
        require_str("body", self.body)
        if self.idempotency_key is not None:
            require_id("idempotency_key", self.idempotency_key)


@dataclass(frozen=True)
class Receipt:
    report_id: str
    remote_id: str
    replayed: bool = False
    """True when an idempotent service answered with the receipt of an earlier send."""


@dataclass(frozen=True)
class Refused:
    report_id: str
    reason: str


@dataclass(frozen=True)
class Uncertain:
    report_id: str
    reason: str


SendOutcome = Union[Receipt, Refused, Uncertain]


class Transport(Protocol):
    def send(self, report: OutgoingReport) -> SendOutcome: ...


class Behaviour(Enum):
    ACCEPT = "accept"
    REFUSE = "refuse"
    LOSE_REPLY = "lose-reply"  # accept and record the send, then the answer never arrives


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
           body TEXT NOT NULL, idempotency_key TEXT UNIQUE)""",
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
    """

    def __init__(self, log_path: str | os.PathLike[str], *, script: Iterable[Behaviour] | None = None,
                 idempotent: bool = False):
        self._path = require_str("log_path", os.fspath(log_path), max_bytes=4096)
        if not isinstance(idempotent, bool):
            raise InvalidField("idempotent", f"expected a bool, got {type(idempotent).__name__}")
        self.idempotent = idempotent
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

    def receive(self, report: OutgoingReport) -> tuple[Receipt | Refused, bool]:
        """Handle one request. Returns the service's answer and whether that answer is lost."""
        if not isinstance(report, OutgoingReport):
            raise TransportMisuse(f"report: expected an OutgoingReport, got {type(report).__name__}")
        with self._connect() as conn:
            seq = conn.execute("SELECT COUNT(*) FROM request").fetchone()[0]
            row = conn.execute("SELECT behaviour FROM script WHERE seq = ?", (seq,)).fetchone()
            behaviour = Behaviour(row[0]) if row else Behaviour.ACCEPT
            conn.execute(
                "INSERT INTO request (seq, report_id, idempotency_key, behaviour) VALUES (?, ?, ?, ?)",
                (seq, report.report_id, report.idempotency_key, behaviour.value),
            )
            if behaviour is Behaviour.REFUSE:
                return Refused(report.report_id, "the service refused the request"), False
            if self.idempotent:
                if report.idempotency_key is None:
                    return Refused(report.report_id, "this service needs an idempotency key"), False
                earlier = conn.execute(
                    "SELECT remote_id, report_id, session_id, body FROM accepted WHERE idempotency_key = ?",
                    (report.idempotency_key,),
                ).fetchone()
                if earlier is not None:
                    if tuple(earlier[1:]) != (report.report_id, report.session_id, report.body):
                        return Refused(report.report_id, "idempotency key reused with different content"), False
                    return Receipt(report.report_id, earlier[0], replayed=True), behaviour is Behaviour.LOSE_REPLY
            remote_id = f"m-{conn.execute('SELECT COUNT(*) FROM accepted').fetchone()[0] + 1}"
            conn.execute(
                "INSERT INTO accepted (remote_id, report_id, session_id, body, idempotency_key) VALUES (?, ?, ?, ?, ?)",
                (remote_id, report.report_id, report.session_id, report.body,
                 report.idempotency_key if self.idempotent else None),
            )
            return Receipt(report.report_id, remote_id), behaviour is Behaviour.LOSE_REPLY

    def lookup(self, idempotency_key: str) -> Receipt | None:
        """Reconciliation: the receipt of the send accepted under this key, if any."""
        if not self.idempotent:
            raise TransportMisuse("this service offers no look-up: it does not record idempotency keys")
        require_id("idempotency_key", idempotency_key)
        with self._connect() as conn:
            row = conn.execute(
                "SELECT remote_id, report_id FROM accepted WHERE idempotency_key = ?", (idempotency_key,)
            ).fetchone()
        return Receipt(row[1], row[0], replayed=True) if row else None

    def accepted(self) -> list[AcceptedSend]:
        return read_accepted(self._path)


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
        answer, lost = self._service.receive(report)
        if isinstance(answer, Receipt) and self._on_accepted is not None:
            self._on_accepted(answer)
        if lost:
            return Uncertain(report.report_id, "no answer arrived: the service may have accepted the report")
        return answer

    def lookup(self, idempotency_key: str) -> Receipt | None:
        return self._service.lookup(idempotency_key)
