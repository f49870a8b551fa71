"""The chapter's contract: the values a learner's queue returns, and what it is given.

The learner writes ``admit``, ``claim``, ``finish`` (and, in Unit B, the outbox);
these types are only the vocabulary they answer in. Nothing here touches the
database. ``claim`` hands out an ``Assignment``; ``finish`` is given that same
``Assignment`` back and refuses with ``FenceError`` when it is not the work's current
claim (the fence).
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum

from .errors import FenceError, InvalidField, ModelUnavailable, WrongState
from .fields import require_int
from .observer import REPORT_COLUMNS, WORK_COLUMNS
from .store import StateStore

WORK_STATES = ("pending", "running", "done", "waiting", "failed", "needs_person")
"""work:   pending --claim--> running --finish (the fence: same worker, same generation)--> done
          running --the model failed, attempts left--> waiting --its wait is over--> pending
          running --the model failed, attempts spent--> failed (and an apology report, in the same transaction)
          running --any other error (a bug), recorded on the row--> needs_person
          needs_person --an operator fails it (fenced by generation)--> failed (and its apology, in one transaction)
          needs_person --an operator releases it (next generation)--> pending

Each move is a conditional update on the state it leaves. Unit B adds requeue
(done --> pending, next generation) and release (running --> pending, next generation:
an operator's way out for a stuck request). Work that can still finish (pending,
running, waiting) holds its place against the limits; done and failed work does not."""

DELIVERY_STATES = ("pending", "sending", "confirmed", "unknown", "failed", "needs_person")
"""report: pending --mark--> sending --receipt--> confirmed
          sending --retryable refusal--> pending (due again later) | failed (permanent, or out of attempts)
          sending --no answer--> unknown --reconcile--> confirmed | pending (the retry carries the same key)
                                                       | needs_person (no receipt, and the key has expired)
          sending --reconcile, after a crash--> confirmed | pending | needs_person, as from unknown
          pending --sent before, and the key may be forgotten--> needs_person (deliver_one never sends it)"""


class Outcome(Enum):
    ACCEPTED = "accepted"
    DUPLICATE = "duplicate"  # the same occurrence again: same source, same session, same text
    CONFLICT = "conflict"  # a known source identity with different content
    REFUSED = "refused"  # not admitted: capacity or session limit


@dataclass(frozen=True)
class Admission:
    outcome: Outcome
    work_id: object = None
    reason: str = ""

    def __post_init__(self) -> None:
        if not isinstance(self.outcome, Outcome):
            raise InvalidField("outcome", f"expected an Outcome, got {type(self.outcome).__name__}")


@dataclass(frozen=True)
class Assignment:
    """One claim: the work, the worker that claimed it and the generation it claimed.

    ``finish`` is given the Assignment back; ``work_id``, ``generation`` and
    ``worker_id`` together are the claim the fence compares with the stored one.
    """

    work_id: object
    source_id: str
    session_id: str
    text: str
    worker_id: str
    generation: int = 1


@dataclass(frozen=True)
class Report:
    report_id: str
    work_id: object
    generation: int
    session_id: str
    body: str


class Disposition(Enum):
    CONFIRMED = "confirmed"  # the service gave a receipt
    REFUSED = "refused"  # the service said no for now; the report is due again later
    FAILED = "failed"  # refused for good, or out of attempts: a person must look at it
    UNKNOWN = "unknown"  # no answer: it may have been accepted; never resent automatically
    NOTHING_TO_SEND = "nothing to send"


class AfterError(Enum):
    """What a failed model attempt did to the work (Unit B's ``fail_attempt``)."""

    RETRY = "retry"  # attempts are left: the work waits, and runs again when it is due
    FAILED = "failed"  # attempts are spent: the work failed, and its apology report is stored


@dataclass(frozen=True)
class OperatorNumbers:
    """The few numbers an operator watches (Unit B's ``operator_numbers``).

    ``oldest_pending_seconds`` is how long the oldest pending request has waited since it
    was admitted (0 when nothing is pending); the others are counts of rows.
    """

    oldest_pending_seconds: float
    unknown_reports: int
    failed_reports: int
    failed_work: int
    reports_needing_person: int = 0
    """Reports in ``needs_person``: no receipt, and the service may have forgotten the key."""
    stuck_sending: int = 0
    """Reports still ``sending`` although first sent more than ``STUCK_AFTER`` seconds before ``now``."""
    stuck_running: int = 0
    """Work still ``running`` although admitted more than ``STUCK_AFTER`` seconds before ``now``."""
    waiting_work: int = 0
    """Work ``waiting`` for its next model attempt."""
    work_needing_person: int = 0
    """Work held in ``needs_person`` after an error nobody expected (a bug), with the error on its row."""


STUCK_AFTER = 900.0
"""Seconds after which ``operator_numbers`` counts a ``running`` request or a ``sending`` report as stuck.

No healthy request runs for fifteen minutes after it arrived, and no send lasts that long; a
request that waited out a model outage first may, and shows here once while it runs."""


@dataclass(frozen=True)
class Queue:
    """What a learner's queue functions are given: the store and the admission limits."""

    store: StateStore
    """A ``store.Store`` (the chapter's SQLite file) or a ``pg_store.PgStore`` (a server database)."""
    capacity: int = 10
    per_session_limit: int = 3

    def __post_init__(self) -> None:
        if not isinstance(self.store, StateStore):
            raise InvalidField("store", f"expected a Store or a PgStore, got {type(self.store).__name__}")
        require_int("capacity", self.capacity, minimum=1)
        require_int("per_session_limit", self.per_session_limit, minimum=1)


__all__ = ["AfterError", "Admission", "Assignment", "DELIVERY_STATES", "Disposition", "FenceError", "ModelUnavailable",
           "OperatorNumbers", "Outcome", "Queue", "Report", "REPORT_COLUMNS", "STUCK_AFTER", "WORK_COLUMNS", "WORK_STATES",
           "WrongState"]
