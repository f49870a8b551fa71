"""Known-bad learner implementations, each a small edit of one learner cell.

An edit is applied to the reference cell taken from ``source/``, so a case is never a
second copy of the solution: it names the lines it changes. ``expected`` lists the
rows that must catch the case; ``lucy verify-grader`` proves they do. What a case is
lives in ``case_edits``; Unit A's cases in ``cases_unit_a``, Unit B's in ``cases_unit_b``.
"""

from __future__ import annotations

from ..errors import UnknownCase
from .case_edits import SESSION_LOOKUP, Case, Edit
from .cases_unit_a import UNIT_A_CASES
from .cases_unit_b import UNIT_B_CASES

__all__ = ["CASES", "Case", "Edit", "SESSION_LOOKUP", "by_name"]

CASES: tuple[Case, ...] = UNIT_A_CASES + UNIT_B_CASES


def by_name(name: str) -> Case:
    for case in CASES:
        if case.name == name:
            return case
    raise UnknownCase(f"no educator case {name!r}; see `lucy cases`")
