"""The delivery policy: capped exponential backoff with jitter, retry_after honoured, namespaced keys."""

from __future__ import annotations

import pytest

from lucy_runtime.delivery import DeliveryPolicy, ManualClock
from lucy_runtime.errors import InvalidField, ModelUnavailable
from lucy_runtime.fakes.service import Behaviour, FakeService, FakeTransport
from lucy_runtime.store import Store
from lucy_runtime.transport import OutgoingReport, Receipt, Refused

BUSY = Refused("r-1-1", "429", retryable=True)


def policy(jitter: float = 1.0, **settings) -> DeliveryPolicy:
    return DeliveryPolicy("store-a", clock=ManualClock(1000.0), random=lambda: jitter, **settings)


def test_the_wait_doubles_with_each_attempt_up_to_the_cap():
    p = policy(base_delay=2, max_delay=10, max_attempts=9)
    assert [p.next_due(n, BUSY) - 1000.0 for n in range(1, 6)] == [2, 4, 8, 10, 10]


def test_jitter_spreads_the_wait_between_half_and_all_of_it():
    assert policy(jitter=0.0, base_delay=8).next_due(1, BUSY) == 1004.0
    assert policy(jitter=0.5, base_delay=8).next_due(1, BUSY) == 1006.0


def test_the_wait_is_never_shorter_than_the_services_retry_after():
    slow = Refused("r-1-1", "429", retryable=True, retry_after=45)
    assert policy(base_delay=2).next_due(1, slow) == 1045.0


def test_a_permanent_refusal_or_the_last_attempt_gives_up():
    assert policy().next_due(1, Refused("r-1-1", "403", retryable=False)) is None
    assert policy(max_attempts=3).next_due(2, BUSY) is not None
    assert policy(max_attempts=3).next_due(3, BUSY) is None


def test_a_model_error_waits_out_the_same_schedule_under_the_same_cap():
    p = policy(base_delay=2, max_delay=10, max_attempts=3)
    assert p.next_due(1, ModelUnavailable()) == p.next_due(1, BUSY) == 1002.0
    assert p.next_due(1, ModelUnavailable(retry_after=30)) == 1030.0
    assert p.next_due(3, ModelUnavailable()) is None


def test_a_key_names_the_store_and_the_report_and_nothing_else():
    assert DeliveryPolicy("store-a").key("r-1-1") == "store-a:r-1-1"
    assert DeliveryPolicy("store-a").key("r-1-1") != DeliveryPolicy("store-b").key("r-1-1")


def test_the_manual_clock_moves_only_forward_when_told():
    clock = ManualClock(5.0)
    assert clock() == 5.0 and clock.advance(2.5) == 7.5 and clock() == 7.5
    with pytest.raises(InvalidField, match="seconds"):
        clock.advance(-1)


@pytest.mark.parametrize("settings, name", [
    ({"namespace": ""}, "namespace"),
    ({"max_attempts": 0}, "max_attempts"),
    ({"base_delay": 0}, "base_delay"),
    ({"base_delay": 5, "max_delay": 1}, "max_delay"),
    ({"clock": 3}, "clock"),
])
def test_bad_settings_are_refused_naming_the_field(settings, name):
    with pytest.raises(InvalidField) as caught:
        DeliveryPolicy(**{"namespace": "store-a", **settings})
    assert caught.value.field == name


def test_the_key_namespace_is_the_store_s_random_id_and_a_recreated_store_gets_a_new_one(tmp_path):
    path = tmp_path / "lucy.sqlite3"
    with Store(path) as store:
        first = DeliveryPolicy.for_store(store)
        assert DeliveryPolicy.for_store(store).namespace == first.namespace  # asked again: the same id
    with Store(path) as reopened:
        assert DeliveryPolicy.for_store(reopened).namespace == first.namespace  # a fresh process: the same id
    path.unlink()
    with Store(path) as recreated:  # deleted, then created again under the same name
        second = DeliveryPolicy.for_store(recreated)
    assert second.namespace != first.namespace and second.key("r-1-1") != first.key("r-1-1")

    def deliver(policy, body):
        service = FakeService(tmp_path / "service.sqlite3", idempotent=True, script=[Behaviour.ACCEPT])
        return FakeTransport(service).send(OutgoingReport("r-1-1", "chat-1", body, idempotency_key=policy.key("r-1-1")))

    assert isinstance(deliver(first, "the old store's answer"), Receipt)
    assert isinstance(deliver(second, "the new store's answer"), Receipt)
    # The known-bad namespace, a name a person picks: the recreated store's r-1-1 is refused for good.
    named = deliver(DeliveryPolicy("lucy-ada"), "the old store's answer"), deliver(DeliveryPolicy("lucy-ada"), "the new")
    assert isinstance(named[0], Receipt) and not named[1].retryable


def test_a_policy_for_something_that_is_not_a_store_is_refused():
    with pytest.raises(InvalidField):
        DeliveryPolicy.for_store("lucy.sqlite3")


def test_the_default_schedule_outlasts_the_ten_minute_outage_the_chapter_names():
    p = DeliveryPolicy("store-a", clock=ManualClock(1000.0), random=lambda: 0.0)  # every jitter drawn low
    waited, attempts = 0.0, 1
    while (due := p.next_due(attempts, ModelUnavailable())) is not None:
        waited, attempts = due - 1000.0 + waited, attempts + 1
    assert waited == p.shortest_total_wait() > 600
    assert DeliveryPolicy("store-a", max_attempts=5, base_delay=2.0).shortest_total_wait() < 600  # the old schedule
