"""The child's side of a supervised run: what a forked child process does, and its hook in the store.

The parent never runs learner code. The child inherits the learner's functions
(fork copies the namespace), runs one scenario, sends its answer back as JSON and
leaves with ``os._exit`` so no kernel or interpreter machinery runs twice.

Every point a child passes (a BEGIN, a write, a COMMIT through the store, a send, a
service acceptance) is reported to the parent by ``PROBE``, and the child waits for the
parent's answer (``supervisor.py``): go on, fail the statement with an ``InjectedFault``,
or never answer because the parent killed the child. Nothing of the parent's plan is here.
"""

from __future__ import annotations

import dataclasses
import io
import json
import linecache
import os
import struct
import sys
import traceback
from enum import Enum
from typing import Any, Callable

from ..errors import InjectedFault
from . import confine
from .points import Action
from .result import LearnerError
from .. import store

_RUNTIME_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


class _Channel:
    def __init__(self, to_parent: int, from_parent: int):
        self.to_parent, self.from_parent = to_parent, from_parent

    def ask(self, message: list) -> bytes:
        _write_all(self.to_parent, _frame(message))
        answer = os.read(self.from_parent, 1)
        if not answer:  # the parent is gone
            os._exit(0)
        return answer


_channel: _Channel | None = None


def report_point(kind: str, sql: str) -> None:
    """Called by the store and the transport in a checker child; blocks until the parent answers."""
    if _channel is None:
        return
    if _channel.ask(["point", kind, sql[:500]]) == Action.FAULT.value.encode():
        raise InjectedFault("disk I/O error (injected by the checker)")


def supervised() -> bool:
    """True in a child process the checker (or a notebook experiment) supervises."""
    return _channel is not None


def request_stop() -> None:
    """The process dies here, killed by the parent, with nothing flushed or closed."""
    if _channel is not None:
        _channel.ask(["stop"])
    os._exit(0)  # not reached when the parent allowed the stop; otherwise the run has failed anyway


class Probe:
    """The store's and the transport's hook in every checker child: reports each point and waits.

    It is installed for the whole life of every child, whatever the parent plans, and
    holds no plan of its own.
    """

    __slots__ = ()

    def __call__(self, kind: str, sql: str) -> None:
        if kind in REPORTED:
            report_point(kind, sql)


PROBE = Probe()
CRASH_KINDS = ("write", "commit", "send", "accepted")
"""Crash points: before each write and commit reaching the store, before a send reaches
the remote service, and just after the service accepted it."""
REPORTED = frozenset(CRASH_KINDS + ("begin", "committed"))


def _frame(message: list) -> bytes:
    data = json.dumps(message, default=repr).encode()
    return struct.pack(">I", len(data)) + data


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view):]


def _is_runtime_frame(filename: str) -> bool:
    return os.path.abspath(filename).startswith(_RUNTIME_DIR) or filename.startswith("<frozen") or (
        "site-packages" in filename or "/lib/python3" in filename
    )


def describe_exception(exc: BaseException) -> LearnerError:
    """Name the exception and the last line of *learner* code it passed through."""
    message = str(exc)
    if len(message) > 300:
        message = message[:300] + " …"
    harness = bool(getattr(exc, "raised_by_checker", False))
    if isinstance(exc, SyntaxError):  # the learner's cell never ran: point at the line that does not parse
        where = f"{exc.filename}, line {exc.lineno}" if exc.filename else f"line {exc.lineno}"
        return LearnerError(type(exc).__name__, exc.msg or message, where, (exc.text or "").strip(), harness)
    frames = traceback.extract_tb(exc.__traceback__)
    learner = [f for f in frames if not _is_runtime_frame(f.filename)]
    frame = learner[-1] if learner else None
    where, line = "", ""
    if frame is not None:
        line = (frame.line or linecache.getline(frame.filename, frame.lineno or 0)).strip()
        where = f"{frame.name}(), line {frame.lineno}" if frame.name != "<module>" else f"line {frame.lineno}"
    return LearnerError(type(exc).__name__, message, where, line, harness)


def _jsonable(value: Any) -> Any:
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: getattr(value, f.name) for f in dataclasses.fields(value)}
    if isinstance(value, Enum):
        return value.value
    return repr(value)


def _plain(value: Any) -> Any:
    """Answers travel as JSON: tuples become lists, dataclasses dicts, enums their values,
    anything else unknown its repr."""
    try:
        return json.loads(json.dumps(value, default=_jsonable))
    except (TypeError, ValueError):
        return repr(value)


def child_main(fn: Callable[[], Any], result_fd: int, to_parent: int, from_parent: int) -> None:
    """The whole life of a forked child: run ``fn()`` reporting its points, send the answer, leave."""
    global _channel
    captured = io.StringIO()
    try:
        confine.enter_child(result_fd, to_parent, from_parent)  # no inherited fds; the grader user when sandboxed
        devnull = os.open(os.devnull, os.O_RDWR)
        for fd in (0, 1, 2):
            os.dup2(devnull, fd)
        sys.stdout = sys.stderr = captured
        _channel = _Channel(to_parent, from_parent)
        store.set_process_hook(PROBE)
        payload = {"status": "returned", "value": _plain(fn())}
    except BaseException as exc:  # learner code may raise anything, SystemExit included
        payload = {"status": "raised", "error": describe_exception(exc).__dict__}
    try:
        payload["output"] = captured.getvalue()[-4000:]
        _write_all(result_fd, json.dumps(payload, default=repr).encode())
    finally:
        os._exit(0)
