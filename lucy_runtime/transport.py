"""The sender boundary: the ``Transport`` protocol and what it answers.

``Transport.send`` takes one retained report and returns what is known about it:

* ``Receipt``   the service confirmed it accepted the report;
* ``Refused``   the report certainly did not arrive: the service said no, or no
  connection was ever made. ``retryable`` says whether another try is worth it
  (too many requests, the connection failed) or not (the chat blocked the bot, the
  request is malformed); ``retry_after`` is the wait the service asked for, if any;
* ``Uncertain`` the request may have arrived: the reply timed out or the connection
  reset after the request left, or the service failed (5xx) part way.

``lookup(key)`` asks the service for the receipt of a send made under an idempotency
key. A transport whose service keeps no such record raises ``TransportMisuse``.

The fake remote service that keeps its own record, and the transport in front of it,
are in ``fakes/service.py``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol, Union

from .errors import InvalidField
from .fields import require_id, require_number, require_str


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
    retryable: bool
    """True: another try may succeed (too many requests, no connection). False: it never will."""
    retry_after: float | None = None
    """Seconds the service asked the caller to wait before the next try."""

    def __post_init__(self) -> None:
        if not isinstance(self.retryable, bool):
            raise InvalidField("retryable", f"expected a bool, got {type(self.retryable).__name__}")
        if self.retry_after is not None and require_number("retry_after", self.retry_after) < 0:
            raise InvalidField("retry_after", "must not be negative")


@dataclass(frozen=True)
class Uncertain:
    report_id: str
    reason: str


SendOutcome = Union[Receipt, Refused, Uncertain]


class Transport(Protocol):
    def send(self, report: OutgoingReport) -> SendOutcome: ...

    def lookup(self, idempotency_key: str) -> Receipt | None: ...
