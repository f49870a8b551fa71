"""An educator's view: a written answer scored by hand in formgrader, in JupyterLab in headless Chromium.

A scratch course gets one Unit A submission (the release, with a written answer), nbgrader
autogrades it, and JupyterLab starts in the course folder with nbgrader's formgrader.
The browser goes the way the educator guide says: Nbgrader ▸ Formgrader, Gradebook
(Manual Grading), the assignment, the notebook, the submission; there it enters a score
and a comment for the written answer. The gradebook and `nbgrader export` must have both.
"""

from __future__ import annotations

import pytest

from lucy_runtime.course import ScratchCourse
from lucy_runtime.notebook import nbgrader_meta

from .formgrader import browser_page, formgrader_lab, score_written_answer

pytestmark = [pytest.mark.browser, pytest.mark.slow, pytest.mark.nbgrader]

UNIT = "ch07_unit_a"
STUDENT = "ada"
WRITTEN = "explain_worker_crash"  # Unit A's written answer: 3 points, graded by hand
ANSWER = ("The request stays `running` with the dead worker's id and no report. It is not replayed: "
          "a dead worker looks like a slow one, so a replay could send two answers.")
COMMENT = "Store state and the duplicate risk are right; name a lease and a fence for the third point."


@pytest.fixture(scope="module")
def course(tmp_path_factory):
    course = ScratchCourse(tmp_path_factory.mktemp("course"), units=(UNIT,))
    nb = course.release(UNIT)
    cells = [c for c in nb.cells if nbgrader_meta(c).get("grade_id") == WRITTEN]
    assert len(cells) == 1 and cells[0].cell_type == "markdown", "Unit A has one written answer"
    assert float(nbgrader_meta(cells[0])["points"]) == 3
    cells[0].source = ANSWER
    course.submit(STUDENT, UNIT, nb)
    course.autograde(UNIT, STUDENT)
    return course


@pytest.fixture(scope="module")
def formgrader(course, tmp_path_factory):
    with formgrader_lab(course.root, tmp_path_factory.mktemp("lab")) as lab:
        yield lab


def submission_id(course) -> str:
    from nbgrader.api import Gradebook

    with Gradebook(f"sqlite:///{course.root / 'gradebook.db'}") as gb:
        return gb.find_submission_notebook(UNIT, UNIT, STUDENT).id


def written_grade(course):
    from nbgrader.api import Gradebook

    with Gradebook(f"sqlite:///{course.root / 'gradebook.db'}") as gb:
        submission = gb.find_submission_notebook(UNIT, UNIT, STUDENT)
        grade = next(g for g in submission.grades if g.name == WRITTEN)
        comment = next(c for c in submission.comments if c.name == WRITTEN)
        return (grade.manual_score, grade.needs_manual_grade, grade.max_score, comment.manual_comment,
                submission.score)


def test_a_written_answer_scored_in_formgrader_reaches_the_gradebook_and_the_export(course, formgrader, tmp_path):
    manual, needs_grade, max_score, comment, autograded_total = written_grade(course)
    assert (manual, needs_grade, max_score, comment) == (None, True, 3.0, None), "autograde left it for a human"
    code_score = course.graded(UNIT, STUDENT).score

    with browser_page() as page:
        score_written_answer(page, formgrader, assignment=UNIT, notebook=UNIT, submission_id=submission_id(course),
                             grade_id=WRITTEN, points=2, max_points=3, comment=COMMENT, screenshot="formgrader.png")

    manual, needs_grade, _, comment, total = written_grade(course)
    assert (manual, needs_grade, comment) == (2.0, False, COMMENT)
    assert total == code_score + 2.0

    grades = course.export(tmp_path / "grades.csv")
    row = grades[(grades.student_id == STUDENT) & (grades.assignment == UNIT)]
    assert len(row) == 1
    assert row.raw_score.iloc[0] == row.score.iloc[0] == code_score + 2.0
    assert autograded_total == code_score  # before formgrader, the gradebook had only the autograded points

    feedback = course.feedback(UNIT)
    assert len(feedback) == 1
    html = feedback[0].read_text(encoding="utf-8")
    assert "Written response</a> (Score: 2.0 / 3.0)" in html and COMMENT in html
