"""Crash injection that learner code can neither see nor dodge (issue: grades that cannot be forged).

The parent decides at every reported point; a crash counts only when the parent killed
the child; writes that bypass queue.store are caught; races pause where a check made
outside the transaction goes stale. Each tamper case scores no more than its honest base.
"""

from __future__ import annotations

import os

import pytest

from lucy_runtime.checker import run_rows
from lucy_runtime.engine.result import Status
from lucy_runtime.engine.supervisor import run_in_child
from lucy_runtime.engine.faults import Count, KillAt, FailAt, Stop
from lucy_runtime.checker.rows import ROWS
from lucy_runtime.educator.cases import Case, by_name
from lucy_runtime.proof.tampers import TAMPERS, Append, tamper_by_name
from lucy_runtime.store import Store

from .conftest import learner_with


def _write_twice(db: str):
    def script():
        store = Store(db)
        for n in (1, 2):
            with store.transaction() as tx:
                tx.execute("CREATE TABLE IF NOT EXISTS t (n INTEGER)")
                tx.execute("INSERT INTO t VALUES (?)", (n,))
        return [row[0] for row in store.query("SELECT n FROM t")]
    return script


def _rows(db) -> list[int]:
    with Store(db) as store:
        return [row[0] for row in store.query("SELECT n FROM t")]


def test_the_parent_kills_the_child_at_the_planned_point_and_only_that_counts_as_a_crash(tmp_path):
    db = str(tmp_path / "a.sqlite3")
    counted = run_in_child(_write_twice(db), plan=Count(), db=db)
    assert counted.status == Status.RETURNED and counted.value == [1, 2]
    kinds = [p.kind for p in counted.points]
    assert kinds.count("write") == 4 and kinds.count("commit") == 2 and kinds.count("begin") == 2

    db2 = str(tmp_path / "b.sqlite3")
    crashed = run_in_child(_write_twice(db2), plan=KillAt(1, kinds=("commit",)), db=db2)
    assert crashed.status == Status.CRASHED
    assert not os.path.exists(db2) or Store(db2).tables() == []


def test_an_exit_of_the_learners_own_is_never_a_crash(tmp_path):
    def exits():
        os._exit(77)  # the old crash status

    assert run_in_child(exits, plan=Stop()).status == Status.DIED
    assert run_in_child(exits, plan=KillAt(1)).status == Status.DIED


def test_a_planned_fault_raises_in_the_child_and_rolls_back(tmp_path):
    db = str(tmp_path / "c.sqlite3")
    result = run_in_child(_write_twice(db), plan=FailAt(4), db=db)
    assert result.status == Status.RAISED and "injected" in result.error.message
    assert _rows(db) == [1]


def test_the_store_shows_no_injector_and_every_run_sees_the_same_hooks(tmp_path):
    def look():
        import lucy_runtime.store as store_module

        store = Store(str(tmp_path / "d.sqlite3"))
        with store.transaction() as tx:
            tx.execute("CREATE TABLE IF NOT EXISTS t (n INTEGER)")
        return [repr(store._hook), type(store_module._process_hook).__name__]

    seen = [run_in_child(look, plan=plan).value for plan in (Count(), FailAt(99), KillAt(99), Stop())]
    assert seen[0] == ["None", "Probe"] and all(s == seen[0] for s in seen)


def test_a_commit_through_a_connection_of_ones_own_is_caught(tmp_path):
    db = str(tmp_path / "e.sqlite3")

    def private():
        import sqlite3

        store = Store(db)
        with store.transaction() as tx:
            tx.execute("CREATE TABLE t (n INTEGER)")
        own = sqlite3.connect(db, isolation_level=None)
        own.execute("INSERT INTO t VALUES (1)")
        own.close()
        with store.transaction() as tx:
            tx.execute("INSERT INTO t VALUES (2)")

    result = run_in_child(private, plan=Count(), db=db)
    assert result.status == Status.RETURNED
    assert "without a COMMIT through queue.store" in result.bypass
    honest = run_in_child(_write_twice(str(tmp_path / "f.sqlite3")), plan=Count(), db=str(tmp_path / "f.sqlite3"))
    assert honest.bypass == ""


def test_nothing_a_child_writes_to_its_pipes_is_unpickled(tmp_path):
    # In a process of its own, so the forged bytes land only in pipes the checker made.
    import subprocess
    import sys

    marker = tmp_path / "pwned"
    script = f"""
import os, pickle
from lucy_runtime.engine.supervisor import run_in_child
from lucy_runtime.engine.faults import Count


class Evil:
    def __reduce__(self):
        return (open, ({str(marker)!r}, "w"))


def forge():
    for fd in range(3, 64):
        try:
            os.write(fd, pickle.dumps(("returned", Evil(), None, "")))
        except OSError:
            pass
    os._exit(0)


print(run_in_child(forge, plan=Count()).status.value)
"""
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60)
    assert done.stdout.strip() == "died", done.stdout + done.stderr
    assert not marker.exists()


# --- the tamper cases, against the checker itself ----------------------------------------------


def _passes(checker, cells, case, unit: str) -> tuple[int, set[str]]:
    rows = [r for r in ROWS.values() if f"ch07_unit_{r.unit.lower()}" == unit]
    report = checker.run_rows(learner_with(cells, case), rows, seed=5)
    return sum(r.passed for r in report.results), {r.row_id for r in report.results if not r.passed}


@pytest.mark.slow
@pytest.mark.parametrize("tamper", [t for t in TAMPERS if t.honest != "blank-release" and not t.needs_sandbox],
                         ids=lambda t: t.name)
def test_a_tamper_case_scores_no_more_than_the_honest_case_beneath_it(checker, reference_cells, tamper):
    # Here the checker runs unsandboxed; the tampers only the sandbox holds are graded in tests/test_runs_from_nothing.py.
    base = None if tamper.honest == "reference" else by_name(tamper.honest)
    tampered, failing = _passes(checker, reference_cells, tamper.as_case(base), tamper.unit)
    honest, _ = _passes(checker, reference_cells, base, tamper.unit)
    assert tampered <= honest, failing


@pytest.mark.parametrize("name, row", [("sniff-the-injector", "finish-atomic"),
                                       ("private-connection-finish", "finish-atomic"),
                                       ("private-report-after-commit", "finish-atomic"),
                                       ("forged-commit-window", "finish-atomic"),
                                       ("private-look-claim", "claim-concurrent")])
def test_each_trick_is_caught_by_the_row_it_tried_to_dodge(reference_cells, name, row):
    tamper = tamper_by_name(name)
    report = run_rows(learner_with(reference_cells, tamper.as_case(by_name(tamper.honest))), [ROWS[row]], seed=9)
    assert not report.results[0].passed, report.results[0].observation
    if name != "sniff-the-injector" and row == "finish-atomic":
        assert "queue.store" in report.results[0].observation + report.results[0].hint


_REPLACE_THE_READER = """
import lucy_runtime.observer as _observer, lucy_runtime.checker.observe as _observe
import lucy_runtime.checker.model_based as _model_based


def _an_empty_store(*args, **kwargs):
    return {"work": [], "reports": [], "accepted": [], "requests": [], "model_calls": 0, "problems": [],
            "ambiguous": [], "tables": {}}


for _module in (_observer, _observe, _model_based):
    for _name in ("snapshot", "read_between_children"):
        if hasattr(_module, _name):
            setattr(_module, _name, _an_empty_store)
"""


def test_a_learner_cell_that_replaces_the_checkers_reading_functions_does_not_change_the_model_based_verdict(
        reference_cells):
    """The model-based row reads the files after every step. Were the reading done in the child,
    which has run the learner's cells, a cell could replace it: here with one that sees an empty
    store, which would fail a correct queue (and a subtler one could pass a broken one)."""
    case = Case("replace-the-reader", "ch07_unit_b", (Append("schema", _REPLACE_THE_READER),), "", (), "")
    (result,) = run_rows(learner_with(reference_cells, case), [ROWS["model-based"]], seed=9).results
    assert result.passed, result.observation
