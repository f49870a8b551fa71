"""The notebooks as artefacts: pairs in sync, release fresh and free of solutions, cells well formed."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import nbformat
import pytest

from lucy_runtime.checker.rows import ROWS
from lucy_runtime.notebooks.cells import is_learner_owned, nbgrader_meta, row_of, solution_region
from lucy_runtime.course.course import nbgrader, graded_test_cells
from lucy_runtime.notebooks.notebook import pair_differences, sync_from_markdown

from .conftest import REPO

SOURCES = sorted((REPO / "source").glob("*/*.ipynb"))
UNITS = [p.parent.name for p in SOURCES]


def release_of(unit: str) -> Path:
    return REPO / "release" / unit / f"{unit}.ipynb"


def test_both_units_are_there():
    assert UNITS == ["ch07_practice", "ch07_unit_a", "ch07_unit_b"]


@pytest.mark.parametrize("notebook", SOURCES, ids=lambda p: p.parent.name)
def test_each_source_notebook_is_in_sync_with_its_markdown_pair(notebook):
    assert pair_differences(notebook) == []


@pytest.mark.parametrize("drift", ["source", "metadata", "extra cell"])
def test_a_notebook_that_drifted_from_its_pair_is_reported(tmp_path, drift):
    notebook = tmp_path / SOURCES[0].name
    shutil.copy(SOURCES[0], notebook)
    shutil.copy(SOURCES[0].with_suffix(".md"), notebook.with_suffix(".md"))
    nb = nbformat.read(str(notebook), as_version=4)
    cell = next(c for c in nb.cells if is_learner_owned(c))
    if drift == "source":
        cell.source += "\nextra = 1"
    elif drift == "metadata":
        nbgrader_meta(cell)["points"] = 99
    else:
        nb.cells.append(nbformat.v4.new_markdown_cell("An edit made only in the notebook."))
    nbformat.write(nb, str(notebook))
    assert pair_differences(notebook) != []


def test_sync_keeps_the_ids_of_cells_that_did_not_change(tmp_path):
    markdown = tmp_path / "unit.md"
    shutil.copy(SOURCES[0].with_suffix(".md"), markdown)
    before = nbformat.read(str(sync_from_markdown(markdown)), as_version=4)
    markdown.write_text(markdown.read_text().replace("# Chapter 7", "# Chapter Seven", 1))
    after = nbformat.read(str(sync_from_markdown(markdown)), as_version=4)
    same = [a.id == b.id for a, b in zip(before.cells, after.cells)]
    assert same[0] is False and all(same[1:]) and len(before.cells) == len(after.cells)


@pytest.fixture(scope="module")
def regenerated(tmp_path_factory) -> Path:
    """What nbgrader generates from source/ now, in a scratch copy of the course."""
    root = tmp_path_factory.mktemp("course")
    shutil.copy(REPO / "nbgrader_config.py", root)
    shutil.copytree(REPO / "source", root / "source")
    for unit in UNITS:
        nbgrader(["generate_assignment", unit, "--force", "--no-db"], cwd=root)
    return root / "release"


def comparable(nb) -> list[tuple]:
    return [(c.cell_type, c.source, nbgrader_meta(c)) for c in nb.cells]


@pytest.mark.parametrize("unit", UNITS)
def test_release_matches_what_nbgrader_generates_from_source(regenerated, unit):
    fresh = nbformat.read(str(regenerated / unit / f"{unit}.ipynb"), as_version=4)
    committed = nbformat.read(str(release_of(unit)), as_version=4)
    assert comparable(committed) == comparable(fresh), "release/ is stale: run `make release`"
    assert sorted(p.name for p in (regenerated / unit).iterdir()) == sorted(p.name for p in release_of(unit).parent.iterdir())


@pytest.mark.parametrize("unit", UNITS)
def test_the_release_holds_no_solution_and_no_hidden_test(unit):
    release_dir = release_of(unit).parent
    assert not list(release_dir.glob("*.md")), "the Markdown pair holds the solution and must not be released"
    text = release_of(unit).read_text()
    for marker in ("BEGIN SOLUTION", "END SOLUTION", "BEGIN HIDDEN TESTS", "grade(\\\""):
        assert marker not in text
    source = nbformat.read(str(REPO / "source" / unit / f"{unit}.ipynb"), as_version=4)
    released = {nbgrader_meta(c)["grade_id"]: c.source for c in nbformat.read(str(release_of(unit)), as_version=4).cells
                if is_learner_owned(c)}
    lines = [(nbgrader_meta(cell)["grade_id"], line.strip()) for cell in source.cells if is_learner_owned(cell)
             for line in solution_region(cell.source).splitlines() if len(line.strip()) > 20]
    assert lines, f"source/{unit} has no solution line to look for"
    for grade_id, line in lines:
        assert line not in released[grade_id], f"leaked: {line}"


@pytest.mark.parametrize("unit", UNITS)
def test_every_learner_cell_in_the_release_raises_not_implemented(unit):
    owned = [c for c in nbformat.read(str(release_of(unit)), as_version=4).cells if is_learner_owned(c)]
    assert owned, f"the release of {unit} has no learner cell"
    for cell in owned:
        assert "raise NotImplementedError(" in cell.source, nbgrader_meta(cell)["grade_id"]


HIDDEN = re.compile(r"### BEGIN HIDDEN TESTS\n(.*?)### END HIDDEN TESTS", re.S)


@pytest.mark.parametrize("notebook", SOURCES, ids=lambda p: p.parent.name)
def test_hidden_tests_hold_only_a_grade_call_for_an_existing_row(notebook):
    nb = nbformat.read(str(notebook), as_version=4)
    graded = graded_test_cells(nb)
    assert graded, f"{notebook.name} has no graded test cell"
    for grade_id, points in graded.items():
        cell = next(c for c in nb.cells if nbgrader_meta(c).get("grade_id") == grade_id)
        hidden = HIDDEN.findall(cell.source)
        assert hidden == [f'grade("{row_of(grade_id)}")\n'], grade_id
        assert row_of(grade_id) in ROWS and points > 0


@pytest.mark.parametrize("unit, letter", [("ch07_unit_a", "A"), ("ch07_unit_b", "B"), ("ch07_practice", "P")])
def test_every_row_of_a_unit_has_exactly_one_graded_cell(unit, letter):
    nb = nbformat.read(str(REPO / "source" / unit / f"{unit}.ipynb"), as_version=4)
    graded = [row_of(g) for g in graded_test_cells(nb)]
    assert sorted(graded) == sorted(r.id for r in ROWS.values() if r.unit == letter)


@pytest.mark.parametrize("notebook", SOURCES, ids=lambda p: p.parent.name)
def test_every_recorded_experiment_has_a_prediction_before_it(notebook):
    text = "\n".join(c.source for c in nbformat.read(str(notebook), as_version=4).cells)
    # Notes and written answers are recorded too, but they are not experiments.
    experiments = [b for b in re.findall(r'evidence\.record\("([^"]+)"', text) if not b.endswith(("hand-off", "answer"))]
    assert experiments, f"{notebook.name} records no experiment"
    for block in experiments:
        predicted = text.find(f'evidence.predict("{block}"')
        assert 0 <= predicted < text.find(f'evidence.record("{block}"'), block


@pytest.mark.parametrize("notebook", SOURCES, ids=lambda p: p.parent.name)
def test_each_unit_has_a_written_answer_graded_by_hand(notebook):
    cells = nbformat.read(str(notebook), as_version=4).cells
    manual = [c for c in cells if c.cell_type == "markdown" and nbgrader_meta(c).get("grade") and nbgrader_meta(c).get("solution")]
    assert manual and all(nbgrader_meta(c)["points"] > 0 for c in manual)


@pytest.mark.parametrize("notebook", SOURCES, ids=lambda p: p.parent.name)
def test_the_notebook_draws_its_state_machines_in_mermaid(notebook):
    text = "\n".join(c.source for c in nbformat.read(str(notebook), as_version=4).cells if c.cell_type == "markdown")
    assert "```mermaid" in text


VISIBLE = re.compile(r"^ready\(([^)]*)\)$", re.M)


@pytest.mark.parametrize("notebook", SOURCES, ids=lambda p: p.parent.name)
def test_the_visible_part_of_each_test_cell_names_learner_functions(notebook):
    nb = nbformat.read(str(notebook), as_version=4)
    owned = {nbgrader_meta(c)["grade_id"] for n in SOURCES for c in nbformat.read(str(n), as_version=4).cells
             if is_learner_owned(c)}
    defined = set()
    for n in SOURCES:
        for c in nbformat.read(str(n), as_version=4).cells:
            if is_learner_owned(c):
                defined |= set(re.findall(r"^def (\w+)\(", c.source, re.M))
    graded = graded_test_cells(nb)
    assert graded, f"{notebook.name} has no graded test cell"
    for grade_id in graded:
        cell = next(c for c in nb.cells if nbgrader_meta(c).get("grade_id") == grade_id)
        visible = VISIBLE.findall(cell.source.split("### BEGIN HIDDEN TESTS")[0])
        assert len(visible) == 1, grade_id
        names = {n.strip().strip('"') for n in visible[0].split(",")}
        assert names and names <= defined, (grade_id, names - defined)
    assert owned


@pytest.mark.parametrize("notebook", SOURCES + [release_of(u) for u in UNITS], ids=lambda p: f"{p.parent.parent.name}/{p.stem}")
def test_the_cell_flags_read_every_cell_as_nbgrader_does(notebook):
    import nbgrader.utils as nbgrader_utils

    from lucy_runtime.notebooks import cells

    nb = nbformat.read(str(notebook), as_version=4)
    # A few cells nbgrader can meet in a learner's notebook besides ours: no metadata, a bare
    # nbgrader block, a locked cell, a solution that is also graded (nbgrader's "autograded answer").
    odd = [nbformat.v4.new_code_cell("x = 1"), nbformat.v4.new_markdown_cell("text"),
           nbformat.v4.new_code_cell("y", metadata={"nbgrader": {}}),
           nbformat.v4.new_code_cell("z", metadata={"nbgrader": {"locked": True}}),
           nbformat.v4.new_code_cell("w", metadata={"nbgrader": {"grade": True, "solution": True, "locked": True}})]
    for cell in nb.cells + odd:
        assert cells.is_grade(cell) == bool(nbgrader_utils.is_grade(cell)), cell
        assert cells.is_solution(cell) == bool(nbgrader_utils.is_solution(cell)), cell
        assert cells.is_locked(cell) == bool(nbgrader_utils.is_locked(cell)), cell
        assert cells.is_learner_owned(cell) == (cell.cell_type == "code" and nbgrader_utils.is_solution(cell)
                                                and not nbgrader_utils.is_grade(cell))
