"""How a supervised child ended, as the parent saw it: its status, its value or the learner's
exception, what it printed, and the points it passed."""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum
from typing import Any

from .points import Point


class Status(str, Enum):
    """How a child ended, as the parent saw it."""

    RETURNED = "returned"
    RAISED = "raised"
    CRASHED = "crashed"  # killed by the parent at a planned point: nothing else counts as a crash
    TIMEOUT = "timeout"
    DIED = "died"

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
