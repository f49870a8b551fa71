"""The independent observer, seen from the checker: ``observe_many`` starts a fresh
process that reads the files (``lucy_runtime/observer.py``), and ``Snapshot`` is what it saw.
``in_fresh_process`` starts that process for this observer and the practice rows' one.
"""

from __future__ import annotations

import json
import os
import selectors
import signal
import subprocess
import sys
import time
from dataclasses import dataclass, field
from typing import Any, Callable

from ..errors import ObserverFailed
from .. import observer
from ..observer import find_table, snapshot
from ..engine.confine import dropping_to

__all__ = ["Snapshot", "find_table", "in_fresh_process", "observe_many", "read_between_children", "snapshot"]


@dataclass(frozen=True)
class Snapshot:
    """What the observer saw. ``work`` and ``reports`` are lists of column → value dicts."""

    work: list[dict]
    reports: list[dict]
    accepted: list[dict]
    requests: list[dict]
    model_calls: int
    problems: list[str] = field(default_factory=list)
    ambiguous: list[str] = field(default_factory=list)  # "work" and/or "report": several tables fit
    tables: dict = field(default_factory=dict)

    def work_for(self, source_id: str) -> list[dict]:
        return [w for w in self.work if w["source_id"] == source_id]

    def reports_for(self, work_id) -> list[dict]:
        return [r for r in self.reports if _same_id(r["work_id"], work_id)]

    def work_by_id(self, work_id) -> dict | None:
        return next((w for w in self.work if _same_id(w["work_id"], work_id)), None)


def _same_id(a, b) -> bool:
    return a == b or str(a) == str(b)


def observe_many(targets: list[dict], *, fork: bool, timeout: float = 30.0) -> list[Snapshot]:
    """Read every target in one fresh process and report what it found.

    ``fork``: that process may be a fork of this one (``Harness.forks_observer``: no learner code
    has run here). Otherwise it is a new interpreter running ``observer.py`` as a bare script;
    -I -S: no site-packages, no environment, not even the script's own folder on the path.
    """
    seen = in_fresh_process(_snapshots, targets, fork=fork, timeout=timeout,
                            command=[sys.executable, "-I", "-S", "-B", observer.__file__])
    _leave_writable(targets)
    return [Snapshot(**item) for item in seen]


def _snapshots(targets: list[dict]) -> list[dict]:
    return [snapshot(t["db"], t.get("log"), t.get("calls")) for t in targets]


def in_fresh_process(read: Callable[[list[dict]], list[dict]], targets: list[dict], *, fork: bool, timeout: float,
                     command: list[str], env: dict[str, str] | None = None) -> list[Any]:
    """``read(targets)`` in a process that shares nothing with the learner's: a fork of this one
    (a few milliseconds), or ``command``, a script that reads the targets as JSON on stdin and
    prints what ``read`` returns (a new interpreter, for a process where learner code has run)."""
    if fork:
        return _read_in_fork(read, targets, timeout)
    done = subprocess.run(command, input=json.dumps(targets), capture_output=True, text=True, timeout=timeout, env=env)
    if done.returncode != 0:
        raise ObserverFailed(f"the observer process failed: {done.stderr.strip()[-2000:]}")
    return json.loads(done.stdout)


def _read_in_fork(read: Callable[[list[dict]], list[dict]], targets: list[dict], timeout: float) -> list[Any]:
    # The parent holds no connection to these files while no child runs (engine/supervisor.py closes its
    # watch on each child's end), so a connection opened in the fork starts from nothing.
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:
        status = 0
        try:
            os.close(read_end)
            data = json.dumps(read(targets)).encode()
        except BaseException as error:  # noqa: BLE001 - reported to the parent, never raised here
            status, data = 1, f"{type(error).__name__}: {error}".encode()
        try:
            view = memoryview(data)
            while view:
                view = view[os.write(write_end, view):]
        finally:
            os._exit(status)
    os.close(write_end)
    chunks, deadline = [], time.monotonic() + timeout
    with selectors.DefaultSelector() as waiting:
        waiting.register(read_end, selectors.EVENT_READ)
        while True:
            left = deadline - time.monotonic()
            if left <= 0 or not waiting.select(left):
                os.close(read_end)
                os.kill(pid, signal.SIGKILL)
                os.waitpid(pid, 0)
                raise ObserverFailed(f"the observer process did not finish in {timeout:g} s")
            chunk = os.read(read_end, 1 << 16)
            if not chunk:
                break
            chunks.append(chunk)
    os.close(read_end)
    _, status = os.waitpid(pid, 0)
    data = b"".join(chunks)
    if os.waitstatus_to_exitcode(status) != 0:
        raise ObserverFailed(f"the observer process failed: {data.decode(errors='replace')[-2000:]}")
    return json.loads(data)


def read_between_children(target: dict) -> dict:
    """What the files hold now, read by this process: the checker's own, which runs no learner code.

    For a check that reads after every one of many short children (the model-based row),
    where a fresh interpreter each time would cost more than the children. A read inside
    a child would not do: the child has run the learner's cells, which can replace any
    function it calls. Takes effect only once the children have ended.
    """
    seen_now = snapshot(target["db"], target.get("log"), target.get("calls"))
    _leave_writable([target])
    return seen_now


def _leave_writable(targets: list[dict]) -> None:
    """Give the files the observer made back to the learner's next run.

    Reading a WAL-mode SQLite file can create its ``-wal`` and ``-shm`` files. In the sealed
    re-check the observer runs as the orchestrator while learner code runs as the grader user,
    so a file the observer created (mode 0644) would make the next child's write fail with
    "attempt to write a readonly database". Only files this process owns are touched.
    """
    if dropping_to() is None:
        return
    for target in targets:
        for key in ("db", "log", "calls"):
            if not target.get(key):
                continue
            for suffix in ("", "-wal", "-shm", "-journal"):
                path = target[key] + suffix
                try:
                    if os.stat(path).st_uid == os.geteuid():
                        os.chmod(path, 0o666)
                except FileNotFoundError:
                    pass
