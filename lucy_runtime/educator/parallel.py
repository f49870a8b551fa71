"""Grade a whole class in parallel: one real ``nbgrader autograde ASSIGNMENT --student S`` per job.

The jobs fan out through Dask distributed: a ``LocalCluster`` on this machine by
default, or the scheduler at an address (every worker then needs this package and the
course folder at the same path). Each job is the command an educator would type for one
student, so the gradebook entries, the autograded notebooks and the scores are the ones
sequential nbgrader writes. A job that runs past its time limit is stopped with
everything it started and recorded as timed out; a kernel that dies is recorded as
such; neither touches the other jobs. Gradebook writes wait for each other
(``lucy_runtime/gradebook.py``), or go to a database server such as PostgreSQL.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
import time
from dataclasses import dataclass
from enum import Enum
from pathlib import Path
from typing import Callable

from ..course import CONFIG_BROKEN, _env, stream_lines
from ..errors import InvalidField, NothingToGrade
from ..gradebook import course_db_url


class Status(Enum):
    GRADED = "graded"
    TIMED_OUT = "timed out"
    KERNEL_DIED = "kernel died"
    FAILED = "failed"


@dataclass(frozen=True)
class Outcome:
    student: str
    status: Status
    seconds: float
    log_tail: str = ""


@dataclass(frozen=True)
class ClassGrading:
    assignment: str
    outcomes: tuple[Outcome, ...]
    seconds: float
    jobs: int
    engine: str

    @property
    def unfinished(self) -> tuple[Outcome, ...]:
        return tuple(o for o in self.outcomes if o.status is not Status.GRADED)

    @property
    def ok(self) -> bool:
        return not self.unfinished

    def to_json(self) -> str:
        return json.dumps({"assignment": self.assignment, "seconds": self.seconds, "jobs": self.jobs,
                           "engine": self.engine,
                           "outcomes": [{"student": o.student, "status": o.status.value, "seconds": o.seconds,
                                         **({"log_tail": o.log_tail} if o.status is not Status.GRADED else {})}
                                        for o in self.outcomes]}, indent=2)


def submitted_students(root: Path, assignment: str) -> list[str]:
    return sorted(p.parent.name for p in (Path(root) / "submitted").glob(f"*/{assignment}") if p.is_dir())


def grade_one(root: str, assignment: str, student: str, timeout: float) -> Outcome:
    """One job (it runs on a Dask worker): nbgrader autogrades one student's submission."""
    started = time.monotonic()
    done = stream_lines([sys.executable, "-m", "nbgrader", "autograde", assignment, "--force",
                         f"--student={student}"], cwd=Path(root), timeout=timeout, on_line=lambda line: None,
                        env=_env(), own_group=True)
    seconds = round(time.monotonic() - started, 1)
    tail = done.output[-2000:]
    if done.timed_out:
        # nbgrader removes a failed student's output; a stopped nbgrader cannot, so do it here.
        shutil.rmtree(Path(root) / "autograded" / student / assignment, ignore_errors=True)
        return Outcome(student, Status.TIMED_OUT, seconds, tail + f"\n(stopped after {timeout:g} s)")
    if done.returncode == 0 and CONFIG_BROKEN not in done.output:
        return Outcome(student, Status.GRADED, seconds)
    if "DeadKernelError" in done.output or "Kernel died" in done.output:
        return Outcome(student, Status.KERNEL_DIED, seconds, tail)
    return Outcome(student, Status.FAILED, seconds, tail)


def _check_gradebook(db_url: str, assignment: str) -> None:
    """The gradebook exists and knows the assignment before any job starts (no job creates the schema)."""
    from nbgrader.api import Gradebook, MissingEntry  # noqa: PLC0415 - deferred: nbgrader takes seconds to import

    with Gradebook(db_url) as gb:
        try:
            gb.find_assignment(assignment)
        except MissingEntry:
            raise NothingToGrade(f"the gradebook has no assignment {assignment!r}: "
                                 f"run `nbgrader generate_assignment {assignment}` first") from None


def autograde_class(root: Path, assignment: str, *, jobs: int = 2, scheduler: str | None = None,
                    timeout: float = 900, students: list[str] | None = None,
                    on_done: Callable[[Outcome, int, int], None] | None = None) -> ClassGrading:
    """Autograde every submission of ``assignment`` in the course at ``root``, ``jobs`` at a time.

    ``on_done(outcome, done, total)`` is called as each job ends (for a progress bar).
    """
    from distributed import Client, LocalCluster, as_completed  # noqa: PLC0415 - deferred: Dask takes seconds to import

    root = Path(root).resolve()
    db_url = course_db_url(root)  # a folder that is no course is refused before anything else
    students = submitted_students(root, assignment) if students is None else list(students)
    if not students:
        raise NothingToGrade(f"no submission of {assignment!r} under {root / 'submitted'}")
    if jobs < 1:
        raise InvalidField("jobs", "must be at least 1")
    os.environ["PATH"] = _env()["PATH"]  # nbgrader runs `alembic` by name for a new gradebook
    _check_gradebook(db_url, assignment)
    started = time.monotonic()
    cluster = None
    if scheduler is None:
        # Each job is a process of its own, so worker threads are enough: the cluster lives in this
        # process and talks in-process, with no port and no dashboard.
        cluster = LocalCluster(n_workers=1, threads_per_worker=jobs, processes=False, dashboard_address=None)
    outcomes = []
    try:
        with Client(cluster if cluster is not None else scheduler) as client:
            futures = [client.submit(grade_one, str(root), assignment, s, timeout, key=f"autograde-{assignment}-{s}",
                                     retries=0, pure=False) for s in students]
            for future in as_completed(futures):
                outcome = future.result()
                outcomes.append(outcome)
                if on_done:
                    on_done(outcome, len(outcomes), len(students))
    finally:
        if cluster is not None:
            cluster.close()
    outcomes.sort(key=lambda o: o.student)
    return ClassGrading(assignment, tuple(outcomes), round(time.monotonic() - started, 1), jobs,
                        "LocalCluster" if scheduler is None else scheduler)
