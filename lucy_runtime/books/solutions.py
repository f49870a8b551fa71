"""The Solutions Book, generated from the solution regions of the source/ notebooks.

The reference lives in one place only: between ``### BEGIN SOLUTION`` and
``### END SOLUTION`` in the learner-owned cells of ``source/`` (and in the written
answers' solution cells). This module reads those regions and lays them out as a
Markdown document, each under the notebook heading of the block it belongs to,
after the exercise text the learner reads. Nothing here stores an answer.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from ..errors import NotebooksNotFound
from ..notebooks.cells import IMPORTS_CELL, grade_id, is_grade, is_learner_owned, is_solution, strip_markers
from ..notebooks.notebook import read

HEADING = re.compile(r"^(#{2,3})\s+(.*)$", re.M)


@dataclass(frozen=True)
class Solution:
    notebook: str
    grade_id: str
    block: str
    """The notebook heading the exercise sits under, e.g. ``45–60 · Send once, record honestly``."""
    exercise: str
    """The Markdown just before the cell: what the learner was asked."""
    answer: str
    kind: str
    """``code`` for a learner-owned code cell, ``written`` for a manually graded answer."""


def source_notebooks(folder: str | Path = "source") -> list[Path]:
    """Every ``<unit>/<unit>.ipynb`` under ``folder``, units and practice alike, in name order."""
    return sorted(p for p in Path(folder).glob("*/*.ipynb") if p.stem == p.parent.name)


def _is_written_answer(cell) -> bool:
    return cell.cell_type == "markdown" and is_solution(cell) and is_grade(cell)


def solutions(notebook: str | Path) -> list[Solution]:
    """The worked answers of one notebook, in notebook order (the imports cell is not an answer)."""
    nb = read(notebook)
    found: list[Solution] = []
    block, prose = "", list[str]()
    for cell in nb.cells:
        if _is_written_answer(cell):
            found.append(Solution(Path(notebook).stem, grade_id(cell), block, "\n\n".join(prose),
                                  cell.source.strip(), "written"))
            prose = []
        elif cell.cell_type == "markdown":
            headings = HEADING.findall(cell.source)
            if headings:
                block, prose = headings[-1][1].strip(), []
            text = HEADING.sub("", cell.source).strip()
            prose += [text] if text else []
        elif cell.cell_type == "code":
            if is_learner_owned(cell) and grade_id(cell) != IMPORTS_CELL:
                found.append(Solution(Path(notebook).stem, grade_id(cell), block, "\n\n".join(prose),
                                      strip_markers(cell.source), "code"))
            prose = []
    return found


def imports_cell(notebook: str | Path) -> str:
    """The locked imports cell: the names every answer in that notebook may use."""
    for cell in read(notebook).cells:
        if cell.cell_type == "code" and grade_id(cell) == IMPORTS_CELL:
            return cell.source
    return ""


def _quoted(text: str) -> str:
    return "\n".join(f"> {line}" if line else ">" for line in text.splitlines())


def solutions_book(folder: str | Path = "source") -> str:
    """The whole Solutions Book as Markdown. Its Python blocks run, in order, per notebook."""
    lines = ["# Chapter 7 — Solutions Book", "",
             "For educators. This page is generated from the solution cells of `source/` "
             "(`lucy solutions-book`); the answers are stored nowhere else. Each answer follows "
             "the exercise as the learner reads it. The reasoning is in the comments and in the "
             "educator guide's rubrics; the expected output of every experiment is in the executed "
             "notebooks of this edition.", ""]
    notebooks = source_notebooks(folder)
    if not notebooks:
        raise NotebooksNotFound(f"no notebooks under {folder}")
    for path in notebooks:
        lines += [f"## {path.stem}", "", "The names every answer below may use (the notebook's imports cell):", "",
                  "```python", imports_cell(path).strip(), "```", ""]
        block = None
        for item in solutions(path):
            if item.block != block:
                block = item.block
                lines += [f"### {block}", ""] if block else []
            lines += [f"#### `{item.grade_id}`", ""]
            if item.exercise:
                lines += [_quoted(item.exercise), ""]
            if item.kind == "code":
                lines += ["```python", item.answer.strip(), "```", ""]
            else:
                lines += ["Model answer (scored by hand with the rubric in the educator guide):", "",
                          item.answer, ""]
    return "\n".join(lines)
