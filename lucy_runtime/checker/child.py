"""Run one piece of learner code in a forked child process.

The parent never runs learner code. The child inherits the learner's functions
(fork copies the kernel's namespace), runs one scenario, sends a picklable answer
back through a pipe and leaves with ``os._exit`` so no kernel or interpreter
machinery runs twice. A child that does not answer in time is killed; a child that
dies at an injected crash point is reported as crashed, not as an error.
"""

from __future__ import annotations

import io
import linecache
import os
import pickle
import select
import signal
import sys
import time
import traceback
from dataclasses import dataclass
from typing import Any, Callable

from .. import sandbox

CRASH_EXIT = 77
"""Exit status of a child stopped on purpose at a crash point."""

_RUNTIME_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


@dataclass(frozen=True)
class LearnerError:
    """An exception raised by learner code, told briefly: type, message and the learner's own line."""

    type_name: str
    message: str
    where: str
    line: str

    def describe(self) -> str:
        text = f"{self.type_name}: {self.message}" if self.message else self.type_name
        if self.line:
            text += f"\n    at {self.where}: {self.line}"
        return text

    @property
    def not_written(self) -> bool:
        return self.type_name == "NotImplementedError"


@dataclass(frozen=True)
class ChildResult:
    status: str  # returned | raised | crashed | timeout | died
    value: Any = None
    error: LearnerError | None = None
    output: str = ""
    seconds: float = 0.0

    @property
    def ok(self) -> bool:
        return self.status == "returned"


def _is_runtime_frame(filename: str) -> bool:
    return os.path.abspath(filename).startswith(_RUNTIME_DIR) or filename.startswith("<frozen") or (
        "site-packages" in filename or "/lib/python3" in filename
    )


def describe_exception(exc: BaseException) -> LearnerError:
    """Name the exception and the last line of *learner* code it passed through."""
    message = str(exc)
    if len(message) > 300:
        message = message[:300] + " …"
    if isinstance(exc, SyntaxError):  # the learner's cell never ran: point at the line that does not parse
        where = f"{exc.filename}, line {exc.lineno}" if exc.filename else f"line {exc.lineno}"
        return LearnerError(type(exc).__name__, exc.msg or message, where, (exc.text or "").strip())
    frames = traceback.extract_tb(exc.__traceback__)
    learner = [f for f in frames if not _is_runtime_frame(f.filename)]
    frame = learner[-1] if learner else None
    where, line = "", ""
    if frame is not None:
        line = (frame.line or linecache.getline(frame.filename, frame.lineno)).strip()
        where = f"{frame.name}(), line {frame.lineno}" if frame.name != "<module>" else f"line {frame.lineno}"
    return LearnerError(type(exc).__name__, message, where, line)


def _serialisable(value: Any) -> Any:
    try:
        pickle.dumps(value)
        return value
    except Exception:
        return repr(value)


def run_in_child(fn: Callable[[], Any], *, timeout: float = 5.0) -> ChildResult:
    """Fork, run ``fn()`` in the child, and report how the child ended."""
    return _collect(_spawn(fn), time.monotonic() + timeout)


def run_together(fns: list[Callable[[], Any]], *, timeout: float = 8.0) -> list[ChildResult]:
    """Run several children at the same time (for races); results in the given order.

    All children are forked from this thread before any is collected.
    """
    spawned = [_spawn(fn) for fn in fns]
    deadline = time.monotonic() + timeout
    return [_collect(child, deadline) for child in spawned]


def _spawn(fn: Callable[[], Any]) -> tuple[int, int, float]:
    sys.stdout.flush()
    sys.stderr.flush()
    read_end, write_end = os.pipe()
    started = time.monotonic()
    pid = os.fork()
    if pid == 0:  # the child: never returns
        os.close(read_end)
        sandbox.enter_child(write_end)  # before learner code: no inherited fds, the grader user when sandboxed
        captured = io.StringIO()
        try:
            devnull = os.open(os.devnull, os.O_RDWR)
            for fd in (0, 1, 2):
                os.dup2(devnull, fd)
            sys.stdout = sys.stderr = captured
            payload = ("returned", _serialisable(fn()), None)
        except BaseException as exc:  # learner code may raise anything, SystemExit included
            payload = ("raised", None, describe_exception(exc))
        try:
            data = pickle.dumps(payload + (captured.getvalue()[-4000:],))
            view = memoryview(data)
            while view:
                view = view[os.write(write_end, view):]
        finally:
            os._exit(0)
    os.close(write_end)
    return pid, read_end, started


def _collect(child: tuple[int, int, float], deadline: float) -> ChildResult:
    pid, read_end, started = child
    chunks, timed_out = [], False
    try:
        while True:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                timed_out = True
                break
            ready, _, _ = select.select([read_end], [], [], remaining)
            if not ready:
                continue
            chunk = os.read(read_end, 65536)
            if not chunk:
                break
            chunks.append(chunk)
    finally:
        os.close(read_end)
    if timed_out:
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    _, status = os.waitpid(pid, 0)
    seconds = time.monotonic() - started
    if timed_out:
        return ChildResult("timeout", seconds=seconds)
    if os.WIFEXITED(status) and os.WEXITSTATUS(status) == CRASH_EXIT:
        return ChildResult("crashed", seconds=seconds)
    if not chunks:
        code = os.WEXITSTATUS(status) if os.WIFEXITED(status) else -os.WTERMSIG(status)
        return ChildResult("died", value=code, seconds=seconds)
    state, value, error, output = pickle.loads(b"".join(chunks))
    return ChildResult(state, value, error, output, seconds)
