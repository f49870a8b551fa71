"""The sealed verdict reads, from a handed-in notebook, exactly the cells the row tests check.

Under `nbgrader autograde` a submission's score is the sealed verdict alone (sealed.py):
the rows, run outside the kernel on the learner cells it takes from the notebook. The
kernel's own run decides no point; it matters only if it kills or hangs the kernel, and
no case or alternative has top-level code beyond definitions, imports and constants.
tests/test_rows.py, test_alternatives.py and test_practice.py run the same rows on the
reference cells with each case's edits, with a fixed seed and in the tests' checker
process. So where the cells are equal, those tests show what nbgrader records for every
case and alternative, up to the values each run makes up; test_grader_nbgrader.py grades
a sample through real nbgrader, and `make demo` grades them all.

The notebooks handed in here are the repository's release/, which test_notebooks.py
keeps equal to what nbgrader generates from source/ (the verify generates its own).
"""

from __future__ import annotations

import nbformat
import pytest

from lucy_runtime.notebooks.cells import strip_markers
from lucy_runtime.checker import SourceLearner
from lucy_runtime.educator.alternatives import ALTERNATIVES
from lucy_runtime.educator.cases import CASES, Case
from lucy_runtime.educator.practice_cases import PRACTICE_ALTERNATIVES, PRACTICE_CASES
from lucy_runtime.proof.verify import Entry, Kind, handed_in
from lucy_runtime.notebooks.notebook import read
from lucy_runtime.grading.sealed import notebook_learner

from .conftest import REPO, with_case

EVERY_CASE = CASES + ALTERNATIVES + PRACTICE_CASES + PRACTICE_ALTERNATIVES
CARRIED = {"ch07_unit_a": ("ch07_unit_a",), "ch07_unit_b": ("ch07_unit_a", "ch07_unit_b"), "ch07_practice": ("ch07_practice",)}
"""The units whose cells a submission of each unit carries: Unit B runs the learner's Unit A."""


def notebook(area: str, unit: str) -> nbformat.NotebookNode:
    return read(REPO / area / unit / f"{unit}.ipynb")


def sealed_cells(tmp_path, case: Case) -> list[tuple[str, str]]:
    """What the sealed verdict reads for ``case``, handed in as the verify hands it in."""
    entry = Entry(case.name, Kind.ALTERNATIVE if case in ALTERNATIVES + PRACTICE_ALTERNATIVES else Kind.CASE, case.unit)
    notebooks = handed_in(entry, case, release=lambda unit: notebook("release", unit),
                          source=lambda unit: notebook("source", unit))
    for unit, nb in notebooks.items():
        (tmp_path / "submitted" / entry.student / unit).mkdir(parents=True)
        nbformat.write(nb, str(tmp_path / "submitted" / entry.student / unit / f"{unit}.ipynb"))
    learner = notebook_learner(notebooks[case.unit], case.unit, str(tmp_path / "submitted" / entry.student / case.unit))
    # A definitions cell keeps its lines where the notebook has them; blank lines after its end change nothing.
    return [(name, source.rstrip("\n")) for name, source in learner.cells]


def checked_cells(reference_cells, case: Case) -> list[tuple[str, str]]:
    """What the row tests run for ``case``, limited to the units its submission carries."""
    carried = CARRIED[case.unit]
    cells = with_case([cell for cell in reference_cells if cell[0].split(":", 1)[0] in carried], case)
    # The reference keeps its solution markers (comments to Python); a handed-in notebook has none.
    return [(name, strip_markers(source).rstrip("\n")) for name, source in cells]


@pytest.mark.parametrize("case", EVERY_CASE, ids=lambda c: c.name)
def test_the_sealed_verdict_reads_the_cells_the_row_tests_check(tmp_path, reference_cells, case):
    sealed = sealed_cells(tmp_path, case)
    assert sealed == checked_cells(reference_cells, case)
    assert sealed != checked_cells(reference_cells, Case("reference", case.unit, (), "", (), "")), \
        f"{case.name}: no edit reached the handed-in notebook"


def test_unit_b_rebinds_no_name_of_unit_a_but_the_same_imports(reference_cells):
    """The row tests run a Unit A case with the reference's Unit B cells after it (Unit B's rows run
    Unit A); nbgrader grades Unit A alone. The same only while Unit B rebinds nothing Unit A binds,
    except ``finish``: Unit B writes its own on purpose, and a case's edit of ``finish`` edits both."""
    def bound(unit: str) -> dict:
        return SourceLearner([c for c in reference_cells if c[0].startswith(unit + ":")]).namespace()

    unit_a, unit_b = bound("ch07_unit_a"), bound("ch07_unit_b")
    rebound = [name for name in unit_a.keys() & unit_b.keys() if not name.startswith("__") and unit_a[name] is not unit_b[name]]
    assert rebound == ["finish"]
