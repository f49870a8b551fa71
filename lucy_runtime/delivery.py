"""The delivery policy a learner's ``deliver_one`` is given: when a refused report is due again, and its key.

The learner's outbox records, per report, how many attempts it has made and the time
it is next due. This object answers the two questions an outbox should not answer
with constants of its own:

* ``next_due(attempts, refusal)``: the time to try again after a refusal, or ``None``
  when there is no point (the refusal is permanent, or the attempts reached the cap).
  The delay grows exponentially, is capped, has jitter (so many reports refused
  together do not all come back in the same second), and is never shorter than the
  ``retry_after`` the service asked for.
* ``shortest_total_wait()``: the least time the schedule waits, all jitter drawn low, before
  it gives up. A schedule rides out an outage only when this exceeds it; the defaults ride
  out the ten-minute model outage the chapter names (10 attempts, waits from 10 s doubling to
  5 minutes: at least 755 s of waiting, at most 1510 s), and past them the work fails and
  the customer is told.
* ``key_remembered(first_sent_at)``: whether the service still remembers the key of a
  report first sent then (``key_retention``); past that window a retry is a new
  message, so ``reconcile`` hands a report without a receipt to a person instead.
* ``key(report_id)``: the idempotency key, namespaced by the store (or bot) that owns
  the report, so two stores' ``r-1-1`` are two messages to the remote service.
  ``DeliveryPolicy.for_store(store)`` takes the namespace from the store's random id
  (``Store.store_id``), not from a name a person picks: a store deleted and created
  again under the same name would reuse its ``r-1-1`` under the same key, and the
  service would refuse it as a key reused with other content.

The clock and the random source are injected: tests and the checker pass a
``ManualClock`` and a fixed random source, and every schedule is reproducible.
"""

from __future__ import annotations

import random as _random
import time
from dataclasses import dataclass, field
from typing import Any, Callable

from .errors import InvalidField, ModelUnavailable
from .fields import require_id, require_int, require_number
from .transport import Refused


class ManualClock:
    """A clock that moves only when told to: ``clock()`` reads it, ``advance(seconds)`` moves it."""

    def __init__(self, start: float = 1_000_000.0):
        self._now = require_number("start", start)

    def __call__(self) -> float:
        return self._now

    def advance(self, seconds: float) -> float:
        seconds = require_number("seconds", seconds)
        if seconds < 0:
            raise InvalidField("seconds", "a clock does not go back")
        self._now += seconds
        return self._now


@dataclass(frozen=True)
class DeliveryPolicy:
    namespace: str
    """Who owns the reports, as the remote service should know it: a store or bot identity."""
    max_attempts: int = 10
    base_delay: float = 10.0
    max_delay: float = 300.0
    key_retention: float | None = None
    """How long the remote service remembers an idempotency key (seconds); ``None``: for ever."""
    clock: Callable[[], float] = field(default=time.time, repr=False)
    random: Callable[[], float] = field(default=_random.random, repr=False)

    def __post_init__(self) -> None:
        require_id("namespace", self.namespace)
        require_int("max_attempts", self.max_attempts, minimum=1)
        if require_number("base_delay", self.base_delay) <= 0:
            raise InvalidField("base_delay", "must be more than 0 seconds")
        if require_number("max_delay", self.max_delay) < self.base_delay:
            raise InvalidField("max_delay", "must be at least base_delay")
        if self.key_retention is not None and require_number("key_retention", self.key_retention) <= 0:
            raise InvalidField("key_retention", "must be more than 0 seconds, or None for a service that never forgets")
        for name in ("clock", "random"):
            if not callable(getattr(self, name)):
                raise InvalidField(name, "expected a function that returns a number")

    @classmethod
    def for_store(cls, store: Any, **settings: Any) -> "DeliveryPolicy":
        """The policy of the reports in ``store`` (a ``Store`` or a ``PgStore``): keys behind its random id."""
        if not callable(getattr(store, "store_id", None)):
            raise InvalidField("store", f"expected a Store or a PgStore, got {type(store).__name__}")
        return cls(f"lucy-{store.store_id()}", **settings)

    def now(self) -> float:
        return float(self.clock())

    def key(self, report_id: object) -> str:
        """The report's idempotency key: the same on every attempt, different in every other store."""
        return require_id("idempotency key", f"{self.namespace}:{report_id}")

    def key_remembered(self, first_sent_at: float | None) -> bool:
        """Whether the service still remembers the key of a report first sent at ``first_sent_at``.

        While it does, a retry under the same key cannot make a second message. Past the
        window it can, so a report with no receipt goes to a person instead. A report with
        no recorded first send is taken as past the window (unless keys are kept for ever)."""
        if self.key_retention is None:
            return True
        if first_sent_at is None:
            return False
        return self.now() - require_number("first_sent_at", first_sent_at) < self.key_retention

    def ceiling(self, attempts: int) -> float:
        """The longest wait after ``attempts`` attempts: doubling from ``base_delay``, capped at ``max_delay``."""
        return min(self.max_delay, self.base_delay * 2 ** (require_int("attempts", attempts, minimum=1) - 1))

    def shortest_total_wait(self) -> float:
        """The least the schedule waits, in all, before it gives up (every jitter drawn low, no retry_after).

        The outage a worker means to ride out must be shorter than this; past it, fail and tell the customer."""
        return sum(self.ceiling(n) / 2 for n in range(1, self.max_attempts))

    def next_due(self, attempts: int, refusal: Refused | ModelUnavailable) -> float | None:
        """When to try again after ``attempts`` attempts ended in ``refusal``; ``None`` means give up.

        ``refusal`` is a service's ``Refused``, or a ``ModelUnavailable`` from the model: work
        whose model failed waits out the same schedule, under the same cap, as a refused report.
        """
        require_int("attempts", attempts, minimum=1)
        if not isinstance(refusal, (Refused, ModelUnavailable)):
            raise InvalidField("refusal", f"expected a Refused or a ModelUnavailable, got {type(refusal).__name__}")
        if not refusal.retryable or attempts >= self.max_attempts:
            return None
        ceiling = self.ceiling(attempts)
        delay = ceiling / 2 + ceiling / 2 * float(self.random())  # "equal jitter": between half and all of it
        if refusal.retry_after is not None:
            delay = max(delay, refusal.retry_after)
        return self.now() + delay
