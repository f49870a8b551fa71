"""A series: the runs of one row's code under different plans, which learner code cannot tell apart.

A child forked by the parent is a copy of the parent: of its plan, of the frames that chose
it, of every count the parent keeps. A series forks its children from a ``child.ForkServer``
made before any plan for them exists, runs them all in one folder at one path that is empty
at the start of each, and leaves the plans, and the order of the runs, to the parent. The
crash sweeps, the fault runs and the races of ``kit`` are series.
"""

from __future__ import annotations

import os
import random
import shutil
import signal
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

from ..engine import confine
from ..engine.forkserver import ForkServer, run_served
from ..engine.result import ChildResult
from ..engine.supervisor import Plan
from .harness import SCENARIO_FILES, Ctx, Harness
from .observe import Snapshot


@dataclass(frozen=True)
class Kept:
    """A scenario folder a series moved aside after a run (or copied while a child waited at a point):
    what the observer reads, as it reads a scenario."""

    harness: "Harness"
    dir: Path

    @property
    def db(self) -> Path:
        return self.dir / SCENARIO_FILES[0]

    @property
    def log(self) -> Path:
        return self.dir / SCENARIO_FILES[1]

    @property
    def calls(self) -> Path:
        return self.dir / SCENARIO_FILES[2]

    def target(self) -> dict:
        return {"db": str(self.db), "log": str(self.log), "calls": str(self.calls)}

    def observe(self) -> Snapshot:
        return self.harness.observe([self])[0]


class Series:
    """Runs of one script under different plans that learner code cannot tell apart from inside.

    Every run is forked by one ``ForkServer``, forked here before any plan for the script
    exists, so every run starts from the same memory, stack, environment and open files.
    Every run works in the same folder, at the same path, and finds it empty: after each run
    the folder is moved aside whole (``keep``), and in the sealed sandbox (``Harness.wipe_as``)
    whatever learner code left anywhere else it can write is removed. The plans, and the order
    of the runs, are the parent's: a child is told nothing but which script to run.

    ``after`` is a second script, run in the folder as a previous run left it (a restart);
    ``others`` more such scripts, by name (the two racers of a race).
    """

    def __init__(self, harness: "Harness", name: str, script: Callable[[Ctx], Any],
                 after: Callable[[Ctx], Any] | None = None, others: dict[str, Callable[[Ctx], Any]] | None = None):
        self.harness = harness
        self.scenario = harness.scenario(name)
        later = dict(others or {})
        if after is not None:
            later["after"] = after
        scripts = {"run": self.scenario._child(script, first=True)}
        scripts.update({key: self.scenario._child(fn, first=False) for key, fn in later.items()})
        self._server = ForkServer(scripts)
        # A fresh run (engine/confine.py) leaves nothing to wipe: its processes, /tmp and IPC go with it.
        self._wipe = wipe_left_by(*harness.wipe_as) if harness.wipe_as and not confine.fresh_runs() else _nothing_to_wipe

    def run(self, plan: Plan, *, script: str = "run") -> ChildResult:
        self._wipe()
        return run_served(self._server, [script], plans=[plan], db=self.scenario.db, timeout=self.harness.timeout)[0]

    def race(self, scripts: list[str], plans: list[Plan]) -> list[ChildResult]:
        """Run ``scripts`` at the same moment, each under its plan, in the folder as the last run left it."""
        self._wipe()
        return run_served(self._server, scripts, plans=plans, db=self.scenario.db, timeout=2 * self.harness.timeout)

    def order(self, count: int) -> list[int]:
        """1 to ``count``, shuffled with fresh entropy from the system, drawn in the parent after the
        server was forked: no child holds anything it could be worked out from. (The harness's own
        ``rng`` would not do: its state is in every child's memory, and shuffling is public code.)"""
        numbers = list(range(1, count + 1))
        random.SystemRandom().shuffle(numbers)
        return numbers

    def after(self) -> ChildResult:
        return self.run(Plan(), script="after")

    def copy(self) -> Kept:
        """The folder as it is now (called while the child waits at a point: what a kill there would leave)."""
        kept = self._aside()
        try:
            shutil.copytree(self.scenario.dir, kept, symlinks=True)
        except shutil.Error:  # what learner code made unreadable stays behind; the scenario's files are copied
            pass
        for root, dirs, files in os.walk(kept):  # the copies are this process's: open them to a restart as another user
            for name in dirs:
                os.chmod(os.path.join(root, name), 0o777)
            for name in files:
                if not os.path.islink(os.path.join(root, name)):
                    os.chmod(os.path.join(root, name), 0o666)
        return Kept(self.harness, kept)

    def keep(self) -> Kept:
        """Move the folder, as the last run left it, out of the way; the next run finds an empty one at its path."""
        kept = self._aside()
        os.rename(self.scenario.dir, kept)
        self.scenario.dir.mkdir(mode=0o777)
        self.scenario.dir.chmod(0o777)
        return Kept(self.harness, kept)

    def restore(self, kept: Kept) -> None:
        """Put a kept folder back at the series' path (which must be empty), for a run of ``after``."""
        self._wipe()
        self.scenario.dir.rmdir()
        os.rename(kept.dir, self.scenario.dir)

    def discard(self, kept: Kept) -> None:
        shutil.rmtree(kept.dir, ignore_errors=True)

    def _aside(self) -> Path:
        return self.harness.workdir / os.urandom(8).hex()

    def close(self) -> None:
        self._server.close()

    def __enter__(self) -> "Series":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def wipe_left_by(uid: int, gid: int, places: tuple[str, ...] = ("/tmp", "/dev/shm")) -> Callable[[], None]:
    """What a series wipes before each run in the sealed sandbox, where learner code runs as ``uid`` and
    ``/tmp`` is the sandbox's own: end every process of ``uid`` (a daemon a run left behind could
    tell the next one what it saw) and remove what ``uid`` owns at the top of ``places``.

    Done by a child that becomes ``uid`` first: the orchestrator keeps no capability to remove
    another user's files from a sticky folder, and a user may always end its own processes.
    """
    def wipe() -> None:
        pid = os.fork()
        if pid == 0:
            code = 70
            try:
                os.setgroups([])
                os.setgid(gid)
                os.setuid(uid)
                _end_processes_and_files(uid, places)
                code = 0
            finally:
                os._exit(code)
        os.waitpid(pid, 0)

    return wipe


def _nothing_to_wipe() -> None:
    return None


def _end_processes_and_files(uid: int, places: tuple[str, ...]) -> None:
    for _ in range(3):  # a process forked while the first pass ran is ended by the next
        for entry in os.listdir("/proc"):
            if entry.isdigit() and int(entry) != os.getpid():
                try:
                    if os.stat(f"/proc/{entry}").st_uid == uid:
                        os.kill(int(entry), signal.SIGKILL)
                except OSError:
                    pass
    for place in places:
        try:
            names = os.listdir(place)
        except OSError:
            continue
        for name in names:
            path = os.path.join(place, name)
            try:
                if os.lstat(path).st_uid != uid:
                    continue
                if os.path.isdir(path) and not os.path.islink(path):
                    shutil.rmtree(path, ignore_errors=True)
                else:
                    os.unlink(path)
            except OSError:
                pass


__all__ = ["Kept", "Series", "wipe_left_by"]
