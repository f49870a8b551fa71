"""The practice notebook's rows hold on its reference, catch each practice case, and pass correct alternatives."""

from __future__ import annotations

import pytest

from lucy_runtime.checker import SourceLearner, run_rows, select_rows
from lucy_runtime.checker.rows import ROWS
from lucy_runtime.educator.practice_cases import PRACTICE_CASES
from lucy_runtime.notebooks.notebook import learner_cells

from .conftest import REPO, learner_with

PRACTICE_ROWS = [r for r in ROWS.values() if r.unit == "P"]


@pytest.fixture(scope="module")
def practice_cells() -> list[tuple[str, str]]:
    unit = REPO / "source" / "ch07_practice" / "ch07_practice.ipynb"
    return [(f"{c.unit}:{c.grade_id}", c.source) for c in learner_cells(unit)]


def test_every_practice_row_holds_on_the_reference_alone(checker, practice_cells):
    report = checker.run_rows(learner_with(practice_cells), PRACTICE_ROWS, seed=23)
    assert {r.row_id: r.observation for r in report.results if not r.passed} == {}
    assert len(PRACTICE_ROWS) == 9 and report.crash_points > 0


def test_every_practice_row_is_expected_to_catch_a_named_practice_case():
    caught = {row for case in PRACTICE_CASES for row in case.expected}
    assert [r.id for r in PRACTICE_ROWS if r.id not in caught] == []


def test_the_issue_s_four_cases_are_there():
    names = {c.name for c in PRACTICE_CASES}
    assert {"practice-per-attempt-key", "practice-retry-timeout-without-key", "practice-status-before-publish",
            "practice-reconcile-from-ledger", "practice-retry-permanent-refusal",
            "practice-500-refused-at-once"} <= names and len(names) == len(PRACTICE_CASES)


@pytest.mark.parametrize("case", PRACTICE_CASES, ids=lambda c: c.name)
def test_each_practice_case_fails_the_rows_expected_to_catch_it(checker, practice_cells, case):
    report = checker.run_rows(learner_with(practice_cells, case), [ROWS[r] for r in case.expected], seed=29)
    assert [r.row_id for r in report.results if r.passed] == [], case.name


def test_the_blank_release_is_not_written_yet_on_every_practice_row():
    released = REPO / "release" / "ch07_practice" / "ch07_practice.ipynb"
    cells = [(f"{c.unit}:{c.grade_id}", c.source) for c in learner_cells(released)]
    report = run_rows(SourceLearner(cells), PRACTICE_ROWS, seed=37)
    assert not any(r.passed for r in report.results)
    assert all("not written yet" in r.observation for r in report.results), report


def test_the_practice_cells_bind_no_name_of_units_a_and_b(reference_cells):
    """``lucy check`` and the checkpoint run every notebook's cells in one namespace: nothing may shadow."""
    def names(unit: str) -> set[str]:
        bound = SourceLearner([c for c in reference_cells if c[0].startswith(unit + ":")]).namespace()
        return {name for name in bound if not name.startswith("__")}

    plain = set(SourceLearner([]).namespace())
    practice = names("ch07_practice") - plain
    assert practice and practice & (names("ch07_unit_a") | names("ch07_unit_b")) == set()


def test_check_selects_the_practice_rows_by_unit_and_by_topic():
    assert [r.id for r in select_rows("P")] == [r.id for r in PRACTICE_ROWS]
    assert {r.id for r in select_rows("grant")} == {"practice-grant-at-most-once", "practice-grant-error-classes",
                                                   "practice-grant-backoff"}


def test_the_practice_rubric_names_every_practice_row_and_each_red_flag_of_the_review():
    rubric = (REPO / "chapters" / "ch07" / "practice-rubric.md").read_text(encoding="utf-8")
    assert [r.id for r in PRACTICE_ROWS if f"`{r.id}`" not in rubric] == []
    flags = ["compensated after a timeout", "per-attempt key", "in-flight never cleared", "check-then-act",
             "swallowed compensation", "no jitter", "exactly-once claim"]
    assert [flag for flag in flags if flag not in rubric] == []


def test_a_publish_that_deletes_its_sent_row_fails_in_flight_resume_as_its_own_mistake(checker, practice_cells):
    """Not a fault of the checker's: the learner's code removed a row the row judges by its status."""
    from lucy_runtime.educator.cases import Case, Edit

    deletes = Case("practice-delete-when-sent", "ch07_practice",
                   (Edit("publish_one", "tx.execute(\"UPDATE outbox SET status = 'sent' WHERE row_id = ? AND status = 'publishing'\"",
                         "tx.execute(\"DELETE FROM outbox WHERE row_id = ? AND status = 'publishing'\""),), "", (), "")
    (result,) = checker.run_rows(learner_with(practice_cells, deletes), [ROWS["practice-in-flight-resume"]],
                                 seed=37).results
    assert not result.passed
    assert "is gone from the table after your code ran" in result.observation, result.observation
    assert "educator" not in result.hint and "Keep every row" in result.hint
