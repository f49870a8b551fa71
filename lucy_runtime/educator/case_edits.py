"""What an educator case is: a named set of edits of learner cells, and the edits several cases share.

``Edit`` replaces one text of a reference cell taken from ``source/`` (or its whole solution region),
so a case is never a second copy of the solution; ``Case`` names the edits, what they break, the rows
that must catch them and what the case teaches. Unit A's cases (``cases_unit_a``), Unit B's
(``cases_unit_b``) and the practice notebook's (``practice_cases``) are all built from these.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..errors import EditDoesNotApply
from ..notebooks.cells import solution_region


@dataclass(frozen=True)
class Edit:
    """Replace ``old`` with ``new`` in one cell; ``old`` must occur exactly once.

    With ``old=None`` the whole solution region is replaced by ``new``.
    """

    cell: str
    old: str | None
    new: str

    def apply(self, source: str) -> str:
        if self.old is None:
            region = solution_region(source)
            if not region:
                raise EditDoesNotApply(f"cell {self.cell!r} has no solution region to replace")
            indent = region[: len(region) - len(region.lstrip())]
            body = "\n".join(indent + line if line else line for line in self.new.splitlines())
            return source.replace(region, body, 1)
        count = source.count(self.old)
        if count != 1:
            raise EditDoesNotApply(f"edit of cell {self.cell!r}: expected the text once, found it {count} times: {self.old[:60]!r}")
        return source.replace(self.old, self.new, 1)


@dataclass(frozen=True)
class Case:
    name: str
    unit: str
    edits: tuple[Edit, ...]
    breaks: str
    expected: tuple[str, ...]
    teaching: str


def _case(name, unit, edits, breaks, expected, teaching) -> Case:
    return Case(name, unit, tuple(edits), breaks, tuple(expected), teaching)


SESSION_LOOKUP = "        row = tx.execute(\"SELECT session_id FROM work WHERE work_id = ?\", (work_id,)).fetchone()\n"
"""Where the reference finish reads the session after its fence: a case that commits first opens a second transaction here."""

FENCE = ("\"WHERE work_id = ? AND state = 'running' AND worker_id = ? AND generation = ?\",\n"
         "            (work_id, assignment.worker_id, generation),")
"""The reference finish's guard: the state it leaves, and the claim that must be current."""


def _finish_guarded_by(where: str, params: str) -> Edit:
    """The reference finish with another WHERE clause on its move to done."""
    return Edit("finish", FENCE, f"\"{where}\",\n            {params},")


def _split_finish() -> Edit:
    """Commit the move to done before the report is written: Unit A's finish in two transactions."""
    return Edit("finish", SESSION_LOOKUP, "    with queue.store.transaction() as tx:\n" + SESSION_LOOKUP)

