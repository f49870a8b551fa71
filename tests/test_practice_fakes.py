"""The practice notebook's fakes keep their own record, and fail only in the ways they are told to."""

from __future__ import annotations

import sqlite3

import pytest

from lucy_runtime.errors import BrokerRejected, InvalidField
from lucy_runtime.practice import (
    Answered, CaseReceipt, CaseRefused, FakeBroker, FakeCaseService, FakeSeatService, NoAnswer, NotInAnExperiment,
    SeatScript, add_message, buggy_publish_one, case_digest, case_key, create_tables, from_fresh_process, open_case, read_messages,
    read_publish_keys, read_seats, run_until_killed, send_case, stop_here,
)
from lucy_runtime.store import Store


def test_the_broker_appends_a_key_once_and_answers_a_replay_with_the_first_offset(tmp_path):
    broker = FakeBroker(tmp_path / "broker.sqlite3")
    first, again, other = broker.publish("m1", "hello"), broker.publish("m1", "hello"), broker.publish("m2", "bye")
    assert (first.offset, first.replayed) == (1, False)
    assert (again.offset, again.replayed) == (1, True)
    assert [(m.key, m.body) for m in read_messages(tmp_path / "broker.sqlite3")] == [("m1", "hello"), ("m2", "bye")]
    assert read_publish_keys(broker.log_path) == ["m1", "m1", "m2"] and other.offset == 2


def test_the_broker_refuses_a_poison_payload_under_any_key_and_logs_each_request(tmp_path):
    broker = FakeBroker(tmp_path / "broker.sqlite3", rejects=frozenset({"too large"}))
    for key in ("m1", "m1-attempt-2"):
        with pytest.raises(BrokerRejected):
            broker.publish(key, "too large")
    assert broker.publish("m2", "fine").offset == 1
    assert read_publish_keys(broker.log_path) == ["m1", "m1-attempt-2", "m2"]
    assert [m.key for m in broker.messages()] == ["m2"]


def test_a_broker_log_that_was_never_made_reads_as_empty(tmp_path):
    assert read_messages(tmp_path / "nothing.sqlite3") == []


def test_the_broker_reports_send_before_and_accepted_after_it_commits(tmp_path):
    seen = []
    FakeBroker(tmp_path / "b.sqlite3", probe=lambda kind, what: seen.append((kind, len(read_messages(tmp_path / "b.sqlite3"))))).publish("k", "x")
    assert seen == [("send", 0), ("accepted", 1)]


def test_the_seat_service_grants_once_per_key_as_the_idempotency_key_draft_says(tmp_path):
    """A finished key's retry gets the stored response; 409 is a first request still in progress; 422 a reused key."""
    service = FakeSeatService(tmp_path / "seats.sqlite3", script=[SeatScript.OK, SeatScript.IN_PROGRESS])
    first = service.post_grant("ws-1", "u-1", idempotency_key="req-1")
    assert first == Answered(201, "seat-1")
    assert service.post_grant("ws-1", "u-1", idempotency_key="req-1") == Answered(409)
    assert service.post_grant("ws-1", "u-1", idempotency_key="req-1") == Answered(201, "seat-1")
    assert service.post_grant("ws-1", "u-2", idempotency_key="req-1") == Answered(422)
    assert len(read_seats(tmp_path / "seats.sqlite3")) == 1


def test_a_lost_answer_still_grants_and_without_a_key_a_retry_grants_again(tmp_path):
    service = FakeSeatService(tmp_path / "seats.sqlite3", script=[SeatScript.COMMIT_THEN_TIMEOUT])
    assert isinstance(service.post_grant("ws-1", "u-1"), NoAnswer)
    assert service.post_grant("ws-1", "u-1") == Answered(201, "seat-2")
    assert [s.user_id for s in service.seats()] == ["u-1", "u-1"]


def test_a_500_may_have_granted_the_seat_and_a_retry_gets_the_stored_answer(tmp_path):
    service = FakeSeatService(tmp_path / "seats.sqlite3", script=[SeatScript.COMMIT_THEN_500])
    assert service.post_grant("ws-1", "u-1", idempotency_key="k") == Answered(500)
    assert service.post_grant("ws-1", "u-1", idempotency_key="k") == Answered(201, "seat-1")
    assert len(service.seats()) == 1 and [p.status for p in service.posts()] == [500, 201]


@pytest.mark.parametrize("script, status", [(SeatScript.THROTTLED, 429), (SeatScript.UNAVAILABLE, 503),
                                            (SeatScript.BAD_REQUEST, 400), (SeatScript.FORBIDDEN, 403)])
def test_a_scripted_status_grants_nothing(tmp_path, script, status):
    service = FakeSeatService(tmp_path / "seats.sqlite3", script=[script])
    assert service.post_grant("ws-1", "u-1", idempotency_key="k") == Answered(status)
    assert service.seats() == [] and [p.status for p in service.posts()] == [status]


def test_a_reset_grants_nothing_and_the_script_is_shared_by_a_second_client(tmp_path):
    FakeSeatService(tmp_path / "s.sqlite3", script=[SeatScript.OK, SeatScript.RESET])
    assert FakeSeatService(tmp_path / "s.sqlite3").post_grant("w", "a").status == 201
    assert isinstance(FakeSeatService(tmp_path / "s.sqlite3").post_grant("w", "b"), NoAnswer)
    assert [s.user_id for s in read_seats(tmp_path / "s.sqlite3")] == ["a"]


def test_the_seat_service_names_a_bad_field(tmp_path):
    with pytest.raises(InvalidField, match="user_id"):
        FakeSeatService(tmp_path / "s.sqlite3").post_grant("w", "")
    with pytest.raises(TypeError, match="SeatScript"):
        FakeSeatService(tmp_path / "s.sqlite3", script=["ok"])


def test_the_case_service_commits_one_action_per_key_and_refuses_another_proposal(tmp_path):
    service = FakeCaseService(tmp_path / "cases.sqlite3")
    mark = case_digest("replace pump P-7")
    first = service.submit("calder:C01", "replace pump P-7")
    assert first == CaseReceipt("calder:C01", "rcpt-1", digest=mark)
    assert service.submit("calder:C01", "replace pump P-7") == CaseReceipt("calder:C01", "rcpt-1", True, mark)
    assert isinstance(service.submit("calder:C01", "replace two pumps"), CaseRefused)
    assert service.lookup("calder:C01") == CaseReceipt("calder:C01", "rcpt-1", replayed=True, digest=mark)
    assert mark != case_digest("replace two pumps")
    assert service.lookup("calder:C02") is None
    assert len(service.actions()) == 1
    assert [r.verb for r in service.requests()] == ["submit", "submit", "submit", "lookup", "lookup"]


def test_the_supplied_workers_leave_what_the_exercises_start_from(tmp_path):
    with Store(tmp_path / "lucy.sqlite3") as store:
        create_tables(store)
        add_message(store, "m1", "hello")
        broker = FakeBroker(tmp_path / "broker.sqlite3")
        assert buggy_publish_one(store, broker).key == "m1" and buggy_publish_one(store, broker) is None
        assert store.query("SELECT status, attempts FROM outbox")[0][:] == ("sent", 1)
        open_case(store, "calder", "C01", "replace pump P-7")
        service = FakeCaseService(tmp_path / "cases.sqlite3")
        assert send_case(store, service, "C01").receipt_id == "rcpt-1"
        assert tuple(store.query("SELECT intent, receipt FROM ledger")[0]) == ("sent", "rcpt-1")
        with pytest.raises(LookupError):
            send_case(store, service, "C01")
    assert case_key("calder", "C01") == "calder:C01"


def test_a_kill_hook_stops_its_own_process_and_a_fresh_one_reads_what_was_committed(tmp_path):
    path = tmp_path / "lucy.sqlite3"
    with Store(path) as store:
        create_tables(store)
        add_message(store, "m1", "hello")

    def strand():
        mine = Store(path)
        mine.set_hook(lambda kind, sql: stop_here() if kind == "committed" else None)
        buggy_publish_one(mine, FakeBroker(tmp_path / "broker.sqlite3"))

    assert run_until_killed(strand) is True
    assert from_fresh_process(lambda: [tuple(r) for r in Store(path).query("SELECT row_id, status FROM outbox")]) \
        == [["m1", "sent"]]
    assert read_messages(tmp_path / "broker.sqlite3") == []
    assert run_until_killed(lambda: None) is False


def test_stop_here_refuses_to_end_the_process_it_was_not_started_for():
    with pytest.raises(NotInAnExperiment):
        stop_here()


@pytest.mark.parametrize("fork", [True, False], ids=["forked observer", "observer interpreter"])
def test_reading_a_log_leaves_no_wal_file_behind_for_the_next_writer(tmp_path, fork):
    """A reader running as another user must not leave files the next writer cannot write."""
    from lucy_runtime.checker.practice_observe import observe_practice

    with Store(tmp_path / "lucy.sqlite3") as store:
        create_tables(store)
        add_message(store, "m1", "hello")
    FakeBroker(tmp_path / "broker.sqlite3").publish("m1", "hello")
    before = sorted(p.name for p in tmp_path.iterdir())
    read_messages(tmp_path / "broker.sqlite3")
    [snap] = observe_practice([{"db": str(tmp_path / "lucy.sqlite3"), "log": str(tmp_path / "broker.sqlite3")}],
                              fork=fork)
    assert snap.row("m1")["status"] == "pending" and snap.messages_for("m1") == 1
    assert sorted(p.name for p in tmp_path.iterdir()) == before
    assert not [p for p in before if p.endswith(("-wal", "-shm"))]


def test_a_fake_s_log_keeps_a_rollback_journal_so_a_reader_creates_no_file(tmp_path):
    """Graded, the observer reads as another user than the child that writes: a WAL reader would leave
    -wal and -shm files of its own that the next writer cannot open."""
    FakeBroker(tmp_path / "b.sqlite3").publish("m1", "hello")
    FakeSeatService(tmp_path / "s.sqlite3").post_grant("w", "u")
    FakeCaseService(tmp_path / "c.sqlite3").submit("t:C1", "replace")
    for name in ("b", "s", "c"):
        with sqlite3.connect(tmp_path / f"{name}.sqlite3") as conn:
            assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "delete"


def test_the_observer_reads_every_column_of_the_learners_outbox_and_names_a_missing_one(tmp_path):
    """A row's state is all of its columns: a design that says "on its way" with an attempt count and not a
    status is seen, through the digest of the whole database; long text and bytes count to the last byte."""
    from lucy_runtime.practice.observer import snapshot

    def taken_with(rows, name):
        db = tmp_path / name
        with sqlite3.connect(db) as conn:
            conn.execute("CREATE TABLE outbox (row_id TEXT, payload TEXT, status TEXT, attempts INTEGER, blob BLOB, "
                         "note TEXT)")
            conn.execute("CREATE TABLE ledger (case_id TEXT, intent TEXT, receipt TEXT)")
            conn.executemany("INSERT INTO outbox VALUES (?, ?, ?, ?, ?, ?)", rows)
        return db, snapshot(str(db), str(tmp_path / "no-log.sqlite3"))

    row = ("m1", "a", "pending", 0, b"\x00\x01", "x" * 300)
    db, first = taken_with([row], "first.sqlite3")
    assert first["problems"] == [] and first["outbox"] == [{"row_id": "m1", "payload": "a", "status": "pending"}]
    assert taken_with([row], "same.sqlite3")[1]["database"] == first["database"]
    changes = ((*row[:3], 1, *row[4:]), (*row[:4], b"\x00\x02", row[5]), (*row[:5], "x" * 299 + "y"))
    for n, changed in enumerate(changes):
        other = taken_with([changed], f"other-{n}.sqlite3")[1]
        assert other["outbox"] == first["outbox"] and other["database"] != first["database"], changed
    with sqlite3.connect(db) as conn:
        conn.execute("ALTER TABLE outbox RENAME COLUMN status TO state")
    assert snapshot(str(db), str(tmp_path / "no-log.sqlite3"))["problems"] == ["the outbox table has no status column"]
