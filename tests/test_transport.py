"""The sender boundary and the fake remote service with its own accepted-send log."""

from __future__ import annotations

import os

import pytest

from lucy_runtime.errors import InvalidField, TransportMisuse
from lucy_runtime.transport import (
    Behaviour, FakeService, FakeTransport, OutgoingReport, Receipt, Refused, Uncertain, read_accepted,
)


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
    assert isinstance(transport.send(report()), Refused)
    assert service.accepted() == []
    assert isinstance(transport.send(report()), Receipt)  # the script is used up: later calls accept


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
