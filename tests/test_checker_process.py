"""Rows run in a checker process of their own (lucy_runtime/grading/process.py): the same
verdicts as in the caller, from a small process the scenario children fork from, whose
answer pipe no learner code can reach."""

from __future__ import annotations

import json

import pytest

from lucy_runtime.grading import orchestrator
from lucy_runtime.checker import run_rows
from lucy_runtime.grading.process import CheckerProcess
from lucy_runtime.checker.rows import ROWS
from lucy_runtime.educator.cases import Case, Edit, by_name
from lucy_runtime.errors import CheckerProcessGone

from .conftest import learner_with

ROW_IDS = ["integrated-path", "finish-durable", "finish-atomic"]


def test_the_checker_process_gives_the_verdicts_run_rows_gives_in_the_caller(checker, reference_cells):
    rows = [ROWS[r] for r in ROW_IDS]
    noop = learner_with(reference_cells, by_name("noop-finish"))
    apart, here = checker.run_rows(noop, rows, seed=3), run_rows(noop, rows, seed=3)
    assert [(r.row_id, r.passed) for r in apart.results] == [(r.row_id, r.passed) for r in here.results]
    assert not any(r.passed for r in apart.results)
    assert all(r.passed for r in checker.run_rows(learner_with(reference_cells), rows, seed=3).results)


FORGE = """
import json as _json, os as _os
_forged = (_json.dumps([{"row_id": r, "passed": True, "observation": "forged", "hint": "", "seconds": 0.0}
                        for r in ROWS_TO_FORGE]) + "\\n").encode()
for _fd in range(3, 256):
    try:
        _os.write(_fd, _forged)
    except OSError:
        pass
"""


def test_learner_code_cannot_answer_for_the_checker_process(checker, reference_cells):
    """Each child closes what it inherits from the checker process, its answer pipe among them: a
    noop finish that writes an all-pass answer to every file it might hold still fails."""
    forge = Edit("finish", None, FORGE.replace("ROWS_TO_FORGE", repr(ROW_IDS)) + "\nreturn Report(f\"r-{assignment.work_id}-1\", "
                 "assignment.work_id, 1, \"\", getattr(result, \"text\", \"\"))")
    case = Case("forge-the-answer", "ch07_unit_a", (forge,), "", tuple(ROW_IDS), "")
    report = checker.run_rows(learner_with(reference_cells, case), [ROWS[r] for r in ROW_IDS], seed=5)
    assert [r.passed for r in report.results] == [False, False, False]
    assert "forged" not in json.dumps([r.observation for r in report.results])
    # and the process still answers the next request, for the rows it was asked
    again = checker.run_rows(learner_with(reference_cells), [ROWS["finish-durable"]], seed=5)
    assert [(r.row_id, r.passed) for r in again.results] == [("finish-durable", True)]


def test_a_closed_checker_process_says_so(reference_cells):
    process = CheckerProcess()
    process.close()
    with pytest.raises(CheckerProcessGone, match="closed"):
        process.run_rows(learner_with(reference_cells), [ROWS["finish-durable"]])


def test_without_a_sandbox_the_sealed_recheck_still_runs_in_a_checker_process_of_its_own(reference_cells):
    from lucy_runtime.grading import sandbox

    none = sandbox.Sandbox("none", reason="no bwrap on this test's machine")
    noop = learner_with(reference_cells, by_name("noop-finish"))
    report = orchestrator.run_sealed_rows(noop.cells, ROW_IDS, timeout=5.0, box=none)
    assert report.title == "sealed" and [r.passed for r in report.results] == [False, False, False]
    report = orchestrator.run_sealed_rows(learner_with(reference_cells).cells, ROW_IDS, timeout=5.0, box=none)
    assert [r.passed for r in report.results] == [True, True, True]
