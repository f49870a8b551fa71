"""Notebooks as data: the learner-owned cells, the Markdown pairs, and cell edits.

A *learner-owned* cell is an nbgrader autograded-answer cell: a code cell with
``solution: true`` and ``grade: false``. Together with the locked ``imports`` cell
(the names they use) they are the learner's implementation. In ``source/`` those
cells hold the reference solution between ``### BEGIN SOLUTION`` and
``### END SOLUTION``; nothing else in the repository holds it.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import nbformat

UNITS = ("ch07_unit_a", "ch07_unit_b", "ch07_practice")
UNIT_NOTEBOOKS = {"A": "ch07_unit_a", "B": "ch07_unit_b", "P": "ch07_practice"}
"""A row's unit letter -> the notebook whose cells it grades."""
IMPORTS_CELL = "imports"


@dataclass(frozen=True)
class LearnerCell:
    unit: str
    grade_id: str
    source: str


def nbgrader_meta(cell) -> dict:
    return cell.get("metadata", {}).get("nbgrader", {})


def is_learner_owned(cell) -> bool:
    meta = nbgrader_meta(cell)
    return cell.cell_type == "code" and meta.get("solution") is True and not meta.get("grade")


def read(path: str | Path):
    return nbformat.read(str(path), as_version=4)


def learner_cells(path: str | Path) -> list[LearnerCell]:
    """The imports cell and every learner-owned cell, in notebook order."""
    nb = read(path)
    unit = Path(path).stem
    chosen = []
    for cell in nb.cells:
        meta = nbgrader_meta(cell)
        if is_learner_owned(cell) or (cell.cell_type == "code" and meta.get("grade_id") == IMPORTS_CELL):
            chosen.append(LearnerCell(unit, meta["grade_id"], cell.source))
    return chosen


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
        raise FileNotFoundError(f"no ch07 unit notebooks under {folder}")
    return [(f"{c.unit}:{c.grade_id}", c.source) for nb in notebooks for c in learner_cells(nb)]


def solution_region(source: str) -> str:
    """The text between BEGIN SOLUTION and END SOLUTION (the reference, in source/)."""
    lines, inside, kept = source.splitlines(), False, []
    for line in lines:
        if "### BEGIN SOLUTION" in line:
            inside = True
        elif "### END SOLUTION" in line:
            inside = False
        elif inside:
            kept.append(line)
    return "\n".join(kept)


def pair_of(notebook: str | Path) -> Path:
    return Path(notebook).with_suffix(".md")


def sync_from_markdown(markdown: str | Path) -> Path:
    """Write the .ipynb twin of an authored jupytext Markdown file."""
    import jupytext

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
    """Where a notebook and its Markdown pair disagree (empty when in sync)."""
    import jupytext

    notebook = Path(notebook)
    pair = pair_of(notebook)
    if not pair.exists():
        return [f"{notebook.name} has no Markdown pair {pair.name}"]
    ours = read(notebook).cells
    theirs = jupytext.read(pair).cells
    problems = []
    if len(ours) != len(theirs):
        problems.append(f"{notebook.name} has {len(ours)} cells, {pair.name} has {len(theirs)}")
    for index, (a, b) in enumerate(zip(ours, theirs)):
        if a.cell_type != b.cell_type or a.source.strip() != b.source.strip():
            problems.append(f"cell {index} differs ({a.cell_type}: {a.source.strip()[:50]!r})")
        elif nbgrader_meta(a) != nbgrader_meta(b):
            problems.append(f"cell {index} has different nbgrader metadata")
    return problems
