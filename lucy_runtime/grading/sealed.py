"""Sealed verdicts: the out-of-kernel check alone decides every autograded cell.

A hidden test cell calls ``grade(row)`` inside the kernel, and a kernel runs learner
code: a learner cell can rebind ``grade``, register an IPython hook that displays
"ok", or make a cell's last value a string (nbgrader gives full credit to a
non-numeric result). So after nbgrader has executed the notebook, this preprocessor
takes the learner-owned cells from the notebook itself, runs every graded row in
processes forked from nbgrader (learner code in the children only), and then
*replaces* the outputs of every autograded cell with that verdict: a pass line, or
the failure alone. Nothing the kernel printed or displayed is left for nbgrader to
read. An autograded cell that names no known row gets a failure, never a pass.
"""

from __future__ import annotations

import textwrap

import nbformat
from nbgrader.preprocessors import NbGraderPreprocessor
from traitlets import Dict, Float

from ..checker import SourceLearner
from ..checker.rows import ROWS
from ..carry import unit_a_cells
from ..notebooks.cells import grade_id, row_of, test_cells
from ..errors import UnitANotFound
from ..engine.limits import GradingLimits
from ..notebooks.notebook import graded_cells
from .orchestrator import run_sealed_rows


def row_cells(nb) -> dict[str, str]:
    """grade_id → row id, for every test cell that grades an acceptance row."""
    named = [grade_id(cell) for cell in test_cells(nb) if grade_id(cell).startswith("row_")]
    return {name: row_of(name) for name in named if row_of(name) in ROWS}


def notebook_learner(nb, unit: str, folder: str | None = None) -> SourceLearner:
    """The learner cells of ``nb``; for Unit B, the learner's Unit A cells come first."""
    cells = []
    if unit == "ch07_unit_b":
        try:
            cells += unit_a_cells(folder)
        except UnitANotFound:
            pass  # every row then fails, saying which function is missing
    cells += [(f"{c.unit}:{c.grade_id}", c.source) for c in graded_cells(nb.cells, unit)]
    return SourceLearner(cells)


def verdict_outputs(verdict) -> list:
    """The outputs an autograded cell keeps: its row's sealed verdict and nothing else."""
    if verdict.passed:
        return [nbformat.v4.new_output("stream", name="stdout",
                                       text=f"✔ {verdict.row_id}: {verdict.observation}\n"
                                            "(checked outside the notebook, after it ran)\n")]
    return [nbformat.v4.new_output(
        "error", ename="RowDoesNotHold", evalue=f"{verdict.row_id}: {verdict.observation}",
        traceback=[f"Row {verdict.row_id} does not hold (checked outside the notebook, after it ran).",
                   _wrapped("  Observed: ", verdict.observation), _wrapped("  Hint: ", verdict.hint)])]


def _wrapped(label: str, text: str) -> str:
    """One traceback line, wrapped at 100 columns: feedback shows a traceback as preformatted
    text, where a long hint would run off the right edge of the page."""
    return textwrap.fill(text, width=100, initial_indent=label, subsequent_indent=" " * len(label),
                         break_long_words=False, break_on_hyphens=False)


def unknown_cell_outputs(grade_id: str) -> list:
    return [nbformat.v4.new_output(
        "error", ename="NoVerdict", evalue=f"{grade_id} names no acceptance row",
        traceback=[f"The autograded cell {grade_id!r} names no acceptance row, so nothing outside the notebook "
                   "can check it. It earns no points; tell your educator."])]


def waived_outputs(row_id: str, why: str) -> list:
    """A waived row's cell: full points, and the educator's reason in the learner's feedback."""
    return [nbformat.v4.new_output("stream", name="stdout",
                                   text=f"✔ {row_id}: waived by your educator: {why}\n(not checked in this grading)\n")]


class SealedVerdicts(NbGraderPreprocessor):
    timeout = Float(5.0, help="Seconds each learner call may take before it is stopped.").tag(config=True)
    waived_rows = Dict(
        {}, help="Rows found wrong mid-term: row id -> the reason the learners read. Each such row earns its points "
                 "without being checked until it is fixed; `lucy regrade` then grades every submission again.",
    ).tag(config=True)

    def preprocess(self, nb, resources):
        graded = row_cells(nb)
        unit = resources.get("unique_key") or resources.get("nbgrader", {}).get("notebook") or "notebook"
        folder = resources.get("metadata", {}).get("path") or None
        verdicts = {}
        if graded:
            report = run_sealed_rows(notebook_learner(nb, unit, folder).cells, list(dict.fromkeys(graded.values())),
                                     timeout=self.timeout, log=self.log, limits=GradingLimits(parent=self).limits(),
                                     folder=folder)
            verdicts = {r.row_id: r for r in report.results}
        for cell in test_cells(nb):
            name = grade_id(cell)
            if name in graded and graded[name] in self.waived_rows:
                cell.outputs = waived_outputs(graded[name], str(self.waived_rows[graded[name]]))
            elif name in graded:
                verdict = verdicts[graded[name]]
                cell.outputs = verdict_outputs(verdict)
                if not verdict.passed:
                    self.log.debug("sealed verdict: %s fails: %s", verdict.row_id, verdict.observation)
            else:
                cell.outputs = unknown_cell_outputs(name)
                self.log.warning("sealed verdict: autograded cell %s names no acceptance row", name)
        return nb, resources
