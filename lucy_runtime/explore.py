"""What learners look at: tables, a restart experiment, saved evidence and an explorer widget.

Nothing here judges anything; the checker does. These are windows onto the files.
"""

from __future__ import annotations

import datetime as _dt
import json
import os
import tempfile
from pathlib import Path
from typing import Any, Callable

from .checker import child as _child
from .checker.child import Plan, run_in_child
from .checker.faults import KillAt, Stop
from .checker.observe import snapshot
from .errors import ExperimentFailed
from .fields import require_id, require_str
from .store import Store


def tables(store: Store | str | os.PathLike, service_log: str | os.PathLike | None = None) -> dict:
    """The work, report and accepted-send tables as pandas DataFrames, read from the files."""
    import pandas as pd

    path = store.path if isinstance(store, Store) else os.fspath(store)
    seen = snapshot(path, os.fspath(service_log) if service_log else None)
    frames = {
        "work": pd.DataFrame(seen["work"], columns=None if seen["work"] else ["work_id", "source_id", "session_id", "text", "state"]),
        "report": pd.DataFrame(seen["reports"], columns=None if seen["reports"] else
                               ["report_id", "work_id", "generation", "session_id", "body", "delivery"]),
    }
    if service_log is not None:
        frames["accepted by the service"] = pd.DataFrame(
            seen["accepted"], columns=None if seen["accepted"] else ["remote_id", "report_id", "session_id", "body"])
    if seen["problems"]:
        frames["problems"] = pd.DataFrame({"problem": seen["problems"]})
    return frames


def tables_html(store: Store | str | os.PathLike, service_log: str | os.PathLike | None = None, *,
                title: str = "") -> str:
    """The tables one under another, as HTML."""
    import html

    parts = [f"<h4>{html.escape(title)}</h4>" if title else ""]
    for name, frame in tables(store, service_log).items():
        body = frame.to_html(index=False, escape=True, border=1) if len(frame) else "<p><i>(no rows)</i></p>"
        count = f"{len(frame)} row" + ("" if len(frame) == 1 else "s")
        parts.append(f"<div style='margin-bottom:0.8em'><b>{name}</b> — {count}{body}</div>")
    return "".join(parts)


def show(store: Store | str | os.PathLike, service_log: str | os.PathLike | None = None, *, title: str = "") -> None:
    """Display the tables one under another (in a notebook), or print them (elsewhere)."""
    try:
        from IPython.display import HTML, display
    except ImportError:  # pragma: no cover - outside IPython
        for name, frame in tables(store, service_log).items():
            print(f"-- {name} --\n{frame.to_string(index=False)}\n")
        return
    display(HTML(tables_html(store, service_log, title=title)))


def after_restart(work: Callable[[], Any], look: Callable[[], Any], *, timeout: float = 10.0) -> Any:
    """Run ``work`` in a process that then dies, and ``look`` in a new process; return what ``look`` saw.

    Both processes start as copies of this one. What ``work`` changed in memory dies
    with it; only what it committed to a file can be seen by ``look``.
    """

    def doomed() -> None:
        work()
        _child.request_stop()

    first = run_in_child(doomed, timeout=timeout, plan=Stop())
    if first.status == "raised":
        raise ExperimentFailed(f"the first process failed before it died: {first.error.describe()}")
    second = run_in_child(look, timeout=timeout)
    if second.status != "returned":
        detail = second.error.describe() if second.error else second.status
        raise ExperimentFailed(f"the process that looked after the restart failed: {detail}")
    return second.value


class Evidence:
    """A learner's saved evidence: predictions and observations, one JSON file per unit.

    The file lives beside the notebook, so it travels with the submission.
    """

    PLACEHOLDER = "write your prediction here"

    def __init__(self, unit: str, path: str | os.PathLike | None = None):
        self.unit = require_id("unit", unit)
        self.path = Path(path) if path is not None else Path.cwd() / f"{unit}_evidence.json"
        self.records: dict[str, dict] = {}
        if self.path.exists():
            try:
                self.records = json.loads(self.path.read_text(encoding="utf-8")).get("blocks", {})
            except (ValueError, AttributeError):
                self.records = {}

    def _block(self, block: str) -> dict:
        require_str("block", block, max_bytes=200)
        return self.records.setdefault(block, {})

    def predict(self, block: str, prediction: str) -> None:
        require_str("prediction", prediction)
        if self.PLACEHOLDER in prediction.lower():
            print(f"[{block}] Write your prediction in your own words first, then run this cell again.")
            return
        self._block(block)["prediction"] = prediction.strip()
        self._save()
        print(f"[{block}] prediction saved. Now run the experiment.")

    def record(self, block: str, **observations: Any) -> None:
        entry = self._block(block)
        entry.setdefault("observations", {}).update({k: _jsonable(v) for k, v in observations.items()})
        entry["saved_at"] = _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds")
        self._save()
        print(f"[{block}] evidence saved to {self.path.name}: {', '.join(observations)}")

    def compare(self, block: str) -> str:
        entry = self.records.get(block, {})
        prediction = entry.get("prediction", "(no prediction saved)")
        observed = json.dumps(entry.get("observations", {}), ensure_ascii=False, indent=1)[:1500]
        text = f"You predicted:\n  {prediction}\nThe experiment showed:\n  {observed}"
        print(text)
        return text

    def _save(self) -> None:
        payload = {"unit": self.unit, "blocks": self.records}
        handle, tmp = tempfile.mkstemp(dir=self.path.parent, prefix=".evidence-", suffix=".json")
        with os.fdopen(handle, "w", encoding="utf-8") as fh:
            json.dump(payload, fh, ensure_ascii=False, indent=1)
        os.replace(tmp, self.path)


def _jsonable(value: Any) -> Any:
    """Evidence as plain JSON: tables become records, enums their values, anything else its repr."""
    from enum import Enum

    if hasattr(value, "to_dict") and hasattr(value, "columns"):
        value = value.to_dict(orient="records")
    if isinstance(value, Enum):
        return _jsonable(value.value)
    if isinstance(value, dict):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_jsonable(v) for v in value]
    if value is None or isinstance(value, (bool, int, str)):
        return value
    if isinstance(value, float):
        return value if value == value and value not in (float("inf"), float("-inf")) else repr(value)
    return repr(value)


class Explorer:
    """A widget to admit, claim, finish, crash and deliver with *your* functions.

    Every button runs your function in a separate process (so a crash really ends a
    process) and then shows what a fresh reader finds in the files.
    """

    def __init__(self, namespace: dict, folder: str | os.PathLike, *, capacity: int = 3, per_session_limit: int = 2):
        import ipywidgets as w

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
        from IPython.display import display

        display(self.widget)

    # Each action returns a short sentence; it runs in a forked child.

    def _queue(self):
        from .work import Queue

        return Queue(Store(self.db), self.capacity, self.per_session_limit)

    def _in_child(self, action: Callable[[], Any], plan: Plan | None = None) -> str:
        make_schema, self._fresh = self._fresh, False

        def child() -> Any:
            if make_schema:
                self.ns["create_schema"](Store(self.db))
            return action()

        result = run_in_child(child, timeout=10, plan=plan)
        if result.status == "returned":
            return str(result.value)
        if result.status == "crashed":
            return "The process was stopped at the crash point. The tables below are what a fresh reader finds."
        if result.status == "raised":
            return f"Your code raised {result.error.describe()}"
        return f"The action ended as: {result.status}"

    def _admit(self) -> str:
        source, session, text = self.source.value, self.session.value, self.text.value
        message = self._in_child(lambda: repr(self.ns["admit"](self._queue(), source, session, text)))
        self._count += 1
        self.source.value = f"{source.rsplit(':', 1)[0]}:{self._count + 1}" if ":" in source else source
        return message

    def _claim(self) -> str:
        return self._in_child(lambda: repr(self.ns["claim"](self._queue(), "explorer")))

    def _loop(self):
        from .loop import AgentLoop
        from .model import InvocationLog, ScriptedModel

        return AgentLoop(ScriptedModel(InvocationLog(self.calls)))

    def _work_once(self) -> str:
        return self._in_child(lambda: repr(self.ns["work_once"](self._queue(), self._loop(), "explorer")))

    def _crash_finish(self) -> str:
        claimed = run_in_child(lambda: (lambda a: None if a is None else [a.work_id, a.session_id, a.text])(
            self.ns["claim"](self._queue(), "explorer")), timeout=10)
        if claimed.status != "returned":
            return f"claim did not return: {claimed.error.describe() if claimed.error else claimed.status}"
        if claimed.value is None:
            return "Nothing is pending: admit a request first."
        work_id, session_id, text = claimed.value

        def action():  # in a process of its own, so the crash point counts the writes of finish alone
            result = self._loop().run(session_id, text)
            self.ns["finish"](self._queue(), work_id, result)
            return "finish made fewer than two writes, so the crash point was never reached."

        return self._in_child(action, plan=KillAt(2, kinds=("write",)))

    def _deliver_with(self, script) -> str:
        from .transport import FakeService, FakeTransport

        if "deliver_one" not in self.ns:
            return "deliver_one is written in Unit B."
        return self._in_child(
            lambda: repr(self.ns["deliver_one"](Store(self.db), FakeTransport(FakeService(self.log, script=script)))))

    def _deliver(self) -> str:
        return self._deliver_with([])

    def _deliver_lost(self) -> str:
        from .transport import Behaviour

        return self._deliver_with([Behaviour.LOSE_REPLY])

    def _reset(self) -> str:
        for path in self.folder.glob("explorer*"):
            path.unlink()
        self._fresh = True
        return "Started again with empty files."

    def _run(self, handler: Callable[[], str]) -> None:
        import html

        try:
            self.message.value = f"<b>{html.escape(handler())}</b>"
        except Exception as exc:  # show, don't raise: this is a widget callback
            self.message.value = f"<b>{html.escape(type(exc).__name__)}: {html.escape(str(exc))}</b>"
        self._refresh()

    def _refresh(self) -> None:
        from .model import InvocationLog

        if self.db.exists():
            self.tables.value = tables_html(self.db, self.log if self.log.exists() else None,
                                            title=f"Model calls so far: {InvocationLog(self.calls).count()}")
        else:
            self.tables.value = "<p><i>(no database file yet)</i></p>"
