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
from lucy_runtime.cells import nbgrader_meta

from .lab import ARTIFACTS, CHROMIUM, FLAGS, lab_settings, need_chromium, running_lab

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
    need_chromium()
    settings = lab_settings(tmp_path_factory.mktemp("lab-settings"))
    log = tmp_path_factory.mktemp("lab-log") / "jupyter-lab.log"
    # nbgrader's install enables formgrader for the environment; say so here too, so the
    # test does not depend on that file (the option adds to the configured extensions).
    with running_lab(course.root, settings, log=log,
                     extra_args=("--ServerApp.jpserver_extensions=nbgrader.server_extensions.formgrader=True",)) as lab:
        yield lab


def written_grade(course):
    from nbgrader.api import Gradebook

    with Gradebook(f"sqlite:///{course.root / 'gradebook.db'}") as gb:
        submission = gb.find_submission_notebook(UNIT, UNIT, STUDENT)
        grade = next(g for g in submission.grades if g.name == WRITTEN)
        comment = next(c for c in submission.comments if c.name == WRITTEN)
        return (grade.manual_score, grade.needs_manual_grade, grade.max_score, comment.manual_comment,
                submission.score)


def test_a_written_answer_scored_in_formgrader_reaches_the_gradebook_and_the_export(course, formgrader, tmp_path):
    from playwright.sync_api import sync_playwright

    manual, needs_grade, max_score, comment, autograded_total = written_grade(course)
    assert (manual, needs_grade, max_score, comment) == (None, True, 3.0, None), "autograde left it for a human"
    code_score = course.graded(UNIT, STUDENT).score

    lab = formgrader
    ARTIFACTS.mkdir(exist_ok=True)
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, headless=True, args=FLAGS)
        page = browser.new_page(viewport={"width": 1400, "height": 1000})
        page.set_default_timeout(60_000)
        try:
            page.goto(f"{lab.base}/lab?reset&token={lab.token}")
            # JupyterLab's menu: Nbgrader ▸ Formgrader opens formgrader in a tab of its own.
            page.click("div.lm-MenuBar-itemLabel:text-is('Nbgrader')")
            page.click("li.lm-Menu-item:has(.lm-Menu-itemLabel:text-is('Formgrader'))")
            frame = page.frame_locator("#formgrader iframe")
            frame.locator("a:text-is('Manual Grading')").click()
            # Each link is waited for by where it leads, so no click lands on the page being left.
            frame.locator(f"table a[href$='/formgrader/gradebook/{UNIT}']").click()  # the assignment
            frame.locator(f"table a[href$='/formgrader/gradebook/{UNIT}/{UNIT}']").click()  # its notebook
            frame.locator("a:text-is('Submission #1')").click()
            frame.locator("li.live-notebook").wait_for()

            # The submission's manual grading page: a score and a comment box per written answer.
            score = frame.locator(f"input.score#{WRITTEN}")
            remark = frame.locator(f"textarea.comment#{WRITTEN}-comment")
            score.wait_for()
            remark.wait_for()
            # Formgrader's scripts fetch the saved grades and comments (none yet), then bind each
            # box to its record and fill in what is saved: wait for that, or it would overwrite what
            # we type. (Its keyboard shortcuts need MathJax from cdnjs; offline they stay off, and
            # a box still saves when it changes.)
            frame.locator("body").evaluate(
                """() => new Promise((ok, fail) => { const t = Date.now(); (function poll() {
                     const f = window.formgrader;
                     if (f && f.grades && f.grades.loaded && f.comments && f.comments.loaded
                         && f.grade_uis.length && f.comment_uis.length) ok();
                     else if (Date.now() - t > 30000) fail(new Error('formgrader loaded no grades'));
                     else setTimeout(poll, 100); })(); })""")
            remark.scroll_into_view_if_needed()
            # Formgrader saves a field when it changes (on leaving it), through its REST API.
            with page.expect_response(lambda r: "/formgrader/api/grade/" in r.url and r.request.method == "PUT"
                                      and r.ok) as saved_score:
                score.fill("2")
                score.blur()
            assert saved_score.value.json()["manual_score"] == 2
            with page.expect_response(lambda r: "/formgrader/api/comment/" in r.url and r.request.method == "PUT"
                                      and r.ok) as saved_comment:
                remark.fill(COMMENT)
                remark.blur()
            assert saved_comment.value.json()["manual_comment"] == COMMENT
            page.screenshot(path=str(ARTIFACTS / "formgrader.png"))

            # Back in the list: the written score is there for the next educator to see.
            frame.locator(f".breadcrumb a[href$='/formgrader/gradebook/{UNIT}/{UNIT}']").click()
            written = frame.locator("table tbody tr").first.locator("td").nth(4)
            written.filter(has_text="2 / 3").wait_for()
        except Exception:
            page.screenshot(path=str(ARTIFACTS / "formgrader-failure.png"))
            print("frames:", [f.url for f in page.frames], "\nJupyterLab log:\n" + lab.log_tail())
            raise
        finally:
            browser.close()

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
