"""Autograding again keeps what the educator already graded by hand, while what they graded is unchanged.

nbgrader's ``SaveAutoGrades._add_score`` sets ``needs_manual_grade = True`` on every grade
that holds a manual score, each time a submission is autograded: after ``autograde
--force`` (a regrade, a late resubmission collected with ``collect --update``) every
written answer already scored in formgrader is flagged "needs manual grade" again, even
when its text did not change. The score itself is kept (nbgrader never overwrites
``manual_score``); only the flag comes back.

:class:`SaveAutoGradesKeepingManual` is ``SaveAutoGrades`` with that one decision changed.
Each time it grades a submission it records, per grade cell, a fingerprint of what the
grade was given for: a written answer's own text; for a code cell, its source and every
learner cell's source (what its verdict depends on). The record is
``.lucy/answers/<assignment>/<student>/<notebook>.json`` in the course folder (outside
``autograded/``, which nbgrader empties before it grades again). The next time, a grade
that holds a manual score keeps the flag it had when that fingerprint is unchanged; when
the text changed, or nothing was recorded, the grade is flagged as nbgrader flags it.
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
from pathlib import Path

from nbgrader import utils
from nbgrader.coursedir import CourseDirectory
from nbgrader.preprocessors import SaveAutoGrades

ANSWERS = Path(".lucy") / "answers"
"""Where, in the course folder, the fingerprints of what each grade was given for are kept."""


def answers_record(root: Path, assignment: str, student: str, notebook: str) -> Path:
    return Path(root) / ANSWERS / assignment / student / f"{notebook}.json"


def _digest(*texts: str) -> str:
    h = hashlib.sha256()
    for text in texts:
        h.update(text.encode("utf-8"))
        h.update(b"\0")
    return h.hexdigest()


def fingerprints(nb) -> dict[str, str]:
    """grade id → a fingerprint of what that grade depends on, for every grade cell of ``nb``."""
    learner = [c.source for c in nb.cells if utils.is_solution(c) and c.cell_type == "code"]
    found = {}
    for cell in nb.cells:
        if not utils.is_grade(cell):
            continue
        name = cell.metadata["nbgrader"]["grade_id"]
        found[name] = _digest(cell.source) if cell.cell_type != "code" else _digest(cell.source, *learner)
    return found


def _write(path: Path, data: dict) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    handle, tmp = tempfile.mkstemp(dir=path.parent, prefix=".answers-", suffix=".json")
    with os.fdopen(handle, "w", encoding="utf-8") as out:
        json.dump(data, out, indent=1, sort_keys=True)
    os.replace(tmp, path)


def _read(path: Path) -> dict[str, str]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return {str(k): str(v) for k, v in data.items()} if isinstance(data, dict) else {}


class SaveAutoGradesKeepingManual(SaveAutoGrades):
    """nbgrader's ``SaveAutoGrades``; a manual grade given for an unchanged answer stays graded."""

    def preprocess(self, nb, resources):
        root = CourseDirectory(parent=self).root
        self._record = answers_record(root, resources["nbgrader"]["assignment"], resources["nbgrader"]["student"],
                                      resources["nbgrader"]["notebook"])
        self._graded_for = _read(self._record)
        self._now = fingerprints(nb)
        nb, resources = super().preprocess(nb, resources)
        _write(self._record, self._now)
        return nb, resources

    def _add_score(self, cell, resources) -> None:
        name = cell.metadata["nbgrader"]["grade_id"]
        grade = self.gradebook.find_grade(name, self.notebook_id, self.assignment_id, self.student_id)
        was_flagged = grade.needs_manual_grade
        super()._add_score(cell, resources)
        unchanged = name in self._graded_for and self._graded_for[name] == self._now.get(name)
        if grade.manual_score is not None and unchanged:
            grade.needs_manual_grade = was_flagged
            self.gradebook.db.commit()
