"""The practice rows' observer, seen from the checker: ``observe_practice`` starts a fresh
process that reads the files (``lucy_runtime/practice/observer.py``), and
``PracticeSnapshot`` is what it saw."""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass, field

from ..practice.observer import snapshot
from .observe import in_fresh_process


@dataclass(frozen=True)
class PracticeSnapshot:
    outbox: list[dict]
    ledger: list[dict]
    messages: list[dict]
    publishes: list[dict]
    seats: list[dict]
    posts: list[dict]
    actions: list[dict]
    case_requests: list[dict]
    problems: list[str] = field(default_factory=list)
    database: str | None = None
    """A digest of every table in the learner's database (``practice.observer``): equal only for equal contents."""

    def row(self, row_id: str) -> dict | None:
        return next((r for r in self.outbox if r["row_id"] == row_id), None)

    def messages_for(self, row_id: str) -> int:
        """Messages that carry this outbox row: under its key, or with its payload under another key."""
        row = self.row(row_id)
        return sum(1 for m in self.messages if m["key"] == row_id or (row is not None and m["body"] == row["payload"]))

    def publishes_of(self, payload: str) -> list[str]:
        """The key of every publish of ``payload`` the broker was asked for (refused and replayed ones included)."""
        return [p["key"] for p in self.publishes if p["body"] == payload]

    def case(self, case_id: str) -> dict | None:
        return next((r for r in self.ledger if r["case_id"] == case_id), None)

    def submits(self, key: str) -> int:
        return sum(1 for r in self.case_requests if r["verb"] == "submit" and r["key"] == key)


def observe_practice(targets: list[dict], *, fork: bool, timeout: float = 30.0) -> list[PracticeSnapshot]:
    """Read every target in one fresh process (``observe.in_fresh_process``) and report what it found."""
    env = dict(os.environ)
    package_root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    env["PYTHONPATH"] = package_root + os.pathsep + env.get("PYTHONPATH", "")
    seen = in_fresh_process(_snapshots, targets, fork=fork, timeout=timeout, env=env,
                            command=[sys.executable, "-B", "-m", "lucy_runtime.practice.observer"])
    return [PracticeSnapshot(**item) for item in seen]


def _snapshots(targets: list[dict]) -> list[dict]:
    return [snapshot(t["db"], t["log"]) for t in targets]
