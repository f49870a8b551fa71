"""The sender boundary and the fake remote service with its own accepted-send log."""

from __future__ import annotations

import os

import pytest

from lucy_runtime.errors import InvalidField, TransportMisuse
from lucy_runtime.fakes.service import Behaviour, FakeService, FakeTransport, read_accepted
from lucy_runtime.transport import OutgoingReport, Receipt, Refused, Uncertain


def report(n: int = 1, body: str = "ACME closed at 101.20", key: str | None = None) -> OutgoingReport:
    return OutgoingReport(f"r-{n}-1", "chat-4411", body, idempotency_key=key)


def test_an_accepted_send_returns_a_receipt_and_is_logged(tmp_path):
    service = FakeService(tmp_path / "service.sqlite3")
    outcome = FakeTransport(service).send(report())
    assert isinstance(outcome, Receipt) and outcome.remote_id == "m-1"
    assert [a.report_id for a in service.accepted()] == ["r-1-1"]


def test_a_refusal_is_known_and_logs_no_accepted_send(tmp_path):
    service = FakeService(tmp_path / "service.sqlite3", script=[Behaviour.REFUSE])
    transport = FakeTransport(service)
    assert transport.send(report()) == Refused("r-1-1", "429 too many requests", retryable=True, retry_after=30.0)
    assert service.accepted() == []
    assert isinstance(transport.send(report()), Receipt)  # the script is used up: later calls accept


@pytest.mark.parametrize("behaviour, retryable", [
    (Behaviour.REFUSE_PERMANENTLY, False),
    (Behaviour.CONNECT_FAILS, True),
])
def test_each_scripted_refusal_says_whether_another_try_is_worth_it(tmp_path, behaviour, retryable):
    service = FakeService(tmp_path / "s.sqlite3", script=[behaviour])
    outcome = FakeTransport(service).send(report())
    assert isinstance(outcome, Refused) and outcome.retryable is retryable
    assert service.accepted() == []


def test_a_session_can_be_refused_on_every_request_whatever_the_script(tmp_path):
    service = FakeService(tmp_path / "s.sqlite3", sessions={"chat-4411": Behaviour.REFUSE_PERMANENTLY})
    transport = FakeTransport(service)
    assert all(isinstance(transport.send(report(n)), Refused) for n in range(3))
    assert isinstance(transport.send(OutgoingReport("r-9-1", "chat-9", "hi")), Receipt)


def test_a_server_error_is_uncertain_although_nothing_was_accepted(tmp_path):
    service = FakeService(tmp_path / "s.sqlite3", script=[Behaviour.SERVER_ERROR])
    assert isinstance(FakeTransport(service).send(report()), Uncertain)
    assert service.accepted() == []


def test_a_refusal_must_say_whether_it_is_retryable():
    with pytest.raises(TypeError, match="retryable"):
        Refused("r-1-1", "no", retryable="yes")
    with pytest.raises(InvalidField, match="retry_after"):
        Refused("r-1-1", "no", retryable=True, retry_after="soon")


def test_a_lost_reply_is_uncertain_although_the_service_accepted(tmp_path):
    service = FakeService(tmp_path / "service.sqlite3", script=[Behaviour.LOSE_REPLY])
    outcome = FakeTransport(service).send(report())
    assert isinstance(outcome, Uncertain)
    assert len(service.accepted()) == 1


def test_a_second_client_sees_the_same_script_and_log(tmp_path):
    FakeService(tmp_path / "s.sqlite3", script=[Behaviour.ACCEPT, Behaviour.LOSE_REPLY])
    first, second = FakeTransport(FakeService(tmp_path / "s.sqlite3")), FakeTransport(FakeService(tmp_path / "s.sqlite3"))
    assert isinstance(first.send(report(1)), Receipt)
    assert isinstance(second.send(report(2)), Uncertain)
    assert len(read_accepted(str(tmp_path / "s.sqlite3"))) == 2


def test_idempotent_mode_returns_the_original_receipt_for_the_same_key_and_content(tmp_path):
    service = FakeService(tmp_path / "s.sqlite3", idempotent=True, script=[Behaviour.LOSE_REPLY])
    transport = FakeTransport(service)
    assert isinstance(transport.send(report(key="r-1-1")), Uncertain)
    again = transport.send(report(key="r-1-1"))
    assert isinstance(again, Receipt) and again.replayed and again.remote_id == "m-1"
    assert len(service.accepted()) == 1


def test_idempotent_mode_refuses_a_reused_key_with_other_content_and_never_executes_it(tmp_path):
    service = FakeService(tmp_path / "s.sqlite3", idempotent=True)
    transport = FakeTransport(service)
    transport.send(report(key="k-1"))
    outcome = transport.send(report(body="something else", key="k-1"))
    assert isinstance(outcome, Refused) and "different content" in outcome.reason
    assert [a.body for a in service.accepted()] == ["ACME closed at 101.20"]


def test_reconciliation_looks_up_a_send_by_its_key(tmp_path):
    service = FakeService(tmp_path / "s.sqlite3", idempotent=True, script=[Behaviour.LOSE_REPLY])
    transport = FakeTransport(service)
    transport.send(report(key="r-1-1"))
    assert transport.lookup("r-1-1") == Receipt("r-1-1", "m-1", replayed=True)
    assert transport.lookup("r-9-9") is None


def test_a_key_expires_after_the_retention_window_and_then_sends_again(tmp_path):
    now = [100.0]
    service = FakeService(tmp_path / "s.sqlite3", idempotent=True, retention=60, clock=lambda: now[0])
    transport = FakeTransport(service)
    transport.send(report(key="ns:r-1-1"))
    now[0] += 60
    assert transport.lookup("ns:r-1-1") == Receipt("r-1-1", "m-1", replayed=True)  # still remembered
    now[0] += 1
    assert transport.lookup("ns:r-1-1") is None  # no longer: the missing receipt does not mean "never sent"
    again = transport.send(report(key="ns:r-1-1"))
    assert isinstance(again, Receipt) and not again.replayed
    assert [a.remote_id for a in service.accepted()] == ["m-1", "m-2"]  # the customer got it twice


def test_the_retention_window_must_be_positive(tmp_path):
    with pytest.raises(ValueError, match="retention"):
        FakeService(tmp_path / "s.sqlite3", idempotent=True, retention=0)


def test_a_service_without_keys_offers_no_lookup(tmp_path):
    with pytest.raises(TransportMisuse, match="no look-up"):
        FakeService(tmp_path / "s.sqlite3").lookup("r-1-1")


def test_the_accepted_send_log_survives_the_death_of_its_client_process(tmp_path):
    log = tmp_path / "service.sqlite3"
    pid = os.fork()
    if pid == 0:
        FakeTransport(FakeService(log)).send(report())
        os._exit(9)  # dies right after sending, with nothing closed or flushed by Python
    _, status = os.waitpid(pid, 0)
    assert os.WEXITSTATUS(status) == 9
    assert [(a.report_id, a.session_id, a.body) for a in read_accepted(str(log))] == [
        ("r-1-1", "chat-4411", "ACME closed at 101.20")]


def test_a_crash_after_acceptance_is_seen_only_in_the_service_log(tmp_path):
    log = tmp_path / "service.sqlite3"
    pid = os.fork()
    if pid == 0:
        FakeTransport(FakeService(log), on_accepted=lambda receipt: os._exit(7)).send(report())
        os._exit(0)
    _, status = os.waitpid(pid, 0)
    assert os.WEXITSTATUS(status) == 7 and len(read_accepted(str(log))) == 1


def test_the_fake_transport_records_what_it_was_asked_to_send(tmp_path):
    transport = FakeTransport(FakeService(tmp_path / "s.sqlite3"))
    transport.send(report(1))
    transport.send(report(2))
    assert [r.report_id for r in transport.attempts] == ["r-1-1", "r-2-1"]


@pytest.mark.parametrize("fields, name", [
    ({"report_id": None}, "report_id"),
    ({"session_id": 4411}, "session_id"),
    ({"body": b"bytes"}, "body"),
    ({"body": "x" * (64 * 1024 + 1)}, "body"),
    ({"idempotency_key": ""}, "idempotency_key"),
])
def test_an_outgoing_report_refuses_wrong_types_naming_the_field(fields, name):
    values = {"report_id": "r-1-1", "session_id": "chat-1", "body": "hi", **fields}
    with pytest.raises(InvalidField) as caught:
        OutgoingReport(**values)
    assert caught.value.field == name


def test_send_refuses_something_that_is_not_an_outgoing_report(tmp_path):
    with pytest.raises(TransportMisuse, match="OutgoingReport"):
        FakeTransport(FakeService(tmp_path / "s.sqlite3")).send({"report_id": "r-1-1"})


def test_the_service_refuses_a_non_bool_idempotent_flag(tmp_path):
    with pytest.raises(InvalidField, match="idempotent"):
        FakeService(tmp_path / "s.sqlite3", idempotent=1)


def test_64_kib_bodies_are_sent_verbatim(tmp_path):
    body = "📈" * (16 * 1024)
    service = FakeService(tmp_path / "s.sqlite3")
    FakeTransport(service).send(report(body=body))
    assert service.accepted()[0].body == body


# One contract for every transport Lucy ships: the fake, the keyed fake and Telegram.

@pytest.fixture(params=["fake", "keyed-fake", "telegram"])
def any_transport(request, tmp_path):
    if request.param == "telegram":
        from lucy_runtime.telegram import BotApi, TelegramTransport
        from lucy_runtime.fakes.telegram import FakeTelegram

        with FakeTelegram() as api:
            yield TelegramTransport(BotApi(api.base_url, api.token), {"chat-4411": 4411})
        return
    yield FakeTransport(FakeService(tmp_path / "s.sqlite3", idempotent=request.param == "keyed-fake"))


def test_every_transport_answers_a_send_with_one_of_the_three_outcomes(any_transport):
    outcome = any_transport.send(report(key="ns:r-1-1"))
    assert isinstance(outcome, Receipt) and outcome.report_id == "r-1-1" and outcome.remote_id


def test_every_transport_refuses_what_is_not_an_outgoing_report(any_transport):
    with pytest.raises(TransportMisuse):
        any_transport.send(("r-1-1", "chat-4411", "hi"))


def test_every_transport_looks_up_a_key_or_says_it_cannot(any_transport):
    any_transport.send(report(key="ns:r-1-1"))
    try:
        found = any_transport.lookup("ns:r-1-1")
    except TransportMisuse:
        return  # this service keeps no record to look up: its UNKNOWN stays UNKNOWN
    assert found == Receipt("r-1-1", found.remote_id, replayed=True)
    assert any_transport.lookup("ns:r-9-9") is None
