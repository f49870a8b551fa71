"""A process that forks a row's runs from memory that holds no plan for them.

The child's code and hooks are the same in every run, but a child forked by the parent
is a copy of the parent, plan included. So the runs of one row that differ only in their
plan are forked by a ``ForkServer``, itself forked before any plan for them existed: it
holds nothing a plan could be learned from, and every child it forks starts from the same
memory. ``harness.Series`` adds the same folder for every run, emptied in between, and the
parent's order; a run with one plan of its own gets a server of its own (``Scenario.run``
with a plan maker); ``run_in_child`` still forks from the parent (notebook experiments).
"""

from __future__ import annotations

import os
import socket
import struct
import sys
import time
from typing import Any, Callable

from ..errors import ForkServerGone
from . import confine
from .child import child_main
from .result import ChildResult, Status
from .supervisor import Plan, RunningChild, Supervisor


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

    def spawn(self, name: str, plan: Plan, db: str) -> RunningChild:
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
        return RunningChild(pid, result_r, control_r, reply_w, plan, started, db=db, reap=lambda _pid: self._reap(waited))

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
    pid, waited = confine.fork_run(lambda: child_main(scripts[message[1]], *fds), close=(channel.fileno(),))
    for fd in fds:
        os.close(fd)
    channel.send(_PIDS.pack(pid, waited))
    return True


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
