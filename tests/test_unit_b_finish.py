"""Unit B grades its finish rows on the finish written in Unit B, so a Unit A slip costs its points once."""

from __future__ import annotations

from lucy_runtime.checker import SourceLearner, run_rows
from lucy_runtime.checker.rows import ROWS
from lucy_runtime.educator.cases import Edit

FINISH_ROWS = ("finish-rollback", "crash-sweep", "model-based", "second-generation", "stale-finish-refused",
               "deliberate-break-caught")


def failing(cells, rows=FINISH_ROWS) -> set[str]:
    report = run_rows(SourceLearner(cells), [ROWS[r] for r in rows], seed=31)
    return {r.row_id for r in report.results if not r.passed}


def with_unit_a_finish_bare_pass(cells, *, unit_b_finish: bool = True):
    """The reference with Unit A's finish a bare `pass`; without ``unit_b_finish``, Unit B has no finish cell."""
    bare = Edit("finish", None, "pass")
    edited = [(n, bare.apply(s) if n == "ch07_unit_a:finish" else s) for n, s in cells]
    return edited if unit_b_finish else [(n, s) for n, s in edited if n != "ch07_unit_b:finish"]


def test_unit_b_has_a_finish_cell_of_its_own(reference_cells):
    names = [n for n, _ in reference_cells]
    assert "ch07_unit_b:finish" in names
    assert names.index("ch07_unit_b:finish") > names.index("ch07_unit_a:finish")


def test_a_bare_pass_finish_in_unit_a_costs_unit_b_nothing_once_unit_b_finish_is_right(reference_cells):
    unit_a_and_b = [(n, s) for n, s in reference_cells if not n.startswith("ch07_practice")]
    assert failing(with_unit_a_finish_bare_pass(unit_a_and_b)) == set()
    # Without Unit B's own finish, the same slip would cost Unit B every one of these rows: the test can fail.
    assert failing(with_unit_a_finish_bare_pass(unit_a_and_b, unit_b_finish=False)) == set(FINISH_ROWS)


def test_a_bare_pass_finish_in_unit_b_is_caught_by_unit_b_rows(reference_cells):
    unit_a_and_b = [(n, s) for n, s in reference_cells if not n.startswith("ch07_practice")]
    bare = Edit("finish", None, "pass")
    edited = [(n, bare.apply(s) if n == "ch07_unit_b:finish" else s) for n, s in unit_a_and_b]
    assert failing(edited, ("finish-rollback", "stale-finish-refused", "second-generation")) == {
        "finish-rollback", "stale-finish-refused", "second-generation"}
