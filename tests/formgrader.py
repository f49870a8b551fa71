"""Score a written answer in nbgrader's formgrader, the way the README tells an educator to.

Shared by the browser tests. Starts from JupyterLab's menu: Nbgrader ▸ Formgrader, Manual
Grading, the assignment, its notebook, the submission's link; there it types a score and a
comment, waits until formgrader has saved each, and finds the score in the list again.
"""

from __future__ import annotations

from contextlib import contextmanager
from pathlib import Path

from .lab import ARTIFACTS, CHROMIUM, FLAGS, lab_settings, need_chromium, running_lab

FORMGRADER = ("--ServerApp.jpserver_extensions=nbgrader.server_extensions.formgrader=True",
              "--ServerApp.jpserver_extensions=lucy_runtime.grading.page_headers=True")  # as `make formgrader`

# Formgrader's scripts fetch the saved grades and comments, then bind each box to its record and
# fill in what is saved: wait for that, or it would overwrite what is typed. (Its keyboard
# shortcuts need MathJax from cdnjs; offline they stay off, and a box still saves when it changes.)
LOADED = """() => new Promise((ok, fail) => { const t = Date.now(); (function poll() {
     const f = window.formgrader;
     if (f && f.grades && f.grades.loaded && f.comments && f.comments.loaded
         && f.grade_uis.length && f.comment_uis.length) ok();
     else if (Date.now() - t > 30000) fail(new Error('formgrader loaded no grades'));
     else setTimeout(poll, 100); })(); })"""


@contextmanager
def formgrader_lab(course_root: Path, scratch: Path):
    """JupyterLab on 127.0.0.1 in the course folder, with formgrader on (nbgrader's install
    enables it for the environment; the option says so here too)."""
    need_chromium()
    (scratch / "settings").mkdir(parents=True)
    with running_lab(course_root, lab_settings(scratch / "settings"), log=scratch / "jupyter-lab.log",
                     extra_args=FORMGRADER) as lab:
        yield lab


@contextmanager
def browser_page():
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, headless=True, args=FLAGS)
        page = browser.new_page(viewport={"width": 1400, "height": 1000})
        page.set_default_timeout(60_000)
        try:
            yield page
        finally:
            browser.close()


def score_written_answer(page, lab, *, assignment: str, notebook: str, submission_id: str, grade_id: str,
                         points: float, max_points: float, comment: str, screenshot: str) -> None:
    """Enter ``points`` and ``comment`` for the written answer ``grade_id`` of one submission
    (``submission_id``: the gradebook's id of the submitted notebook, the link formgrader shows)."""
    ARTIFACTS.mkdir(exist_ok=True)
    try:
        page.goto(f"{lab.base}/lab?reset&token={lab.token}")
        page.click("div.lm-MenuBar-itemLabel:text-is('Nbgrader')")
        page.click("li.lm-Menu-item:has(.lm-Menu-itemLabel:text-is('Formgrader'))")
        frame = page.frame_locator("#formgrader iframe")
        frame.locator("a:text-is('Manual Grading')").click()
        # Each link is waited for by where it leads, so no click lands on the page being left.
        frame.locator(f"table a[href$='/formgrader/gradebook/{assignment}']").click()
        frame.locator(f"table a[href$='/formgrader/gradebook/{assignment}/{notebook}']").click()
        link = f"a[href$='/formgrader/submissions/{submission_id}']"
        frame.locator(f"table {link}:text-matches('^Submission #')").click()
        frame.locator("li.live-notebook").wait_for()

        score = frame.locator(f"input.score#{grade_id}")
        remark = frame.locator(f"textarea.comment#{grade_id}-comment")
        score.wait_for()
        remark.wait_for()
        frame.locator("body").evaluate(LOADED)
        remark.scroll_into_view_if_needed()
        # Formgrader saves a field when it changes (on leaving it), through its REST API.
        with page.expect_response(lambda r: "/formgrader/api/grade/" in r.url and r.request.method == "PUT"
                                  and r.ok) as saved_score:
            score.fill(f"{points:g}")
            score.blur()
        assert saved_score.value.json()["manual_score"] == points
        with page.expect_response(lambda r: "/formgrader/api/comment/" in r.url and r.request.method == "PUT"
                                  and r.ok) as saved_comment:
            remark.fill(comment)
            remark.blur()
        assert saved_comment.value.json()["manual_comment"] == comment
        page.screenshot(path=str(ARTIFACTS / screenshot))

        # Back in the list: the written score is there for the next educator to see.
        frame.locator(f".breadcrumb a[href$='/formgrader/gradebook/{assignment}/{notebook}']").click()
        row = frame.locator("table tbody tr", has=frame.locator(link))
        row.locator("td").nth(4).filter(has_text=f"{points:g} / {max_points:g}").wait_for()
    except Exception:
        page.screenshot(path=str(ARTIFACTS / f"failure-{screenshot}"))
        print(f"formgrader: {grade_id} of submission {submission_id} was not scored\n"
              f"frames: {[f.url for f in page.frames]}\nJupyterLab log:\n{lab.log_tail()}")
        raise
