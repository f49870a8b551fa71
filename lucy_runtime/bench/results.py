"""What one bench run measured: each section's numbers, as ``make bench`` writes them to JSON.

One frozen dataclass per section of ``bench.py`` (rows, autograde, class, report, queue,
hub, the contributors' loop), and ``BenchReport``, which holds them with the run's settings
and the problems it found; ``BenchReport.to_json`` is what ``artifacts/bench.json`` holds.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field


@dataclass(frozen=True)
class RowsBench:
    rows: dict[str, float]
    seconds: float
    fork_seconds: float
    of_budget: float
    forks: float
    slowest_crash_row: str
    slowest_crash_of_1s: float
    passed: bool


@dataclass(frozen=True)
class AutogradeBench:
    submission_seconds: float
    trivial_seconds: float
    ratio: float


@dataclass(frozen=True)
class ClassBench:
    """Seconds are the mean of two runs of each side; the speedup is their ratio."""

    submissions: int
    jobs: int
    sequential_seconds: float
    parallel_seconds: float
    speedup: float
    all_graded: bool
    not_graded: tuple[str, ...] = ()  # "student: status", then the end of that student's nbgrader log


@dataclass(frozen=True)
class ReportBench:
    """``lucy report`` on a synthesised class, beside autograding the same class sequentially."""

    learners: int
    report_seconds: float
    submission_seconds: float  # one real nbgrader autograde of the reference, here
    autograde_seconds: float  # learners x submission_seconds
    of_autograde: float
    goal_seconds: float = 30.0


@dataclass(frozen=True)
class QueueBench:
    items: int
    queue_items_per_s: float
    raw_commits_per_s: float
    persist_queue_items_per_s: float
    transactions_per_item: float
    vs_raw_commits: float
    vs_persist_queue: float


@dataclass(frozen=True)
class HubBench:
    """A scripted class on JupyterHub (lucy_runtime/hub/scratch.py): wall seconds per step, and the
    machine's memory in use before and at its peak while every learner's server ran."""

    learners: int
    seconds: dict[str, float]
    idle_memory_mb: float
    peak_memory_mb: float
    servers_memory_mb: float
    all_graded: bool
    same_notebook_same_grade: bool
    own_feedback_each: bool


@dataclass(frozen=True)
class LoopTiming:
    target: str
    seconds: float
    goal_seconds: float
    of_goal: float
    exit_code: int
    log: str


@dataclass(frozen=True)
class BenchReport:
    config: dict
    rows: RowsBench | None = None
    autograde: AutogradeBench | None = None
    klass: ClassBench | None = None
    queue: QueueBench | None = None
    report: ReportBench | None = None
    loop: tuple[LoopTiming, ...] = ()
    seconds: float = 0.0
    problems: tuple[str, ...] = field(default_factory=tuple)
    hub: HubBench | None = None

    def to_json(self) -> str:
        data = asdict(self)
        data["class"] = data.pop("klass")
        return json.dumps(data, indent=2, default=str)
