"""The hub's process and its client: ``set_up`` (what ``make hub`` does before the hub starts), ``start`` and
``stop``, and ``HubClient``, the hub's REST API with the class's token (what the Assignments tab and the
scripted class use)."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx

from ..errors import HubError
from .accounts import ensure_grader, give_course_to_grader, require_learner
from .learner_env import build_learner_env
from .settings import api_token
from .site import COURSE_ID, PROXY_REQUIREMENT, Site, make_exchange


def port_free(port: int) -> bool:
    with socket.socket() as probe:
        try:
            probe.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


def check_can_start(site: Site) -> None:
    for port in (site.port, site.hub_api_port, site.service_port, site.port + 3):
        if not port_free(port):
            raise HubError(f"port {port} on 127.0.0.1 is taken: stop what uses it, or start the hub with "
                           f"LUCY_HUB_PORT=N (it uses N to N+3)")
    if not os.access(site.proxy_command, os.X_OK):
        raise HubError(f"configurable-http-proxy is missing ({site.proxy_command}): `make hub` installs "
                       f"{PROXY_REQUIREMENT} with npm, or set LUCY_HUB_PROXY")
    if not (site.learner_env / "bin" / "jupyterhub-singleuser").exists():
        raise HubError(f"the learners' environment {site.learner_env} is missing: `make hub` builds it")


def set_up(site: Site, log=print) -> str | None:
    """Everything ``make hub`` does before the hub starts (idempotent; as root). Returns the grader's
    first password when this made the account."""
    if os.geteuid() != 0:
        raise HubError("setting up the class's accounts needs root: run `make hub` as root")
    password = ensure_grader(site)
    give_course_to_grader(site)
    make_exchange(site)
    build_learner_env(site, log=log)
    api_token(site)
    return password


def start(site: Site, config: Path, log_file=None) -> subprocess.Popen:
    check_can_start(site)
    site.hub_dir.mkdir(parents=True, exist_ok=True)
    os.chmod(site.hub_dir, 0o700)
    env = {**os.environ, **site.to_environment()}
    # A session of its own, so that ``stop`` can end the proxy the hub started even when the hub did not.
    return subprocess.Popen([str(Path(sys.executable).parent / "jupyterhub"), "-f", str(config)],
                            cwd=site.hub_dir, env=env, stdout=log_file, stderr=subprocess.STDOUT if log_file else None,
                            start_new_session=True)


def stop(process: subprocess.Popen, within: float = 30) -> int:
    """Stop a hub that ``start`` started, then whatever of its session outlived it (its proxy); its exit code."""
    process.terminate()
    try:
        code = process.wait(within)
    except subprocess.TimeoutExpired:
        process.kill()
        code = process.wait()
    try:
        os.killpg(process.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    return code


class HubClient:
    """The hub's REST API with the class's token."""

    def __init__(self, site: Site, timeout: float = 60):
        self.site = site
        self.http = httpx.Client(base_url=site.url, headers={"Authorization": f"token {api_token(site)}"},
                                 timeout=timeout)

    def wait_up(self, process: subprocess.Popen | None = None, within: float = 60) -> None:
        deadline = time.monotonic() + within
        while time.monotonic() < deadline:
            if process is not None and process.poll() is not None:
                raise HubError(f"the hub stopped at start (exit code {process.returncode}): its log says why")
            try:
                if self.http.get("/hub/api/").status_code == 200:
                    return
            except httpx.HTTPError:
                pass
            time.sleep(0.3)
        raise HubError(f"the hub did not answer on {self.site.url} within {within:.0f} s")

    def admit(self, names: list[str]) -> bool:
        """Let new learners into a running hub (the hub reads the learner group only when it
        starts): their hub users, in the course's group. False when no hub answers."""
        try:
            self.http.get("/hub/api/")
        except httpx.HTTPError:
            return False
        for name in names:
            if self.http.get(f"/hub/api/users/{name}").status_code == 404:
                self._ok(self.http.post(f"/hub/api/users/{name}"), f"adding {name} to the hub")
        self._ok(self.http.post(f"/hub/api/groups/nbgrader-{COURSE_ID}/users", json={"users": names}),
                 f"adding {', '.join(names)} to nbgrader-{COURSE_ID}")
        return True

    def start_server(self, name: str) -> None:
        require_learner(self.site, name)
        answer = self.http.post(f"/hub/api/users/{name}/server")
        if answer.status_code not in (201, 202, 400):  # 400: already running
            raise HubError(f"the hub did not start {name}'s server: {answer.status_code} {answer.text[:200]}")

    def wait_ready(self, names: list[str], within: float = 180) -> None:
        deadline = time.monotonic() + within
        waiting = set(names)
        while waiting and time.monotonic() < deadline:
            for name in sorted(waiting):
                user = self.http.get(f"/hub/api/users/{name}").json()
                if (user.get("servers") or {}).get("", {}).get("ready"):
                    waiting.discard(name)
            time.sleep(0.5)
        if waiting:
            raise HubError(f"servers not ready within {within:.0f} s: {', '.join(sorted(waiting))}")

    def stop_server(self, name: str) -> None:
        self.http.delete(f"/hub/api/users/{name}/server")

    @staticmethod
    def _ok(answer: httpx.Response, what: str) -> httpx.Response:
        if answer.is_error:
            raise HubError(f"{what}: {answer.status_code} {answer.text[:1500]}")
        return answer

    def assignments(self, name: str, action: str, assignment: str) -> list | dict:
        """What the Assignments tab does when a learner clicks Fetch, Submit or Fetch Feedback."""
        answer = self.http.post(f"/user/{name}/assignments/{action}",
                                data={"course_id": COURSE_ID, "assignment_id": assignment})
        return self._ok(answer, f"{name}'s {action} of {assignment}").json()

    def listing(self, name: str) -> list:
        answer = self.http.get(f"/user/{name}/assignments", params={"course_id": COURSE_ID})
        return self._ok(answer, f"{name}'s assignment list").json()["value"]

    def read(self, name: str, path: str) -> dict:
        answer = self.http.get(f"/user/{name}/api/contents/{path}", params={"content": "1"})
        return self._ok(answer, f"reading {name}'s {path}").json()

    def write_notebook(self, name: str, path: str, notebook: dict) -> None:
        answer = self.http.put(f"/user/{name}/api/contents/{path}",
                               json={"type": "notebook", "format": "json", "content": notebook})
        self._ok(answer, f"saving {name}'s {path}")

