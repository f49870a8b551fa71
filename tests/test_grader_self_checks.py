"""The grader's own check through real nbgrader: ``nbgrader validate`` passes the source and
fails the release. (That verify reports a case that survives is planted in the one verify of
test_grader_nbgrader.py.)

Apart from test_grader_nbgrader.py so that the pytest workers share the nbgrader runs.
"""

from __future__ import annotations

import shutil

import nbformat
import pytest

from lucy_runtime.notebooks.cells import nbgrader_meta
from lucy_runtime.course.course import REPO, validate_release

from .conftest import temporary_folder_at

pytestmark = pytest.mark.nbgrader

UNIT = "ch07_unit_a"


def test_the_source_passes_every_test_and_the_release_fails_every_autograded_test(tmp_path, monkeypatch):
    temporary_folder_at(monkeypatch, tmp_path)
    assert validate_release() == []
    assert list(tmp_path.iterdir()) == [], "the notebooks' workspaces were left in the temporary folder"


def test_a_source_that_fails_and_a_release_that_passes_are_both_named(tmp_path):
    """Known-bad: the source holds the release's stubs, and the release's first autograded test
    cell is ``assert True``. Cheap, since neither runs a row."""
    shutil.copy(REPO / "nbgrader_config.py", tmp_path)
    release = nbformat.read(str(REPO / "release" / UNIT / f"{UNIT}.ipynb"), as_version=4)
    for area in ("source", "release"):
        (tmp_path / area / UNIT).mkdir(parents=True)
    nbformat.write(release, str(tmp_path / "source" / UNIT / f"{UNIT}.ipynb"))
    test = next(c for c in release.cells if nbgrader_meta(c).get("grade") and not nbgrader_meta(c).get("solution")
                and c.cell_type == "code")
    test.source = "assert True"
    nbformat.write(release, str(tmp_path / "release" / UNIT / f"{UNIT}.ipynb"))

    problems = validate_release((UNIT,), root=tmp_path)
    assert [p.split(":")[0] for p in problems] == [f"source/{UNIT} does not pass its own tests",
                                                   f"release/{UNIT} passes a test although nothing is written"]
