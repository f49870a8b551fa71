"""The source notebooks execute top to bottom in a fresh kernel, with no error in any cell."""

from __future__ import annotations

import shutil

import nbformat
import pytest
from nbclient import NotebookClient

from .conftest import REPO

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def course_copy(tmp_path_factory):
    folder = tmp_path_factory.mktemp("source")
    for unit in ("ch07_unit_a", "ch07_unit_b"):
        shutil.copytree(REPO / "source" / unit, folder / unit, ignore=shutil.ignore_patterns("*.md"))
    return folder


@pytest.mark.parametrize("unit", ["ch07_unit_a", "ch07_unit_b"])
def test_the_source_notebook_runs_without_an_error_in_any_cell(course_copy, unit):
    path = course_copy / unit / f"{unit}.ipynb"
    nb = nbformat.read(str(path), as_version=4)
    NotebookClient(nb, timeout=300, kernel_name="python3", allow_errors=True,
                   resources={"metadata": {"path": str(path.parent)}}).execute()
    errors = [(i, out.get("ename"), out.get("evalue", "")[:200]) for i, cell in enumerate(nb.cells)
              for out in cell.get("outputs", []) if out.get("output_type") == "error"]
    assert errors == []
    assert (path.parent / f"{unit}_evidence.json").exists()
