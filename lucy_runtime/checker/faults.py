"""Statement hooks: where the checker stops, fails or pauses learner code.

Points are counted in SQL statements that reach the store (writes and commits), so
they do not depend on how the learner arranged the code: "before the 2nd write of
this call" means the same thing for two UPDATEs, an INSERT … ON CONFLICT, or one
statement with RETURNING.
"""

from __future__ import annotations

import os
import sqlite3
import time
from pathlib import Path

from .child import CRASH_EXIT

POINT_KINDS = ("write", "commit", "send", "accepted")
"""Crash points: before each write and commit reaching the store, before a send reaches
the remote service, and just after the service accepted it."""


class CountPoints:
    """Counts the crash points a call passes through, and remembers what they were."""

    def __init__(self) -> None:
        self.points: list[str] = []

    def __call__(self, kind: str, sql: str) -> None:
        if kind in POINT_KINDS:
            self.points.append(f"{kind}: {' '.join(sql.split())[:60]}")


class CrashAt:
    """Ends the process (as a power cut would) just before the ``n``-th point."""

    def __init__(self, n: int):
        self.n, self.seen = n, 0

    def __call__(self, kind: str, sql: str) -> None:
        if kind in POINT_KINDS:
            self.seen += 1
            if self.seen == self.n:
                os._exit(CRASH_EXIT)


class InjectedFault(sqlite3.OperationalError):
    """A database error the checker raised on purpose (the disk said no)."""


class FaultAt:
    """Raises a database error instead of running the ``n``-th write."""

    def __init__(self, n: int):
        self.n, self.seen = n, 0

    def __call__(self, kind: str, sql: str) -> None:
        if kind == "write":
            self.seen += 1
            if self.seen == self.n:
                raise InjectedFault("disk I/O error (injected by the checker)")


class PauseForRival:
    """Pauses once, at the first BEGIN that follows other statements of the same call.

    That is the moment a check-then-act implementation has looked but not yet acted,
    and holds no lock. The rival process runs its whole call meanwhile. An
    implementation that looks and acts in one transaction never pauses.
    """

    def __init__(self, flags: Path, *, wait_seconds: float = 3.0):
        self.flags = flags
        self.wait_seconds = wait_seconds
        self.statements = 0
        self.paused = False

    def __call__(self, kind: str, sql: str) -> None:
        if kind == "begin" and self.statements and not self.paused:
            self.paused = True
            (self.flags / "first-paused").touch()
            deadline = time.monotonic() + self.wait_seconds
            while not (self.flags / "rival-done").exists() and time.monotonic() < deadline:
                time.sleep(0.005)
        self.statements += 1


def wait_for_turn(flags: Path, *, wait_seconds: float = 3.0) -> None:
    """The rival's side: start once the first process has paused or finished."""
    deadline = time.monotonic() + wait_seconds
    while time.monotonic() < deadline:
        if (flags / "first-paused").exists() or (flags / "first-done").exists():
            return
        time.sleep(0.005)


class CrashAtWrite:
    """Ends the process just before the ``n``-th *write* (commits not counted).

    "Before the 2nd write of finish" is the gap between marking work done and
    inserting its report, however the learner spelled those writes.
    """

    def __init__(self, n: int):
        self.n, self.seen = n, 0

    def __call__(self, kind: str, sql: str) -> None:
        if kind == "write":
            self.seen += 1
            if self.seen == self.n:
                os._exit(CRASH_EXIT)
