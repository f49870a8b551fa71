"""nbgrader's ``OverwriteCells``, quiet about a locked cell that is exactly as it was released.

Every autograded test cell hides its tests from the release, so the cell a learner hands
in never has its source cell's checksum, and nbgrader's ``OverwriteCells`` warns
"Attribute 'checksum' for cell ... has changed!" for each of them: twenty lines per
submission that say nothing. This subclass compares a locked cell with the cell the
learner was given (the source cell through nbgrader's own ``ClearHiddenTests``) and
warns only when the learner changed it; nbgrader restores the source either way.
"""

from __future__ import annotations

import copy

from nbgrader import utils
from nbgrader.api import MissingEntry
from nbgrader.preprocessors import ClearHiddenTests, OverwriteCells


class OverwriteCellsAsReleased(OverwriteCells):
    """``OverwriteCells`` that reports a changed checksum only for a cell the learner changed."""

    def preprocess_cell(self, cell, resources, cell_index):
        self._as_released = False
        grade_id = cell.metadata.get("nbgrader", {}).get("grade_id")
        if grade_id is not None and utils.is_locked(cell):
            try:
                source = self.gradebook.find_source_cell(grade_id, self.notebook_id, self.assignment_id)
            except MissingEntry:  # nbgrader's own preprocess_cell reports it
                source = None
            if source is not None:
                released = copy.deepcopy(cell)
                released.source = source.source
                released, _ = ClearHiddenTests(parent=self).preprocess_cell(released, {}, cell_index)
                self._as_released = utils.compute_checksum(released) == utils.compute_checksum(cell)
        return super().preprocess_cell(cell, resources, cell_index)

    def report_change(self, name, attr, old, new) -> None:
        if attr == "checksum" and self._as_released:
            self.log.debug("cell %s is as released (its hidden tests are back)", name)
            return
        super().report_change(name, attr, old, new)
