"""Run one piece of learner code in a forked child process, supervised by the parent.

The parent never runs learner code. The child inherits the learner's functions
(fork copies the namespace), runs one scenario, sends its answer back as JSON and
leaves with ``os._exit`` so no kernel or interpreter machinery runs twice.

Every point a child passes (a BEGIN, a write, a COMMIT through the store, a send, a
service acceptance) is reported to the parent, and the child waits for the parent's
answer. The parent alone decides what happens there: go on, fail the
statement, hold it (a race), or kill the child with SIGKILL. A crash counts only when
the parent itself killed the child: no exit status the learner can produce means "crashed".

The child's code and hooks are the same in every run, but a child forked by the parent
is a copy of the parent, plan included. So the runs of one row that differ only in their
plan are forked by a ``ForkServer``, itself forked before any plan for them existed: it
holds nothing a plan could be learned from, and every child it forks starts from the same
memory. ``harness.Series`` adds the same folder for every run, emptied in between, and the
parent's order; a run with one plan of its own gets a server of its own (``Scenario.run``
with a plan maker); ``run_in_child`` still forks from the parent (notebook experiments).
Each run is forked by ``confine.fork_run``: in the sealed sandbox, into namespaces of its own.

Between two reports the parent reads ``PRAGMA data_version`` of the scenario's
database. The file may change only across a COMMIT that was reported through the
store; any other change is a write that bypassed ``queue.store``.

Nothing a child sends is unpickled: answers and reports are JSON, so a child that
writes to its pipes can at worst garble its own answer.
"""

from __future__ import annotations

import dataclasses
import io
import json
import linecache
import os
import select
import signal
import socket
import sqlite3
import struct
import sys
import time
import traceback
from dataclasses import dataclass, field
from enum import Enum
from typing import Any, Callable

from ..errors import AnswerUnreadable, ForkServerGone, InjectedFault
from . import confine
from .. import store

_RUNTIME_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
_MESSAGE_LIMIT = 1 << 20


class Status(str, Enum):
    """How a child ended, as the parent saw it."""

    RETURNED = "returned"
    RAISED = "raised"
    CRASHED = "crashed"  # killed by the parent at a planned point: nothing else counts as a crash
    TIMEOUT = "timeout"
    DIED = "died"


class Action(str, Enum):
    """The parent's answer at a point."""

    GO = "g"
    FAULT = "f"
    KILL = "k"
    HOLD = "h"


@dataclass(frozen=True)
class Point:
    """One reported point: ``kind`` is begin, write, commit, committed, send or accepted."""

    kind: str
    sql: str

    def describe(self) -> str:
        return f"{self.kind}: {' '.join(self.sql.split())[:60]}"


@dataclass(frozen=True)
class LearnerError:
    """An exception raised by learner code, told briefly: type, message and the learner's own line."""

    type_name: str
    message: str
    where: str
    line: str
    harness: bool = False  # raised by the checker's own contract check, not by learner code

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
    status: Status
    value: Any = None
    error: LearnerError | None = None
    output: str = ""
    seconds: float = 0.0
    points: tuple[Point, ...] = ()
    bypass: str = ""  # a change to the database that did not come through a reported commit

    @property
    def ok(self) -> bool:
        return self.status == Status.RETURNED


class Plan:
    """The parent's side of a child: what to do at each point it reports. This one only counts."""

    stop_allowed = False
    watch_writes = True  # off in races, where the rival's commits change the file too

    def decide(self, point: Point, before: list[Point], supervisor: "Supervisor") -> Action:
        return Action.GO


# --- the child's side ------------------------------------------------------------


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


def _child_main(fn: Callable[[], Any], result_fd: int, to_parent: int, from_parent: int) -> None:
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


# --- the parent's side -----------------------------------------------------------


@dataclass
class _Child:
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


def _spawn(fn: Callable[[], Any], plan: Plan, db: str) -> _Child:
    sys.stdout.flush()
    sys.stderr.flush()
    result_r, result_w = os.pipe()
    control_r, control_w = os.pipe()
    reply_r, reply_w = os.pipe()
    started = time.monotonic()
    pid, waited = confine.fork_run(lambda: _child_main(fn, result_w, control_w, reply_r), close=(result_r, control_r, reply_w))
    for fd in (result_w, control_w, reply_r):
        os.close(fd)
    return _Child(pid, result_r, control_r, reply_w, plan, started, db=db,
                  reap=lambda _pid: os.waitpid(waited, 0)[1])


class ForkServer:
    """A process that forks the children of a few scripts, forked itself before any plan for them existed.

    A child forked by the parent is a copy of the parent: of the plan it was given, of the
    frames that chose it, of everything the parent counted so far. A child forked by this
    server is a copy of the server, and the server is a copy of the parent at a moment when
    it knew the scripts and no plan for them. The server never learns one later: it is told
    only which script to fork, gets the child's three pipe ends and answers with its pid;
    it reaps each child when asked. So every child of one server starts from the same
    memory, stack, environment and open files, whatever the parent then decides at its
    points. The parent keeps the plans, the other ends of the pipes and the kills.
    """

    def __init__(self, scripts: dict[str, Callable[[], Any]]):
        self.names = list(scripts)
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        sys.stdout.flush()
        sys.stderr.flush()
        pid = os.fork()
        if pid == 0:  # the server: never returns
            ours.close()
            _serve(list(scripts.values()), theirs)
        theirs.close()
        self.pid, self._socket = pid, ours

    def spawn(self, name: str, plan: Plan, db: str) -> _Child:
        result_r, result_w = os.pipe()
        control_r, control_w = os.pipe()
        reply_r, reply_w = os.pipe()
        started = time.monotonic()
        try:
            socket.send_fds(self._socket, [bytes([_FORK, self.names.index(name)])], [result_w, control_w, reply_r])
            data = self._socket.recv(16)
            pids = _PIDS.unpack(data) if len(data) == _PIDS.size else None
        finally:
            for fd in (result_w, control_w, reply_r):
                os.close(fd)
        if pids is None:
            for fd in (result_r, control_r, reply_w):
                os.close(fd)
            raise ForkServerGone("the checker's fork server is gone")
        pid, waited = pids  # the process to kill, and the one the server waits for (the same but in a fresh run)
        return _Child(pid, result_r, control_r, reply_w, plan, started, db=db, reap=lambda _pid: self._reap(waited))

    def _answer(self) -> int | None:
        data = self._socket.recv(8)
        return _PID.unpack(data)[0] if len(data) == _PID.size else None

    def _reap(self, pid: int) -> int | None:
        try:
            self._socket.send(bytes([_REAP]) + _PID.pack(pid))
            return self._answer()
        except OSError:
            return None

    def close(self) -> None:
        self._socket.close()  # the server sees the end of its socket and leaves
        try:
            os.waitpid(self.pid, 0)
        except ChildProcessError:
            pass

    def __enter__(self) -> "ForkServer":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


_FORK, _REAP = 1, 2
_PID = struct.Struct(">i")
_PIDS = struct.Struct(">ii")
"""Pids and wait statuses on the server's socket. A Struct made once: ``struct.pack`` with a format
would cache it in the server after its first child, and the next child would find one more object."""


def _serve(scripts: list[Callable[[], Any]], channel: socket.socket) -> None:
    try:
        while _serve_one(scripts, channel):
            pass
    finally:
        os._exit(0)


def _serve_one(scripts: list[Callable[[], Any]], channel: socket.socket) -> bool:
    """One request: fork a child of a script, or reap one. Nothing of it outlives the call, so the
    next child is forked from the same server as the last."""
    message, fds, _, _ = socket.recv_fds(channel, 8, 3)
    if not message:
        return False
    if message[0] == _REAP:
        try:
            status = os.waitpid(_PID.unpack(message[1:5])[0], 0)[1]
        except ChildProcessError:
            status = -1
        channel.send(_PID.pack(status))
        return True
    pid, waited = confine.fork_run(lambda: _child_main(scripts[message[1]], *fds), close=(channel.fileno(),))
    for fd in fds:
        os.close(fd)
    channel.send(_PIDS.pack(pid, waited))
    return True


class Supervisor:
    """Serves the points of one or more running children until each has ended."""

    def __init__(self, children: list[_Child]):
        self.children = children

    def finished(self, index: int) -> bool:
        return self.children[index].finished

    def held(self, index: int) -> bool:
        return self.children[index].held is not None

    def run(self, deadline: float) -> list[ChildResult]:
        while not all(c.finished for c in self.children):
            for child in self.children:
                if child.held is not None and not child.finished:
                    self._answer(child, child.held, child.held_before)
            open_fds = {}
            for child in self.children:
                if not child.finished:
                    open_fds[child.result_fd] = child
                    if child.control_fd >= 0:
                        open_fds[child.control_fd] = child
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                for child in self.children:
                    if not child.finished:
                        self._end(child, timed_out=True)
                break
            wait = min(remaining, 0.05) if any(c.held for c in self.children) else remaining
            ready, _, _ = select.select(list(open_fds), [], [], wait)
            for fd in ready:
                child = open_fds[fd]
                if child.finished:
                    continue
                if fd == child.control_fd:
                    self._read_control(child)
                else:
                    chunk = os.read(fd, 65536)
                    if chunk and sum(map(len, child.chunks)) < _MESSAGE_LIMIT:
                        child.chunks.append(chunk)
                    elif not chunk:
                        self._end(child)
        return [c.result for c in self.children]  # type: ignore[misc]

    # messages

    def _read_control(self, child: _Child) -> None:
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

    def _handle(self, child: _Child, message: list) -> None:
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

    def _answer(self, child: _Child, point: Point, before: list[Point]) -> None:
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

    def _reply(self, child: _Child, action: Action) -> None:
        try:
            os.write(child.reply_fd, action.value.encode())
        except OSError:
            pass

    def _watch(self, child: _Child, *, allowed: bool) -> None:
        """Read the file's data_version: a change is allowed only right after a reported COMMIT, and
        then it is one transaction (a point reported by learner code itself opens no wider window)."""
        if not child.db or child.bypass or not child.plan.watch_writes:
            return
        version, commits = _data_version(child.db), _commits(child.db)
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

    def _kill(self, child: _Child) -> None:
        try:
            os.kill(child.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        child.killed = True
        self._end(child)

    def _broken(self, child: _Child, what: str) -> None:
        child.broken = what
        try:
            os.kill(child.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        self._end(child)

    def _end(self, child: _Child, *, timed_out: bool = False) -> None:
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
        _data_version_close(child.db)
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


_versions: dict[str, sqlite3.Connection] = {}


def _data_version(db: str) -> int | None:
    # Read-only, and only once the child's own connection has made the WAL files: a connection
    # of the parent's must never create a file the child (another user, when sandboxed) then cannot write.
    if not all(os.path.exists(db + suffix) for suffix in ("", "-wal", "-shm")):
        return None
    try:
        conn = _versions.get(db)
        if conn is None:
            conn = _versions[db] = sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=5,
                                                   isolation_level=None, check_same_thread=False)
        return conn.execute("PRAGMA data_version").fetchone()[0]
    except sqlite3.Error:
        return None


def _commits(db: str) -> int | None:
    """How many write transactions have been committed to ``db``, by any connection.

    The WAL index (the ``-shm`` file) starts with a header that SQLite keeps twice, in the
    machine's byte order; its third word counts committed transactions and survives
    checkpoints. None while the header is missing or being rewritten.
    """
    try:
        with open(db + "-shm", "rb") as fh:
            header = fh.read(_WAL_INDEX_HEADER)
    except OSError:
        return None
    if len(header) < _WAL_INDEX_HEADER:
        return None
    first, second = (struct.unpack_from("=I", header, at)[0] for at in (8, 8 + _WAL_INDEX_HEADER // 2))
    return first if first == second else None


_WAL_INDEX_HEADER = 96
"""Two copies of SQLite's 48-byte WalIndexHdr: iVersion, unused, iChange, ..."""


def _data_version_close(db: str) -> None:
    conn = _versions.pop(db, None)
    if conn is not None:
        conn.close()


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


def run_served(server: ForkServer, scripts: list[str], *, plans: list[Plan], timeout: float = 5.0,
               db: str | os.PathLike | None = None) -> list[ChildResult]:
    """``run_together`` for children of ``server``, by script name: the plans are made and kept here, in the parent.

    A server that is gone (learner code outside the sandbox can kill its parent) forks nothing:
    every run it was asked for died.
    """
    children = []
    try:
        for script, plan in zip(scripts, plans):
            children.append(server.spawn(script, plan, os.fspath(db) if db else ""))
    except OSError:  # ChildProcessError too
        gone = ChildResult(Status.DIED, value="the process that forks the checker's runs was killed")
        Supervisor(children).run(time.monotonic())  # past its deadline: ends any child it did fork
        return [gone] * len(scripts)
    return Supervisor(children).run(time.monotonic() + timeout)
