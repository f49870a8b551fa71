"""Sealed verdicts: nbgrader re-checks every graded row outside the learner's kernel.

A hidden test cell calls ``grade(row)`` inside the kernel, and a kernel runs learner
code: a determined learner can rebind ``grade`` there. So after nbgrader has executed
the notebook, this preprocessor takes the learner-owned cells from the notebook
itself, runs the same rows in processes forked from nbgrader (learner code in the
children only) and marks a test cell as failed when its row does not hold. A row
must hold in both places to earn its points.
"""

from __future__ import annotations

import nbformat
from nbgrader.preprocessors import NbGraderPreprocessor
from traitlets import Float

from .checker import SourceLearner, run_rows
from .checker.rows import ROWS
from .notebook import IMPORTS_CELL, is_learner_owned, nbgrader_meta
from .sandbox import run_sealed_rows


def row_cells(nb) -> dict[str, str]:
    """grade_id → row id, for every test cell that grades an acceptance row."""
    found = {}
    for cell in nb.cells:
        meta = nbgrader_meta(cell)
        grade_id = meta.get("grade_id", "")
        if meta.get("grade") and not meta.get("solution") and grade_id.startswith("row_"):
            row_id = grade_id.removeprefix("row_").replace("_", "-")
            if row_id in ROWS:
                found[grade_id] = row_id
    return found


def notebook_learner(nb, unit: str, folder: str | None = None) -> SourceLearner:
    """The learner cells of ``nb``; for Unit B, the learner's Unit A cells come first."""
    cells = []
    if unit == "ch07_unit_b":
        from .carry import UnitANotFound, unit_a_cells

        try:
            cells += unit_a_cells(folder)
        except UnitANotFound:
            pass  # every row then fails, saying which function is missing
    for cell in nb.cells:
        meta = nbgrader_meta(cell)
        if is_learner_owned(cell) or (cell.cell_type == "code" and meta.get("grade_id") == IMPORTS_CELL):
            cells.append((f"{unit}:{meta['grade_id']}", cell.source))
    return SourceLearner(cells)


class SealedVerdicts(NbGraderPreprocessor):
    timeout = Float(5.0, help="Seconds each learner call may take before it is stopped.").tag(config=True)

    def preprocess(self, nb, resources):
        graded = row_cells(nb)
        if not graded:
            return nb, resources
        unit = resources.get("unique_key") or resources.get("nbgrader", {}).get("notebook") or "notebook"
        folder = resources.get("metadata", {}).get("path") or None
        report = run_sealed_rows(notebook_learner(nb, unit, folder).cells, list(dict.fromkeys(graded.values())),
                                 timeout=self.timeout, log=self.log)
        verdicts = {r.row_id: r for r in report.results}
        for cell in nb.cells:
            grade_id = nbgrader_meta(cell).get("grade_id")
            if grade_id not in graded:
                continue
            verdict = verdicts[graded[grade_id]]
            already_failed = any(o.get("output_type") == "error" for o in cell.get("outputs", []))
            if not verdict.passed and not already_failed:
                cell.setdefault("outputs", []).append(nbformat.v4.new_output(
                    "error", ename="SealedVerdict",
                    evalue=f"row {verdict.row_id} does not hold when re-checked outside the notebook: "
                           f"{verdict.observation}",
                    traceback=[f"Row {verdict.row_id} does not hold (re-checked outside the kernel).",
                               f"  Observed: {verdict.observation}", f"  Hint: {verdict.hint}"]))
                self.log.warning("sealed verdict: %s fails: %s", verdict.row_id, verdict.observation)
        return nb, resources
