"""Grades out of nbgrader's gradebook in the import format of the course's LMS: Canvas or Moodle.

Two nbgrader export plugins (nbgrader's ``ExportPlugin`` API), run as nbgrader runs any::

    nbgrader db student import roster.csv      # id,first_name,last_name,email,lms_user_id
    nbgrader export --exporter=lucy_runtime.grading.lms_export.CanvasExport --to=canvas-grades.csv
    nbgrader export --exporter=lucy_runtime.grading.lms_export.MoodleExport --to=moodle-grades.csv

Each writes one row per learner and one column per assignment: nbgrader's score of the
submission (autograded rows and the written answers' manual scores) less its late
penalty, as nbgrader's own CSV export counts it; an assignment not handed in scores 0.

* **Canvas** (Grades → Import): the columns of Canvas's gradebook export, ``Student``
  ("Last, First"), ``ID`` (the Canvas user id: the roster's ``lms_user_id``), ``SIS User
  ID``, ``SIS Login ID`` (the nbgrader id, the learner's login), ``Section``, then one
  column per assignment, and a ``Points Possible`` row under the header.
* **Moodle** (Grades → Import → CSV file): ``First name``, ``Last name``, ``ID number``
  (the roster's ``lms_user_id``), ``Email address``, then one column per assignment;
  at import, map "Email address" to the user field *email* (or "ID number" to
  *idnumber*) and each assignment column to its grade item.

A learner the roster does not know (no name, email or LMS id: nbgrader made the record
when it graded them) cannot be matched by the LMS: the export names them in its log,
leaves them out, and still writes everyone else. So does a written answer still waiting
for a manual grade: the learner is written, with the score so far, and named.
"""

from __future__ import annotations

import csv
import os
import tempfile
from dataclasses import dataclass
from typing import Callable

from nbgrader.api import Gradebook, MissingEntry
from nbgrader.plugins import ExportPlugin


@dataclass(frozen=True)
class Learner:
    id: str
    first_name: str
    last_name: str
    email: str
    lms_user_id: str

    @property
    def on_roster(self) -> bool:
        return any((self.first_name, self.last_name, self.email, self.lms_user_id))


@dataclass(frozen=True)
class Table:
    assignments: tuple[tuple[str, float], ...]  # (name, points possible)
    learners: tuple[Learner, ...]  # on the roster only
    scores: dict[str, dict[str, float]]  # student → assignment → score
    off_roster: tuple[str, ...]
    waiting: tuple[tuple[str, str], ...]  # (student, assignment) with a written answer not graded yet


def read_table(gradebook: Gradebook, assignments: list[str], students: list[str]) -> Table:
    chosen = [a for a in gradebook.assignments if not assignments or a.name in assignments]
    learners, off_roster, waiting = [], [], []
    scores: dict[str, dict[str, float]] = {}
    for student in gradebook.students:
        if students and student.id not in students:
            continue
        learner = Learner(student.id, student.first_name or "", student.last_name or "", student.email or "",
                          student.lms_user_id or "")
        if not learner.on_roster:
            off_roster.append(student.id)
            continue
        learners.append(learner)
        for assignment in chosen:
            try:
                sub = gradebook.find_submission(assignment.name, student.id)
            except MissingEntry:
                scores.setdefault(student.id, {})[assignment.name] = 0.0
                continue
            if sub.needs_manual_grade:
                waiting.append((student.id, assignment.name))
            penalty = sub.late_submission_penalty or 0.0
            scores.setdefault(student.id, {})[assignment.name] = max(0.0, float(sub.score) - float(penalty))
    return Table(tuple((a.name, float(a.max_score)) for a in chosen), tuple(learners), scores, tuple(off_roster),
                 tuple(waiting))


def _number(value: float) -> str:
    return f"{value:g}"


def _write(dest: str, rows: list[list[str]]) -> None:
    """All of it or nothing: written beside ``dest``, then renamed."""
    folder = os.path.dirname(os.path.abspath(dest))
    handle, tmp = tempfile.mkstemp(dir=folder, prefix=".export-", suffix=".csv")
    with os.fdopen(handle, "w", newline="", encoding="utf-8") as out:
        csv.writer(out).writerows(rows)
    os.replace(tmp, dest)


CANVAS = ("Student", "ID", "SIS User ID", "SIS Login ID", "Section")
MOODLE = ("First name", "Last name", "ID number", "Email address")


def _in_order(table: Table) -> list[Learner]:
    return sorted(table.learners, key=lambda x: (x.last_name, x.first_name, x.id))


def canvas_rows(table: Table) -> list[list[str]]:
    """Canvas's gradebook import: its export's columns, and a Points Possible row under the header."""
    rows = [[*CANVAS, *(name for name, _ in table.assignments)],
            ["Points Possible", "", "", "", "", *(_number(most) for _, most in table.assignments)]]
    for x in _in_order(table):
        name = ", ".join(n for n in (x.last_name, x.first_name) if n) or x.id
        rows.append([name, x.lms_user_id, "", x.id, "", *(_number(table.scores[x.id][a]) for a, _ in table.assignments)])
    return rows


def moodle_rows(table: Table) -> list[list[str]]:
    """Moodle's grade import: a learner identified by email or ID number, a column per grade item."""
    rows = [[*MOODLE, *(name for name, _ in table.assignments)]]
    for x in _in_order(table):
        rows.append([x.first_name, x.last_name, x.lms_user_id, x.email,
                     *(_number(table.scores[x.id][a]) for a, _ in table.assignments)])
    return rows


class _LmsExport(ExportPlugin):
    default_to = "grades.csv"
    layout: Callable[[Table], list[list[str]]]

    def export(self, gradebook: Gradebook) -> None:
        dest = self.to or self.default_to
        table = read_table(gradebook, [str(a) for a in self.assignment], [str(s) for s in self.student])
        _write(dest, type(self).layout(table))
        self.log.info("Wrote %d learners and %d assignments to %s", len(table.learners), len(table.assignments), dest)
        if table.off_roster:
            self.log.warning("Not on the roster, so left out (the LMS could not match them): %s. Import them with "
                             "`nbgrader db student import roster.csv` (id,first_name,last_name,email,lms_user_id) and "
                             "export again.", ", ".join(table.off_roster))
        for student, assignment in table.waiting:
            self.log.warning("%s: %s has a written answer still to grade: the score written is the score so far",
                             student, assignment)


class CanvasExport(_LmsExport):
    """Canvas's gradebook import CSV."""

    default_to = "canvas-grades.csv"
    layout = staticmethod(canvas_rows)


class MoodleExport(_LmsExport):
    """Moodle's grade import CSV (map Email address, or ID number, to the user at import)."""

    default_to = "moodle-grades.csv"
    layout = staticmethod(moodle_rows)
