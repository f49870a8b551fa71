"""The conversation agrees with what was delivered (issue 28, item 7).

A worker claims a request, the loop answers, and the process dies (SIGKILL, a real death)
before ``finish`` commits the report. The operator then runs the request again, the
second worker finishes, and the report is delivered. The customer got one answer, so the
conversation the next request sees must hold exactly one.

With the history derived from the queue (``DeliveredHistory``) that holds. With Chapter
5's ``Sessions`` wired into the loop (the known-bad wiring), the loop committed its turns
before the crash: the history shows an answer nobody received, and after the replay two.
The queue is the reference, taken from source/.
"""

from __future__ import annotations

import os
import re
import signal
import sqlite3

import pytest

from lucy_runtime.delivery import DeliveryPolicy
from lucy_runtime.errors import InvalidField
from lucy_runtime.fakes.model import InvocationLog, ScriptedModel
from lucy_runtime.fakes.service import FakeService, FakeTransport
from lucy_runtime.loop import AgentLoop
from lucy_runtime.notebooks.notebook import learner_implementation
from lucy_runtime.observer import snapshot
from lucy_runtime.sessions import DeliveredHistory, Sessions
from lucy_runtime.store import Store, statement_kind
from lucy_runtime.work import Queue

from .conftest import REPO

CELLS = ("ch07_unit_a:imports", "ch07_unit_a:schema", "ch07_unit_a:admit", "ch07_unit_a:refusal",
         "ch07_unit_a:claim", "ch07_unit_a:finish", "ch07_unit_a:work_once", "ch07_unit_b:imports",
         "ch07_unit_b:deliver_one")


@pytest.fixture(scope="module")
def ref() -> dict:
    cells = dict(learner_implementation(REPO / "source"))
    namespace: dict = {"__name__": "reference"}
    for name in CELLS:
        exec(compile(cells[name], name, "exec"), namespace)
    return namespace


def wirings(store: Store) -> dict:
    return {"delivered-history": {"history": DeliveredHistory(store)}, "chapter-5-sessions": {"sessions": Sessions(store)}}


def a_loop(tmp_path, store: Store, wiring: str) -> AgentLoop:
    return AgentLoop(ScriptedModel(InvocationLog(tmp_path / "calls.log")), **wirings(store)[wiring])


def conversation(db, wiring: str, session: str) -> list[str]:
    """What the next request in ``session`` would be told, read by this process on a store of its own."""
    with Store(db) as store:
        source = wirings(store)[wiring]
        history = source["history"] if "history" in source else source["sessions"]
        return [turn.role for turn in history.context(session, last=20)]


def in_a_process_that_dies_before_finish(db, tmp_path, ref: dict, wiring: str) -> None:
    pid = os.fork()
    if pid == 0:  # the worker: claim, run the loop, and die before finish
        try:
            with Store(db) as store:
                queue = Queue(store, 5, 5)
                assignment = ref["claim"](queue, "worker-1")
                a_loop(tmp_path, store, wiring).run(assignment.session_id, assignment.text)
                os.kill(os.getpid(), signal.SIGKILL)
        finally:
            os._exit(3)  # not reached when the kill lands
    _, status = os.waitpid(pid, 0)
    assert os.WIFSIGNALED(status) and os.WTERMSIG(status) == signal.SIGKILL


def release_running_work(db) -> None:
    """The operator's decision: run the dead worker's request again, as its next generation."""
    with Store(db) as store, store.transaction() as tx:
        tx.execute("UPDATE work SET state = 'pending', worker_id = NULL, generation = generation + 1 "
                   "WHERE state = 'running'")


@pytest.mark.parametrize("wiring", ["delivered-history", "chapter-5-sessions"])
def test_a_crash_between_the_answer_and_finish_leaves_no_answer_and_a_replay_adds_one(tmp_path, ref, wiring):
    db = tmp_path / "lucy.sqlite3"
    with Store(db) as store:
        ref["create_schema"](store)
        ref["admit"](Queue(store, 5, 5), "tg:4411:87", "chat-4411", "brief ACME 5 days")

    in_a_process_that_dies_before_finish(db, tmp_path, ref, wiring)
    after_crash = conversation(db, wiring, "chat-4411")

    release_running_work(db)
    with Store(db) as store:
        assert ref["work_once"](Queue(store, 5, 5), a_loop(tmp_path, store, wiring), "worker-2") is not None
        transport = FakeTransport(FakeService(tmp_path / "service.sqlite3"))
        assert ref["deliver_one"](store, transport, DeliveryPolicy.for_store(store)).value == "confirmed"
    after_replay = conversation(db, wiring, "chat-4411")

    if wiring == "delivered-history":
        assert after_crash == ["customer"]  # asked, and not answered: nothing was delivered
        assert after_replay == ["customer", "lucy"]  # one answer, the one the customer got
    else:  # the known-bad wiring: the loop committed its turns before finish
        assert after_crash == ["customer", "lucy"]  # an answer the customer never got
        assert after_replay == ["customer", "lucy", "customer", "lucy"]  # and a second one after the replay


def test_an_answer_joins_the_conversation_when_its_report_is_confirmed(tmp_path, ref):
    with Store(tmp_path / "lucy.sqlite3") as store:
        ref["create_schema"](store)
        queue = Queue(store, 5, 5)
        history = DeliveredHistory(store)
        loop = AgentLoop(ScriptedModel(InvocationLog(tmp_path / "calls.log")), history=history)
        ref["admit"](queue, "tg:1:1", "chat-1", "brief ACME 5 days")
        ref["admit"](queue, "tg:2:1", "chat-2", "brief HOOLI")
        report = ref["work_once"](queue, loop, "worker-1")
        assert [t.role for t in history.turns("chat-1")] == ["customer"]  # finished, not yet delivered
        ref["deliver_one"](store, FakeTransport(FakeService(tmp_path / "service.sqlite3")),
                           DeliveryPolicy.for_store(store))
        assert [(t.role, t.text) for t in history.turns("chat-1")] == [
            ("customer", "brief ACME 5 days"), ("lucy", report.body)]
        assert [t.role for t in history.turns("chat-2")] == ["customer"]
        said = [(t.role, t.text) for t in history.turns("chat-1")]
        assert [(t.role, t.text) for t in history.context("chat-1", last=1)] == said[-1:]  # numbered within the window
        assert history.context("chat-1", last=0) == ()


def test_a_loop_takes_a_history_or_sessions_not_both(tmp_path):
    with Store(tmp_path / "lucy.sqlite3") as store, pytest.raises(InvalidField):
        AgentLoop(ScriptedModel(InvocationLog(tmp_path / "calls.log")), sessions=Sessions(store),
                  history=DeliveredHistory(store))


def fill(store: Store, *, chats: int, per_chat: int, ada: int) -> None:
    """``chats`` other chats with ``per_chat`` delivered requests each, and Ada's chat-4411 with ``ada``."""
    rows = [(f"chat-{c}", n) for c in range(chats) for n in range(per_chat)] + [("chat-4411", n) for n in range(ada)]
    with store.transaction() as tx:
        tx.executemany("INSERT INTO work (source_id, session_id, text, state) VALUES (?, ?, ?, 'done')",
                       [(f"tg:{chat}:{n}", chat, f"brief ACME {n}") for chat, n in rows])
        tx.execute("INSERT INTO report (report_id, work_id, generation, session_id, body, delivery) "
                   "SELECT 'r-' || work_id || '-1', work_id, 1, session_id, 'answer to ' || text, 'confirmed' FROM work")


def whole_table_context(store: Store, session_id: str, last: int) -> list[str]:
    """Known-bad: the reader before issue 38 read both whole tables on every model call, then kept one chat."""
    seen = snapshot(store.path)
    confirmed = {r["work_id"]: r["body"] for r in seen["reports"] if r["delivery"] == "confirmed"}
    said = [t for w in seen["work"] if w["session_id"] == session_id
            for t in (w["text"], confirmed.get(w["work_id"])) if t is not None]
    return said[len(said) - last:]


def measured(monkeypatch, read) -> tuple[int, list[str]]:
    """SQLite's virtual-machine steps, and the statements, of the connections ``read()`` opens."""
    steps, statements, connect = [0], [], sqlite3.connect

    def counted(*args, **kwargs):
        conn = connect(*args, **kwargs)
        conn.set_progress_handler(lambda: steps.__setitem__(0, steps[0] + 1), 1)
        conn.set_trace_callback(statements.append)
        return conn

    monkeypatch.setattr(sqlite3, "connect", counted)
    try:
        read()
    finally:
        monkeypatch.undo()
    return steps[0], statements


@pytest.mark.parametrize("reader", ["delivered-history", "whole-table (known-bad)"])
def test_reading_the_context_costs_the_same_however_large_the_tables_grow(tmp_path, ref, monkeypatch, reader):
    cost = {}
    for size, (chats, per_chat, ada) in {"a day": (20, 5, 10), "a year": (400, 25, 600)}.items():
        with Store(tmp_path / f"{size}.sqlite3") as store:
            ref["create_schema"](store)
            fill(store, chats=chats, per_chat=per_chat, ada=ada)
            if reader == "delivered-history":
                read = lambda: DeliveredHistory(store).context("chat-4411", last=6)  # noqa: E731
            else:
                read = lambda: whole_table_context(store, "chat-4411", 6)  # noqa: E731
            cost[size], _ = measured(monkeypatch, read)
            assert [t.text for t in DeliveredHistory(store).context("chat-4411", last=4)] == [
                f"brief ACME {ada - 2}", f"answer to brief ACME {ada - 2}",
                f"brief ACME {ada - 1}", f"answer to brief ACME {ada - 1}"]
    # 10,600 rows against 110: a bounded read grows with the index's depth only
    if reader == "delivered-history":
        assert cost["a year"] < 1.5 * cost["a day"], cost
    else:
        assert cost["a year"] > 20 * cost["a day"], cost


@pytest.mark.parametrize("index", ["work_by_session", "dropped (known-bad)"])
def test_the_context_is_read_through_indexes_and_never_scans_a_table(tmp_path, ref, monkeypatch, index):
    with Store(tmp_path / "lucy.sqlite3") as store:
        ref["create_schema"](store)
        fill(store, chats=3, per_chat=3, ada=3)
        if index != "work_by_session":
            with store.transaction() as tx:
                tx.execute("DROP INDEX work_by_session")
        _, statements = measured(monkeypatch, lambda: DeliveredHistory(store).context("chat-4411"))
        reads = [s for s in statements if re.search(r"\bFROM \"?(work|report)\b", s)]
        assert len(reads) == 2 and all(statement_kind(s) != "write" for s in statements), statements
        plans = [row["detail"] for s in reads for row in store.query("EXPLAIN QUERY PLAN " + s)]
    scans = [p for p in plans if p.startswith("SCAN") or "TEMP B-TREE" in p]
    if index == "work_by_session":
        assert not scans and any("USING INDEX work_by_session" in p for p in plans), plans
    else:
        assert scans == ["SCAN work"], plans
