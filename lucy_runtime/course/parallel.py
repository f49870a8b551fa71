"""Grade a whole class in parallel: real ``nbgrader autograde`` commands, each over a batch of students.

The jobs fan out through Dask distributed: a ``LocalCluster`` on this machine by
default, or the scheduler at an address (every worker then needs this package and the
course folder at the same path; ``scheduler.py`` says how to reach it over TLS). Each job is the command an educator would type, left
to grade a few students (the others excluded), so the gradebook entries, the
autograded notebooks and the scores are the ones sequential nbgrader writes, and
nbgrader's start-up is paid once per batch rather than once per student. A submission
that runs past its time limit is stopped with everything it started and recorded as
timed out; a kernel that dies is recorded as such; neither touches the other
submissions. Gradebook writes wait for each other (``lucy_runtime/grading/gradebook.py``), or
go to a database server such as PostgreSQL.
"""

from __future__ import annotations

import json
import os
import shutil
import time
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from enum import Enum
from pathlib import Path
from typing import Callable, Iterator

from .course import NBGRADER, _env, scratch_tmp, stream_lines
from ..errors import InvalidField, NothingToGrade
from ..grading import nbgrader_log
from ..grading.gradebook import check_reachable, course_db_url
from .scheduler import TlsFiles, connect


class Status(Enum):
    GRADED = "graded"
    UNCHANGED = "unchanged"  # graded before, and handed in no new version since (no --force)
    TIMED_OUT = "timed out"
    KERNEL_DIED = "kernel died"
    FAILED = "failed"


@dataclass(frozen=True)
class Outcome:
    student: str
    status: Status
    seconds: float
    log_tail: str = ""
    stopped: str = ""  # what stopped the submission's kernel or re-check, as nbgrader's log named it
    score: float | None = None  # the gradebook's, once graded
    max_score: float | None = None
    waiting: int = 0  # its cells that wait for a manual grade (written answers)


@dataclass(frozen=True)
class ClassGrading:
    assignment: str
    outcomes: tuple[Outcome, ...]
    seconds: float
    jobs: int
    engine: str

    @property
    def unfinished(self) -> tuple[Outcome, ...]:
        return tuple(o for o in self.outcomes if o.status not in (Status.GRADED, Status.UNCHANGED))

    @property
    def speedup(self) -> float | None:
        """What parallel grading bought: the submissions' own grading times added up, over the
        wall time of the whole run (about what one nbgrader after another would have taken)."""
        graded = [o.seconds for o in self.outcomes if o.status is Status.GRADED]
        return round(sum(graded) / self.seconds, 2) if graded and self.seconds > 0 else None

    @property
    def ok(self) -> bool:
        return not self.unfinished

    def to_json(self) -> str:
        return json.dumps({"assignment": self.assignment, "seconds": self.seconds, "jobs": self.jobs,
                           "engine": self.engine,
                           "speedup": self.speedup,
                           "outcomes": [{"student": o.student, "status": o.status.value, "seconds": o.seconds,
                                         "score": o.score, "max_score": o.max_score, "waiting": o.waiting,
                                         **({"stopped": o.stopped} if o.stopped else {}),
                                         **({"log_tail": o.log_tail} if o.status is not Status.GRADED else {})}
                                        for o in self.outcomes]}, indent=2)


UNNAMEABLE = frozenset(",*?[]")
"""Characters no student id may hold here: nbgrader takes the students a command leaves out as a
comma-separated list, and a student id as a glob pattern."""


def submitted_students(root: Path, assignment: str) -> list[str]:
    return sorted(p.parent.name for p in (Path(root) / "submitted").glob(f"*/{assignment}") if p.is_dir())


MOST_PER_JOB = 8
"""Submissions one nbgrader command grades. nbgrader takes seconds to start, about as long as
grading one submission, so a job grades several; more jobs than workers keep the workers
evenly busy and the progress bar moving."""


def batches(students: list[str], jobs: int) -> list[list[str]]:
    """Split the class into a multiple of ``jobs`` batches of at most ``MOST_PER_JOB``, as even as can be."""
    count = jobs * -(-len(students) // (jobs * MOST_PER_JOB))
    split = [sorted(students)[i::count] for i in range(count)]
    return [batch for batch in split if batch]


def _status_of_failure(log: str) -> Status:
    return Status.KERNEL_DIED if nbgrader_log.kernel_died(log) else Status.FAILED


@dataclass
class _Command:
    """One ``nbgrader autograde`` over a batch, read as it goes: whom it reached, when, and what it said."""
    output: str = ""
    returncode: int = 0
    timed_out: bool = False
    began: float = 0.0
    ended: float = 0.0
    order: list[str] = field(default_factory=list)
    started: dict[str, float] = field(default_factory=dict)
    logs: dict[str | None, list[str]] = field(default_factory=dict)

    def seconds(self, student: str) -> float:
        at = self.order.index(student)
        begin = self.began if at == 0 else self.started[student]
        end = self.started[self.order[at + 1]] if at + 1 < len(self.order) else self.ended
        return round(end - begin, 1)


def _autograde(course: Path, assignment: str, waiting: list[str], timeout: float) -> _Command:
    run = _Command()

    def reaches_the_next(line: str) -> bool:  # stream_lines asks this first, then hands the line to on_line
        student = nbgrader_log.student_of(line, assignment)
        if student in waiting and student not in run.started:
            run.started[student] = time.monotonic()
            run.order.append(student)
            return True
        return False

    def on_line(line: str) -> None:
        run.logs.setdefault(run.order[-1] if run.order else None, []).append(line)

    others = [s for s in submitted_students(course, assignment) if s not in waiting]
    command = [*NBGRADER, "autograde", assignment, "--force"]
    if others:
        command.append(f"--CourseDirectory.student_id_exclude={','.join(others)}")
    run.began = time.monotonic()
    with scratch_tmp() as tmp:
        done = stream_lines(command, cwd=course, timeout=timeout, on_line=on_line, env=_env(tmp), own_group=True,
                            restart_on=reaches_the_next)
    run.ended = time.monotonic()
    run.output, run.returncode, run.timed_out = done.output, done.returncode, done.timed_out
    return run


def grade_batch(root: str, assignment: str, students: list[str], timeout: float) -> tuple[Outcome, ...]:
    """One job (it runs on a Dask worker): nbgrader autogrades a batch of submissions in one command.

    ``timeout`` is per submission: the clock starts again as nbgrader moves on to the next
    one. A submission that runs past it stops the command; it is recorded as timed out, and
    the ones nbgrader had not reached yet are graded by a fresh command. Each submission's
    stretch of the log is kept, so a failure is told apart and reported on its own.
    """
    course = Path(root)
    outcomes: dict[str, Outcome] = {}
    waiting = sorted(students)
    while waiting:
        run = _autograde(course, assignment, waiting, timeout)
        if nbgrader_log.config_lost(run.output) or not run.order:
            # The command graded nobody: its settings were lost, it failed before the first
            # submission, or it ran out of time starting up. Every submission shares that end.
            status = Status.TIMED_OUT if run.timed_out else Status.FAILED
            for student in waiting:
                outcomes[student] = Outcome(student, status, round(run.ended - run.began, 1), run.output[-2000:])
            break
        failed = nbgrader_log.failed_students(run.output, assignment)
        for student in run.order:
            seconds, tail, last = run.seconds(student), "".join(run.logs[student])[-2000:], student == run.order[-1]
            if last and run.timed_out:
                # nbgrader removes a failed student's output; a stopped nbgrader cannot, so do it here.
                shutil.rmtree(course / "autograded" / student / assignment, ignore_errors=True)
                outcomes[student] = Outcome(student, Status.TIMED_OUT, seconds,
                                            tail + f"\n(stopped after {timeout:g} s)")
            elif student in failed:
                outcomes[student] = Outcome(student, _status_of_failure(tail), seconds, tail)
            elif last and run.returncode != 0 and not failed:
                # nbgrader itself ended badly while on this submission (it lists the ones it failed).
                outcomes[student] = Outcome(student, _status_of_failure(run.output), seconds, run.output[-2000:])
            else:
                outcomes[student] = Outcome(student, Status.GRADED, seconds, stopped=nbgrader_log.stopped("".join(run.logs[student])))
        unreached = [s for s in waiting if s not in run.started]
        if not run.timed_out:
            for student in unreached:  # the command ended on its own without reaching them
                outcomes[student] = Outcome(student, Status.FAILED, 0.0,
                                            run.output[-2000:] + "\n(nbgrader did not reach this submission)")
            break
        waiting = unreached  # the ones a stopped command never reached get a fresh one
    return tuple(outcomes[s] for s in sorted(students))


def _check_gradebook(db_url: str, assignment: str) -> None:
    """The gradebook exists and knows the assignment before any job starts (no job creates the schema)."""
    from nbgrader.api import Gradebook, MissingEntry  # noqa: PLC0415 - deferred: nbgrader takes seconds to import

    check_reachable(db_url)  # a clear reason, not nbgrader's advice to upgrade the database
    with Gradebook(db_url) as gb:
        try:
            gb.find_assignment(assignment)
        except MissingEntry:
            raise NothingToGrade(f"the gradebook has no assignment {assignment!r}: "
                                 f"run `nbgrader generate_assignment {assignment}` first") from None


def unchanged_since_graded(root: Path, assignment: str, student: str) -> bool:
    """True when ``student``'s submission was autograded and no newer one was collected since:
    the autograded notebook exists, and its ``timestamp.txt`` (nbgrader's record of when the
    learner submitted, which ``collect`` writes) is the submitted folder's; without one, no
    file handed in is newer than the autograded notebook."""
    submitted, graded = (root / area / student / assignment for area in ("submitted", "autograded"))
    notebook = graded / f"{assignment}.ipynb"
    if not notebook.exists():
        return False
    stamps = [folder / "timestamp.txt" for folder in (submitted, graded)]
    if all(p.is_file() for p in stamps):
        return stamps[0].read_text().strip() == stamps[1].read_text().strip()
    return all(p.stat().st_mtime <= notebook.stat().st_mtime for p in submitted.rglob("*") if p.is_file())


def with_scores(db_url: str, assignment: str, outcomes: list[Outcome]) -> list[Outcome]:
    """Each graded or unchanged outcome with its score from the gradebook, and how many of its
    cells wait for a manual grade."""
    from nbgrader.api import Gradebook, MissingEntry  # noqa: PLC0415 - deferred: nbgrader takes seconds to import

    scored = []
    with Gradebook(db_url) as gb:
        for o in outcomes:
            if o.status in (Status.GRADED, Status.UNCHANGED):
                try:
                    sub = gb.find_submission(assignment, o.student)
                except MissingEntry:
                    scored.append(o)
                    continue
                waiting = sum(1 for nb in sub.notebooks for g in nb.grades if g.needs_manual_grade)
                o = replace(o, score=float(sub.score), max_score=float(sub.max_score), waiting=waiting)
            scored.append(o)
    return scored


def autograde_class(root: Path, assignment: str, *, jobs: int = 2, scheduler: str | None = None,
                    tls: TlsFiles | None = None, timeout: float = 900, students: list[str] | None = None,
                    on_done: Callable[[Outcome, int, int], None] | None = None, force: bool = True) -> ClassGrading:
    """Autograde every submission of ``assignment`` in the course at ``root``, ``jobs`` at a time.

    ``scheduler`` is a Dask scheduler's address (``tls`` its client certificate, else Dask's
    configuration); without it, a ``LocalCluster`` here. ``on_done(outcome, done, total)`` is
    called as each job ends (for a progress bar). Without ``force``, a submission graded
    before and not handed in again since is left as it is (``Status.UNCHANGED``), as plain
    ``nbgrader autograde`` leaves it. Every outcome carries its score from the gradebook.
    """
    root = Path(root).resolve()
    db_url = course_db_url(root)  # a folder that is no course is refused before anything else
    submitted = submitted_students(root, assignment)
    students = submitted if students is None else sorted(set(students))
    _refuse_what_cannot_be_graded(root, assignment, submitted, students, jobs, scheduler, tls)
    os.environ["PATH"] = _env()["PATH"]  # nbgrader runs `alembic` by name for a new gradebook
    _check_gradebook(db_url, assignment)
    from ..grading.late_work import apply_due_dates  # noqa: PLC0415 - deferred: it loads nbgrader

    apply_due_dates(root)  # the due dates of nbgrader_config.py, so lateness counts from this grading
    started = time.monotonic()
    outcomes: list[Outcome] = []
    if not force:
        unchanged = [s for s in students if unchanged_since_graded(root, assignment, s)]
        outcomes = [Outcome(s, Status.UNCHANGED, 0.0) for s in unchanged]
        students = [s for s in students if s not in unchanged]
    with _dask_client(scheduler, tls, jobs) as client:
        # Connected even when nothing is new: a scheduler that cannot be reached is said now, not next time.
        for outcome in _graded_as_jobs_end(client, root, assignment, batches(students, jobs) if students else [], timeout):
            outcomes.append(outcome)
            if on_done:
                on_done(outcome, len([o for o in outcomes if o.status is not Status.UNCHANGED]), len(students))
    outcomes = sorted(with_scores(db_url, assignment, outcomes), key=lambda o: o.student)
    return ClassGrading(assignment, tuple(outcomes), round(time.monotonic() - started, 1), jobs,
                        "LocalCluster" if scheduler is None else scheduler)


def _refuse_what_cannot_be_graded(root: Path, assignment: str, submitted: list[str], students: list[str], jobs: int,
                                  scheduler: str | None, tls: TlsFiles | None) -> None:
    """Raise, before any job starts, for a class nothing can be graded in as asked."""
    if not students:
        raise NothingToGrade(f"no submission of {assignment!r} under {root / 'submitted'}")
    if jobs < 1:
        raise InvalidField("jobs", "must be at least 1")
    if scheduler is None and tls is not None and any((tls.ca_file, tls.cert, tls.key)):
        raise InvalidField("tls", "the TLS files are for a --scheduler; the local cluster talks in-process")
    unnameable = [s for s in submitted if UNNAMEABLE & set(s)]
    if unnameable:
        raise InvalidField("student", f"{', '.join(map(repr, unnameable))} cannot be named on nbgrader's command "
                                      f"line (no {' '.join(sorted(UNNAMEABLE))} in a student id): rename the "
                                      "submission folder, and nothing is graded until then")


@contextmanager
def _dask_client(scheduler: str | None, tls: TlsFiles | None, jobs: int) -> Iterator:
    """A Dask client of the scheduler at ``scheduler``, or of a ``LocalCluster`` in this process."""
    from distributed import Client, LocalCluster  # noqa: PLC0415 - deferred: Dask takes seconds to import

    if scheduler is not None:
        with connect(scheduler, tls) as client:
            yield client
        return
    # Each job is a process of its own, so worker threads are enough: the cluster lives in this
    # process and talks in-process, with no port and no dashboard.
    cluster = LocalCluster(n_workers=1, threads_per_worker=jobs, processes=False, dashboard_address=None)
    try:
        with Client(cluster) as client:
            yield client
    finally:
        cluster.close()


def _graded_as_jobs_end(client, root: Path, assignment: str, jobs: list[list[str]], timeout: float) -> Iterator[Outcome]:
    """Each batch in ``jobs`` graded by ``grade_batch`` on the cluster; its outcomes as each job ends."""
    from distributed import as_completed  # noqa: PLC0415 - deferred: Dask takes seconds to import

    futures = [client.submit(grade_batch, str(root), assignment, batch, timeout,
                             key=f"autograde-{assignment}-{batch[0]}-{len(batch)}", retries=0, pure=False)
               for batch in jobs]
    for future in as_completed(futures):
        yield from future.result()
