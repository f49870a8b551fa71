"""The clock/stock producer: scheduled briefs through the same admission contract."""

from __future__ import annotations

import datetime as dt

import pytest

from lucy_runtime.clock import ClockProducer, Schedule
from lucy_runtime.errors import InvalidField
from lucy_runtime.work import Admission, Outcome

START = dt.datetime(2026, 11, 30, 8, 0, tzinfo=dt.timezone.utc)
HOURLY = Schedule("acme-hourly", "ACME", "owner-ada", START, dt.timedelta(hours=1))


class Admitted:
    def __init__(self):
        self.sources: list[str] = []

    def __call__(self, source_id, session_id, text):
        outcome = Outcome.DUPLICATE if source_id in self.sources else Outcome.ACCEPTED
        self.sources.append(source_id)
        return Admission(outcome, source_id)


def test_the_newest_due_slot_is_admitted_and_older_ones_are_recorded_as_missed(store):
    admit = Admitted()
    clock = ClockProducer(store, admit, [HOURLY])
    result = clock.tick(START + dt.timedelta(hours=2, minutes=30))
    assert [f.source_id for f in result.fired] == ["clock:acme-hourly:2026-11-30T10:00Z"]
    assert [slot.hour for _, slot in result.missed] == [8, 9]
    assert [slot.hour for _, slot in clock.missed()] == [8, 9]


def test_nothing_fires_twice_for_one_slot_and_a_double_fire_is_a_duplicate(store):
    admit = Admitted()
    clock = ClockProducer(store, admit, [HOURLY])
    clock.tick(START + dt.timedelta(minutes=5))
    assert clock.tick(START + dt.timedelta(minutes=50)).fired == ()
    again = clock.fire(HOURLY, START)
    assert again.admission.outcome is Outcome.DUPLICATE


def test_the_next_slot_fires_after_its_time(store):
    clock = ClockProducer(store, Admitted(), [HOURLY])
    clock.tick(START)
    fired = clock.tick(START + dt.timedelta(hours=1, seconds=1)).fired
    assert [f.slot.hour for f in fired] == [9] and clock.missed() == []


def test_the_request_text_names_the_ticker_so_the_loop_can_brief_it():
    assert HOURLY.text(START).startswith("brief ACME")


@pytest.mark.parametrize("bad", [dict(start=dt.datetime(2026, 1, 1)), dict(every=dt.timedelta(0)), dict(ticker="")])
def test_a_schedule_refuses_bad_values(bad):
    values = dict(name="s", ticker="ACME", session_id="owner", start=START, every=dt.timedelta(hours=1)) | bad
    with pytest.raises(InvalidField):
        Schedule(**values)


def test_tick_refuses_a_naive_time(store):
    with pytest.raises(InvalidField, match="timezone-aware"):
        ClockProducer(store, Admitted(), [HOURLY]).tick(dt.datetime(2026, 11, 30, 9))


class FullFor(Admitted):
    def __init__(self, *full_sessions):
        super().__init__()
        self.full = set(full_sessions)

    def __call__(self, source_id, session_id, text):
        if session_id in self.full:
            return Admission(Outcome.REFUSED, None, "the queue is at capacity (10 waiting)")
        return super().__call__(source_id, session_id, text)


def test_a_capacity_refusal_of_a_slot_is_recorded_with_when_and_why_not_silently_dropped(store):
    clock = ClockProducer(store, FullFor("owner-ada"), [HOURLY])
    at = START + dt.timedelta(minutes=5)
    [fired] = clock.tick(at).fired
    assert fired.admission.outcome is Outcome.REFUSED
    [refusal] = clock.refused()
    assert (refusal.schedule, refusal.slot, refusal.source_id, refusal.refused_at) == \
        ("acme-hourly", START, "clock:acme-hourly:2026-11-30T08:00Z", at)
    assert "capacity" in refusal.reason
    assert clock.tick(START + dt.timedelta(minutes=10)).fired == ()  # recorded once, the slot is not retried


def test_an_admitted_slot_leaves_no_refusal(store):
    clock = ClockProducer(store, Admitted(), [HOURLY])
    clock.tick(START)
    assert clock.refused() == []
