"""JupyterLab on loopback, driven in headless Debian chromium through Playwright.

Shared by the browser tests. Playwright cannot download a browser here: it drives
Debian's chromium through ``executable_path``. ``make test`` installs both; screenshots
land in artifacts/.
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
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import pytest

from .conftest import REPO, need

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
ARTIFACTS = REPO / "artifacts"
FLAGS = ["--no-sandbox", "--disable-gpu", "--disable-quic", "--disable-background-networking",
         "--disable-component-update", "--disable-sync", "--no-first-run"]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def need_chromium() -> None:
    need("chromium", Path(CHROMIUM).exists(), "`make test` installs it (apt-get install -y chromium)")


def lab_settings(folder: Path) -> Path:
    """A JupyterLab settings dir: render every cell (JupyterLab 4 renders off-screen cells
    lazily), and ask nothing about news or updates."""
    (folder / "@jupyterlab" / "notebook-extension").mkdir(parents=True)
    (folder / "@jupyterlab" / "notebook-extension" / "tracker.jupyterlab-settings").write_text(
        '{"windowingMode": "none"}')
    (folder / "@jupyterlab" / "apputils-extension").mkdir(parents=True)
    (folder / "@jupyterlab" / "apputils-extension" / "notification.jupyterlab-settings").write_text(
        '{"fetchNews": "false", "checkForUpdates": false}')
    return folder


@dataclass(frozen=True)
class Lab:
    base: str
    token: str
    root: Path
    log: Path | None = None

    def log_tail(self, chars: int = 3000) -> str:
        return self.log.read_text(errors="replace")[-chars:] if self.log and self.log.exists() else ""


@contextmanager
def running_lab(root: Path, settings: Path, *, extra_args: tuple[str, ...] = (), log: Path | None = None,
                start_timeout: float = 60):
    """``jupyter lab`` on 127.0.0.1 (a free port, a fresh token) with ``root`` as its root
    and working folder; stopped (terminate, then kill) when the block ends."""
    port, token = free_port(), secrets.token_hex(16)
    scratch = Path(settings).parent / "lab-tmp"  # the notebooks' workspaces go with the test's own folder
    scratch.mkdir(parents=True, exist_ok=True)
    env = dict(os.environ, JUPYTER_PLATFORM_DIRS="1", JUPYTERLAB_SETTINGS_DIR=str(settings), TMPDIR=str(scratch),
               PATH=str(Path(sys.executable).parent) + os.pathsep + os.environ["PATH"])
    out = open(log, "w") if log else subprocess.DEVNULL
    server = subprocess.Popen(
        [sys.executable, "-m", "jupyter", "lab", "--no-browser", "--ip=127.0.0.1", f"--port={port}",
         f"--ServerApp.token={token}", f"--ServerApp.root_dir={root}", "--ServerApp.open_browser=False",
         "--LabApp.news_url=", "--LabApp.check_for_updates_class=jupyterlab.NeverCheckForUpdate", "--allow-root",
         *extra_args],
        cwd=root, env=env, stdout=out, stderr=subprocess.STDOUT)
    lab = Lab(f"http://127.0.0.1:{port}", token, Path(root), log)
    try:
        deadline = time.monotonic() + start_timeout
        while True:
            try:
                urllib.request.urlopen(f"{lab.base}/api/status?token={token}", timeout=2)
                break
            except OSError:
                if time.monotonic() > deadline or server.poll() is not None:
                    pytest.fail(f"JupyterLab did not start on 127.0.0.1\n{lab.log_tail()}")
                time.sleep(0.5)
        yield lab
    finally:
        server.terminate()
        try:
            server.wait(timeout=20)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait()
        if log:
            out.close()
