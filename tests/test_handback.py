"""After autograding, verify-grader checks what goes back to learners and out to the educator.

A recording stand-in for the scratch course keeps these fast; the real nbgrader run is in
test_grader_nbgrader.py and test_readme_educator.py.
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from lucy_runtime.course.course import GradedSubmission
from lucy_runtime.proof.verify import Entry, Kind, hand_back

UNIT = "ch07_unit_a"


class RecordingCourse:
    """Implements the part of ScratchCourse that hand_back uses, and records the calls."""

    def __init__(self, root: Path, html: str, scores: dict[str, float]):
        self.root, self.units, self.html, self.scores, self.calls = root, (UNIT,), html, scores, []

    def feedback(self, unit: str) -> list[Path]:
        self.calls.append(("generate_feedback", unit))
        files = []
        for student in self.scores:
            path = self.root / "feedback" / student / unit / f"{unit}.html"
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(self.html)
            files.append(path)
        return files

    def export(self, to: Path):
        self.calls.append(("export", str(to)))
        table = pd.DataFrame({"assignment": UNIT, "student_id": list(self.scores), "raw_score": list(self.scores.values())})
        table.to_csv(to, index=False)
        return pd.read_csv(to)


def graded(name: str, score: float) -> Entry:
    return Entry(name, Kind.CASE, UNIT, graded=GradedSubmission(name, UNIT, score, 21.0))


def test_matching_feedback_and_grades_raise_no_problem(tmp_path):
    course = RecordingCourse(tmp_path, "<pre>ready(&quot;finish&quot;)</pre>", {"noop_finish": 11.0})
    handback, problems = hand_back([course], [graded("noop-finish", 11.0)], tmp_path)
    assert problems == [] and handback.feedback_files == 1 and handback.exported_rows == 1
    assert course.calls == [("generate_feedback", UNIT), ("export", str(tmp_path / "grades.csv"))]
    assert pd.read_csv(handback.grades_csv)["raw_score"].tolist() == [11.0]


def test_feedback_that_shows_a_hidden_test_is_a_problem(tmp_path):
    course = RecordingCourse(tmp_path, "<pre>grade(&quot;finish-atomic&quot;)</pre>", {"noop_finish": 11.0})
    _, problems = hand_back([course], [graded("noop-finish", 11.0)], tmp_path)
    assert problems == ["the feedback feedback/noop_finish/ch07_unit_a/ch07_unit_a.html shows a hidden test"]


def test_an_exported_grade_that_differs_from_the_gradebook_is_a_problem(tmp_path):
    course = RecordingCourse(tmp_path, "ok", {"noop_finish": 21.0})
    _, problems = hand_back([course], [graded("noop-finish", 11.0)], tmp_path)
    assert problems == ["the exported grades give noop-finish (ch07_unit_a) 21.0, the gradebook 11"]
