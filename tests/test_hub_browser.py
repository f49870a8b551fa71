"""The whole cycle in a browser, on the class's hub: what learners and the grader click.

Two learner accounts log in to JupyterHub (PAM), fetch Unit A from the Assignments tab, fill
one cell, run its check(...) in their own kernel, and submit. The grader logs in, collects
and autogrades from formgrader (the hub's service, as the grader account), scores a written
answer, and generates and releases feedback. Each learner fetches feedback and opens their
own page. Debian's chromium through Playwright; the hub, accounts and course as in
test_hub_class.py (lucy_runtime/hub/).
"""

from __future__ import annotations

import os
import pwd
import re

import nbformat
import pytest

from lucy_runtime.hub.accounts import as_grader, as_learner, set_passwords
from lucy_runtime.hub.scratch import scratch_class
from lucy_runtime.notebooks.notebook import learner_implementation

from .conftest import REPO, need
from .formgrader import LOADED
from .lab import ARTIFACTS, CHROMIUM, FLAGS, need_chromium

pytestmark = [pytest.mark.slow, pytest.mark.browser, pytest.mark.nbgrader]


@pytest.fixture(autouse=True)
def _as_root():
    need("root", os.geteuid() == 0, "a class's accounts are system accounts: run as root (CI runs as root)")


UNIT = "ch07_unit_a"
CELL = "schema"  # the learner's first solution cell; its self-check runs in the code cell after it
WRITTEN = "explain_worker_crash"
FILLS, LEAVES = "lhbra", "lhbrb"  # one fills the cell, one submits the notebook as fetched


def cell_index(grade_id: str) -> int:
    release = nbformat.read(str(REPO / "release" / UNIT / f"{UNIT}.ipynb"), as_version=4)
    return next(i for i, c in enumerate(release.cells) if c.metadata.get("nbgrader", {}).get("grade_id") == grade_id)


def check_index(after: int) -> int:
    release = nbformat.read(str(REPO / "release" / UNIT / f"{UNIT}.ipynb"), as_version=4)
    return next(i for i, c in enumerate(release.cells) if i > after and f'check("{CELL}")' in c.source)


@pytest.fixture(scope="module")
def klass():
    need_chromium()
    with scratch_class(REPO, [FILLS, LEAVES], "lhbr") as (site, client, passwords):
        # The grader logs in with a password too; every cell rendered (JupyterLab 4 renders lazily).
        grader_password = "grader-" + passwords[FILLS]
        set_passwords({site.grader: grader_password})
        for name in (FILLS, LEAVES):
            settings = pwd.getpwnam(name).pw_dir + "/.jupyter/lab/user-settings/@jupyterlab/notebook-extension"
            as_learner(site, name, ["mkdir", "-p", settings])
            as_learner(site, name, ["sh", "-c", f"echo '{{\"windowingMode\": \"none\"}}' > "
                                                f"{settings}/tracker.jupyterlab-settings"])
        done = as_grader(site, ["python", "-m", "nbgrader", "generate_assignment", UNIT, "--force"])
        assert done.returncode == 0, done.stderr[-2000:]
        done = as_grader(site, ["python", "-m", "nbgrader", "release_assignment", UNIT, "--force"])
        assert done.returncode == 0, done.stderr[-2000:]
        passwords = {**passwords, site.grader: grader_password}
        from playwright.sync_api import sync_playwright

        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=CHROMIUM, headless=True, args=FLAGS)
            try:
                yield site, client, passwords, browser
            finally:
                browser.close()


def log_in(browser, site, name: str, password: str):
    context = browser.new_context(viewport={"width": 1400, "height": 1000})
    page = context.new_page()
    page.set_default_timeout(90_000)
    page.goto(f"{site.url}/hub/login")
    page.fill("#username_input", name)
    page.fill("#password_input", password)
    page.click("#login_submit")
    return page


def open_assignments(page):
    page.locator("div.lm-MenuBar-itemLabel:text-is('Nbgrader')").click()
    page.locator('li[data-command="nbgrader:open-assignment-list"]').click()
    page.locator("#released_assignments_list").wait_for()


def rows(page, which: str):
    page.locator(f"#{which}_assignments_list > .list_item").first.wait_for()
    return page.locator(f"#{which}_assignments_list > .list_item")


def learner_hands_in(browser, site, name: str, password: str, fill: str | None) -> None:
    page = log_in(browser, site, name, password)
    try:
        page.wait_for_url(re.compile(rf"/user/{name}/lab"))
        open_assignments(page)
        page.locator("#refresh_assignments_list").click()
        rows(page, "released").first.locator(".item_status button").click()
        fetched = rows(page, "fetched")
        if fill is not None:
            page.goto(f"{site.url}/user/{name}/lab/tree/{UNIT}/{UNIT}.ipynb")
            cells = page.locator(".jp-Notebook .jp-Cell")
            target, check = cell_index(CELL), check_index(cell_index(CELL))
            cells.nth(check).wait_for()
            editor = cells.nth(target).locator(".cm-content")
            editor.click()
            page.keyboard.press("Control+a")
            page.keyboard.insert_text(fill)
            cells.nth(check).locator(".cm-content").click()
            page.keyboard.press("Escape")
            page.locator("div.lm-MenuBar-itemLabel:text-is('Run')").click()
            page.locator("li.lm-Menu-item:has(.lm-Menu-itemLabel:text-is('Run All Above Selected Cell'))").click()
            cells.nth(check).locator(".cm-content").click()
            page.keyboard.press("Shift+Enter")
            verdict = cells.nth(check).locator(".jp-OutputArea-output").filter(
                has_text=re.compile(rf"Self-check '{CELL}': \d+ of \d+ rows hold")).first
            verdict.wait_for(timeout=180_000)
            held = re.search(r"(\d+) of (\d+) rows", verdict.inner_text())
            assert held and held.group(1) == held.group(2) != "0", verdict.inner_text()
            page.keyboard.press("Control+s")
            page.locator(".jp-Notebook").click()
            page.wait_for_timeout(1500)
            open_assignments(page)
            fetched = rows(page, "fetched")
        fetched.first.locator('.item_status button:text("Submit")').click()
        rows(page, "submitted").first.wait_for()
        page.screenshot(path=str(ARTIFACTS / f"hub-submitted-{name}.png"))
    except Exception:
        page.screenshot(path=str(ARTIFACTS / f"failure-hub-{name}.png"))
        raise
    finally:
        page.context.close()


def formgrader_post(page, button_cell: str, api: str) -> dict:
    with page.expect_response(lambda r: api in r.url and r.request.method == "POST") as answered:
        page.locator(f"td.{button_cell} a").first.click()
    reply = answered.value.json()
    assert reply.get("success"), reply
    page.locator(".modal-footer button").first.click()
    return reply


def grader_grades(browser, site, password: str) -> None:
    page = log_in(browser, site, site.grader, password)
    base = f"{site.url}/services/{site.service}/formgrader"
    try:
        page.wait_for_url(re.compile(r"/(lab|tree|hub/home|user/)"))
        page.goto(base)
        page.locator("td.collect a").first.wait_for()
        formgrader_post(page, "collect", f"/formgrader/api/assignment/{UNIT}/collect")
        page.goto(f"{base}/manage_submissions/{UNIT}")
        for i in range(2):
            page.locator("td.autograde a").nth(i).wait_for()
            with page.expect_response(lambda r: "/autograde" in r.url and r.request.method == "POST",
                                      timeout=600_000) as graded:
                page.locator("td.autograde a").nth(i).click()
            assert graded.value.json().get("success"), graded.value.json()
            page.locator(".modal-footer button").first.click()
            page.goto(f"{base}/manage_submissions/{UNIT}")
            page.locator("td.autograde").first.wait_for()
        # The written answer of the learner who filled the cell: one point, saved through formgrader's API.
        page.goto(f"{base}/gradebook/{UNIT}/{UNIT}")
        row = page.locator("table tbody tr", has_text=FILLS)
        row.locator("a:text-matches('^Submission #')").click()
        score = page.locator(f"input.score#{WRITTEN}")
        score.wait_for()
        page.locator("body").evaluate(LOADED)
        score.scroll_into_view_if_needed()
        with page.expect_response(lambda r: "/formgrader/api/grade/" in r.url and r.request.method == "PUT"
                                  and r.ok) as saved:
            score.fill("1")
            score.blur()
        assert saved.value.json()["manual_score"] == 1
        page.goto(base)
        formgrader_post(page, "generate-feedback", f"/formgrader/api/assignment/{UNIT}/generate_feedback")
        formgrader_post(page, "release-feedback", f"/formgrader/api/assignment/{UNIT}/release_feedback")
        page.screenshot(path=str(ARTIFACTS / "hub-formgrader.png"))
    except Exception:
        page.screenshot(path=str(ARTIFACTS / "failure-hub-formgrader.png"))
        raise
    finally:
        page.context.close()


def learner_reads_feedback(browser, site, client, name: str, password: str) -> str:
    page = log_in(browser, site, name, password)
    try:
        page.wait_for_url(re.compile(rf"/user/{name}/lab"))
        open_assignments(page)
        page.locator("#refresh_assignments_list").click()
        with page.expect_response(lambda r: "/assignments/fetch_feedback" in r.url) as fetched:
            rows(page, "submitted").first.locator('button:text("Fetch Feedback")').click()
        assert fetched.value.ok
        stamps = client.read(name, f"{UNIT}/feedback")["content"]
        pages = [item["path"] for stamp in stamps for item in client.read(name, stamp["path"])["content"]
                 if item["name"].endswith(".html")]
        assert len(pages) == 1, pages
        page.goto(f"{site.url}/user/{name}/files/{pages[0]}")
        text = page.locator("body").inner_text()
        page.screenshot(path=str(ARTIFACTS / f"hub-feedback-{name}.png"))
        return text
    except Exception:
        page.screenshot(path=str(ARTIFACTS / f"failure-hub-feedback-{name}.png"))
        raise
    finally:
        page.context.close()


def test_two_learners_and_a_grader_run_the_whole_cycle_in_the_browser(klass):
    site, client, passwords, browser = klass
    ARTIFACTS.mkdir(exist_ok=True)
    solution = dict(learner_implementation(REPO / "source"))[f"{UNIT}:{CELL}"]
    learner_hands_in(browser, site, FILLS, passwords[FILLS], solution)
    learner_hands_in(browser, site, LEAVES, passwords[LEAVES], None)
    grader_grades(browser, site, passwords[site.grader])
    scores = {}
    for name in (FILLS, LEAVES):
        text = learner_reads_feedback(browser, site, client, name, passwords[name])
        found = re.search(r"Score:\s*([\d.]+)\s*/", text)
        assert found, text[:1000]
        scores[name] = float(found.group(1))
    # The one who filled the schema cell has its rows' points and the written point; the other none.
    assert scores[LEAVES] == 0 and scores[FILLS] > 1, scores
