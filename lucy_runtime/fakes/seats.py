"""Exercise 2's seat service: ``POST /v1/seats`` as a fake that can fail in scripted ways.

The service answers with an HTTP status, or not at all. Its script gives the
behaviour of the next posts in order (posts past its end succeed):

* ``OK``: grant the seat, answer 201 with its id;
* ``COMMIT_THEN_TIMEOUT``: grant the seat, then the answer is lost (the client sees a timeout);
* ``COMMIT_THEN_500``: grant the seat, then fail before answering: the client sees a 500
  (a 5xx may have arrived, as Unit B says);
* ``RESET``: the connection resets before the service reads the request (nothing granted);
* ``THROTTLED`` 429, ``UNAVAILABLE`` 503: come back later (nothing granted);
* ``IN_PROGRESS`` 409: a request with this key is still being processed (nothing granted
  by this post; the client comes back later with the same key);
* ``BAD_REQUEST`` 400, ``FORBIDDEN`` 403: never going to work.

With an idempotency key the service grants at most one seat per key, as the IETF
Idempotency-Key draft (draft-ietf-httpapi-idempotency-key-header) describes: a retry
of a key whose first request has finished gets the stored response (201 with the
original seat's id); 409 means the first request is still being processed; a known
key with another payload answers 422 and grants nothing. Without a key every granted
post is a new seat. The seats and every post are recorded in a SQLite file of the
service's own.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from enum import Enum
from typing import Iterable, Protocol, Union

from ..errors import InvalidField
from ..fields import require_id
from .service_log import Probe, ServiceLog, no_probe, read_rows


class SeatScript(Enum):
    OK = "ok"
    COMMIT_THEN_TIMEOUT = "commit-then-timeout"
    COMMIT_THEN_500 = "commit-then-500"  # granted, then the server failed before it answered: a 500
    RESET = "reset"
    THROTTLED = "429"
    IN_PROGRESS = "409"
    UNAVAILABLE = "503"
    BAD_REQUEST = "400"
    FORBIDDEN = "403"


@dataclass(frozen=True)
class SeatEvent:
    """A ``seat.requested`` event: the request id names the occurrence, not the attempt."""

    request_id: str
    workspace_id: str
    user_id: str


@dataclass(frozen=True)
class Answered:
    status: int
    seat_id: str | None = None


@dataclass(frozen=True)
class NoAnswer:
    """No response arrived: the service may or may not have granted the seat."""

    reason: str


SeatAnswer = Union[Answered, NoAnswer]


class SeatService(Protocol):
    def post_grant(self, workspace_id: str, user_id: str, *, idempotency_key: str | None = None) -> SeatAnswer: ...


class SeatOutcome(Enum):
    GRANTED = "granted"  # the service confirmed a seat (201, first or stored for a retried key)
    REFUSED = "refused"  # a permanent 4xx: retrying cannot help
    UNKNOWN = "unknown"  # gave up while a post was unanswered: a seat may exist
    EXHAUSTED = "exhausted"  # gave up after 429/503 answers only: no seat was granted


@dataclass(frozen=True)
class GrantResult:
    outcome: SeatOutcome
    seat_id: str | None = None
    attempts: int = 0


@dataclass(frozen=True)
class Seat:
    seat_id: str
    workspace_id: str
    user_id: str
    idempotency_key: str | None


@dataclass(frozen=True)
class Post:
    seq: int
    workspace_id: str
    user_id: str
    idempotency_key: str | None
    behaviour: str
    status: int | None


_SCHEMA = (
    """CREATE TABLE IF NOT EXISTS post (seq INTEGER PRIMARY KEY, workspace_id TEXT NOT NULL, user_id TEXT NOT NULL,
           idempotency_key TEXT, behaviour TEXT NOT NULL, status INTEGER)""",
    """CREATE TABLE IF NOT EXISTS seat (seat_id TEXT PRIMARY KEY, workspace_id TEXT NOT NULL, user_id TEXT NOT NULL,
           idempotency_key TEXT UNIQUE)""",
    "CREATE TABLE IF NOT EXISTS script (seq INTEGER PRIMARY KEY, behaviour TEXT NOT NULL)",
)

_STATUS = {SeatScript.THROTTLED: 429, SeatScript.UNAVAILABLE: 503, SeatScript.IN_PROGRESS: 409,
           SeatScript.BAD_REQUEST: 400, SeatScript.FORBIDDEN: 403}


class FakeSeatService:
    """``script=None`` keeps the script the log holds; a list replaces the posts still to come."""

    def __init__(self, log_path: str | os.PathLike[str], *, script: Iterable[SeatScript] | None = None,
                 probe: Probe = no_probe):
        steps = None if script is None else list(script)
        for step in steps or ():
            if not isinstance(step, SeatScript):
                raise InvalidField("script", f"expected SeatScript values, got {type(step).__name__}")
        self._log = ServiceLog(log_path, _SCHEMA)
        self._probe = probe
        if steps is not None:
            with self._log.transaction() as conn:
                base = conn.execute("SELECT COUNT(*) FROM post").fetchone()[0]
                conn.execute("DELETE FROM script WHERE seq >= ?", (base,))
                conn.executemany("INSERT INTO script (seq, behaviour) VALUES (?, ?)",
                                 [(base + i, step.value) for i, step in enumerate(steps)])

    @property
    def log_path(self) -> str:
        return self._log.path

    def post_grant(self, workspace_id: str, user_id: str, *, idempotency_key: str | None = None) -> SeatAnswer:
        require_id("workspace_id", workspace_id)
        require_id("user_id", user_id)
        if idempotency_key is not None:
            require_id("idempotency_key", idempotency_key)
        self._probe("send", f"POST /v1/seats {workspace_id}/{user_id} key={idempotency_key}")
        with self._log.transaction() as conn:
            seq = conn.execute("SELECT COUNT(*) FROM post").fetchone()[0]
            found = conn.execute("SELECT behaviour FROM script WHERE seq = ?", (seq,)).fetchone()
            behaviour = SeatScript(found[0]) if found else SeatScript.OK
            answer = self._answer(conn, behaviour, workspace_id, user_id, idempotency_key)
            conn.execute("INSERT INTO post (seq, workspace_id, user_id, idempotency_key, behaviour, status) "
                         "VALUES (?, ?, ?, ?, ?, ?)", (seq, workspace_id, user_id, idempotency_key, behaviour.value,
                                                       _sent_status(behaviour, answer)))
        if isinstance(answer, Answered) and answer.status == 201:
            self._probe("accepted", f"seat {answer.seat_id} granted")
        if behaviour is SeatScript.COMMIT_THEN_TIMEOUT:
            return NoAnswer("timeout: no response within the deadline")
        if behaviour is SeatScript.COMMIT_THEN_500:
            return Answered(500)
        return answer

    @staticmethod
    def _answer(conn, behaviour: SeatScript, workspace_id: str, user_id: str, key: str | None) -> SeatAnswer:
        if behaviour is SeatScript.RESET:
            return NoAnswer("connection reset by peer")
        if behaviour in _STATUS:
            return Answered(_STATUS[behaviour])
        if key is not None:
            known = conn.execute("SELECT seat_id, workspace_id, user_id FROM seat WHERE idempotency_key = ?",
                                 (key,)).fetchone()
            if known is not None:
                same = (known[1], known[2]) == (workspace_id, user_id)
                return Answered(201, known[0]) if same else Answered(422)  # the stored response, or key misuse
        seat_id = f"seat-{conn.execute('SELECT COUNT(*) FROM seat').fetchone()[0] + 1}"
        conn.execute("INSERT INTO seat (seat_id, workspace_id, user_id, idempotency_key) VALUES (?, ?, ?, ?)",
                     (seat_id, workspace_id, user_id, key))
        return Answered(201, seat_id)

    def seats(self) -> list[Seat]:
        return read_seats(self._log.path)

    def posts(self) -> list[Post]:
        return read_posts(self._log.path)


def _sent_status(behaviour: SeatScript, answer: SeatAnswer) -> int | None:
    """The status the service logged: 500 for a grant it failed to answer, else the answer it made."""
    if behaviour is SeatScript.COMMIT_THEN_500:
        return 500
    return answer.status if isinstance(answer, Answered) else None


def read_seats(log_path: str | os.PathLike[str]) -> list[Seat]:
    return [Seat(*row) for row in read_rows(
        log_path, "SELECT seat_id, workspace_id, user_id, idempotency_key FROM seat ORDER BY rowid")]


def read_posts(log_path: str | os.PathLike[str]) -> list[Post]:
    return [Post(*row) for row in read_rows(
        log_path, "SELECT seq, workspace_id, user_id, idempotency_key, behaviour, status FROM post ORDER BY seq")]
