"""Chapters 3, 5 and 6 as supplied: the scripted model, the loop, sessions and the procedure."""

from __future__ import annotations

import os

import pytest

from lucy_runtime.errors import InvalidField, ModelUnavailable
from lucy_runtime.fakes.model import InvocationLog, ScriptedModel
from lucy_runtime.loop import AgentLoop, LoopResult
from lucy_runtime.procedure import StockBriefProcedure
from lucy_runtime.sessions import Sessions


def test_the_model_is_deterministic_and_counts_each_call(tmp_path):
    log = InvocationLog(tmp_path / "calls.log")
    loop = AgentLoop(ScriptedModel(log))
    first, second = loop.run("chat-1", "brief ACME 5 days"), loop.run("chat-1", "brief ACME 5 days")
    assert first == second and first.model_calls == 1
    assert first.text.startswith("ACME closed at ")
    assert log.count() == 2


def test_a_model_with_an_outage_fails_its_first_calls_and_logs_every_one(tmp_path):
    log = InvocationLog(tmp_path / "calls.log")
    loop = AgentLoop(ScriptedModel(log, failures=2))
    for _ in range(2):
        with pytest.raises(ModelUnavailable) as error:
            loop.run("chat-1", "brief ACME 5 days")
        assert error.value.retryable
    assert loop.run("chat-1", "brief ACME 5 days").text.startswith("ACME closed at ")
    assert log.count() == 3
    down = AgentLoop(ScriptedModel(InvocationLog(tmp_path / "down.log"), failures=None))
    for _ in range(5):
        with pytest.raises(ModelUnavailable):
            down.run("chat-1", "brief ACME 5 days")
    with pytest.raises(InvalidField, match="failures"):
        ScriptedModel(log, failures=-1)


def test_the_brief_is_computed_from_the_bundled_prices(tmp_path):
    facts = StockBriefProcedure().facts(StockBriefProcedure().plan("how is HOOLI doing, 10 days?"))
    assert facts.ticker == "HOOLI" and facts.days == 10
    brief = AgentLoop(ScriptedModel(InvocationLog(tmp_path / "c.log"))).run("chat-1", "HOOLI 10 days").text
    assert f"{facts.last_close:.2f}" in brief and f"{abs(facts.change_pct):.2f}%" in brief


def test_a_request_without_a_known_ticker_calls_no_model(tmp_path):
    log = InvocationLog(tmp_path / "calls.log")
    result = AgentLoop(ScriptedModel(log)).run("chat-1", "what's the weather?")
    assert result.model_calls == 0 and "ACME" in result.text
    assert log.count() == 0


def test_the_counter_cannot_be_reset_through_the_model_object(tmp_path):
    log = InvocationLog(tmp_path / "calls.log")
    model = ScriptedModel(log)
    model.complete("FACTS ticker=ACME days=5 as_of=2026-10-28 first=1 last=2 change=+1.00 high=2 low=1")
    model.__dict__.clear()  # even throwing away its state does not touch the file
    assert log.count() == 1
    assert ScriptedModel(log).invocations == 1  # a new model on the same log continues the count


def test_the_property_has_no_setter(tmp_path):
    model = ScriptedModel(InvocationLog(tmp_path / "calls.log"))
    with pytest.raises(AttributeError):
        model.invocations = 0


def test_calls_from_forked_workers_are_all_counted(tmp_path):
    log = InvocationLog(tmp_path / "calls.log")
    children = []
    for _ in range(4):
        pid = os.fork()
        if pid == 0:
            for _ in range(25):
                ScriptedModel(log).complete("no facts here")
            os._exit(0)
        children.append(pid)
    for pid in children:
        os.waitpid(pid, 0)
    assert log.count() == 100


@pytest.mark.parametrize("session_id, text, field", [
    (None, "brief ACME", "session_id"),
    ("chat-1", None, "text"),
    ("chat-1", True, "text"),
    (4411, "brief ACME", "session_id"),
    ("chat-1", "x" * (64 * 1024 + 1), "text"),
])
def test_the_loop_refuses_wrong_types_naming_the_field(tmp_path, session_id, text, field):
    with pytest.raises(InvalidField) as caught:
        AgentLoop(ScriptedModel(InvocationLog(tmp_path / "c.log"))).run(session_id, text)
    assert caught.value.field == field


def test_the_loop_refuses_something_that_is_not_a_model():
    with pytest.raises(InvalidField, match="model"):
        AgentLoop(object())


def test_sessions_keep_turns_in_order_and_give_recent_context(store):
    sessions = Sessions(store)
    sessions.open("chat-1", owner="ada")
    for n in range(8):
        sessions.add_turn("chat-1", "customer", f"message {n}")
    context = sessions.context("chat-1", last=3)
    assert [t.text for t in context] == ["message 5", "message 6", "message 7"]
    assert sessions.open("chat-1", owner="someone else").owner == "ada"


def test_the_loop_records_the_conversation_when_given_sessions(store, tmp_path):
    sessions = Sessions(store)
    AgentLoop(ScriptedModel(InvocationLog(tmp_path / "c.log")), sessions=sessions).run("chat-9", "brief GLOBEX")
    assert [t.role for t in sessions.context("chat-9")] == ["customer", "lucy"]


def test_a_turn_for_an_unknown_session_is_refused(store):
    with pytest.raises(LookupError, match="open it first"):
        Sessions(store).add_turn("chat-404", "customer", "hello")


def test_loop_result_is_a_frozen_value():
    result = LoopResult("text", "chat-1", 1)
    with pytest.raises(Exception):
        result.text = "changed"
