"""Where the checker stops, fails or pauses learner code.

Two halves. In the child, one ``Probe`` (``child.PROBE``) is the store's statement hook and the
transport's hook in every run: it reports each point to the parent and waits.
In the parent, a *plan* decides what happens at each point. The child's code is the
same whatever the plan, and a plan is made only after the process that forks the
children of its row was forked (``child.ForkServer``): no child holds its plan.

Points are counted in SQL statements that reach the store (writes and commits), so
they do not depend on how the learner arranged the code: "before the 2nd write of
this call" means the same thing for two UPDATEs, an INSERT … ON CONFLICT, or one
statement with RETURNING.
"""

from __future__ import annotations

import os
from abc import ABC, abstractmethod
from typing import Any, Callable

from ..errors import InjectedFault
from .child import CRASH_KINDS, PROBE, Probe
from .points import Action, Point
from .supervisor import Plan, Supervisor

POINT_KINDS = CRASH_KINDS


def crash_points(points: tuple[Point, ...] | list[Point]) -> list[str]:
    """The crash points among reported points, as "kind: statement"."""
    return [p.describe() for p in points if p.kind in POINT_KINDS]


class Count(Plan):
    """Lets everything through; the parent records the points."""


class Stop(Plan):
    """Lets everything through, and kills the child when it asks to stop (``ctx.stop()``)."""

    stop_allowed = True


class KillAt(Plan):
    """Kills the child just before the ``n``-th point of ``kinds`` (that match ``where``)."""

    def __init__(self, n: int, kinds: tuple[str, ...] = POINT_KINDS, where: Callable[[Point], bool] | None = None):
        self.n, self.kinds, self.where = n, kinds, where

    def decide(self, point: Point, before: list[Point], supervisor: Supervisor) -> Action:
        if point.kind not in self.kinds or (self.where is not None and not self.where(point)):
            return Action.GO
        seen = sum(1 for p in before if p.kind in self.kinds and (self.where is None or self.where(p)))
        return Action.KILL if seen + 1 == self.n else Action.GO


class CopyAt(Plan):
    """``plan``, with ``copy()`` called at each point of ``kinds`` after the first ``skip``, while the child waits there.

    The child has not run the statement yet, exactly as a child killed there: what is on disk
    now is what that kill would leave. A crash sweep copies the scenario's folder so in its
    counting run, and judges each copy as it judges a kill run's folder: the run a child could
    tell apart by its place at the front is judged at every point too. The kill runs make the
    same copies and throw them away, so a point takes as long in every run.
    """

    def __init__(self, plan: Plan, skip: int, copy: Callable[[], Any], kinds: tuple[str, ...] = POINT_KINDS):
        self.plan, self.skip, self.copy, self.kinds = plan, skip, copy, kinds
        self.stop_allowed, self.watch_writes = plan.stop_allowed, plan.watch_writes
        self.copies: list[Any] = []

    def decide(self, point: Point, before: list[Point], supervisor: Supervisor) -> Action:
        if point.kind in self.kinds and sum(1 for p in before if p.kind in self.kinds) >= self.skip:
            self.copies.append(self.copy())
        return self.plan.decide(point, before, supervisor)


class FailAt(Plan):
    """Makes the ``n``-th write fail with a database error instead of running it."""

    def __init__(self, n: int):
        self.n = n

    def decide(self, point: Point, before: list[Point], supervisor: Supervisor) -> Action:
        if point.kind != "write":
            return Action.GO
        return Action.FAULT if sum(1 for p in before if p.kind == "write") + 1 == self.n else Action.GO


class PauseForRival(Plan):
    """The first racer: held once at a BEGIN until the rival (child ``rival``) has finished.

    ``at_first_begin`` holds it at its very first BEGIN: a check made before that,
    outside any transaction (a ``store.query`` or a connection of its own), is then
    stale by the time it acts. Otherwise it is held at the first BEGIN that follows
    other statements of the same call: the moment a check-then-act split over two
    transactions has looked but not yet acted. An implementation that looks and acts
    in one transaction is right either way.
    """

    watch_writes = False

    def __init__(self, rival: int, *, at_first_begin: bool):
        self.rival, self.at_first_begin = rival, at_first_begin
        self.paused_at: Point | None = None
        self.released = False

    def decide(self, point: Point, before: list[Point], supervisor: Supervisor) -> Action:
        if self.released:
            return Action.GO
        if self.paused_at is None:
            if point.kind != "begin" or (not self.at_first_begin and not before):
                return Action.GO
            self.paused_at = point
        if supervisor.finished(self.rival):
            self.released = True
            return Action.GO
        return Action.HOLD


class Rival(Plan):
    """The second racer: its first point waits until the first racer is paused or done."""

    watch_writes = False

    def __init__(self, first: int):
        self.first = first
        self.started = False

    def decide(self, point: Point, before: list[Point], supervisor: Supervisor) -> Action:
        if not self.started and not (supervisor.held(self.first) or supervisor.finished(self.first)):
            return Action.HOLD
        self.started = True
        return Action.GO


# --- hooks for the notebooks' own experiments -------------------------------------------------
# A learner installs these on a store with ``store.set_hook(...)`` to watch a crash or a
# failed write happen in the kernel's own child processes. The checker never uses them:
# its plans above decide in the parent.


class CountPoints:
    """Remembers the crash points a store passes, as "kind: statement"."""

    def __init__(self) -> None:
        self.points: list[str] = []

    def __call__(self, kind: str, sql: str) -> None:
        if kind in POINT_KINDS:
            self.points.append(Point(kind, sql).describe())


class _AtWrite(ABC):
    """Does something just before the ``n``-th write sent through the store (commits not counted)."""

    def __init__(self, n: int):
        self.n, self.seen = n, 0

    def __call__(self, kind: str, sql: str) -> None:
        if kind == "write":
            self.seen += 1
            if self.seen == self.n:
                self.act()

    @abstractmethod
    def act(self) -> None:
        """What happens at that write."""


class CrashAtWrite(_AtWrite):
    """Ends the process just before the ``n``-th write."""

    def act(self) -> None:
        os._exit(EXPERIMENT_EXIT)


class FaultAt(_AtWrite):
    """Makes the ``n``-th write fail with a database error."""

    def act(self) -> None:
        raise InjectedFault("disk I/O error (injected by your experiment)")


EXPERIMENT_EXIT = 77
"""The exit status of a process a notebook experiment stopped (it proves nothing to the checker)."""


__all__ = ["CopyAt", "CountPoints", "CrashAtWrite", "EXPERIMENT_EXIT", "FaultAt", "POINT_KINDS", "PROBE", "Count", "KillAt", "FailAt",
           "InjectedFault", "PauseForRival", "Probe", "Rival", "Stop", "crash_points"]
