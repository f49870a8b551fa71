"""The educator's browser runs nothing a learner hands in: a hostile submission, graded by real
nbgrader, opened in formgrader's manual grading page and in its feedback page in headless
Chromium, runs none of its script, loads nothing from outside, lays nothing over formgrader's
controls, hides none of its cells, and keeps the score autograde gave it; an honest one (a table,
an image, a formula, the written answer) stays readable and formgrader still saves its manual score.

The hostile submission is the tamper case ``script-in-written-answer`` (the blank release, a
written answer with script in eight forms, outputs with script in four and a widget view) plus a
raw ``text/html`` cell, the written answers of ``markdown-split-after-cleaning`` and
``fake-formgrader-controls`` as cells of their own (and the split one again as a Markdown output), the
hidden cell of ``hidden-cell``, and files handed in beside the notebook whose types a browser runs
(``.html``, ``.svg``, ``.xhtml``, ``.atom`` from the machine's MIME table, ``.mht``). Every piece of
script would mark the page (``top.lucyRan``) and give every cell full marks through formgrader's own
API, as the educator. The server runs formgrader with ``page_headers`` as ``make formgrader`` does.
One nbgrader course and one formgrader server for the module.
"""

from __future__ import annotations

import mimetypes
import urllib.request

import pytest
from nbformat.v4 import new_code_cell, new_markdown_cell, new_raw_cell

from lucy_runtime.course.course import ScratchCourse
from lucy_runtime.proof.hostile_answers import FAKE_CONTROLS, HIDDEN, SPLIT_AFTER_CLEANING, runs_as_the_educator
from lucy_runtime.proof.tampers import tamper_by_name
from lucy_runtime.proof.verify import Entry, Kind, filled, handed_in, with_written_answers
from lucy_runtime.grading.page_headers import MATHJAX

from .formgrader import LOADED, browser_page, formgrader_lab, score_written_answer
from .lab import ARTIFACTS

pytestmark = [pytest.mark.nbgrader, pytest.mark.slow, pytest.mark.browser]

UNIT = "ch07_unit_a"
WRITTEN = "explain_worker_crash"
HONEST_WORDS = "nothing claims it again"  # from the reference's written answer (source/)
RAN = "() => window.lucyRan || []"
LINKS = ("a link to click", "a Markdown link to click")
PNG = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg=="
HONEST_EXTRA = ("| state | meaning |\n|---|---|\n| running | claimed, not finished |\n\n"
                "The retry waits $2^n$ seconds: $$d = 2^n$$\n\n![the states](attachment:states.png)")
HIDDEN_CODE = "hidden_from_the_educator = 'a cell its metadata would hide'"
SCRIPT = runs_as_the_educator("handed-in-file")
XHTML = f'<html xmlns="http://www.w3.org/1999/xhtml"><body><script>{SCRIPT}</script></body></html>'
FILES = {"page.html": f"<html><body><script>{SCRIPT}</script></body></html>",
         "picture.svg": f'<svg xmlns="http://www.w3.org/2000/svg"><script>{SCRIPT}</script></svg>',
         "page.xhtml": XHTML, "feed.atom": XHTML,
         "page.mht": f"MIME-Version: 1.0\nContent-Type: text/html\n\n<script>{SCRIPT}</script>"}
# Learner content, and formgrader's own controls that nothing may cover.
LEARNER = "#notebook .text_cell_render *, #notebook .output_area *, #notebook .input_area *"
POSITIONED = f"""() => [...document.querySelectorAll('{LEARNER}')]
  .filter(e => !['static', 'relative'].includes(getComputedStyle(e).position)).map(e => e.outerHTML.slice(0, 80))"""
COVERED = """() => [...document.querySelectorAll('nav a, input.score, textarea.comment, button')]
  .filter(e => e.offsetParent !== null).filter(e => { e.scrollIntoView({block: 'center'});
     const r = e.getBoundingClientRect(), hit = document.elementFromPoint(r.x + r.width / 2, r.y + r.height / 2);
     return !(hit === e || e.contains(hit) || hit.contains(e)); }).map(e => e.outerHTML.slice(0, 80))"""
# The second wall: inline script and a javascript: link, put into the page after it loaded, do not run.
SECOND_WALL = """() => { const s = document.createElement('script'); s.textContent = "top.lucyRan=['inline-script']";
  document.body.appendChild(s); const a = document.createElement('a'); a.id = 'wall';
  a.href = "javascript:top.lucyRan=['javascript-url'];void 0"; a.textContent = 'wall'; document.body.appendChild(a); }"""


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
    hostile.cells.append(new_markdown_cell(SPLIT_AFTER_CLEANING))
    hostile.cells.append(new_code_cell(f"from IPython.display import Markdown\nMarkdown({SPLIT_AFTER_CLEANING!r})"))
    hostile.cells.append(new_markdown_cell(FAKE_CONTROLS))
    hostile.cells.append(new_code_cell(HIDDEN_CODE, metadata=dict(HIDDEN)))
    course.submit("mallory", UNIT, hostile, extra_files=FILES)
    honest = with_written_answers(filled(course.release(UNIT), course.source(UNIT)), course.source(UNIT))
    honest.cells.append(new_markdown_cell(HONEST_EXTRA, attachments={"states.png": {"image/png": PNG}}))
    course.submit("ada", UNIT, honest)
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


def open_file(page, url) -> list[str]:
    """Go to a file as the educator would by its link; what ran in any frame (a download runs nothing)."""
    try:
        page.goto(url)
        page.wait_for_timeout(500)
    except Exception as error:  # noqa: BLE001 - Chromium saves an attachment: "Download is starting"
        assert "Download is starting" in str(error), error
    return [kind for frame in page.frames for kind in frame.evaluate(RAN)]


def headers_of(url) -> dict[str, str]:
    with urllib.request.urlopen(url, timeout=10) as response:
        return {name: response.headers.get(name, "") for name in
                ("Content-Security-Policy", "X-Content-Type-Options", "Content-Disposition")}


@pytest.fixture(scope="module")
def opened(course):
    """The hostile submission opened in formgrader and in its feedback page, then the honest one scored
    in formgrader as the README says; what ran and what was sent, and the gradebook before and after."""
    before, sent, ran, text, seen = gradebook(course), [], {}, {}, {}
    outside = []  # every request that leaves the educator's machine but the page's own MathJax (no network here)
    with formgrader_lab(course.root, course.root.parent / "lab") as lab, browser_page() as page:
        page.goto(f"{lab.base}/lab?reset&token={lab.token}")  # logs in: formgrader's API asks for the cookie
        page.on("request", lambda r: sent.append(f"{r.method} {r.url}") if r.method != "GET" else None)
        page.on("request", lambda r: outside.append(r.url) if r.url.startswith(("http", "ftp"))
                and not r.url.startswith((lab.base, MATHJAX)) else None)
        grading = f"{lab.base}/formgrader/submissions/{before['mallory']['id']}/"
        seen["grading page headers"] = headers_of(f"{grading}?token={lab.token}")
        page.goto(f"{grading}?token={lab.token}")
        page.locator(f"input.score#{WRITTEN}").wait_for()
        page.locator("body").evaluate(LOADED)
        text["hostile"] = page.locator("body").inner_text()
        seen["positioned"] = page.evaluate(POSITIONED)
        seen["covered"] = page.evaluate(COVERED)
        ran["formgrader"] = run_what_it_offers(page)
        ARTIFACTS.mkdir(exist_ok=True)
        page.screenshot(path=str(ARTIFACTS / "browser-safety-formgrader-mallory.png"), full_page=True)
        page.evaluate(SECOND_WALL)
        page.locator("#wall").click()
        page.wait_for_timeout(500)
        ran["second wall"] = page.evaluate(RAN)

        files, seen["file headers"] = [], {}  # as formgrader and Jupyter serve them, in the educator's origin
        for name in FILES:
            for url in (f"{grading}{name}", f"{lab.base}/files/autograded/mallory/{UNIT}/{name}",
                        f"{lab.base}/files/feedback/mallory/{UNIT}/{name}"):
                seen["file headers"][url.removeprefix(lab.base)] = headers_of(f"{url}?token={lab.token}")
                files += open_file(page, f"{url}?token={lab.token}")
        ran["handed-in files"] = sorted(set(files))

        page.goto((course.root / "feedback" / "mallory" / UNIT / f"{UNIT}.html").as_uri())
        text["hostile feedback"] = page.locator("body").inner_text()
        seen["positioned in feedback"] = page.evaluate(POSITIONED)
        ran["feedback"] = run_what_it_offers(page)
        sent_by_hostile = list(sent)

        page.goto(f"{lab.base}/formgrader/submissions/{before['ada']['id']}/?token={lab.token}")
        page.locator(f"input.score#{WRITTEN}").wait_for()
        text["honest"] = page.locator("body").inner_text()
        seen["honest images"] = page.evaluate("() => [...document.images].filter(i => i.naturalWidth > 0).length")
        seen["honest tables"] = page.locator("#notebook table").count()
        page.goto((course.root / "feedback" / "ada" / UNIT / f"{UNIT}.html").as_uri())
        text["honest feedback"] = page.locator("body").inner_text()
        seen["honest feedback images"] = page.evaluate(
            "() => [...document.images].filter(i => i.naturalWidth > 0).length")
        score_written_answer(page, lab, assignment=UNIT, notebook=UNIT, submission_id=before["ada"]["id"],
                             grade_id=WRITTEN, points=2, max_points=3, comment="Right state, no replay; say why.",
                             screenshot="browser-safety-formgrader-ada.png")
    return {"before": before, "after": gradebook(course), "ran": ran, "sent": sent_by_hostile, "text": text,
            "seen": seen, "outside": outside}


def test_the_hostile_submission_reached_formgrader_with_its_script_in_the_handed_in_notebook(course):
    handed_in_text = (course.root / "submitted" / "mallory" / UNIT / f"{UNIT}.ipynb").read_text()
    for form in ("<script>", "onerror=", "<svg onload=", "<iframe srcdoc=", "javascript:", "display(Javascript("):
        assert form in handed_in_text, form


def test_nothing_a_hostile_submission_carries_runs_in_formgrader_or_in_its_feedback(opened):
    assert opened["ran"] == {"formgrader": [], "second wall": [], "handed-in files": [], "feedback": []}
    assert opened["sent"] == [], "opening a submission sends nothing"


def test_markdown_that_would_split_after_cleaning_loads_nothing_from_outside(opened):
    assert opened["outside"] == [], "no image from any address, no link followed"
    shown = "![tracker](https://tracker.example/pixel.png)"
    for page in ("hostile", "hostile feedback"):  # the Markdown cell, the output, and the code that made it
        assert opened["text"][page].count(shown) == 3, f"{page}: shown as the code it is"


def test_the_grading_page_forbids_inline_script_and_javascript_links_as_a_second_wall(opened):
    policy = opened["seen"]["grading page headers"]["Content-Security-Policy"]
    scripts = next(part for part in policy.split("; ") if part.startswith("script-src"))
    assert "'unsafe-inline'" not in scripts and "img-src 'self' data:" in policy


def test_a_file_handed_in_is_served_sandboxed_and_as_a_download_whatever_its_type(opened):
    assert mimetypes.guess_type("feed.atom")[0].endswith("+xml"), "a type of the machine's MIME table"
    headers = opened["seen"]["file headers"]
    assert len(headers) == 3 * len(FILES)
    for url, got in headers.items():
        assert got["Content-Security-Policy"].startswith("sandbox;") and "allow-scripts" not in got[
            "Content-Security-Policy"], url
        assert got["X-Content-Type-Options"] == "nosniff" and got["Content-Disposition"] == "attachment", url


def test_learner_markup_lays_nothing_over_formgraders_controls(opened):
    assert opened["seen"]["positioned"] == [] and opened["seen"]["positioned in feedback"] == []
    assert opened["seen"]["covered"] == []
    assert "Full credit saved for every cell." in opened["text"]["hostile"], "shown as the learner's words"


def test_cell_metadata_hides_no_learner_cell_from_the_educator(opened):
    assert "hidden_from_the_educator" in opened["text"]["hostile"]
    assert "hidden_from_the_educator" in opened["text"]["hostile feedback"]


def test_opening_a_hostile_submission_leaves_the_score_autograde_gave_it(opened):
    assert opened["after"]["mallory"] == opened["before"]["mallory"]
    assert opened["after"]["mallory"]["score"] == 0


def test_the_files_handed_in_are_kept_as_they_were_handed_in(course):
    folder = course.root / "autograded" / "mallory" / UNIT
    assert {name: (folder / name).read_text() for name in FILES} == FILES


def test_the_hostile_written_answer_is_shown_as_text_the_educator_can_judge(opened):
    assert "nothing replays it" in opened["text"]["hostile"]
    assert all(link in opened["text"]["hostile"] for link in LINKS)


def test_formgrader_still_saves_a_manual_score_for_an_honest_submission(opened):
    assert opened["before"]["ada"]["cells"][WRITTEN] == (None, None), "waiting for a person"
    assert opened["after"]["ada"]["cells"][WRITTEN] == (None, 2)
    assert opened["after"]["ada"]["score"] == opened["before"]["ada"]["score"] + 2


def test_an_honest_written_answer_stays_readable_in_formgrader_and_in_its_feedback(opened):
    for page in ("honest", "honest feedback"):
        shown = opened["text"][page]
        assert HONEST_WORDS in shown and "claimed, not finished" in shown, page
        assert "$2^n$" in shown and "$$d = 2^n$$" in shown, "formulas stay TeX for MathJax (offline: as text)"
    assert opened["seen"]["honest tables"] >= 1
    assert opened["seen"]["honest images"] >= 1 and opened["seen"]["honest feedback images"] >= 1
