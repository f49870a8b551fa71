"""Chapter 3's agent loop, following chapter 6's procedure, with the model injected."""

from __future__ import annotations

from dataclasses import dataclass

from .errors import InvalidField
from .fields import require_id, require_str
from .model import Model
from .procedure import StockBriefProcedure
from .sessions import DeliveredHistory, Sessions


@dataclass(frozen=True)
class LoopResult:
    """What one run of the loop produced.

    ``addressed_to`` is the session the *generated* reply says it is for. It is the
    model's claim, not an authenticated identity: the queue's stored session decides
    where a report goes.
    """

    text: str
    addressed_to: str
    model_calls: int


class AgentLoop:
    """Chapter 3's loop. The conversation it puts in the prompt comes from one of two places.

    ``history`` (Chapter 7): a ``DeliveredHistory`` read from the queue's own tables. The
    loop writes nothing: the answer becomes part of the conversation when its report is
    confirmed, so the history and what was delivered cannot disagree.
    ``sessions`` (Chapter 5): the loop records both turns itself, each in a transaction of
    its own, before the queue's ``finish`` commits the report. Not for a queue's worker: a
    crash between the two leaves an answer in the history the customer never got.
    """

    def __init__(self, model: Model, procedure: StockBriefProcedure | None = None, sessions: Sessions | None = None,
                 *, history: DeliveredHistory | None = None):
        if not callable(getattr(model, "complete", None)):
            raise InvalidField("model", f"expected an object with complete(prompt), got {type(model).__name__}")
        if sessions is not None and history is not None:
            raise InvalidField("history", "give sessions (the loop records turns) or history (read from the queue), "
                                          "not both")
        self._model = model
        self._procedure = procedure or StockBriefProcedure()
        self._sessions = sessions
        self._history = history

    def run(self, session_id: str, text: str) -> LoopResult:
        require_id("session_id", session_id)
        require_str("text", text)
        plan = self._procedure.plan(text)
        if plan is None:
            known = ", ".join(self._procedure.known_tickers())
            return LoopResult(f"I brief on these tickers: {known}. Which one would you like?", session_id, 0)
        source = self._history or self._sessions
        context = source.context(session_id) if source is not None else ()
        brief = self._model.complete(self._procedure.prompt(self._procedure.facts(plan), context))
        if self._sessions is not None:
            self._sessions.open(session_id, owner=session_id)
            self._sessions.add_turn(session_id, "customer", text)
            self._sessions.add_turn(session_id, "lucy", brief)
        return LoopResult(brief, session_id, 1)
