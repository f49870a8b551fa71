"""A learner's view: the released notebooks, completed, run in JupyterLab in headless Chromium.

Debian's chromium is used through Playwright's ``executable_path`` (Playwright cannot
download a browser here). ``make test`` installs both; screenshots land in artifacts/.
"""

from __future__ import annotations

import os
import secrets
import shutil
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import nbformat
import pytest

from lucy_runtime.educator.verify import filled

from .conftest import REPO

pytestmark = [pytest.mark.browser, pytest.mark.slow]

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
ARTIFACTS = REPO / "artifacts"
FLAGS = ["--no-sandbox", "--disable-gpu", "--disable-quic", "--disable-background-networking",
         "--disable-component-update", "--disable-sync", "--no-first-run"]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def lab(tmp_path_factory):
    if not Path(CHROMIUM).exists():
        pytest.fail("chromium is not installed: `make test` installs it (apt-get install -y chromium)")
    folder = tmp_path_factory.mktemp("learner")
    for unit in ("ch07_unit_a", "ch07_unit_b"):
        source = nbformat.read(str(REPO / "source" / unit / f"{unit}.ipynb"), as_version=4)
        release = nbformat.read(str(REPO / "release" / unit / f"{unit}.ipynb"), as_version=4)
        (folder / unit).mkdir()
        nbformat.write(filled(release, source), str(folder / unit / f"{unit}.ipynb"))
    port, token = free_port(), secrets.token_hex(16)
    # Render every cell (JupyterLab 4 renders off-screen cells lazily), and ask nothing about news.
    settings = tmp_path_factory.mktemp("lab-settings")
    (settings / "@jupyterlab" / "notebook-extension").mkdir(parents=True)
    (settings / "@jupyterlab" / "notebook-extension" / "tracker.jupyterlab-settings").write_text(
        '{"windowingMode": "none"}')
    (settings / "@jupyterlab" / "apputils-extension").mkdir(parents=True)
    (settings / "@jupyterlab" / "apputils-extension" / "notification.jupyterlab-settings").write_text(
        '{"fetchNews": "false", "checkForUpdates": false}')
    env = dict(os.environ, JUPYTER_PLATFORM_DIRS="1", JUPYTERLAB_SETTINGS_DIR=str(settings),
               PATH=str(Path(sys.executable).parent) + os.pathsep + os.environ["PATH"])
    server = subprocess.Popen(
        [sys.executable, "-m", "jupyter", "lab", "--no-browser", "--ip=127.0.0.1", f"--port={port}",
         f"--ServerApp.token={token}", f"--ServerApp.root_dir={folder}", "--ServerApp.open_browser=False",
         "--LabApp.news_url=", "--LabApp.check_for_updates_class=jupyterlab.NeverCheckForUpdate", "--allow-root"],
        cwd=folder, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.STDOUT)
    deadline = time.monotonic() + 60
    while True:
        try:
            urllib.request.urlopen(f"http://127.0.0.1:{port}/api/status?token={token}", timeout=2)
            break
        except OSError:
            if time.monotonic() > deadline or server.poll() is not None:
                server.kill()
                pytest.fail("JupyterLab did not start on 127.0.0.1")
            time.sleep(0.5)
    yield f"http://127.0.0.1:{port}", token, folder
    server.terminate()
    try:
        server.wait(timeout=20)
    except subprocess.TimeoutExpired:
        server.kill()


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
