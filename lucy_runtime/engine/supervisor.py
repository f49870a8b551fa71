"""The parent's side of a supervised run: it forks the children, answers their points and sees how they end.

The parent alone decides what happens at each point a child reports (its ``Plan``): go on,
fail the statement, hold it (a race), or kill the child with SIGKILL. A crash counts only
when the parent itself killed the child: no exit status the learner can produce means "crashed".

A child forked here is a copy of the parent, plan included: ``run_in_child`` and
``run_together`` (notebook experiments, races) fork from the parent; the runs of one row
that differ only in their plan are forked by a ``ForkServer`` instead (``forkserver.py``).
Each run is forked by ``confine.fork_run``: in the sealed sandbox, into namespaces of its own.

Between two reports the parent looks at the scenario's database (``watch.py``): a change
that did not come through a reported COMMIT is a write that bypassed ``queue.store``.

Nothing a child sends is unpickled: answers and reports are JSON, so a child that
writes to its pipes can at worst garble its own answer.
"""

from __future__ import annotations

import json
import os
import select
import signal
import struct
import sys
import time
from dataclasses import dataclass, field
from typing import Any, Callable

from ..errors import AnswerUnreadable
from . import confine, watch
from .child import child_main
from .points import Action, Point
from .result import ChildResult, LearnerError, Status

_MESSAGE_LIMIT = 1 << 20


class Plan:
    """The parent's side of a child: what to do at each point it reports. This one only counts."""

    stop_allowed = False
    watch_writes = True  # off in races, where the rival's commits change the file too

    def decide(self, point: Point, before: list[Point], supervisor: "Supervisor") -> Action:
        return Action.GO


@dataclass
class RunningChild:
    """A forked child as the parent holds it: its pipes, its plan, what it reported so far and how it ended."""

    pid: int
    result_fd: int
    control_fd: int
    reply_fd: int
    plan: Plan
    started: float
    chunks: list[bytes] = field(default_factory=list)
    buffer: bytes = b""
    points: list[Point] = field(default_factory=list)
    held: Point | None = None
    held_before: list[Point] = field(default_factory=list)
    killed: bool = False
    finished: bool = False
    db: str = ""
    version: int | None = None
    commits: int | None = None  # SQLite's count of committed write transactions, when last read
    commit_open: bool = False  # a reported COMMIT was let through and its 'committed' has not come yet
    bypass: str = ""
    broken: str = ""
    result: ChildResult | None = None
    reap: Callable[[int], int | None] = field(default=lambda pid: os.waitpid(pid, 0)[1])
    """Waits for the ended child and gives its wait status: ours, or its fork server's."""


def _spawn(fn: Callable[[], Any], plan: Plan, db: str) -> RunningChild:
    sys.stdout.flush()
    sys.stderr.flush()
    result_r, result_w = os.pipe()
    control_r, control_w = os.pipe()
    reply_r, reply_w = os.pipe()
    started = time.monotonic()
    pid, waited = confine.fork_run(lambda: child_main(fn, result_w, control_w, reply_r), close=(result_r, control_r, reply_w))
    for fd in (result_w, control_w, reply_r):
        os.close(fd)
    return RunningChild(pid, result_r, control_r, reply_w, plan, started, db=db,
                        reap=lambda _pid: os.waitpid(waited, 0)[1])


class Supervisor:
    """Serves the points of one or more running children until each has ended."""

    def __init__(self, children: list[RunningChild]):
        self.children = children

    def finished(self, index: int) -> bool:
        return self.children[index].finished

    def held(self, index: int) -> bool:
        return self.children[index].held is not None

    def run(self, deadline: float) -> list[ChildResult]:
        while not all(c.finished for c in self.children):
            self._answer_held()
            open_fds = self._open_fds()
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                self._time_out()
                break
            wait = min(remaining, 0.05) if any(c.held for c in self.children) else remaining
            ready, _, _ = select.select(list(open_fds), [], [], wait)
            for fd in ready:
                self._read(open_fds[fd], fd)
        return [c.result for c in self.children]  # type: ignore[misc]

    def _answer_held(self) -> None:
        """Ask each held child's plan again: what held it may have changed since."""
        for child in self.children:
            if child.held is not None and not child.finished:
                self._answer(child, child.held, child.held_before)

    def _open_fds(self) -> dict[int, RunningChild]:
        open_fds = {}
        for child in self.children:
            if not child.finished:
                open_fds[child.result_fd] = child
                if child.control_fd >= 0:
                    open_fds[child.control_fd] = child
        return open_fds

    def _time_out(self) -> None:
        for child in self.children:
            if not child.finished:
                self._end(child, timed_out=True)

    def _read(self, child: RunningChild, fd: int) -> None:
        """Read what is ready on one of ``child``'s pipes: a report, or part of its answer (its end when none)."""
        if child.finished:
            return
        if fd == child.control_fd:
            self._read_control(child)
            return
        chunk = os.read(fd, 65536)
        if chunk and sum(map(len, child.chunks)) < _MESSAGE_LIMIT:
            child.chunks.append(chunk)
        elif not chunk:
            self._end(child)

    # messages

    def _read_control(self, child: RunningChild) -> None:
        chunk = os.read(child.control_fd, 65536)
        if not chunk:
            os.close(child.control_fd)
            child.control_fd = -1
            return
        child.buffer += chunk
        while len(child.buffer) >= 4:
            (size,) = struct.unpack(">I", child.buffer[:4])
            if size > _MESSAGE_LIMIT:
                return self._broken(child, "an oversized message")
            if len(child.buffer) < 4 + size:
                return
            raw, child.buffer = child.buffer[4:4 + size], child.buffer[4 + size:]
            try:
                message = json.loads(raw)
                self._handle(child, message)
            except (ValueError, TypeError, IndexError):
                return self._broken(child, "a message the checker never sends")

    def _handle(self, child: RunningChild, message: list) -> None:
        verb = message[0]
        if verb == "point":
            point = Point(str(message[1]), str(message[2]))
            if point.kind == "committed":
                self._watch(child, allowed=child.commit_open)
                child.commit_open = False
                return self._reply(child, Action.GO)
            self._watch(child, allowed=False)
            before = list(child.points)
            child.points.append(point)
            return self._answer(child, point, before)
        if verb == "stop":  # a stop asked for inside a commit (a hook at 'committed') follows that commit
            self._watch(child, allowed=child.commit_open)
            if child.plan.stop_allowed:
                return self._kill(child)
            return self._broken(child, "a request to stop where the checker planned none")
        raise AnswerUnreadable(verb)

    def _answer(self, child: RunningChild, point: Point, before: list[Point]) -> None:
        action = child.plan.decide(point, before, self)
        if action == Action.HOLD:
            child.held, child.held_before = point, before
            return
        child.held = None
        if action == Action.KILL:
            return self._kill(child)
        if point.kind == "commit" and action == Action.GO:
            child.commit_open = True
        self._reply(child, action)

    def _reply(self, child: RunningChild, action: Action) -> None:
        try:
            os.write(child.reply_fd, action.value.encode())
        except OSError:
            pass

    def _watch(self, child: RunningChild, *, allowed: bool) -> None:
        """Read the file's data_version: a change is allowed only right after a reported COMMIT, and
        then it is one transaction (a point reported by learner code itself opens no wider window)."""
        if not child.db or child.bypass or not child.plan.watch_writes:
            return
        version, commits = watch.data_version(child.db), watch.commits(child.db)
        if version is None:
            return
        last = child.points[-1].describe() if child.points else "the start of the call"
        if child.version is not None and version != child.version and not allowed:
            child.bypass = (f"the database file changed after {last!r} without a COMMIT through queue.store")
        elif allowed and commits is not None and child.commits is not None and commits - child.commits > 1:
            child.bypass = (f"the database file took {commits - child.commits} commits at {last!r}, where "
                            "queue.store made one")
        child.version = version
        if commits is not None:
            child.commits = commits

    def _kill(self, child: RunningChild) -> None:
        try:
            os.kill(child.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        child.killed = True
        self._end(child)

    def _broken(self, child: RunningChild, what: str) -> None:
        child.broken = what
        try:
            os.kill(child.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        self._end(child)

    def _end(self, child: RunningChild, *, timed_out: bool = False) -> None:
        if timed_out:
            try:
                os.kill(child.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        killed = timed_out or child.killed or bool(child.broken)
        # A killed run is waited for before its pipes close: a process of it that sees them close (the child
        # waiting at its point, which would leave) could act before the kill reached every process of the run.
        status = child.reap(child.pid) if killed else None
        for fd in (child.result_fd, child.control_fd, child.reply_fd):
            if fd >= 0:
                try:
                    os.close(fd)
                except OSError:
                    pass
        if not killed:
            status = child.reap(child.pid)
        if not timed_out and not child.killed:
            # A write after the last reported point is seen too: read once the run's processes are gone (in a
            # fresh run, all of them), so a process it left cannot write after this look.
            self._watch(child, allowed=child.commit_open)
        child.finished = True
        watch.forget(child.db)
        seconds = time.monotonic() - child.started
        common: dict[str, Any] = {"seconds": seconds, "points": tuple(child.points), "bypass": child.bypass}
        if timed_out:
            child.result = ChildResult(Status.TIMEOUT, **common)
        elif child.killed:
            child.result = ChildResult(Status.CRASHED, **common)
        elif child.broken:
            child.result = ChildResult(Status.DIED, value=f"the process sent the checker {child.broken}", **common)
        elif not child.chunks:
            code = -1 if status is None or status < 0 else (
                os.WEXITSTATUS(status) if os.WIFEXITED(status) else -os.WTERMSIG(status))
            child.result = ChildResult(Status.DIED, value=code, **common)
        else:
            child.result = _decode(b"".join(child.chunks), common)


def _decode(data: bytes, common: dict) -> ChildResult:
    try:
        payload = json.loads(data)
        status = Status(payload["status"])
        error = payload.get("error")
        if error is not None:
            error = LearnerError(**{k: error[k] for k in ("type_name", "message", "where", "line", "harness")})
        if status not in (Status.RETURNED, Status.RAISED):
            raise AnswerUnreadable(status)
        return ChildResult(status, payload.get("value"), error, str(payload.get("output", "")), **common)
    except (ValueError, KeyError, TypeError):
        return ChildResult(Status.DIED, value="the process's answer could not be read", **common)


def run_in_child(fn: Callable[[], Any], *, timeout: float = 5.0, plan: Plan | None = None,
                 db: str | os.PathLike | None = None) -> ChildResult:
    """Fork, run ``fn()`` in the child under ``plan``, and report how the child ended.

    ``db`` is the database file the parent watches for writes that bypass the store.
    """
    return run_together([fn], timeout=timeout, plans=[plan or Plan()], db=db)[0]


def run_together(fns: list[Callable[[], Any]], *, timeout: float = 8.0, plans: list[Plan] | None = None,
                 db: str | os.PathLike | None = None) -> list[ChildResult]:
    """Run several children at the same time (for races); results in the given order."""
    plans = plans or [Plan() for _ in fns]
    children = [_spawn(fn, plan, os.fspath(db) if db else "") for fn, plan in zip(fns, plans)]
    try:
        return Supervisor(children).run(time.monotonic() + timeout)
    finally:
        confine.reap_leftovers()

