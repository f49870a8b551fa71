"""The sealed verdict reads, from a handed-in notebook, exactly the cells the row tests check.

Under `nbgrader autograde` a submission's score is the sealed verdict alone (sealed.py):
the rows, run on the learner cells it takes from the notebook. tests/test_rows.py,
test_alternatives.py and test_practice.py run the same rows on the reference cells with
each case's edits. So where the two sets of cells are equal, those tests decide what
nbgrader records for every case and alternative; test_grader_nbgrader.py grades a sample
of them through real nbgrader, and `make demo` grades them all.
"""

from __future__ import annotations

import nbformat
import pytest

from lucy_runtime.cells import strip_markers
from lucy_runtime.educator.alternatives import ALTERNATIVES
from lucy_runtime.educator.cases import CASES, Case
from lucy_runtime.educator.practice_cases import PRACTICE_ALTERNATIVES, PRACTICE_CASES
from lucy_runtime.educator.verify import Entry, Kind, handed_in
from lucy_runtime.notebook import learner_cells
from lucy_runtime.sealed import notebook_learner

from .conftest import REPO, with_case

EVERY_CASE = CASES + ALTERNATIVES + PRACTICE_CASES + PRACTICE_ALTERNATIVES


def read(area: str, unit: str) -> nbformat.NotebookNode:
    return nbformat.read(str(REPO / area / unit / f"{unit}.ipynb"), as_version=4)


def sealed_cells(tmp_path, case: Case) -> list[tuple[str, str]]:
    """What the sealed verdict reads for ``case``, handed in as the verify hands it in."""
    entry = Entry(case.name, Kind.ALTERNATIVE if case in ALTERNATIVES + PRACTICE_ALTERNATIVES else Kind.CASE, case.unit)
    notebooks = handed_in(entry, case, release=lambda unit: read("release", unit), source=lambda unit: read("source", unit))
    for unit, nb in notebooks.items():
        (tmp_path / "submitted" / entry.student / unit).mkdir(parents=True)
        nbformat.write(nb, str(tmp_path / "submitted" / entry.student / unit / f"{unit}.ipynb"))
    learner = notebook_learner(notebooks[case.unit], case.unit, str(tmp_path / "submitted" / entry.student / case.unit))
    # A definitions cell keeps its lines where the notebook has them; blank lines after its end change nothing.
    return [(name, source.rstrip("\n")) for name, source in learner.cells]


def checked_cells(reference_cells, case: Case) -> list[tuple[str, str]]:
    """What the row tests run for ``case``, limited to the units its submission carries."""
    if case.unit == "ch07_practice":
        practice = REPO / "source" / "ch07_practice" / "ch07_practice.ipynb"
        cells = with_case([(f"{c.unit}:{c.grade_id}", c.source) for c in learner_cells(practice)], case)
    else:
        carried = ("ch07_unit_a", "ch07_unit_b") if case.unit == "ch07_unit_b" else ("ch07_unit_a",)
        cells = [cell for cell in with_case(reference_cells, case) if cell[0].split(":", 1)[0] in carried]
    # The reference keeps its solution markers (comments to Python); a handed-in notebook has none.
    return [(name, strip_markers(source).rstrip("\n")) for name, source in cells]


@pytest.mark.parametrize("case", EVERY_CASE, ids=lambda c: c.name)
def test_the_sealed_verdict_reads_the_cells_the_row_tests_check(tmp_path, reference_cells, case):
    sealed = sealed_cells(tmp_path, case)
    assert sealed == checked_cells(reference_cells, case)
    assert sealed != checked_cells(reference_cells, Case("reference", case.unit, (), "", (), "")), \
        f"{case.name}: no edit reached the handed-in notebook"
