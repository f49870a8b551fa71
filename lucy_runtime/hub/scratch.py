"""A scratch class, the tests' and the bench's: a copy of the course on a hub of its own with accounts made
and removed again, and the whole cycle of a class scripted through the hub's API (``run_class``)."""

from __future__ import annotations

import contextlib
import csv
import io
import secrets
import shutil
import subprocess
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path

import httpx

from ..errors import HubError
from .accounts import add_learners, as_grader, remove_accounts
from .server import HubClient, port_free, set_up, start, stop
from .site import Site


def course_copy(repo: Path, into: Path) -> Path:
    """The course's own files (no .venv, no git history): what a course folder on a server holds."""
    course = into / "course"
    course.mkdir(parents=True)
    for name in ("nbgrader_config.py", "pyproject.toml"):
        shutil.copy(repo / name, course)
    for name in ("source", "release", "lucy_runtime", "hub"):
        shutil.copytree(repo / name, course / name, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    return course


def free_base_port(tries: int = 50) -> int:
    for _ in range(tries):
        base = secrets.choice(range(20000, 40000, 4))
        if all(port_free(base + i) for i in range(4)):
            return base
    raise HubError("no four free ports in a row on 127.0.0.1")


@contextlib.contextmanager
def scratch_class(repo: Path, names: list[str], prefix: str, log=lambda line: None):
    """A class of ``names`` on a hub of its own: a copy of the course under /srv, its grader
    ``PREFIX-grader``, accounts made and removed again. Yields the site, a client and the passwords."""
    top = Path(tempfile.mkdtemp(prefix=f"{prefix}-", dir="/srv" if Path("/srv").is_dir() else None))
    top.chmod(0o755)
    site = Site(course=course_copy(repo, top), state=top / "state", grader=f"{prefix}-grader",
                learners_group=f"{prefix}-learners", port=free_base_port(),
                proxy=repo / ".venv" / "node" / "node_modules" / ".bin" / "configurable-http-proxy")
    passwords = {name: secrets.token_urlsafe(12) for name in names}
    process = None
    remove_accounts([*names, site.grader])  # left by a run that was stopped before its clean-up
    try:
        set_up(site, log=log)
        add_learners(site, passwords)
        with open(top / "hub.log", "wb") as hub_log:
            process = start(site, repo / "hub" / "jupyterhub_config.py", log_file=hub_log)
            client = HubClient(site)
            client.wait_up(process)
            try:
                yield site, client, passwords
            finally:
                for name in [*names, site.grader]:
                    try:
                        client.stop_server(name)
                    except httpx.HTTPError:
                        pass
    finally:
        if process is not None:
            stop(process)
        remove_accounts([*names, site.grader])
        subprocess.run(["groupdel", site.learners_group], capture_output=True)
        shutil.rmtree(top, ignore_errors=True)


def used_memory_mb() -> float:
    """The machine's memory in use (MemTotal less MemAvailable), in MB."""
    fields = dict(line.split(":", 1) for line in Path("/proc/meminfo").read_text().splitlines())
    return (int(fields["MemTotal"].split()[0]) - int(fields["MemAvailable"].split()[0])) / 1024


@dataclass(frozen=True)
class ClassRun:
    """One scripted class through the hub: each step's wall seconds, the machine's peak memory while
    the learners' servers ran, each learner's grade and the feedback pages each fetched."""

    learners: int
    seconds: dict[str, float]
    peak_memory_mb: float
    idle_memory_mb: float
    grades: dict[str, float]
    feedback_pages: dict[str, int]


def run_class(site: Site, client: HubClient, hand_in: dict[str, dict | None], unit: str, jobs: int = 2) -> ClassRun:
    """The whole cycle, scripted: release; every learner's server started through the hub's API; fetch,
    hand in (``hand_in[name]``: the notebook to save, or None to submit it as fetched) and submit
    through the Assignments tab's handlers; then, as the grader, collect (owner check on),
    ``lucy autograde --jobs``, feedback and release; every learner fetches their feedback."""
    seconds: dict[str, float] = {}
    names = sorted(hand_in)

    def step(name: str, action) -> None:
        started = time.monotonic()
        action()
        seconds[name] = round(time.monotonic() - started, 1)

    def grader(*command: str) -> None:
        done = as_grader(site, list(command), timeout=3600)
        if done.returncode != 0:
            raise HubError(f"{' '.join(command[:4])} failed as {site.grader}: {(done.stderr or done.stdout)[-500:]}")

    idle = used_memory_mb()
    peak = [idle]
    sampling = threading.Event()

    def sample() -> None:
        while not sampling.wait(0.5):
            peak[0] = max(peak[0], used_memory_mb())

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    try:
        def release() -> None:
            grader("python", "-m", "nbgrader", "generate_assignment", unit, "--force")
            grader("python", "-m", "nbgrader", "release_assignment", unit, "--force")

        step("release", release)

        def start_all() -> None:
            for name in names:
                client.start_server(name)
            client.wait_ready(names, within=60 + 10 * len(names))

        step("start servers", start_all)
        step("fetch", lambda: [client.assignments(name, "fetch", unit) for name in names])
        path = f"{unit}/{unit}.ipynb"

        def submit_all() -> None:
            for name in names:
                notebook = hand_in[name]
                if notebook is not None:
                    client.write_notebook(name, path, notebook)
                answer = client.assignments(name, "submit", unit)
                if isinstance(answer, dict) and not answer.get("success", True):
                    raise HubError(f"{name} could not submit: {answer.get('error', answer)}")

        step("hand in and submit", submit_all)
        step("collect", lambda: grader("python", "-m", "nbgrader", "collect", unit))
        step("autograde", lambda: grader("python", "-m", "lucy_runtime.cli", "autograde", unit,
                                         "--jobs", str(jobs)))
        step("feedback", lambda: grader("python", "-m", "nbgrader", "generate_feedback", unit))
        step("release feedback", lambda: grader("python", "-m", "nbgrader", "release_feedback", unit))
        step("fetch feedback", lambda: [client.assignments(name, "fetch_feedback", unit) for name in names])
    finally:
        sampling.set()
        sampler.join()
    grader("python", "-m", "nbgrader", "export")
    grades = {row["student_id"]: float(row["raw_score"]) for row in csv.DictReader(io.StringIO(
        (site.course / "grades.csv").read_text())) if row["assignment"] == unit}
    pages = {}
    for name in names:
        stamps = client.read(name, f"{unit}/feedback")["content"]
        pages[name] = sum(1 for stamp in stamps for item in client.read(name, stamp["path"])["content"]
                          if item["name"].endswith(".html"))
    for name in names:
        client.stop_server(name)
    return ClassRun(len(names), seconds, round(peak[0], 1), round(idle, 1), grades, pages)
