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


ERROR_OUTPUT = """() => [...document.querySelectorAll('.jp-OutputArea-output')].some(o =>
    o.dataset.mimeType === 'application/vnd.jupyter.error'
    || (o.dataset.mimeType === 'application/vnd.jupyter.stderr' && o.textContent.includes('Traceback')))"""
KERNEL = "() => document.querySelector('.jp-Notebook-ExecutionIndicator')?.dataset.status"


def run_all_and_wait(page, evidence, unit: str, *, limit: float = 600.0) -> None:
    """Run All Cells, then wait until the kernel is idle again with the evidence saved or an error shown.

    The end is read from the kernel's state and the file the last cell writes, not from the last
    cell's output: JupyterLab renders cells lazily, and on a loaded machine a click on the menu can
    arrive before the notebook listens. A run that never starts is clicked again, once.
    """
    import time

    for attempt in (1, 2):
        page.click("div.lm-MenuBar-itemLabel:text-is('Run')")
        page.click("li.lm-Menu-item:has-text('Run All Cells')")
        started = time.monotonic()
        while time.monotonic() - started < 60 and page.evaluate(KERNEL) != "busy" and not evidence.exists():
            time.sleep(0.2)
        if page.evaluate(KERNEL) == "busy" or evidence.exists():
            break
    else:
        page.screenshot(path=str(ARTIFACTS / f"{unit}-jupyterlab-not-started.png"))
        pytest.fail("Run All Cells never started the kernel (twice)")
    started, idle_since = time.monotonic(), None
    while time.monotonic() - started < limit:
        if page.evaluate(ERROR_OUTPUT):
            return
        if page.evaluate(KERNEL) == "idle":
            idle_since = idle_since or time.monotonic()
            if time.monotonic() - idle_since > (3 if evidence.exists() else 10):  # idle between cells is brief
                return
        else:
            idle_since = None
        time.sleep(0.5)
    page.screenshot(path=str(ARTIFACTS / f"{unit}-jupyterlab-timeout.png"))
    pytest.fail(f"{unit} was still running after {limit:.0f} s (screenshot in artifacts/)")


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
            evidence = folder / unit / f"{unit}_evidence.json"
            evidence.unlink(missing_ok=True)
            run_all_and_wait(page, evidence, unit)
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
