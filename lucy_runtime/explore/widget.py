"""The explorer: buttons that run the learner's functions in a process of their own, and the tables after."""

from __future__ import annotations

import html
import os
from pathlib import Path
from typing import Any, Callable

from ..engine.result import Status
from ..engine.supervisor import Plan, run_in_child
from ..engine.faults import KillAt
from ..delivery import DeliveryPolicy
from ..loop import AgentLoop
from ..fakes.model import InvocationLog, ScriptedModel
from ..store import Store
from ..fakes.service import Behaviour, FakeService, FakeTransport
from ..work import Assignment, Queue
from .views import tables_html


class Explorer:
    """A widget to admit, claim, finish, crash and deliver with *your* functions.

    Every button runs your function in a separate process (so a crash really ends a
    process) and then shows what a fresh reader finds in the files.
    """

    def __init__(self, namespace: dict, folder: str | os.PathLike, *, capacity: int = 3, per_session_limit: int = 2):
        import ipywidgets as w  # noqa: PLC0415 - deferred: widgets load only when a notebook builds an explorer

        self.ns = namespace
        self.folder = Path(folder)
        self.folder.mkdir(parents=True, exist_ok=True)
        self.capacity, self.per_session_limit = capacity, per_session_limit
        self.db = self.folder / "explorer.sqlite3"
        self.log = self.folder / "explorer-service.sqlite3"
        self.calls = self.folder / "explorer-model-calls.log"
        self._count = 0
        self.source = w.Text(value="tg:4411:1", description="source_id")
        self.session = w.Text(value="chat-4411", description="session_id")
        self.text = w.Text(value="brief ACME 5 days", description="text")
        self.message = w.HTML("<i>Admit a request to begin.</i>")
        # An HTML widget, not an Output widget: when a notebook runs headless (nbgrader, nbclient), output
        # sent into an Output widget makes the client write on the shell channel while it waits for the
        # cell's reply there, and now and then it misses the reply until the cell timeout (jupyter/nbclient#312).
        self.tables = w.HTML()
        actions = [
            ("Admit", self._admit, "info"),
            ("Claim", self._claim, ""),
            ("Work once", self._work_once, "success"),
            ("Crash between finish's writes", self._crash_finish, "danger"),
            ("Deliver one", self._deliver, ""),
            ("Deliver, reply lost", self._deliver_lost, "warning"),
            ("Start again", self._reset, ""),
        ]
        buttons = []
        for label, handler, style in actions:
            button = w.Button(description=label, button_style=style, layout=w.Layout(width="auto"))
            button.on_click(lambda _b, handler=handler: self._run(handler))
            buttons.append(button)
        self.widget = w.VBox([w.HBox([self.source, self.session]), self.text, w.HBox(buttons), self.message, self.tables])
        self._fresh = not self.db.exists()
        self._refresh()

    def _ipython_display_(self) -> None:
        from IPython.display import display  # noqa: PLC0415 - only in a notebook

        display(self.widget)

    # Each action returns a short sentence; it runs in a forked child.

    def _queue(self):
        return Queue(Store(self.db), self.capacity, self.per_session_limit)

    def _in_child(self, action: Callable[[], Any], plan: Plan | None = None) -> str:
        make_schema, self._fresh = self._fresh, False

        def child() -> Any:
            if make_schema:
                self.ns["create_schema"](Store(self.db))
            return action()

        result = run_in_child(child, timeout=10, plan=plan)
        if result.status is Status.RETURNED:
            return str(result.value)
        if result.status is Status.CRASHED:
            return "The process was stopped at the crash point. The tables below are what a fresh reader finds."
        if result.status is Status.RAISED and result.error is not None:
            return f"Your code raised {result.error.describe()}"
        return f"The action ended as: {result.status.value}"

    def _admit(self) -> str:
        source, session, text = self.source.value, self.session.value, self.text.value
        message = self._in_child(lambda: repr(self.ns["admit"](self._queue(), source, session, text)))
        self._count += 1
        self.source.value = f"{source.rsplit(':', 1)[0]}:{self._count + 1}" if ":" in source else source
        return message

    def _claim(self) -> str:
        return self._in_child(lambda: repr(self.ns["claim"](self._queue(), "explorer")))

    def _loop(self):
        return AgentLoop(ScriptedModel(InvocationLog(self.calls)))

    def _work_once(self) -> str:
        return self._in_child(lambda: repr(self.ns["work_once"](self._queue(), self._loop(), "explorer")))

    def _crash_finish(self) -> str:
        claimed = run_in_child(lambda: (lambda a: None if a is None else dict(a.__dict__))(
            self.ns["claim"](self._queue(), "explorer")), timeout=10)
        if claimed.status is not Status.RETURNED:
            return f"claim did not return: {claimed.error.describe() if claimed.error else claimed.status.value}"
        if claimed.value is None:
            return "Nothing is pending: admit a request first."
        assignment = Assignment(**claimed.value)

        def action():  # in a process of its own, so the crash point counts the writes of finish alone
            result = self._loop().run(assignment.session_id, assignment.text)
            self.ns["finish"](self._queue(), assignment, result)
            return "finish made fewer than two writes, so the crash point was never reached."

        return self._in_child(action, plan=KillAt(2, kinds=("write",)))

    def _deliver_with(self, script) -> str:
        if "deliver_one" not in self.ns:
            return "deliver_one is written in Unit B."
        def deliver() -> str:
            store = Store(self.db)
            return repr(self.ns["deliver_one"](
                store, FakeTransport(FakeService(self.log, script=script)), DeliveryPolicy.for_store(store)))

        return self._in_child(deliver)

    def _deliver(self) -> str:
        return self._deliver_with([])

    def _deliver_lost(self) -> str:
        return self._deliver_with([Behaviour.LOSE_REPLY])

    def _reset(self) -> str:
        for path in self.folder.glob("explorer*"):
            path.unlink()
        self._fresh = True
        return "Started again with empty files."

    def _run(self, handler: Callable[[], str]) -> None:
        try:
            self.message.value = f"<b>{html.escape(handler())}</b>"
        except Exception as exc:  # show, don't raise: this is a widget callback
            self.message.value = f"<b>{html.escape(type(exc).__name__)}: {html.escape(str(exc))}</b>"
        self._refresh()

    def _refresh(self) -> None:
        if self.db.exists():
            self.tables.value = tables_html(self.db, self.log if self.log.exists() else None,
                                            title=f"Model calls so far: {InvocationLog(self.calls).count()}")
        else:
            self.tables.value = "<p><i>(no database file yet)</i></p>"
