"""`make bench`: ratios from one run, not verdicts and not absolute times.

* rows: every acceptance row on the reference, against the 10 s budget and one process fork;
* autograde: one submission's ``nbgrader autograde`` against a trivial one-cell notebook's
  (the kernel's floor);
* class: ``lucy autograde --jobs 2`` against sequential nbgrader on N submissions;
* report: ``lucy report`` on a class of 300 learners (a synthesised gradebook, autograded
  notebooks and evidence files, not 300 nbgrader runs) against autograding that class
  one submission after another, at the rate one real ``nbgrader autograde`` takes here;
* queue: the reference queue end to end (admit, work_once, deliver_one) in items/s,
  against single-row commits on the same disk and persist-queue's SQLite queue
  (put/get/ack), with transactions per item counted from the store's statement hook;
* loop: the contributors' loop, ``make test-fast``, ``make test`` and ``make demo`` run
  in this checkout, each against its goal (``LOOP``: 1, 10 and 6 minutes).

``results.py`` holds what each section measured; ``docs/performance.md`` says how to read what
it writes (``artifacts/bench.json``).
"""

from __future__ import annotations

import json
import os
import random
import shutil
import subprocess
import sys
import tempfile
import time
import warnings
from dataclasses import asdict, dataclass
from pathlib import Path

import nbformat

from ..notebooks.cells import grade_id, row_of, test_cells
from ..checker import SourceLearner, run_rows, select_rows
from ..engine.supervisor import run_in_child
from ..checker.results import RowResult
from ..course.course import ScratchCourse, nbgrader
from ..delivery import DeliveryPolicy
from ..course.parallel import autograde_class
from ..proof.signatures import load
from ..proof.verify import filled, with_written_answers
from ..hub.scratch import run_class, scratch_class
from ..errors import BenchFailed, HubError, InvalidField
from ..grading.gradebook import course_db_url
from ..loop import LoopResult
from ..notebooks.notebook import learner_implementation
from ..store import Store
from ..fakes.service import FakeService, FakeTransport
from ..work import Queue
from .results import (AutogradeBench, BenchReport, ClassBench, HubBench, LoopTiming, QueueBench, ReportBench,
                      RowsBench)


CRASH_ROWS = ("restart-keeps-work", "finish-atomic", "finish-durable", "running-crash-visible")
SECTIONS = ("rows", "autograde", "class", "report", "queue", "loop", "hub")
REPO = Path(__file__).resolve().parents[2]
LOOP = (("test-fast", 60.0), ("test", 600.0), ("demo", 360.0))
"""The contributors' loop: make targets and their goals in seconds, on two idle cores."""


@dataclass(frozen=True)
class BenchConfig:
    notebook_dir: Path = Path("source")
    sections: tuple[str, ...] = SECTIONS
    submissions: int = 8
    jobs: int = 2
    items: int = 200
    learners: int = 300
    hub_learners: int = 30
    loop: tuple[tuple[str, float], ...] = LOOP
    repo: Path = REPO


def _learner(notebook_dir: Path):

    return SourceLearner(learner_implementation(notebook_dir))


def bench_rows(notebook_dir: Path) -> RowsBench:

    learner = _learner(notebook_dir)
    started = time.monotonic()
    for _ in range(20):
        run_in_child(lambda: None)
    fork = (time.monotonic() - started) / 20
    report = run_rows(learner, select_rows("all"), seed=1)
    total = sum(r.seconds for r in report.results)
    crash = max((r for r in report.results if r.row_id in CRASH_ROWS), key=lambda r: r.seconds)
    return RowsBench({r.row_id: round(r.seconds, 3) for r in report.results}, round(total, 3), round(fork, 5),
                     round(total / 10, 3), round(total / fork, 1), crash.row_id, round(crash.seconds, 3),
                     report.passed)


def _trivial_assignment(root: Path) -> str:

    name = "trivial"
    nb = nbformat.v4.new_notebook()
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    nb.cells = [nbformat.v4.new_code_cell("1 + 1")]
    (root / "source" / name).mkdir(parents=True, exist_ok=True)
    nbformat.write(nb, str(root / "source" / name / f"{name}.ipynb"))
    return name


def _timed(fn) -> float:
    started = time.monotonic()
    fn()
    return round(time.monotonic() - started, 2)


def bench_grading(config: BenchConfig, workdir: Path) -> tuple[AutogradeBench | None, ClassBench | None]:

    unit = "ch07_unit_a"
    course = ScratchCourse(workdir / "course", units=(unit,))
    reference = filled(course.release(unit), course.source(unit))
    pristine = course.copy(workdir / "pristine")  # the class is graded in copies where nobody else handed in
    autograde = klass = None
    if "autograde" in config.sections:
        trivial = _trivial_assignment(course.root)
        nbgrader(["generate_assignment", trivial, "--force"], cwd=course.root)
        course.submit("floor", trivial, course.release(trivial))
        course.submit("one", unit, reference)
        one = _timed(lambda: course.autograde(unit, "one"))
        floor = _timed(lambda: course.autograde(trivial, "floor"))
        autograde = AutogradeBench(one, floor, round(one / floor, 2))
    if "class" in config.sections:
        klass = bench_class(config, pristine, unit, reference, workdir)
    return autograde, klass


def bench_class(config: BenchConfig, pristine: ScratchCourse, unit: str, reference, workdir: Path) -> ClassBench:
    """The class graded by one plain nbgrader run and by ``autograde_class``, each twice, in the order
    sequential, parallel, parallel, sequential: a machine that gets busier or quieter during the
    bench, or a cold first run, then weighs on both sides alike. Each run grades a fresh copy."""
    students = [f"learner_{i:02d}" for i in range(config.submissions)]

    def fresh(name: str) -> ScratchCourse:
        course = pristine.copy(workdir / name)
        for student in students:
            course.submit(student, unit, reference)
        return course

    sequential, parallel, unfinished = 0.0, 0.0, []
    for round_, order in enumerate((("sequential", "parallel"), ("parallel", "sequential"))):
        for side in order:
            course = fresh(f"{side}-{round_}")
            if side == "sequential":
                sequential += _timed(lambda: course.autograde(unit))
            else:
                result = autograde_class(course.root, unit, jobs=config.jobs, students=students)
                parallel += result.seconds
                unfinished += [f"{o.student}: {o.status.value}\n{o.log_tail[-1200:]}" for o in result.unfinished]
    return ClassBench(config.submissions, config.jobs, round(sequential / 2, 2), round(parallel / 2, 2),
                      round(sequential / max(parallel, 1e-9), 2), not unfinished, tuple(unfinished))


def _synthesised_learner(gb, unit: str, student: str, failing: frozenset[str], autograded, folder: Path) -> None:
    """One learner as grading leaves them: gradebook grades, an autograded notebook with sealed verdicts, evidence."""
    from ..grading.sealed import verdict_outputs  # noqa: PLC0415 - imports nbgrader (seconds); this part alone needs it

    gb.add_student(student)
    submission = gb.add_submission(unit, student)
    for notebook in submission.notebooks:
        for grade in notebook.grades:
            if grade.cell.cell_type == "code":
                grade.auto_score = 0.0 if row_of(grade.name) in failing else grade.max_score
                grade.needs_manual_grade = False
            else:
                grade.needs_manual_grade = True
    for cell in test_cells(autograded):
        row = row_of(grade_id(cell))
        cell.outputs = verdict_outputs(RowResult(row, row not in failing, f"{row} observed in a synthesised class",
                                                 f"the hint of {row}", 0.1, ""))
    (folder / "autograded" / student / unit).mkdir(parents=True, exist_ok=True)
    nbformat.write(autograded, str(folder / "autograded" / student / unit / f"{unit}.ipynb"))
    (folder / "submitted" / student / unit).mkdir(parents=True, exist_ok=True)
    said = "None survive: the list died with the process." if len(failing) % 2 else "All three are still there."
    (folder / "submitted" / student / unit / f"{unit}_evidence.json").write_text(json.dumps(
        {"unit": unit, "blocks": {"0-5 restart": {"prediction": said, "observations": {"admitted": 3, "survived": 0}}}}))


def bench_report(workdir: Path, learners: int, submission_seconds: float | None) -> ReportBench:
    """``lucy report`` on ``learners`` synthesised learners, each failing like an educator case of Unit A or
    passing (the gradebook is written through nbgrader's API, the notebooks from one real autograde)."""
    from nbgrader.api import Gradebook  # noqa: PLC0415 - seconds to import; this part alone needs it
    from sqlalchemy.exc import SAWarning  # noqa: PLC0415 - comes with nbgrader

    unit = "ch07_unit_a"
    course = ScratchCourse(workdir / "report-course", units=(unit,))
    course.submit("real", unit, filled(course.release(unit), course.source(unit)))
    seconds = _timed(lambda: course.autograde(unit, "real"))
    submission_seconds = submission_seconds or seconds
    autograded = nbformat.read(str(course.root / "autograded" / "real" / unit / f"{unit}.ipynb"), as_version=4)
    signatures = load()
    if signatures is None:
        raise BenchFailed("no case signatures to synthesise a class from: run lucy report --refresh-cases")
    kinds: list[frozenset[str]] = [frozenset()] + sorted((rows for rows in signatures.failing.values() if rows), key=sorted)
    pick = random.Random(7)
    with Gradebook(course_db_url(course.root)) as gb, warnings.catch_warnings():
        warnings.simplefilter("ignore", SAWarning)  # nbgrader's add_submission autoflushes half-made rows; harmless
        for i in range(learners):
            _synthesised_learner(gb, unit, f"learner_{i:03d}", pick.choice(kinds), autograded, course.root)
        gb.db.commit()
    # Timed as an educator runs it: the command, its imports included.
    started = time.monotonic()
    done = subprocess.run([sys.executable, "-m", "lucy_runtime.cli", "report", unit, "--course", str(course.root)],
                          capture_output=True, text=True)
    took = round(time.monotonic() - started, 2)
    csv = course.root / "reports" / f"{unit}.csv"
    lines = len(csv.read_text(encoding="utf-8").splitlines()) - 1 if csv.exists() else 0
    if done.returncode != 0 or lines != learners + 1:
        raise BenchFailed(f"lucy report wrote {lines} learners, not {learners + 1} (exit {done.returncode}):\n"
                          f"{(done.stdout + done.stderr)[-1500:]}")
    class_seconds = round(submission_seconds * learners, 1)
    return ReportBench(learners, took, submission_seconds, class_seconds, round(took / class_seconds, 4))


class _EchoLoop:
    def run(self, session_id: str, text: str):

        return LoopResult(f"answer to {text}", session_id, 1)


def bench_queue(notebook_dir: Path, items: int, workdir: Path) -> QueueBench:
    from persistqueue import SQLiteAckQueue  # noqa: PLC0415 - a dev dependency, needed by this one section only


    ns = _learner(notebook_dir).namespace()
    commits = 0

    def count(kind: str, sql: str) -> None:
        nonlocal commits
        commits += kind == "committed"

    with Store(workdir / "lucy.sqlite3") as store:
        ns["create_schema"](store)
        queue = Queue(store, items + 1, items + 1)
        transport = FakeTransport(FakeService(workdir / "service.sqlite3"))
        loop = _EchoLoop()
        policy = DeliveryPolicy.for_store(store)
        store.set_hook(count)
        started = time.monotonic()
        reports = 0
        for i in range(items):
            ns["admit"](queue, f"source-{i}", "session-1", f"question {i}")
            reports += ns["work_once"](queue, loop, "worker-1") is not None
            ns["deliver_one"](store, transport, policy)
        queue_seconds = time.monotonic() - started
        store.set_hook(None)
    with Store(workdir / "raw.sqlite3") as raw:
        with raw.transaction() as tx:
            tx.execute("CREATE TABLE item (n INTEGER PRIMARY KEY, text TEXT NOT NULL)")
        started = time.monotonic()
        for i in range(items):
            with raw.transaction() as tx:
                tx.execute("INSERT INTO item (n, text) VALUES (?, ?)", (i, f"question {i}"))
        raw_seconds = time.monotonic() - started
    if reports != items:
        raise BenchFailed(f"the reference queue reported {reports} of {items} items")
    persist = SQLiteAckQueue(str(workdir / "persist-queue"), auto_commit=True, multithreading=False)
    started = time.monotonic()
    for i in range(items):
        persist.put(f"question {i}")
        persist.ack(persist.get())
    persist_seconds = time.monotonic() - started
    rate = items / queue_seconds
    return QueueBench(items, round(rate, 1), round(items / raw_seconds, 1), round(items / persist_seconds, 1),
                      round(commits / items, 2), round(rate / (items / raw_seconds), 3),
                      round(rate / (items / persist_seconds), 3))


def bench_loop(config: BenchConfig, logs: Path, progress=lambda text: None) -> tuple[LoopTiming, ...]:
    """Each make target of the loop, run once in ``config.repo``; its output goes to ``logs``."""
    logs.mkdir(parents=True, exist_ok=True)
    timings = []
    for target, goal in config.loop:
        progress(f"loop: make {target} (goal {goal / 60:g} min)")
        log = logs / f"bench-loop-{target}.log"
        started = time.monotonic()
        with log.open("w", encoding="utf-8") as out:
            done = subprocess.run(["make", target], cwd=config.repo, stdout=out, stderr=subprocess.STDOUT)
        seconds = round(time.monotonic() - started, 1)
        timings.append(LoopTiming(target, seconds, goal, round(seconds / goal, 2), done.returncode, str(log)))
    return tuple(timings)


def bench_hub(config: BenchConfig) -> HubBench:
    """Half the class hands in the reference, half the notebook as fetched; each half must get one grade."""
    unit = "ch07_unit_a"
    names = [f"lbench{i:02d}" for i in range(config.hub_learners)]
    release = nbformat.read(str(config.repo / "release" / unit / f"{unit}.ipynb"), as_version=4)
    source = nbformat.read(str(config.repo / "source" / unit / f"{unit}.ipynb"), as_version=4)
    reference = with_written_answers(filled(release, source), source)
    full = set(names[::2])
    with scratch_class(config.repo, names, "lbench") as (site, client, _):
        run = run_class(site, client, {name: (reference if name in full else None) for name in names}, unit)
    grades = run.grades
    return HubBench(run.learners, run.seconds, run.idle_memory_mb, run.peak_memory_mb,
                    round(run.peak_memory_mb - run.idle_memory_mb, 1), sorted(grades) == sorted(names),
                    len({grades.get(n) for n in full}) == 1 and {grades.get(n) for n in set(names) - full} == {0.0},
                    run.feedback_pages == {name: 1 for name in names})


def _refuse_unknown(sections: tuple[str, ...]) -> None:
    unknown = set(sections) - set(SECTIONS)
    if unknown:
        raise InvalidField("sections", f"unknown bench sections {sorted(unknown)}; choose from {', '.join(SECTIONS)}")


def _rows_section(config: BenchConfig, problems: list[str], progress) -> RowsBench:
    progress("rows: every row on the reference")
    rows = bench_rows(config.notebook_dir)
    if not rows.passed:
        problems.append("a row fails on the reference")
    return rows


def _queue_section(config: BenchConfig, workdir: Path, progress) -> QueueBench:
    progress(f"queue: {config.items} items end to end")
    (workdir / "queue").mkdir()
    return bench_queue(config.notebook_dir, config.items, workdir / "queue")


def _grading_section(config: BenchConfig, workdir: Path, problems: list[str],
                     progress) -> tuple[AutogradeBench | None, ClassBench | None]:
    progress("autograde: a scratch course (nbgrader)")
    autograde, klass = bench_grading(config, workdir)
    if klass and not klass.all_graded:
        problems.append("parallel grading left submissions ungraded: "
                        + "; ".join(line.splitlines()[0] for line in klass.not_graded))
    return autograde, klass


def _report_section(config: BenchConfig, workdir: Path, autograde: AutogradeBench | None, problems: list[str],
                    progress) -> ReportBench:
    progress(f"report: lucy report on a class of {config.learners} (synthesised)")
    (workdir / "report").mkdir()
    report = bench_report(workdir / "report", config.learners, autograde.submission_seconds if autograde else None)
    if report.report_seconds > report.goal_seconds:
        problems.append(f"the report on {report.learners} learners took {report.report_seconds:g} s, "
                        f"over its goal of {report.goal_seconds:g} s")
    return report


def _hub_section(config: BenchConfig, problems: list[str], progress) -> HubBench | None:
    if os.geteuid() != 0:
        problems.append("hub: a class on JupyterHub needs root (system accounts); not measured")
        return None
    progress(f"hub: a class of {config.hub_learners} learner accounts on JupyterHub")
    hub_bench: HubBench | None = None
    try:
        hub_bench = bench_hub(config)
    except HubError as problem:
        problems.append(f"hub: {problem}")
    held = hub_bench and hub_bench.all_graded and hub_bench.same_notebook_same_grade and hub_bench.own_feedback_each
    if hub_bench is not None and not held:
        problems.append("hub: a learner's grade or feedback is missing or differs from the same notebook's")
    return hub_bench


def _loop_section(config: BenchConfig, problems: list[str], progress) -> tuple[LoopTiming, ...]:
    loop = bench_loop(config, config.repo / "artifacts", progress)
    problems += [f"make {t.target} failed (exit {t.exit_code}); see {t.log}" for t in loop if t.exit_code]
    return loop


def run_bench(config: BenchConfig = BenchConfig(), *, progress=lambda text: None) -> BenchReport:
    _refuse_unknown(config.sections)
    started = time.monotonic()
    rows = autograde = klass = queue = report = None
    hub_bench: HubBench | None = None
    loop: tuple[LoopTiming, ...] = ()
    problems: list[str] = []
    workdir = Path(tempfile.mkdtemp(prefix="lucy-bench-"))
    try:
        if "rows" in config.sections:
            rows = _rows_section(config, problems, progress)
        if "queue" in config.sections:
            queue = _queue_section(config, workdir, progress)
        if {"autograde", "class"} & set(config.sections):
            autograde, klass = _grading_section(config, workdir, problems, progress)
        if "report" in config.sections:
            report = _report_section(config, workdir, autograde, problems, progress)
        if "hub" in config.sections:
            hub_bench = _hub_section(config, problems, progress)
        if "loop" in config.sections:
            loop = _loop_section(config, problems, progress)
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    settings = {k: str(v) if isinstance(v, Path) else v for k, v in asdict(config).items()}
    return BenchReport(settings, rows, autograde, klass, queue, report, loop, round(time.monotonic() - started, 1),
                       tuple(problems), hub_bench)


def summary(report: BenchReport) -> str:
    lines = []
    if report.rows:
        r = report.rows
        lines += [f"{'row':<28} {'seconds':>8} {'x one fork':>11}"]
        lines += [f"{row:<28} {s:>8.3f} {s / r.fork_seconds:>11.0f}" for row, s in r.rows.items()]
        lines += [f"\nall {len(r.rows)} rows for one learner: {r.seconds:.2f} s = {r.of_budget:.2f} of the 10 s budget "
                  f"= {r.forks:.0f} process forks",
                  f"slowest crash row ({r.slowest_crash_row}): {r.slowest_crash_of_1s:.2f} of the 1 s budget"]
    if report.autograde:
        a = report.autograde
        lines.append(f"one submission's autograde: {a.ratio:.2f} x a trivial one-cell notebook's (the kernel's floor)")
    if report.klass:
        k = report.klass
        lines.append(f"class grading, {k.submissions} submissions: --jobs {k.jobs} is {k.speedup:.2f} x sequential "
                     f"nbgrader (goal: 1.7 x on 2 cores)")
    if report.queue:
        q = report.queue
        lines.append(f"reference queue end to end: {q.vs_raw_commits:.3f} x raw single-row commits, "
                     f"{q.vs_persist_queue:.3f} x persist-queue put/get/ack; "
                     f"{q.transactions_per_item:.2f} transactions per item")
    if report.report:
        c = report.report
        lines.append(f"class report, {c.learners} learners: {c.report_seconds:g} s (goal: under {c.goal_seconds:g} s on "
                     f"2 cores) = {c.of_autograde:.4f} x autograding them one after another "
                     f"({c.learners} x {c.submission_seconds:g} s)")
    for t in report.loop:
        lines.append(f"make {t.target}: {t.seconds / 60:.1f} min = {t.of_goal:.2f} x its goal of {t.goal_seconds / 60:g} min"
                     + ("" if t.exit_code == 0 else f" (FAILED, exit {t.exit_code})"))
    if report.hub:
        h = report.hub
        lines.append(f"a class of {h.learners} on JupyterHub: " + ", ".join(f"{k} {v:g} s" for k, v in h.seconds.items())
                     + f"; {h.servers_memory_mb:.0f} MB more memory in use with every server running "
                     f"(peak {h.peak_memory_mb:.0f} MB)")
    lines += [f"PROBLEM: {p}" for p in report.problems]
    return "\n".join(lines)
