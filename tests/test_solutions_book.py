"""The Solutions Book is generated from the source/ solution cells, and its code is the reference."""

from __future__ import annotations

import re

from lucy_runtime.checker import SourceLearner, run_rows, select_rows
from lucy_runtime.notebooks.cells import is_learner_owned, nbgrader_meta
from lucy_runtime.notebooks.notebook import UNITS, read
from lucy_runtime.books.solutions import solutions_book, source_notebooks

from .conftest import REPO

PYTHON = re.compile(r"^```python\n(.*?)^```", re.S | re.M)


def book_cells(text: str) -> list[tuple[str, str]]:
    """The book's Python blocks, named the way SourceLearner expects (unit:cell), in book order."""
    cells, unit = [], None
    for part in re.split(r"^## (\S+)\n", text, flags=re.M)[1:]:
        if unit is None:
            unit = part
            continue
        if unit in UNITS:  # the rows grade the two units; other notebooks' answers are theirs
            cells += [(f"{unit}:block{i}", block) for i, block in enumerate(PYTHON.findall(part))]
        unit = None
    return cells


def test_every_learner_cell_and_written_answer_of_source_has_its_answer_in_the_book():
    text = solutions_book(REPO / "source")
    for notebook in source_notebooks(REPO / "source"):
        for cell in read(notebook).cells:
            meta = nbgrader_meta(cell)
            if is_learner_owned(cell) or (cell.cell_type == "markdown" and meta.get("solution")):
                assert f"`{meta['grade_id']}`" in text or meta["grade_id"] == "imports", meta["grade_id"]
    assert "BEGIN SOLUTION" not in text and "END SOLUTION" not in text
    assert "Model answer" in text  # the written answers come along


def test_the_books_code_is_the_reference_and_passes_the_rows():
    report = run_rows(SourceLearner(book_cells(solutions_book(REPO / "source"))), select_rows("finish"), seed=3)
    assert report.passed, report.summary()


def test_a_book_generated_from_the_release_holds_no_answer_and_fails_the_rows():
    # The known-bad input: release/ has the stubs, so its "solutions" cannot pass.
    report = run_rows(SourceLearner(book_cells(solutions_book(REPO / "release"))), select_rows("finish"), seed=3)
    assert not report.passed
