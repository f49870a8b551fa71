"""A release command that fails leaves release/ and the gradebook byte for byte as they were.

The failure is real: a source notebook whose hidden tests never end. nbgrader's
generate_assignment has by then deleted release/<unit> and written the changed test cell
into the gradebook.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import nbformat
import pytest

from lucy_runtime.course.course import NbgraderFailed, ScratchCourse, _env, generate_release, release
from lucy_runtime.notebooks.cells import nbgrader_meta
from lucy_runtime.notebooks.notebook import UNITS
from lucy_runtime.grading.unchanged_on_failure import unchanged_on_failure

A, B = UNITS[:2]


def files(root: Path, *parts: str) -> dict[str, bytes | None]:
    """Every file under the given parts of ``root`` with its bytes (a folder as ``None``)."""
    seen: dict[str, bytes | None] = {}
    for part in parts:
        top = root / part
        for path in [top, *top.rglob("*")] if top.exists() else []:
            seen[str(path.relative_to(root))] = None if path.is_dir() else path.read_bytes()
    return seen


def break_hidden_tests(course_root: Path, unit: str) -> None:
    """The first autograded test cell opens a hidden region and never closes it."""
    path = course_root / "source" / unit / f"{unit}.ipynb"
    nb = nbformat.read(str(path), as_version=4)
    cell = next(c for c in nb.cells if nbgrader_meta(c).get("grade") and not nbgrader_meta(c).get("solution"))
    cell.source = cell.source + "\n### BEGIN HIDDEN TESTS\nassert True  # changed, and never closed\n"
    nbformat.write(nb, str(path))


def reword_first_markdown(course_root: Path, unit: str) -> None:
    """An edit nbgrader releases without complaint."""
    path = course_root / "source" / unit / f"{unit}.ipynb"
    nb = nbformat.read(str(path), as_version=4)
    cell = next(c for c in nb.cells if c.cell_type == "markdown" and not nbgrader_meta(c))
    cell.source += "\n\nA sentence the educator added."
    nbformat.write(nb, str(path))


def plain_generate(root: Path, unit: str) -> subprocess.CompletedProcess:
    """The README's command, as the educator types it."""
    return subprocess.run([sys.executable, "-m", "nbgrader", "generate_assignment", unit, "--force"], cwd=root,
                          env=_env(), capture_output=True, text=True, timeout=600)


def test_a_block_that_fails_puts_back_every_file_and_removes_what_it_made(tmp_path):
    kept, made = tmp_path / "release", tmp_path / "gradebook.db"
    (kept / "unit").mkdir(parents=True)
    (kept / "unit" / "nb.ipynb").write_bytes(b"before")
    with pytest.raises(RuntimeError), unchanged_on_failure([kept, made]):
        (kept / "unit" / "nb.ipynb").unlink()
        (kept / "new.txt").write_text("half")
        made.write_text("a gradebook without its version stamp")
        raise RuntimeError("the conversion failed")
    assert files(tmp_path, "release", "gradebook.db") == {"release": None, "release/unit": None,
                                                          "release/unit/nb.ipynb": b"before"}
    with unchanged_on_failure([kept, made]):
        made.write_text("kept")
    assert made.read_text() == "kept"


@pytest.mark.nbgrader
def test_a_failing_generate_assignment_leaves_release_and_the_gradebook_as_they_were(tmp_path):
    course = ScratchCourse(tmp_path / "course", units=(A,))
    before = files(course.root, "release", "gradebook.db")
    assert f"release/{A}/{A}.ipynb" in before and "gradebook.db" in before
    break_hidden_tests(course.root, A)

    failed = plain_generate(course.root, A)

    assert failed.returncode != 0 and "No end hidden tests statement found" in failed.stdout + failed.stderr
    assert files(course.root, "release", "gradebook.db") == before


@pytest.mark.nbgrader
def test_without_the_guard_the_same_failure_deletes_the_release(tmp_path):
    """The known-bad arrangement (nbgrader alone) fails the check above: the test can fail."""
    course = ScratchCourse(tmp_path / "course", units=(A,))
    before = files(course.root, "release", "gradebook.db")
    config = course.root / "nbgrader_config.py"
    config.write_text(config.read_text().replace("\nguard_generate_assignment()\n", "\n"))
    break_hidden_tests(course.root, A)

    assert plain_generate(course.root, A).returncode != 0
    after = files(course.root, "release", "gradebook.db")
    assert f"release/{A}/{A}.ipynb" not in after and after != before


@pytest.mark.nbgrader
def test_lucy_release_installs_no_unit_when_one_fails(tmp_path):
    course = ScratchCourse(tmp_path / "course", units=UNITS)
    reword_first_markdown(course.root, A)  # Unit A alone would release fine
    break_hidden_tests(course.root, B)
    before = files(course.root, "release", "gradebook.db")

    with pytest.raises(NbgraderFailed, match="No end hidden tests statement found"):
        release(root=course.root, validate=False)
    assert files(course.root, "release", "gradebook.db") == before

    # Generating in place, unit by unit (the known-bad way), would have installed the new Unit A.
    with pytest.raises(NbgraderFailed):
        generate_release(root=course.root)
    assert files(course.root, f"release/{A}") != {k: v for k, v in before.items() if k.startswith(f"release/{A}")}
