"""The integrated checker: acceptance rows run against the learner's own functions.

* ``check(topic)`` — for learners: a table of rows with a hint for each failing one.
* ``grade(row_id)`` — for nbgrader's hidden test cells: raises when the row fails.

Both take the learner's functions from the notebook that calls them. Learner code
runs only in forked children; verdicts come from a fresh observer process.
"""

from __future__ import annotations

import os
import sys
import time
import warnings
from typing import Iterable

from ..errors import GradeFailure, NotWrittenYet, UnknownName
from ..notebooks.units import UNIT_NOTEBOOKS
from .harness import Harness, KernelLearner, LearnerCode, SourceLearner, SwappedLearner
from .results import CheckReport, RowResult
from .rows import ROWS, TOPICS, Fail, Row
from .stub import is_release_stub


def select_rows(topic: str) -> list[Row]:
    """Rows by id, by topic, by unit ('A', 'B', 'P' for the practice notebook) or 'all'."""
    if topic in ROWS:
        return [ROWS[topic]]
    if topic == "all":
        return list(ROWS.values())
    unit = topic.upper().removeprefix("UNIT-").removeprefix("UNIT ")
    chosen = [r for r in ROWS.values() if r.topic == topic or r.unit == unit]
    if not chosen:
        known = ", ".join(sorted(TOPICS) + ["A", "B", "P", "all"])
        raise UnknownName(f"no rows for {topic!r}; try one of: {known}, or a row id from `lucy rows`")
    return chosen


def rows_for_cells(topic: str, cells: list[tuple[str, str]]) -> list[Row]:
    """The rows for ``topic`` whose unit has cells among ``cells`` (named ``unit:grade_id``)."""
    units = {name.split(":")[0] for name, _ in cells}
    return [r for r in select_rows(topic) if UNIT_NOTEBOOKS[r.unit] in units]


def run_row(row: Row, harness: Harness) -> RowResult:
    started, crashes_before = time.monotonic(), harness.crash_points
    try:
        observation, passed, hint = row.run(harness), True, ""
    except Fail as failure:
        observation, passed, hint = failure.observation, False, row.failure_hint(failure.hint or row.hint)
    except Exception as exc:  # a fault of the checker's own, never a pass
        observation, passed = f"the checker could not finish this row ({type(exc).__name__}: {exc})", False
        hint = "Tell your educator: this is a problem in the checker, not necessarily in your code."
    return RowResult(row.id, passed, observation, hint, round(time.monotonic() - started, 3), row.covers,
                     harness.crash_points - crashes_before)


def run_rows(learner: LearnerCode, rows: Iterable[Row], *, seed: int | None = None, timeout: float = 5.0,
             title: str = "Self-check") -> CheckReport:
    with Harness(learner, seed=seed, timeout=timeout) as harness:
        return CheckReport(tuple(run_row(row, harness) for row in rows), title)


SEALED_ENV = "LUCY_GRADING"
"""Set to "sealed" in the environment of a kernel that nbgrader autogrades."""
NOT_RUN_UNDER_AUTOGRADE = ("not run while nbgrader autogrades this notebook; "
                           "the graded cells below were checked outside it, after it ran")


def _caller_namespace(depth: int = 2) -> dict:
    return sys._getframe(depth).f_globals


def check(topic: str = "all", namespace: dict | None = None, *, swap: dict[str, str] | None = None) -> CheckReport:
    """Run the rows for ``topic`` against the functions defined in this notebook.

    ``swap={"finish": "broken_finish"}`` runs them with one of your functions standing
    in for another.
    """
    rows = select_rows(topic)
    learner: LearnerCode = KernelLearner(namespace if namespace is not None else _caller_namespace())
    if swap:
        learner = SwappedLearner(learner, swap)
    title = f"Self-check '{topic}'" + (f" with {', '.join(f'{v} as {k}' for k, v in swap.items())}" if swap else "")
    if os.environ.get(SEALED_ENV) == "sealed":
        # Under nbgrader autograde a self-check decides nothing: the graded rows run once,
        # outside the kernel (lucy_runtime/grading/sealed.py). Running them here too only costs time.
        return CheckReport((), title, not_run=NOT_RUN_UNDER_AUTOGRADE)
    return run_rows(learner, rows, title=title)


def grade(row_id: str, namespace: dict | None = None) -> None:
    """Run one row with values made up now; raise GradeFailure if it does not hold.

    Returns None on purpose: nbgrader would read a cell's final value as partial credit.
    """
    if row_id not in ROWS:
        raise UnknownName(f"unknown row {row_id!r}")
    if os.environ.get(SEALED_ENV) == "sealed":
        # Under nbgrader autograde the verdict outside the kernel replaces this cell's outputs
        # (lucy_runtime/grading/sealed.py): running the row here too would only double the time.
        print(f"{row_id}: graded outside the notebook, after it has run")
        return
    learner = KernelLearner(namespace if namespace is not None else _caller_namespace())
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # anything on stderr costs the cell its points
        result = run_rows(learner, [ROWS[row_id]], title=row_id).results[0]
    if not result.passed:
        raise GradeFailure(result)
    print(f"✔ {row_id}: {result.observation}")


def ready(*names: str, namespace: dict | None = None) -> None:
    """Fail fast unless each named function is defined and no longer the release stub."""
    ns = namespace if namespace is not None else _caller_namespace()
    missing = [n for n in names if not callable(ns.get(n))]
    stubs = [n for n in names if n not in missing and is_release_stub(ns[n])]
    if missing or stubs:
        parts = ([f"not defined: {', '.join(missing)}"] if missing else []) + \
                ([f"not written yet: {', '.join(stubs)}"] if stubs else [])
        raise NotWrittenYet("This row grades " + ", ".join(names) + " — " + "; ".join(parts) + ".")


__all__ = ["NotWrittenYet", "ready", "CheckReport", "GradeFailure", "ROWS", "RowResult", "SourceLearner", "check", "grade", "run_rows",
           "rows_for_cells", "select_rows"]
