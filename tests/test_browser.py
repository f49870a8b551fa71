"""A learner's view: the released notebooks, completed, run in JupyterLab in headless Chromium.
Run All must end with no error in any cell and the evidence saved: the one run of each unit
from top to bottom (``nbgrader validate`` on source/, in test_grader_self_checks.py, runs
the hidden tests as well).

Debian's chromium is used through Playwright's ``executable_path`` (Playwright cannot
download a browser here). ``make test`` installs both; screenshots land in artifacts/.
"""

from __future__ import annotations

import time

import nbformat
import pytest

from lucy_runtime.proof.verify import filled

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
PROMPTS = """() => { const p = [...document.querySelectorAll('.jp-Notebook .jp-InputPrompt')].map(x => x.textContent.trim());
    return {queued: p.filter(t => t === '[*]:').length, ran: p.filter(t => /^\\[\\d+\\]:$/.test(t)).length}; }"""


DIALOGS: list[str] = []
"""What each dialog JupyterLab opened said (kept for the failure message)."""


def dismiss_dialogs(page) -> None:
    """Accept a dialog JupyterLab opened on its own (on a loaded machine, a slow kernel start can
    bring one up); it would take every click meant for the notebook."""
    dialog = page.locator("dialog.jp-Dialog")
    # "Select Kernel" can come up before the server has listed its kernels; its accept button does
    # nothing until then, so keep accepting for up to three minutes (a machine running other
    # suites has been seen to need more than one) rather than three times in 1.5 s.
    deadline = time.monotonic() + 180
    while dialog.count() and time.monotonic() < deadline:
        DIALOGS.append(dialog.first.inner_text()[:300])
        ARTIFACTS.mkdir(exist_ok=True)
        (ARTIFACTS / "jupyterlab-dialogs.txt").write_text("\n---\n".join(DIALOGS) + "\n")
        accept = dialog.first.locator(".jp-Dialog-button.jp-mod-accept").first
        if accept.count() and accept.is_enabled():
            accept.click(timeout=5_000)
        page.wait_for_timeout(1000)


def run_all_and_wait(page, unit: str, *, limit: float = 600.0) -> None:
    """Run All Cells, then wait until no cell is queued any more, or an error is shown.

    Progress is read from the cells' prompts ([*] queued or running, [n] done), never from
    the last cell's output or the kernel's busy light: on a loaded machine the click on the
    menu can arrive before the notebook takes it, and the kernel is busy for other reasons.
    A Run All that starts no cell is clicked again, after focusing the first cell.
    """
    for attempt in range(3):
        dismiss_dialogs(page)
        if attempt:
            page.click(".jp-Notebook .jp-Cell >> nth=0")
        page.click("div.lm-MenuBar-itemLabel:text-is('Run')")
        page.click("li.lm-Menu-item:has-text('Run All Cells')")
        started = time.monotonic()
        while time.monotonic() - started < 30:
            state = page.evaluate(PROMPTS)
            if state["queued"] or state["ran"]:
                break
            time.sleep(0.2)
        else:
            continue
        break
    else:
        page.screenshot(path=str(ARTIFACTS / f"{unit}-jupyterlab-not-started.png"))
        pytest.fail(f"Run All Cells started no cell (three clicks); dialogs seen: {DIALOGS}")
    started, quiet_since = time.monotonic(), None
    while time.monotonic() - started < limit:
        if page.evaluate(ERROR_OUTPUT):
            return
        if page.evaluate(PROMPTS)["queued"] == 0:
            quiet_since = quiet_since or time.monotonic()
            if time.monotonic() - quiet_since > 2:
                return
        else:
            quiet_since = None
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
            run_all_and_wait(page, unit)
            errors = page.locator(".jp-OutputArea-output[data-mime-type='application/vnd.jupyter.error'], "
                                  ".jp-OutputArea-output[data-mime-type='application/vnd.jupyter.stderr']")
            # An error output fails the test whatever it says: a row that does not hold shows
            # "Row … does not hold" without the word Error.
            failures = [errors.nth(i).inner_text()[:400] for i in range(errors.count())
                        if errors.nth(i).get_attribute("data-mime-type") == "application/vnd.jupyter.error"
                        or "Error" in errors.nth(i).inner_text()]
            if failures:
                page.screenshot(path=str(ARTIFACTS / f"{unit}-jupyterlab-error.png"))
            assert failures == [], failures
            if not evidence.exists():
                page.screenshot(path=str(ARTIFACTS / f"{unit}-jupyterlab-unfinished.png"), full_page=True)
                running = page.evaluate("""() => [...document.querySelectorAll('.jp-InputPrompt')]
                    .map(p => p.textContent.trim()).filter(t => t === '[*]:' || t === '[ ]:').length""")
                last = page.evaluate("""() => { const o = [...document.querySelectorAll('.jp-OutputArea-output')];
                    return o.slice(-3).map(x => x.textContent.slice(0, 300)); }""")
                pytest.fail(f"the run ended without an error, but the last cell never saved the evidence; "
                            f"{running} cells still queued or never run; the last outputs: {last}")
            # JupyterLab renders cells lazily: find each element, scroll to it, then it must be visible.
            admit = page.locator(".widget-button:has-text('Admit')").first
            admit.wait_for(state="attached", timeout=60_000)
            admit.scroll_into_view_if_needed()
            admit.wait_for(state="visible", timeout=30_000)
            diagram = page.locator(".jp-RenderedMermaid img, .jp-RenderedMermaid svg").first
            diagram.wait_for(state="attached", timeout=60_000)
            admit.click()  # the widget answers: a message appears under its buttons
            # The widget's own message, not the prose or code that also names an Admission.
            page.locator(".widget-html:has-text('Admission(')").first.wait_for(state="visible", timeout=30_000)
            admit.scroll_into_view_if_needed()
            page.screenshot(path=str(ARTIFACTS / f"{unit}-jupyterlab.png"))
        finally:
            browser.close()
    assert (folder / unit / f"{unit}_evidence.json").exists(), "the notebook saved no evidence"
