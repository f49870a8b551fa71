"""The educator's browser runs nothing a learner hands in: a hostile submission, graded by real
nbgrader, opened in formgrader's manual grading page and in its feedback page in headless
Chromium, runs none of its script and keeps the score autograde gave it; an honest one stays
readable and formgrader still saves its manual score.

The hostile submission is the tamper case ``script-in-written-answer`` (the blank release, a
written answer with script in eight forms, outputs with script in four and a widget view) plus a
raw ``text/html`` cell. Every piece of script would mark the page (``top.lucyRan``) and give every cell full
marks through formgrader's own API, as the educator. One nbgrader course for the module.
"""

from __future__ import annotations

import pytest
from nbformat.v4 import new_raw_cell

from lucy_runtime.educator.course import ScratchCourse
from lucy_runtime.educator.tampers import runs_as_the_educator, tamper_by_name
from lucy_runtime.educator.verify import Entry, Kind, filled, handed_in, with_written_answers

from .formgrader import LOADED, browser_page, formgrader_lab, score_written_answer
from .lab import ARTIFACTS

pytestmark = [pytest.mark.nbgrader, pytest.mark.slow, pytest.mark.browser]

UNIT = "ch07_unit_a"
WRITTEN = "explain_worker_crash"
HONEST_WORDS = "nothing claims it again"  # from the reference's written answer (source/)
RAN = "() => window.lucyRan || []"
LINKS = ("a link to click", "a Markdown link to click")


def gradebook(course: ScratchCourse) -> dict[str, dict]:
    """Per student: the submitted notebook's id, its total, and each cell's (auto score, manual score)."""
    from nbgrader.api import Gradebook

    with Gradebook(f"sqlite:///{course.root / 'gradebook.db'}") as gb:
        return {student: {"id": nb.id, "score": nb.score,
                          "cells": {g.name: (g.auto_score, g.manual_score) for g in nb.grades}}
                for student in ("mallory", "ada") for nb in [gb.find_submission_notebook(UNIT, UNIT, student)]}


@pytest.fixture(scope="module")
def course(tmp_path_factory):
    """Two submissions of Unit A, autograded by nbgrader, with their feedback generated."""
    course = ScratchCourse(tmp_path_factory.mktemp("browser-safety") / "course", units=(UNIT,))
    tamper = tamper_by_name("script-in-written-answer")
    hostile = handed_in(Entry(tamper.name, Kind.TAMPER, UNIT, honest=tamper.honest), tamper.as_case(None),
                        course.release, course.source)[UNIT]
    hostile.cells.append(new_raw_cell(f"<script>{runs_as_the_educator('raw-cell')}</script>",
                                      metadata={"raw_mimetype": "text/html"}))
    script = f"<script>{runs_as_the_educator('handed-in-file')}</script>"
    course.submit("mallory", UNIT, hostile, extra_files={
        "page.html": f"<html><body>{script}</body></html>",
        "picture.svg": f'<svg xmlns="http://www.w3.org/2000/svg">{script}</svg>'})
    course.submit("ada", UNIT, with_written_answers(filled(course.release(UNIT), course.source(UNIT)), course.source(UNIT)))
    course.autograde(UNIT)
    course.feedback(UNIT)
    return course


def run_what_it_offers(page) -> list[str]:
    """Click each link the hostile answer offers, let every timer fire, and return what ran, in any frame."""
    for text in LINKS:
        link = page.get_by_text(text, exact=True)
        if link.count():
            link.first.click()
    page.wait_for_timeout(3000)
    return sorted({kind for frame in page.frames for kind in frame.evaluate(RAN)})


@pytest.fixture(scope="module")
def opened(course):
    """The hostile submission opened in formgrader and in its feedback page, then the honest one scored
    in formgrader as the README says; what ran and what was sent, and the gradebook before and after."""
    before, sent, ran, text = gradebook(course), [], {}, {}
    with formgrader_lab(course.root, course.root.parent / "lab") as lab, browser_page() as page:
        page.goto(f"{lab.base}/lab?reset&token={lab.token}")  # logs in: formgrader's API asks for the cookie
        page.on("request", lambda r: sent.append(f"{r.method} {r.url}") if r.method != "GET" else None)
        page.goto(f"{lab.base}/formgrader/submissions/{before['mallory']['id']}/?token={lab.token}")
        page.locator(f"input.score#{WRITTEN}").wait_for()
        page.locator("body").evaluate(LOADED)
        text["hostile"] = page.locator("body").inner_text()
        ran["formgrader"] = run_what_it_offers(page)
        ARTIFACTS.mkdir(exist_ok=True)
        page.screenshot(path=str(ARTIFACTS / "browser-safety-formgrader-mallory.png"), full_page=True)

        files = []  # formgrader serves the files handed in beside the notebook, in the educator's origin
        for name in ("page.html", "page.html.txt", "picture.svg", "picture.svg.txt"):
            page.goto(f"{lab.base}/formgrader/submissions/{before['mallory']['id']}/{name}?token={lab.token}")
            page.wait_for_timeout(500)
            files += [kind for frame in page.frames for kind in frame.evaluate(RAN)]
        ran["handed-in files"] = sorted(set(files))

        page.goto((course.root / "feedback" / "mallory" / UNIT / f"{UNIT}.html").as_uri())
        ran["feedback"] = run_what_it_offers(page)
        sent_by_hostile = list(sent)

        page.goto(f"{lab.base}/formgrader/submissions/{before['ada']['id']}/?token={lab.token}")
        page.locator(f"input.score#{WRITTEN}").wait_for()
        text["honest"] = page.locator("body").inner_text()
        page.goto((course.root / "feedback" / "ada" / UNIT / f"{UNIT}.html").as_uri())
        text["honest feedback"] = page.locator("body").inner_text()
        score_written_answer(page, lab, assignment=UNIT, notebook=UNIT, submission_id=before["ada"]["id"],
                             grade_id=WRITTEN, points=2, max_points=3, comment="Right state, no replay; say why.",
                             screenshot="browser-safety-formgrader-ada.png")
    return {"before": before, "after": gradebook(course), "ran": ran, "sent": sent_by_hostile, "text": text}


def test_the_hostile_submission_reached_formgrader_with_its_script_in_the_handed_in_notebook(course):
    handed_in_text = (course.root / "submitted" / "mallory" / UNIT / f"{UNIT}.ipynb").read_text()
    for form in ("<script>", "onerror=", "<svg onload=", "<iframe srcdoc=", "javascript:", "display(Javascript("):
        assert form in handed_in_text, form


def test_nothing_a_hostile_submission_carries_runs_in_formgrader_or_in_its_feedback(opened):
    assert opened["ran"] == {"formgrader": [], "handed-in files": [], "feedback": []}
    assert opened["sent"] == [], "opening a submission sends nothing"


def test_opening_a_hostile_submission_leaves_the_score_autograde_gave_it(opened):
    assert opened["after"]["mallory"] == opened["before"]["mallory"]
    assert opened["after"]["mallory"]["score"] == 0


def test_a_page_handed_in_beside_the_notebook_is_kept_as_plain_text(course):
    folder = course.root / "autograded" / "mallory" / UNIT
    assert sorted(p.name for p in folder.iterdir() if p.suffix == ".txt") == ["page.html.txt", "picture.svg.txt"]
    assert not (folder / "page.html").exists() and "<script>" in (folder / "page.html.txt").read_text()


def test_the_hostile_written_answer_is_shown_as_text_the_educator_can_judge(opened):
    assert "nothing replays it" in opened["text"]["hostile"]
    assert all(link in opened["text"]["hostile"] for link in LINKS)


def test_formgrader_still_saves_a_manual_score_for_an_honest_submission(opened):
    assert opened["before"]["ada"]["cells"][WRITTEN] == (None, None), "waiting for a person"
    assert opened["after"]["ada"]["cells"][WRITTEN] == (None, 2)
    assert opened["after"]["ada"]["score"] == opened["before"]["ada"]["score"] + 2


def test_an_honest_written_answer_stays_readable_in_formgrader_and_in_its_feedback(opened):
    assert HONEST_WORDS in opened["text"]["honest"]
    assert HONEST_WORDS in opened["text"]["honest feedback"]
