"""The independent observer, seen from the checker: ``observe_many`` starts a fresh
process (``lucy_runtime/observer.py``) that reads the files, and ``Snapshot`` is what it saw.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from dataclasses import dataclass, field

from ..errors import ObserverFailed
from .. import observer
from ..observer import _find_table, snapshot
from ..sandbox import dropping_to

__all__ = ["Snapshot", "_find_table", "observe_many", "read_between_children", "snapshot"]


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


def observe_many(targets: list[dict], *, timeout: float = 30.0) -> list[Snapshot]:
    """Start one fresh Python process that reads every target and reports what it found."""
    # -I -S: no site-packages, no environment, not even the script's own folder on the path;
    # the observer needs the standard library alone, and starts three times faster without them.
    done = subprocess.run(
        [sys.executable, "-I", "-S", "-B", observer.__file__],
        input=json.dumps(targets), capture_output=True, text=True, timeout=timeout,
    )
    _leave_writable(targets)
    if done.returncode != 0:
        raise ObserverFailed(f"the observer process failed: {done.stderr.strip()[-2000:]}")
    return [Snapshot(**item) for item in json.loads(done.stdout)]


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
