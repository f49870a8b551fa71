"""Unit B continues from the learner's own Unit A: find that notebook and load its cells.

Unit B never ships a second copy of ``admit``, ``claim`` or ``work_once``. It runs the ones
the learner wrote in Unit A, read from the Unit A notebook next to it, so a repair made
in Unit A shows up in Unit B on the next run. ``finish`` is the one the learner writes
again in Unit B (its 15–30 repair): Unit B's cells run after Unit A's, so Unit B's rows
run that ``finish`` and a Unit A slip in it is graded once.
"""

from __future__ import annotations

import os
from pathlib import Path

from .notebooks.cells import compile_cell, compile_definitions, is_definitions, run_definitions
from .errors import UnitANotFound
from .notebooks.notebook import learner_cells

UNIT_A = "ch07_unit_a"


def candidates(folder: str | os.PathLike) -> list[Path]:
    """Where Unit A may be, seen from the folder Unit B runs in."""
    folder = Path(folder).resolve()
    found = [folder.parent / UNIT_A / f"{UNIT_A}.ipynb"]
    parts = folder.parts
    # nbgrader: <course>/autograded/<student>/ch07_unit_b -> <course>/submitted/<student>/ch07_unit_a
    if len(parts) >= 3 and parts[-3] in ("autograded", "submitted", "feedback"):
        course, student = folder.parents[2], parts[-2]
        for area in ("autograded", "submitted"):
            found.append(course / area / student / UNIT_A / f"{UNIT_A}.ipynb")
    return found


def find_unit_a(folder: str | os.PathLike | None = None) -> Path:
    looked = candidates(folder or os.getcwd())
    for path in looked:
        if path.exists():
            return path
    raise UnitANotFound(looked)


def unit_a_cells(folder: str | os.PathLike | None = None) -> list[tuple[str, str]]:
    return [(f"{c.unit}:{c.grade_id}", c.source) for c in learner_cells(find_unit_a(folder))]


def load_unit_a(namespace: dict, folder: str | os.PathLike | None = None) -> list[str]:
    """Run the learner cells of Unit A (with the definitions of its other cells) in ``namespace``;
    return the names the learner-owned cells defined."""
    path = find_unit_a(folder)
    new: set[str] = set()
    for cell in learner_cells(path):
        name = f"<{cell.unit}:{cell.grade_id}>"
        if is_definitions(cell.grade_id):  # a helper of the learner's own cells; an experiment's name may fail
            run_definitions(compile_definitions(cell.source, name), namespace)
            continue
        before = set(namespace)
        exec(compile_cell(cell.source, name), namespace)
        new |= set(namespace) - before
    defined = sorted(n for n in new if not n.startswith("_") and callable(namespace[n]))
    print(f"Loaded your Unit A from {shown(path, folder or os.getcwd())}: {', '.join(defined) or '(nothing new)'}")
    return defined


def shown(path: Path, folder: str | os.PathLike) -> str:
    """``path`` as the learner may see it in feedback: relative to the course, never the grader's machine."""
    folder = Path(folder).resolve()
    if len(folder.parts) >= 3 and folder.parts[-3] in ("autograded", "submitted", "feedback"):
        base = folder.parents[2]
    else:
        base = folder.parent
    try:
        return Path(path).resolve().relative_to(base).as_posix()
    except ValueError:
        return Path(path).name
