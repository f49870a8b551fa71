"""Chapter 9's hand-off: scheduled stock briefs admitted through the learner's ``admit``.

Each schedule fires at fixed slots (``start + k * every``). A slot's source identity is
``clock:<schedule>:<slot>``, so a slot fired twice (two producers, or a restart between
admission and the cursor) is an identical duplicate. When the producer was down for
several slots, only the newest is admitted (a stale brief helps nobody) and the older
ones are recorded as missed, where anyone can see them.

A capacity refusal is recorded, not dropped: when ``admit`` answers REFUSED, the slot,
its source identity, the reason and the tick's time go into ``lucy_clock_refused`` in
the same transaction that moves the cursor. Nobody waits for a scheduled brief, so
there is no one to tell "busy"; the owner reads the table, or fires the slot again
with ``fire`` (the same slot is the same occurrence).
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from typing import Callable, Sequence

from .errors import InvalidField
from .fields import require_id
from .store import Migration, Store
from .work import Admission, Outcome

MIGRATIONS = (
    Migration(
        1,
        "clock cursor and missed slots",
        (
            "CREATE TABLE lucy_clock_cursor (schedule TEXT PRIMARY KEY, last_slot TEXT NOT NULL)",
            "CREATE TABLE lucy_clock_missed (schedule TEXT NOT NULL, slot TEXT NOT NULL, PRIMARY KEY (schedule, slot))",
        ),
    ),
    Migration(
        2,
        "clock capacity refusals",
        (
            """CREATE TABLE lucy_clock_refused (
                   schedule TEXT NOT NULL, slot TEXT NOT NULL, source_id TEXT NOT NULL, reason TEXT NOT NULL,
                   refused_at TEXT NOT NULL, PRIMARY KEY (schedule, slot))""",
        ),
    ),
)


@dataclass(frozen=True)
class Schedule:
    name: str
    ticker: str
    session_id: str
    start: dt.datetime
    every: dt.timedelta

    def __post_init__(self) -> None:
        require_id("name", self.name)
        require_id("ticker", self.ticker)
        require_id("session_id", self.session_id)
        if not isinstance(self.start, dt.datetime) or self.start.tzinfo is None:
            raise InvalidField("start", "expected a timezone-aware datetime")
        if not isinstance(self.every, dt.timedelta) or self.every <= dt.timedelta(0):
            raise InvalidField("every", "expected a positive timedelta")

    def slots_until(self, now: dt.datetime, after: dt.datetime | None) -> list[dt.datetime]:
        if now < self.start:
            return []
        count = int((now - self.start) / self.every)
        first = 0 if after is None else int((after - self.start) / self.every) + 1
        return [self.start + k * self.every for k in range(first, count + 1)]

    def source_id(self, slot: dt.datetime) -> str:
        return f"clock:{self.name}:{slot.astimezone(dt.timezone.utc).strftime('%Y-%m-%dT%H:%MZ')}"

    def text(self, slot: dt.datetime) -> str:
        return f"brief {self.ticker} 5 days (scheduled {slot.astimezone(dt.timezone.utc):%Y-%m-%d %H:%M} UTC)"


@dataclass(frozen=True)
class Fired:
    schedule: str
    slot: dt.datetime
    source_id: str
    admission: Admission


@dataclass(frozen=True)
class ClockRefusal:
    schedule: str
    slot: dt.datetime
    source_id: str
    reason: str
    refused_at: dt.datetime


@dataclass(frozen=True)
class TickResult:
    fired: tuple[Fired, ...]
    missed: tuple[tuple[str, dt.datetime], ...]


class ClockProducer:
    def __init__(self, store: Store, admit: Callable[[str, str, str], Admission], schedules: Sequence[Schedule]):
        if not callable(admit):
            raise InvalidField("admit", "expected the learner's admit(source_id, session_id, text)")
        names = [s.name for s in schedules]
        if len(names) != len(set(names)):
            raise InvalidField("schedules", f"schedule names must be unique, got {names}")
        self._store, self._admit, self._schedules = store, admit, tuple(schedules)
        store.migrate("clock", MIGRATIONS)

    def last_slot(self, name: str) -> dt.datetime | None:
        rows = self._store.query("SELECT last_slot FROM lucy_clock_cursor WHERE schedule = ?", (name,))
        return dt.datetime.fromisoformat(rows[0]["last_slot"]) if rows else None

    def fire(self, schedule: Schedule, slot: dt.datetime) -> Fired:
        """Admit one slot's request; the same slot fired again is the same occurrence."""
        source_id = schedule.source_id(slot)
        return Fired(schedule.name, slot, source_id, self._admit(source_id, schedule.session_id, schedule.text(slot)))

    def tick(self, now: dt.datetime) -> TickResult:
        if not isinstance(now, dt.datetime) or now.tzinfo is None:
            raise InvalidField("now", "expected a timezone-aware datetime")
        fired, missed = [], []
        for schedule in self._schedules:
            due = schedule.slots_until(now, self.last_slot(schedule.name))
            if not due:
                continue
            newest = self.fire(schedule, due[-1])  # the learner's transaction commits here
            fired.append(newest)
            with self._store.transaction() as tx:  # then, and only then, the cursor moves
                if newest.admission.outcome is Outcome.REFUSED:  # with the cursor move: never a silent drop
                    tx.execute("INSERT INTO lucy_clock_refused (schedule, slot, source_id, reason, refused_at) "
                               "VALUES (?, ?, ?, ?, ?) ON CONFLICT DO NOTHING",
                               (schedule.name, newest.slot.isoformat(), newest.source_id,
                                newest.admission.reason or "refused: no capacity", now.isoformat()))
                for slot in due[:-1]:
                    tx.execute("INSERT INTO lucy_clock_missed (schedule, slot) VALUES (?, ?) ON CONFLICT DO NOTHING",
                               (schedule.name, slot.isoformat()))
                    missed.append((schedule.name, slot))
                tx.execute("INSERT INTO lucy_clock_cursor (schedule, last_slot) VALUES (?, ?) "
                           "ON CONFLICT (schedule) DO UPDATE SET last_slot = excluded.last_slot",
                           (schedule.name, due[-1].isoformat()))
        return TickResult(tuple(fired), tuple(missed))

    def missed(self) -> list[tuple[str, dt.datetime]]:
        rows = self._store.query("SELECT schedule, slot FROM lucy_clock_missed ORDER BY schedule, slot")
        return [(r["schedule"], dt.datetime.fromisoformat(r["slot"])) for r in rows]

    def refused(self) -> list[ClockRefusal]:
        rows = self._store.query("SELECT * FROM lucy_clock_refused ORDER BY refused_at, schedule")
        return [ClockRefusal(r["schedule"], dt.datetime.fromisoformat(r["slot"]), r["source_id"], r["reason"],
                             dt.datetime.fromisoformat(r["refused_at"])) for r in rows]
