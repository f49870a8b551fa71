"""A learner's view: the released notebooks, completed, run in JupyterLab in headless Chromium.

Debian's chromium is used through Playwright's ``executable_path`` (Playwright cannot
download a browser here). ``make test`` installs both; screenshots land in artifacts/.
"""

from __future__ import annotations

import nbformat
import pytest

from lucy_runtime.educator.verify import filled

from .conftest import REPO
from .lab import ARTIFACTS, CHROMIUM, FLAGS, lab_settings, need_chromium, running_lab

pytestmark = [pytest.mark.browser, pytest.mark.slow]


@pytest.fixture(scope="module")
def lab(tmp_path_factory):
    need_chromium()
    folder = tmp_path_factory.mktemp("learner")
    for unit in ("ch07_unit_a", "ch07_unit_b"):
        source = nbformat.read(str(REPO / "source" / unit / f"{unit}.ipynb"), as_version=4)
        release = nbformat.read(str(REPO / "release" / unit / f"{unit}.ipynb"), as_version=4)
        (folder / unit).mkdir()
        nbformat.write(filled(release, source), str(folder / unit / f"{unit}.ipynb"))
    with running_lab(folder, lab_settings(tmp_path_factory.mktemp("lab-settings"))) as running:
        yield running.base, running.token, folder


@pytest.mark.parametrize("unit", ["ch07_unit_a", "ch07_unit_b"])
def test_a_completed_unit_runs_top_to_bottom_in_jupyterlab_and_the_explorer_renders(lab, unit):
    from playwright.sync_api import sync_playwright

    base, token, folder = lab
    ARTIFACTS.mkdir(exist_ok=True)
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, headless=True, args=FLAGS)
        try:
            page = browser.new_page(viewport={"width": 1400, "height": 1000})
            page.goto(f"{base}/lab/workspaces/{unit}/tree/{unit}/{unit}.ipynb?reset&token={token}", timeout=60_000)
            page.wait_for_selector(".jp-Notebook .jp-Cell", timeout=60_000)
            page.wait_for_selector(".jp-Notebook-ExecutionIndicator[data-status='idle']", timeout=60_000)
            page.click("div.lm-MenuBar-itemLabel:text-is('Run')")
            page.click("li.lm-Menu-item:has-text('Run All Cells')")
            # Run All stops at the first error: wait for the last cell's output, or for an error.
            page.wait_for_function(
                """() => [...document.querySelectorAll('.jp-OutputArea-output')].some(o =>
                       o.textContent.includes('hand it in with this notebook')
                       || o.dataset.mimeType === 'application/vnd.jupyter.error'
                       || (o.dataset.mimeType === 'application/vnd.jupyter.stderr' && o.textContent.includes('Traceback')))""",
                timeout=600_000)
            errors = page.locator(".jp-OutputArea-output[data-mime-type='application/vnd.jupyter.error'], "
                                  ".jp-OutputArea-output[data-mime-type='application/vnd.jupyter.stderr']")
            failures = [errors.nth(i).inner_text()[:400] for i in range(errors.count())
                        if "Error" in errors.nth(i).inner_text()]
            assert failures == [], failures
            # JupyterLab renders cells lazily: find each element, scroll to it, then it must be visible.
            admit = page.locator(".widget-button:has-text('Admit')").first
            admit.wait_for(state="attached", timeout=60_000)
            admit.scroll_into_view_if_needed()
            admit.wait_for(state="visible", timeout=30_000)
            diagram = page.locator(".jp-RenderedMermaid img, .jp-RenderedMermaid svg").first
            diagram.wait_for(state="attached", timeout=60_000)
            admit.click()  # the widget answers: a message appears under its buttons
            page.wait_for_selector("text=Admission(", timeout=30_000)
            admit.scroll_into_view_if_needed()
            page.screenshot(path=str(ARTIFACTS / f"{unit}-jupyterlab.png"))
        finally:
            browser.close()
    assert (folder / unit / f"{unit}_evidence.json").exists(), "the notebook saved no evidence"
