"""The tables stop growing (issue 38, item 5): ``retention.prune`` deletes finished requests, and nothing else.

Each rule has a known-bad pruner the tests catch: one that keeps requests for an hour
(a redelivered update is admitted twice), and one that deletes every report of old
finished work (an UNKNOWN report, which may never have arrived, disappears).
The schema and ``admit`` are the reference, taken from source/.
"""

from __future__ import annotations

import time

import pytest

from lucy_runtime.delivery import DeliveryPolicy, ManualClock
from lucy_runtime.errors import InvalidField, RetentionTooShort, StoreMisuse, TablesNotFound
from lucy_runtime.fakes.model import InvocationLog, ScriptedModel
from lucy_runtime.fakes.service import FakeService, FakeTransport
from lucy_runtime.loop import AgentLoop
from lucy_runtime.notebooks.notebook import learner_implementation
from lucy_runtime.retention import DEFAULT_WINDOW, TELEGRAM_KEEPS_UPDATES, Pruned, prune
from lucy_runtime.store import Store
from lucy_runtime.work import Outcome, Queue

from .conftest import REPO
from .test_renamed_tables import renamed

CELLS = ("ch07_unit_a:imports", "ch07_unit_a:schema", "ch07_unit_a:admit", "ch07_unit_a:refusal",
         "ch07_unit_a:claim", "ch07_unit_a:finish", "ch07_unit_a:work_once", "ch07_unit_b:imports",
         "ch07_unit_b:deliver_one")
HOUR, DAY = 3600.0, 24 * 3600.0


@pytest.fixture(scope="module")
def ref() -> dict:
    cells = dict(learner_implementation(REPO / "source"))
    namespace: dict = {"__name__": "reference"}
    for name in CELLS:
        exec(compile(cells[name], name, "exec"), namespace)
    return namespace


@pytest.fixture
def store(tmp_path, ref):
    with Store(tmp_path / "lucy.sqlite3") as store:
        ref["create_schema"](store)
        yield store


def plant(store: Store, work_id: int, state: str, deliveries: tuple[str, ...], admitted_at: float) -> None:
    """Work ``work_id`` in ``state``, admitted at ``admitted_at``, with one report per delivery state."""
    with store.transaction() as tx:
        tx.execute("INSERT INTO work (work_id, source_id, session_id, text, state, admitted_at) "
                   "VALUES (?, ?, 'chat-4411', 'brief ACME 5 days', ?, ?)",
                   (work_id, f"tg:4411:{work_id}", state, admitted_at))
        for generation, delivery in enumerate(deliveries, start=1):
            tx.execute("INSERT INTO report (report_id, work_id, generation, session_id, body, delivery) "
                       "VALUES (?, ?, ?, 'chat-4411', 'ACME closed at 101.20', ?)",
                       (f"r-{work_id}-{generation}", work_id, generation, delivery))


def kept(store: Store) -> tuple[list[int], list[str]]:
    return ([r[0] for r in store.query("SELECT work_id FROM work ORDER BY work_id")],
            [r[0] for r in store.query("SELECT report_id FROM report ORDER BY report_id")])


def prune_after_an_hour(store: Store, clock) -> None:
    """Known-bad: keeps finished requests for one hour, less than Telegram keeps an update."""
    with store.transaction() as tx:
        old = "SELECT work_id FROM work WHERE state IN ('done', 'failed') AND admitted_at < ?"
        tx.execute(f"DELETE FROM report WHERE work_id IN ({old})", (clock() - HOUR,))
        tx.execute(f"DELETE FROM work WHERE work_id IN ({old})", (clock() - HOUR,))


def prune_every_report_of_finished_work(store: Store, clock) -> None:
    """Known-bad: asks whether the work is finished, never whether its reports are."""
    with store.transaction() as tx:
        old = "SELECT work_id FROM work WHERE state IN ('done', 'failed') AND admitted_at < ?"
        tx.execute(f"DELETE FROM report WHERE work_id IN ({old})", (clock() - DEFAULT_WINDOW,))
        tx.execute(f"DELETE FROM work WHERE work_id IN ({old})", (clock() - DEFAULT_WINDOW,))


def redelivered_after(ref: dict, tmp_path, pruner, hours: float) -> Outcome:
    """Ada's update is admitted, answered and delivered; ``hours`` later a pruner runs, then Telegram
    delivers the same update again (it may, for 24 hours). What does ``admit`` say to it?"""
    clock = ManualClock(time.time())
    with Store(tmp_path / "lucy.sqlite3") as store:
        ref["create_schema"](store)
        queue = Queue(store, 5, 5)
        assert ref["admit"](queue, "tg:4411:87", "chat-4411", "brief ACME 5 days").outcome is Outcome.ACCEPTED
        ref["work_once"](queue, AgentLoop(ScriptedModel(InvocationLog(tmp_path / "calls.log"))), "worker-1")
        sent = ref["deliver_one"](store, FakeTransport(FakeService(tmp_path / "service.sqlite3")),
                                  DeliveryPolicy.for_store(store))
        assert sent.value == "confirmed"
        clock.advance(hours * HOUR)
        pruner(store, clock)
        return ref["admit"](queue, "tg:4411:87", "chat-4411", "brief ACME 5 days").outcome


def test_a_window_shorter_than_telegram_keeps_an_update_is_refused(store):
    clock = ManualClock(time.time())
    with pytest.raises(RetentionTooShort, match="24 h|86400"):
        prune(store, clock, window=TELEGRAM_KEEPS_UPDATES - 1)
    with pytest.raises(InvalidField):
        prune(store, clock, batch=0)
    assert prune(store, clock, window=TELEGRAM_KEEPS_UPDATES) == Pruned(clock() - DAY, 0, 0, 1)
    assert DEFAULT_WINDOW == 7 * DAY


def test_an_update_delivered_again_within_24_hours_stays_a_duplicate(ref, tmp_path):
    assert redelivered_after(ref, tmp_path, prune, hours=23) is Outcome.DUPLICATE
    shortest = lambda store, clock: prune(store, clock, window=TELEGRAM_KEEPS_UPDATES)  # noqa: E731
    (tmp_path / "shortest").mkdir()
    assert redelivered_after(ref, tmp_path / "shortest", shortest, hours=23) is Outcome.DUPLICATE
    (tmp_path / "a-day-later").mkdir()  # past Telegram's 24 hours the shortest window may forget the update
    assert redelivered_after(ref, tmp_path / "a-day-later", shortest, hours=25) is Outcome.ACCEPTED


def test_a_pruner_that_keeps_an_hour_admits_the_redelivered_update_twice(ref, tmp_path):
    assert redelivered_after(ref, tmp_path, prune_after_an_hour, hours=23) is Outcome.ACCEPTED


def test_only_finished_requests_older_than_the_window_are_deleted(store):
    clock = ManualClock(time.time())
    old, recent = clock() - 8 * DAY, clock() - 6 * DAY
    plant(store, 1, "done", ("confirmed",), old)  # delivered: may go
    plant(store, 2, "failed", ("failed",), old)  # an apology that never arrived: may go
    plant(store, 3, "done", ("confirmed", "failed"), old)  # two generations, both final: may go
    plant(store, 4, "done", ("pending",), old)  # still owed
    plant(store, 5, "done", ("sending",), old)  # may have arrived: reconcile needs it
    plant(store, 6, "done", ("unknown",), old)
    plant(store, 7, "done", ("needs_person",), old)
    plant(store, 8, "done", ("confirmed", "unknown"), old)  # one generation still open keeps the request
    for work_id, state in ((9, "pending"), (10, "running"), (11, "waiting"), (12, "needs_person")):
        plant(store, work_id, state, (), old)
    plant(store, 13, "done", ("confirmed",), recent)  # finished, but inside the window

    assert prune(store, clock) == Pruned(clock() - DEFAULT_WINDOW, work=3, reports=4, batches=1)
    assert kept(store) == ([4, 5, 6, 7, 8, 9, 10, 11, 12, 13],
                           ["r-13-1", "r-4-1", "r-5-1", "r-6-1", "r-7-1", "r-8-1", "r-8-2"])
    assert prune(store, clock) == Pruned(clock() - DEFAULT_WINDOW, 0, 0, 1)  # nothing left to delete


def test_a_pruner_that_deletes_every_report_of_finished_work_loses_an_unknown_report(store):
    clock = ManualClock(time.time())
    plant(store, 6, "done", ("unknown",), clock() - 8 * DAY)
    prune(store, clock)
    assert kept(store) == ([6], ["r-6-1"])
    prune_every_report_of_finished_work(store, clock)
    assert kept(store) == ([], [])  # the UNKNOWN report is gone: no number counts it, reconcile cannot settle it


def test_the_oldest_go_first_in_bounded_batches(store):
    clock = ManualClock(time.time())
    for work_id in range(1, 8):  # work 7 is the oldest, work 1 the newest
        plant(store, work_id, "done", ("confirmed",), clock() - (8 + work_id) * DAY)
    begun = []

    def stop_at_the_second_batch(kind: str, sql: str) -> None:
        begun.extend([sql] if kind == "begin" else [])
        if len(begun) == 2:
            raise KeyboardInterrupt  # the job is stopped between two batches

    store.set_hook(stop_at_the_second_batch)
    with pytest.raises(KeyboardInterrupt):
        prune(store, clock, batch=3)
    store.set_hook(None)
    assert kept(store)[0] == [1, 2, 3, 4]  # the first batch took the three oldest, and committed
    assert prune(store, clock, batch=3) == Pruned(clock() - DEFAULT_WINDOW, work=4, reports=4, batches=2)
    assert kept(store) == ([], [])


def test_a_row_of_another_table_that_refers_to_a_request_rolls_the_batch_back(store):
    clock = ManualClock(time.time())
    plant(store, 1, "done", ("confirmed",), clock() - 9 * DAY)
    plant(store, 2, "done", ("confirmed",), clock() - 8 * DAY)
    with store.transaction() as tx:
        tx.execute("CREATE TABLE audit (work_id INTEGER NOT NULL REFERENCES work (work_id), note TEXT)")
        tx.execute("INSERT INTO audit VALUES (2, 'the customer asked about this one')")
    with pytest.raises(StoreMisuse, match="audit"):
        prune(store, clock)
    assert kept(store) == ([1, 2], ["r-1-1", "r-2-1"])  # the whole batch rolled back, its reports too


def test_tables_are_found_by_their_columns_whatever_they_are_called(tmp_path, ref):
    namespace = dict(ref)
    exec(compile(renamed(dict(learner_implementation(REPO / "source"))["ch07_unit_a:schema"]), "schema", "exec"),
         namespace)
    with Store(tmp_path / "renamed.sqlite3") as store:
        namespace["create_schema"](store)
        assert {"inbox", "answers"} <= set(store.tables()) and "work" not in store.tables()
        clock = ManualClock(time.time())
        with store.transaction() as tx:
            tx.execute("INSERT INTO inbox (source_id, session_id, text, state, admitted_at) "
                       "VALUES ('tg:1:1', 'chat-1', 'brief ACME', 'done', ?)", (clock() - 8 * DAY,))
            tx.execute("INSERT INTO answers (report_id, work_id, generation, session_id, body, delivery) "
                       "VALUES ('r-1-1', 1, 1, 'chat-1', 'ACME closed', 'confirmed')")
        assert prune(store, clock).work == 1
        assert store.query("SELECT COUNT(*) FROM inbox")[0][0] == 0


def test_a_work_table_without_its_admission_time_is_named(tmp_path):
    with Store(tmp_path / "bare.sqlite3") as store:
        with store.transaction() as tx:
            tx.execute("CREATE TABLE work (work_id INTEGER PRIMARY KEY, source_id, session_id, text, state)")
            tx.execute("CREATE TABLE report (report_id, work_id, generation, session_id, body, delivery)")
        with pytest.raises(TablesNotFound, match="admitted_at"):
            prune(store, ManualClock())
