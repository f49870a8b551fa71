"""How a call ended when the row requires it to fail with an error.

A row that requires an error must not count the harness's own ``ContractBroken``
(raised when a learner function returns a value the contract does not name) as the
learner's error: a ``finish`` that catches everything and returns ``None`` has raised
nothing. ``attempt`` runs in the child and tells the two apart.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum
from typing import Any, Callable

from .harness import ContractBroken, ReturnedNothing


class Ending(Enum):
    RAISED = "raised"  # the learner's own exception left the function
    RETURNED = "returned"  # the contract value came back, as if nothing were wrong
    SWALLOWED = "swallowed"  # a value outside the contract came back (most often None from an `except`)


@dataclass(frozen=True)
class Attempt:
    ending: Ending
    detail: str  # the error's type name, or what was returned instead

    @classmethod
    def of(cls, value: Any) -> "Attempt":
        """An Attempt back from the child, where it travelled as ``{"ending": …, "detail": …}``."""
        if isinstance(value, Attempt):
            return value
        return cls(Ending(value["ending"]), str(value["detail"]))

    @property
    def raised(self) -> bool:
        return self.ending is Ending.RAISED

    def told(self, call: str) -> str:
        """``call`` ("finish on pending work") and how it ended, in words."""
        if self.ending is Ending.RAISED:
            return f"{call} raised {self.detail}"
        if self.ending is Ending.SWALLOWED:
            return f"{call} returned {self.detail} instead of raising an error"
        return f"{call} returned as if it had succeeded"


SWALLOWED_HINT = ("An `except` that returns instead of re-raising hides the failure from the caller: let the "
                  "error propagate (add `raise` at the end of the `except` block, or drop the `try`), or raise "
                  "one of your own.")


def attempt(call: Callable[[], Any]) -> Attempt:
    """Run ``call`` (a ``Ctx`` wrapper around a learner function) and say how it ended. Runs in the child."""
    try:
        call()
    except ContractBroken as broken:
        shown = "None" if isinstance(broken, ReturnedNothing) else "a value the contract does not name"
        return Attempt(Ending.SWALLOWED, shown)
    except Exception as error:  # any exception of the learner's own will do
        return Attempt(Ending.RAISED, type(error).__name__)
    return Attempt(Ending.RETURNED, "")
