"""Every acceptance row holds on the reference and fails on a named known-bad case.
(Correct implementations arranged differently: tests/test_alternatives.py.)"""

from __future__ import annotations

import pytest

from lucy_runtime.checker import select_rows
from lucy_runtime.checker.rows import ROWS
from lucy_runtime.educator.cases import CASES

from .conftest import learner_with

ALL_ROWS = list(ROWS.values())


@pytest.fixture(scope="module")
def reference_report(checker, reference_cells):
    return checker.run_rows(learner_with(reference_cells), ALL_ROWS, seed=11)


def test_every_row_holds_on_the_reference(reference_report):
    failing = {r.row_id: r.observation for r in reference_report.results if not r.passed}
    assert failing == {}
    assert len(reference_report.results) == len(ALL_ROWS)


def test_every_row_is_expected_to_catch_at_least_one_named_case():
    from lucy_runtime.educator.practice_cases import PRACTICE_CASES

    caught_by_design = {row for case in CASES + PRACTICE_CASES for row in case.expected}
    assert [r.id for r in ALL_ROWS if r.id not in caught_by_design] == []


def test_case_names_are_unique_and_there_are_at_least_18():
    names = [c.name for c in CASES]
    assert len(names) == len(set(names)) and len(names) >= 18


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
def test_each_case_fails_the_rows_expected_to_catch_it(checker, reference_cells, case):
    report = checker.run_rows(learner_with(reference_cells, case), [ROWS[r] for r in case.expected], seed=13)
    survived = [r.row_id for r in report.results if r.passed]
    assert survived == [], f"{case.name} passed {survived}"


def test_rows_are_judged_with_values_made_up_at_grading_time(reference_cells):
    from lucy_runtime.checker import Harness

    first, second = Harness(learner_with(reference_cells)), Harness(learner_with(reference_cells))
    try:
        assert first.source_id() != second.source_id() or first.text() != second.text()
    finally:
        first.close()
        second.close()


def test_select_rows_by_topic_unit_and_id():
    assert [r.id for r in select_rows("schema")] == ["schema-columns"]
    assert select_rows("finish-atomic")[0].id == "finish-atomic"
    assert {r.unit for r in select_rows("A")} == {"A"}
    with pytest.raises(KeyError, match="try one of"):
        select_rows("nonsense")


def test_each_topic_module_registers_its_own_rows_under_declared_topics():
    import importlib
    import pkgutil

    from lucy_runtime.checker import topics
    from lucy_runtime.checker.kit import TOPICS

    modules = [m.name for m in pkgutil.iter_modules(topics.__path__)]
    owners = {r.run.__module__.rsplit(".", 1)[-1] for r in ALL_ROWS}
    assert set(modules) == owners, "a topic module registers no row, or a row lives outside checker/topics"
    assert all(importlib.import_module(f"lucy_runtime.checker.topics.{m}") for m in modules)
    assert {r.topic for r in ALL_ROWS} <= set(TOPICS)


def test_the_checkpoint_rows_are_rows_of_the_kit_run_by_the_same_runner_but_kept_out_of_check_all():
    from lucy_runtime.checker.kit import Row
    from lucy_runtime.checker.rows import CHECKPOINT_ROWS

    assert CHECKPOINT_ROWS and all(isinstance(r, Row) for r in CHECKPOINT_ROWS.values())
    assert not set(CHECKPOINT_ROWS) & {r.id for r in select_rows("all")}
