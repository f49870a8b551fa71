"""A row that requires an error counts only the learner's own exception, never the
harness's complaint about a return value, and says so when an error was swallowed."""

from __future__ import annotations

from lucy_runtime.checker import run_rows
from lucy_runtime.checker.rows import ROWS
from lucy_runtime.educator.alternatives import ALTERNATIVES
from lucy_runtime.educator.cases import by_name

from .conftest import learner_with

ERROR_ROWS = ["finish-misuse", "finish-fenced", "finish-rollback"]


def alternative(name: str):
    return next(a for a in ALTERNATIVES if a.name == name)


def results(cells, case, rows):
    report = run_rows(learner_with(cells, case), [ROWS[r] for r in rows], seed=23)
    return {r.row_id: r for r in report.results}


def test_a_swallowing_finish_fails_the_rows_that_require_an_error(reference_cells):
    for name in ("swallowed-error", "swallowed-error-in-repair"):  # `return None` and `pass`
        got = results(reference_cells, by_name(name), ERROR_ROWS)
        for row_id in ERROR_ROWS:
            assert not got[row_id].passed, (name, row_id)
            assert "returned None instead of raising" in got[row_id].observation
            assert "ContractBroken" not in got[row_id].observation
            assert "re-raising hides the failure from the caller" in got[row_id].hint


def test_a_finish_that_raises_its_own_exception_class_passes_the_rows_that_require_an_error(reference_cells):
    got = results(reference_cells, alternative("finish-raises-its-own-error"), ERROR_ROWS)
    assert {r: got[r].observation for r in ERROR_ROWS if not got[r].passed} == {}


def test_a_swallowing_requeue_fails_second_generation_with_the_swallowed_error_hint(reference_cells):
    got = results(reference_cells, by_name("requeue-swallows-error"), ["second-generation"])["second-generation"]
    assert not got.passed
    assert "returned without an error" in got.observation
    assert "re-raising hides the failure from the caller" in got.hint


def test_a_wrong_return_value_is_named_as_a_return_value_not_as_an_error_the_learner_raised(reference_cells):
    from .test_checker_behaviour import edited, run_one

    nothing = run_one(edited(reference_cells, "deliver_one", "return None"), "delivery-confirmed")
    assert not nothing.passed
    assert "deliver_one returned None" in nothing.observation and "your code raised" not in nothing.observation
    assert "re-raising" in nothing.hint
    text = run_one(edited(reference_cells, "deliver_one", "return 'confirmed'"), "delivery-confirmed")
    assert "deliver_one returned 'confirmed'" in text.observation and "your code raised" not in text.observation
    assert "Return the value the docstring names" in text.hint
