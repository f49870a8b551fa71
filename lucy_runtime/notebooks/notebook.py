"""Notebooks as data: the learner-owned cells, the Markdown pairs, and cell edits.

A *learner-owned* cell is an nbgrader autograded-answer cell: a code cell with
``solution: true`` and ``grade: false``. Together with the locked ``imports`` cell
(the names they use) and the definitions in cells without nbgrader metadata (a helper
the learner keeps in a cell of their own) they are the learner's implementation. In ``source/`` those
cells hold the reference solution between ``### BEGIN SOLUTION`` and
``### END SOLUTION``; nothing else in the repository holds it.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..errors import NotebooksNotFound
from .cells import DEFINITIONS, definitions, grade_id, is_learner_cell, is_unmarked_code, used_names
from .units import UNIT_NOTEBOOKS, UNITS  # noqa: F401 - re-exported: callers ask this module for the units


@dataclass(frozen=True)
class LearnerCell:
    unit: str
    grade_id: str
    source: str


def read(path: str | Path):
    import nbformat  # noqa: PLC0415 - deferred: its jsonschema import takes seconds (see plain_cells)

    return nbformat.read(str(path), as_version=4)


class _Cell(dict):
    """A cell read as plain JSON, with nbformat's attribute access (``cell.cell_type``)."""

    def __getattr__(self, name: str) -> Any:
        try:
            return self[name]
        except KeyError:
            raise AttributeError(name) from None


def plain_cells(path: str | Path) -> list:
    """The cells of a notebook file, read as JSON without nbformat.

    A learner's kernel reads Unit A on every start of Unit B; importing nbformat would
    cost seconds there (its jsonschema loads a Lark grammar). A notebook older than
    format 4 still goes through nbformat, which converts it.
    """
    data = json.loads(Path(path).read_text(encoding="utf-8"))
    if data.get("nbformat") != 4:
        return list(read(path).cells)
    cells = []
    for cell in data.get("cells", []):
        source = cell.get("source", "")
        cells.append(_Cell(cell, source="".join(source) if isinstance(source, list) else source))
    return cells


def learner_cells(path: str | Path) -> list[LearnerCell]:
    """The code the rows run from one notebook (see ``graded_cells``)."""
    return graded_cells(plain_cells(path), Path(path).stem)


def graded_cells(cells: list, unit: str) -> list[LearnerCell]:
    """The imports cell and every learner-owned cell, and from the cells without nbgrader metadata
    the definitions those need (``definitions-N``: a helper or an import the learner keeps in a
    cell of their own is in the kernel, so the rows have it too), in notebook order."""
    owned = [cell for cell in cells if is_learner_cell(cell)]
    plain = [(index, cell) for index, cell in enumerate(cells) if is_unmarked_code(cell)]
    kept = dict(zip((index for index, _ in plain), definitions([cell.source for _, cell in plain],
                                                                  set().union(*map(used_names, (c.source for c in owned))))))
    found = []
    for index, cell in enumerate(cells):
        if is_learner_cell(cell):
            found.append(LearnerCell(unit, grade_id(cell), cell.source))
        elif kept.get(index):
            found.append(LearnerCell(unit, f"{DEFINITIONS}{index}", kept[index]))
    return found


def find_notebooks(folder: str | Path) -> list[Path]:
    """The unit notebooks under ``folder``: ``<unit>/<unit>.ipynb`` or ``<unit>.ipynb``."""
    folder = Path(folder)
    found = []
    for unit in UNITS:
        for candidate in (folder / unit / f"{unit}.ipynb", folder / f"{unit}.ipynb"):
            if candidate.exists():
                found.append(candidate)
                break
    return found


def learner_implementation(folder: str | Path) -> list[tuple[str, str]]:
    """(name, source) pairs for ``SourceLearner``: Unit A's cells, then Unit B's."""
    notebooks = find_notebooks(folder)
    if not notebooks:
        raise NotebooksNotFound(f"no ch07 unit notebooks under {folder}")
    return [(f"{c.unit}:{c.grade_id}", c.source) for nb in notebooks for c in learner_cells(nb)]


def pair_of(notebook: str | Path) -> Path:
    return Path(notebook).with_suffix(".md")


def sync_from_markdown(markdown: str | Path) -> Path:
    """Write the .ipynb twin of an authored jupytext Markdown file."""
    import jupytext  # noqa: PLC0415 - deferred: a learner's kernel reads notebooks here and never needs jupytext
    import nbformat  # noqa: PLC0415

    markdown = Path(markdown)
    nb = jupytext.read(markdown)
    nb.metadata.pop("jupytext", None)
    nb.metadata.setdefault("language_info", {"name": "python"})
    target = markdown.with_suffix(".ipynb")
    if target.exists():
        keep_ids(read(target), nb)
    nbformat.write(nb, str(target))
    return target


def keep_ids(old, new) -> None:
    """Give unchanged cells of ``new`` their ids from ``old``, so a diff shows only real edits."""
    known: dict[tuple[str, str], list[str]] = {}
    for cell in old.cells:
        known.setdefault((cell.cell_type, cell.source), []).append(cell.get("id"))
    for cell in new.cells:
        ids = known.get((cell.cell_type, cell.source))
        if ids:
            cell["id"] = ids.pop(0)


def pair_differences(notebook: str | Path) -> list[str]:
    """Where a notebook and its Markdown pair disagree, as jupytext compares them (empty when in sync)."""
    import jupytext  # noqa: PLC0415 - deferred, as in sync_from_markdown
    from jupytext.compare import NotebookDifference, compare_notebooks  # noqa: PLC0415

    notebook = Path(notebook)
    pair = pair_of(notebook)
    if not pair.exists():
        return [f"{notebook.name} has no Markdown pair {pair.name}"]
    try:
        compare_notebooks(jupytext.read(pair), read(notebook), fmt="md", raise_on_first_difference=False)
    except NotebookDifference as difference:
        return [f"{notebook.name} and {pair.name} differ: {difference}"]
    return []
