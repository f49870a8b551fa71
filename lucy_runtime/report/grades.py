"""What the class report reads from nbgrader's gradebook: each submission's grades, summed in one query.

``read_gradebook(url, assignments)`` asks the gradebook (SQLite or PostgreSQL, through
nbgrader's API) for every grade of every submission at once and sums them per learner and
assignment: the score and its maximum, the autograded part, the written answers still
waiting for a manual score, the acceptance rows graded and failed, the late penalty. It
also returns every student id and the roster (ids, names and emails) the anonymized
edition scrubs. ``report.py`` builds the report from them.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field

from ..notebooks.cells import row_of


@dataclass(frozen=True)
class SubmissionGrades:
    """The gradebook's grades of one submission."""

    score: float = 0.0
    max_score: float = 0.0
    auto_score: float = 0.0
    auto_max: float = 0.0
    to_grade: int = 0
    failing: tuple[str, ...] = ()
    rows: tuple[str, ...] = ()
    stamp: str = ""
    late_penalty: float = 0.0


@dataclass
class _Tally:
    """One submission's grades, summed cell by cell as the gradebook's query yields them."""

    stamp: str
    score: float = 0.0
    max_score: float = 0.0
    auto_score: float = 0.0
    auto_max: float = 0.0
    to_grade: int = 0
    failing: list[str] = field(default_factory=list)
    rows: list[str] = field(default_factory=list)
    late_penalty: float = 0.0

    def add(self, cell: str, cell_type: str, most: float | None, auto: float | None, score: float | None,
            manual: bool) -> None:
        self.score += score or 0.0
        self.max_score += most or 0.0
        if cell_type == "code":
            self.auto_score += auto or 0.0
            self.auto_max += most or 0.0
            if cell.startswith("row_"):
                self.rows.append(row_of(cell))
                if (auto or 0.0) < (most or 0.0):
                    self.failing.append(row_of(cell))
        elif manual:
            self.to_grade += 1

    def grades(self) -> SubmissionGrades:
        return SubmissionGrades(self.score, self.max_score, self.auto_score, self.auto_max, self.to_grade,
                       tuple(sorted(self.failing)), tuple(self.rows), self.stamp, self.late_penalty)


def _every_grade(gb, assignments: tuple[str, ...] | None):
    """(assignment, student, submitted at, cell, cell type, max score, auto score, score, needs manual grade) of
    every grade in the gradebook ``gb``, of ``assignments`` only when given."""
    from nbgrader.api import (Assignment, Grade, GradeCell,  # noqa: PLC0415 - seconds to import
                              SubmittedAssignment, SubmittedNotebook)

    query = (gb.db.query(Assignment.name, SubmittedAssignment.student_id, SubmittedAssignment.timestamp,
                         GradeCell.name, GradeCell.cell_type, GradeCell.max_score, Grade.auto_score, Grade.score,
                         Grade.needs_manual_grade)
             .select_from(Grade)
             .join(SubmittedNotebook, Grade.notebook_id == SubmittedNotebook.id)
             .join(SubmittedAssignment, SubmittedNotebook.assignment_id == SubmittedAssignment.id)
             .join(Assignment, SubmittedAssignment.assignment_id == Assignment.id)
             .join(GradeCell, Grade.cell_id == GradeCell.id))
    return query if assignments is None else query.filter(Assignment.name.in_(assignments))


def _late_penalties(gb):
    """(assignment, student, late penalty) of every submitted notebook in the gradebook ``gb``."""
    from nbgrader.api import Assignment, SubmittedAssignment, SubmittedNotebook  # noqa: PLC0415 - seconds to import

    return (gb.db.query(Assignment.name, SubmittedAssignment.student_id, SubmittedNotebook.late_submission_penalty)
            .select_from(SubmittedNotebook)
            .join(SubmittedAssignment, SubmittedNotebook.assignment_id == SubmittedAssignment.id)
            .join(Assignment, SubmittedAssignment.assignment_id == Assignment.id))


def read_gradebook(url: str, assignments: tuple[str, ...] | None) -> tuple[dict[str, dict[str, SubmissionGrades]], list[str],
                                                                        tuple[str, ...]]:
    """assignment → student → grades, in one query; every student id; every id, name and email."""
    from nbgrader.api import Gradebook  # noqa: PLC0415 - seconds to import

    found: dict[str, dict[str, _Tally]] = defaultdict(dict)
    with Gradebook(url) as gb:
        for name, student, stamp, *cell in _every_grade(gb, assignments):
            found[name].setdefault(student, _Tally(str(stamp))).add(*cell)
        for name, student, penalty in _late_penalties(gb):
            if name in found and student in found[name] and penalty:
                found[name][student].late_penalty += float(penalty)
        students = [s.id for s in gb.students]
        roster = tuple(sorted({str(v) for s in gb.students for v in (s.id, s.first_name, s.last_name, s.email) if v}))
        every = [a.name for a in gb.assignments]
    grades = {a: {s: tally.grades() for s, tally in found[a].items()} for a in (assignments or every) if a in found}
    return grades, students, roster
