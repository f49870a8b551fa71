"""No false failures: correct implementations arranged differently from the reference
(report inserted before the state change, INSERT ... ON CONFLICT, one statement with
RETURNING, a different schema, ...) pass every row that runs their cells.

Apart from tests/test_rows.py, so the two halves of the row checks run side by side.
"""

from __future__ import annotations

import pytest

from lucy_runtime.checker.rows import ROWS
from lucy_runtime.educator.alternatives import ALTERNATIVES
from lucy_runtime.educator.practice_cases import PRACTICE_ALTERNATIVES

from .conftest import learner_with

ALL_ROWS = list(ROWS.values())


RUN_BY = {"ch07_unit_a": {"A", "B"}, "ch07_unit_b": {"B"}, "ch07_practice": {"P"}}
"""The rows whose scenarios run a unit's cells: Unit B's rows run the learner's Unit A too.
The other rows run only cells an alternative leaves as the reference has them."""


IN_THE_FAST_LOOP = {
    "report-before-state", "admit-insert-on-conflict", "finish-update-returning", "schema-with-extras",
    "state-machine-triggers", "work-counter-renamed", "chat-hold-table", "practice-publish-tries-table",
}
"""One of each arrangement the standards name, in each unit, for `make test-fast`; the others are
marked slow (each runs every row of its unit, about 5 s): `make test` runs them all."""


def params(alternatives):
    return [pytest.param(a, id=a.name, marks=() if a.name in IN_THE_FAST_LOOP else pytest.mark.slow)
            for a in alternatives]


def test_the_fast_loop_names_real_alternatives_of_every_unit():
    everyone = {a.name: a.unit for a in ALTERNATIVES + PRACTICE_ALTERNATIVES}
    assert IN_THE_FAST_LOOP <= set(everyone)
    assert {everyone[name] for name in IN_THE_FAST_LOOP} == set(everyone.values())


@pytest.mark.parametrize("alternative", params(ALTERNATIVES + PRACTICE_ALTERNATIVES))
def test_a_correct_alternative_passes_every_row(checker, reference_cells, alternative):
    rows = [r for r in ALL_ROWS if r.unit in RUN_BY[alternative.unit]]
    report = checker.run_rows(learner_with(reference_cells, alternative), rows, seed=17)
    assert {r.row_id: r.observation for r in report.results if not r.passed} == {}
