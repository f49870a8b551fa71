"""The practice rows' observer, seen from the checker: ``observe_practice`` starts a fresh
process (``lucy_runtime/practice/observer.py``) that reads the files, and
``PracticeSnapshot`` is what it saw."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from dataclasses import dataclass, field

from ..errors import ObserverFailed


@dataclass(frozen=True)
class PracticeSnapshot:
    outbox: list[dict]
    ledger: list[dict]
    messages: list[dict]
    publishes: list[str]
    seats: list[dict]
    posts: list[dict]
    actions: list[dict]
    case_requests: list[dict]
    problems: list[str] = field(default_factory=list)

    def row(self, row_id: str) -> dict | None:
        return next((r for r in self.outbox if r["row_id"] == row_id), None)

    def messages_for(self, row_id: str) -> int:
        """Messages that carry this outbox row: under its key, or with its payload under another key."""
        row = self.row(row_id)
        return sum(1 for m in self.messages if m["key"] == row_id or (row is not None and m["body"] == row["payload"]))

    def case(self, case_id: str) -> dict | None:
        return next((r for r in self.ledger if r["case_id"] == case_id), None)

    def submits(self, key: str) -> int:
        return sum(1 for r in self.case_requests if r["verb"] == "submit" and r["key"] == key)


def observe_practice(targets: list[dict], *, timeout: float = 30.0) -> list[PracticeSnapshot]:
    """Start one fresh Python process that reads every target and reports what it found."""
    env = dict(os.environ)
    package_root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    env["PYTHONPATH"] = package_root + os.pathsep + env.get("PYTHONPATH", "")
    done = subprocess.run([sys.executable, "-B", "-m", "lucy_runtime.practice.observer"],
                          input=json.dumps(targets), capture_output=True, text=True, timeout=timeout, env=env)
    if done.returncode != 0:
        raise ObserverFailed(f"the observer process failed: {done.stderr.strip()[-2000:]}")
    return [PracticeSnapshot(**item) for item in json.loads(done.stdout)]
