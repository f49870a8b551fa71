"""The words of a supervised run: a point a child reports, and the parent's answer there.

A child stops at each point it passes (a BEGIN, a write, a COMMIT through the store, a send,
a service acceptance), reports it as a ``Point`` and waits; the parent answers with an
``Action``: go on, fail the statement, hold it (a race), or kill the child.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum


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
