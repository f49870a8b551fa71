"""Table names are the learner's choice: the notebooks' supplied cells work whatever they are called."""

from __future__ import annotations

import re
import shutil

import nbformat
import pytest

from lucy_runtime.notebooks.cells import is_learner_owned

from .conftest import REPO

RENAMED = {"work": "inbox", "report": "answers"}
SQL_NAME = re.compile(r"\b(INTO|FROM|UPDATE|EXISTS|REFERENCES|JOIN|ON)(\s+)(work|report)\b")
"""Where SQL names a table; ``ON`` is an index's or a trigger's (``CREATE INDEX … ON work (session_id)``)."""


def renamed(source: str) -> str:
    return SQL_NAME.sub(lambda m: f"{m.group(1)}{m.group(2)}{RENAMED[m.group(3)]}", source)


@pytest.mark.slow
def test_a_learner_who_renamed_the_tables_runs_both_units_without_error(tmp_path):
    import nbclient  # noqa: PLC0415

    for unit in ("ch07_unit_a", "ch07_unit_b"):
        shutil.copytree(REPO / "source" / unit, tmp_path / unit, ignore=shutil.ignore_patterns("*.md"))
        path = tmp_path / unit / f"{unit}.ipynb"
        nb = nbformat.read(str(path), as_version=4)
        for cell in nb.cells:
            if is_learner_owned(cell):
                cell.source = renamed(cell.source)
        learner_text = "".join(c.source for c in nb.cells if is_learner_owned(c))
        assert "CREATE TABLE IF NOT EXISTS inbox" in learner_text or unit == "ch07_unit_b"
        assert " ON work " not in learner_text, "an index or trigger in a learner's cell still names the old table"
        nbformat.write(nb, str(path))
    for unit in ("ch07_unit_a", "ch07_unit_b"):
        path = tmp_path / unit / f"{unit}.ipynb"
        nb = nbformat.read(str(path), as_version=4)
        nbclient.NotebookClient(nb, timeout=300, kernel_name="python3",
                                resources={"metadata": {"path": str(path.parent)}}).execute()  # raises on a cell error
        shown = "".join(str(o) for c in nb.cells for o in c.get("outputs", []))
        assert "no work table" not in shown and "no report table" not in shown, unit
