"""The grader through real nbgrader: the walking skeleton's promise and the kill matrix."""

from __future__ import annotations

import dataclasses
import json

import pytest

from lucy_runtime.educator.alternatives import ALTERNATIVES
from lucy_runtime.educator.cases import CASES, Case, Edit
from lucy_runtime.educator.practice_cases import PRACTICE_ALTERNATIVES, PRACTICE_CASES
from lucy_runtime.proof.tampers import TAMPERS
from lucy_runtime.proof.verify import verify

pytestmark = pytest.mark.nbgrader

HARMLESS = Case("harmless-edit", "ch07_unit_a", (Edit("work_once", "    if assignment is None:\n",
                                                     "    if assignment is None:  # a comment\n"),),
                "changes nothing", ("empty-poll",), "")
"""Planted among the real cases: an edit no row can catch, which verify must report as surviving."""
SURVIVOR = ["case harmless-edit SURVIVES: it got full marks",
            "case harmless-edit was not caught by its expected rows empty-poll"]


THROUGH_NBGRADER = (
    "noop-finish",  # the chapter's first known-bad
    "tamper-with-checker",  # rebinds the checker in the kernel
    "finish-two-transactions", "claim-check-then-act", "delivery-confirms-before-send",  # tampers ride on these
    "admit-check-then-act",  # a race row, paused between learner calls in the sandbox
    "split-finish-under-sweep",  # crash rows and the model-based row: real process death in the sandbox
    "practice-per-attempt-key", "practice-hook-never-fires",
    # alternatives the developers' guide names: report first, INSERT ... ON CONFLICT, RETURNING, another schema
    "report-before-state", "admit-insert-on-conflict", "finish-update-returning", "schema-with-extras",
    "requeue-defers-running-work", "practice-publish-update-returning",
)
"""The cases and alternatives graded here through real nbgrader, beside the references, the blank
releases, every tamper case and the planted survivor. Every other case and alternative is checked
by the same rows on the same cells, with another seed and in another process
(tests/test_sealed_cells.py shows the cells are the same; test_rows.py, test_alternatives.py and
test_practice.py run the rows); `make demo` grades them all through nbgrader."""


def sample(cases: tuple[Case, ...]) -> tuple[Case, ...]:
    return tuple(c for c in cases if c.name in THROUGH_NBGRADER)


LIMIT_TAMPERS = ("memory-without-end", "fork-without-end", "print-without-end", "fill-the-temporary-folder",
                 "fill-the-working-folder", "fill-the-socket-folder", "sleep-forever", "close-its-own-streams")
"""Tamper cases `make demo` grades and this verify leaves to tests/test_hostile_class.py, which grades
the same tricks through nbgrader (both ways, beside honest submissions) and checks what each is told."""
TAMPERS_HERE = tuple(t for t in TAMPERS if t.name not in LIMIT_TAMPERS)


@pytest.fixture(scope="module")
def verified(tmp_path_factory):
    """One real verify for the module: the sample above, every tamper, and the planted survivor."""
    return verify(cases=sample(CASES + PRACTICE_CASES) + (HARMLESS,), alternatives=sample(ALTERNATIVES + PRACTICE_ALTERNATIVES),
                  tampers=TAMPERS_HERE, workdir=tmp_path_factory.mktemp("verify"))


def test_the_sample_names_real_cases_and_every_case_a_tamper_rides_on():
    known = {c.name for c in CASES + PRACTICE_CASES + ALTERNATIVES + PRACTICE_ALTERNATIVES}
    assert set(THROUGH_NBGRADER) <= known
    assert {t.honest for t in TAMPERS} - {"blank-release", "reference"} <= set(THROUGH_NBGRADER)
    assert {c.unit for c in sample(CASES + PRACTICE_CASES)} == {c.unit for c in sample(ALTERNATIVES + PRACTICE_ALTERNATIVES)} \
        == {"ch07_unit_a", "ch07_unit_b", "ch07_practice"}


def entry(report, name, unit="ch07_unit_a"):
    return next(e for e in report.entries if e.name == name and e.unit == unit)


@pytest.mark.parametrize("unit", ["ch07_unit_a", "ch07_unit_b"])
def test_the_reference_gets_full_marks_under_real_nbgrader(verified, unit):
    reference = entry(verified, "reference", unit).graded
    assert reference.full_marks and reference.max_score >= 20, reference


def test_a_noop_finish_loses_marks_under_real_nbgrader(verified):
    noop = entry(verified, "noop-finish")
    assert noop.graded.score < noop.graded.max_score
    assert {"integrated-path", "finish-durable", "finish-atomic"} <= set(noop.failing_rows)


@pytest.mark.parametrize("unit", ["ch07_unit_a", "ch07_unit_b"])
def test_the_blank_release_scores_zero_on_every_autograded_row(verified, unit):
    import nbformat

    from lucy_runtime.course.course import REPO, graded_test_cells

    blank = entry(verified, "blank-release", unit).graded
    cells = graded_test_cells(nbformat.read(str(REPO / "source" / unit / f"{unit}.ipynb"), as_version=4))
    assert blank.score == 0 and sorted(blank.failing) == sorted(cells)


def test_a_learner_cell_that_tampers_with_grade_still_loses_the_points(verified):
    tamper = entry(verified, "tamper-with-checker")
    assert {"integrated-path", "finish-atomic", "finish-durable"} <= set(tamper.failing_rows)


def test_each_case_graded_is_caught_by_its_expected_rows_and_each_alternative_gets_full_marks(verified):
    assert [p for p in verified.problems if p not in SURVIVOR] == []


def test_verify_reports_a_case_that_survives_and_nothing_else(verified):
    assert verified.problems == SURVIVOR
    assert not verified.ok
    assert entry(verified, "harmless-edit").graded.full_marks


def test_the_grade_table_kill_matrix_and_json_say_the_same(verified, tmp_path):
    data = json.loads(verified.to_json())
    names = {s["name"] for s in data["submissions"]}
    assert {c.name for c in sample(CASES) if c.unit == "ch07_unit_a"} <= names
    for submission in data["submissions"]:
        assert {"name", "score", "max_score", "failing_rows"} <= set(submission)
    matrix = verified.kill_matrix()
    assert "noop-finish" in matrix and " X" in matrix and " !" in matrix.split("\n\n")[0]  # the planted survivor
    real = dataclasses.replace(verified, entries=[e for e in verified.entries if e.name != HARMLESS.name])
    assert " !" not in real.kill_matrix().split("\n\n")[0]
    assert "reference" in verified.grade_table()


def test_each_autograded_submission_reports_its_seconds(verified):
    assert all(e.graded.seconds > 0 for e in verified.entries)


def test_feedback_for_every_submission_and_exported_grades_equal_the_gradebook(verified):
    import pandas as pd

    handback = verified.handback
    assert handback is not None and handback.feedback_files == len(verified.entries)
    grades = pd.read_csv(handback.grades_csv)
    noop = grades[(grades["student_id"] == "noop_finish") & (grades["assignment"] == "ch07_unit_a")]
    assert noop["raw_score"].tolist() == [entry(verified, "noop-finish").graded.score]
    assert json.loads(verified.to_json())["handback"]["exported_rows"] == len(grades)


# --- tampering: every trick scores no more than the honest submission beneath it ----------------------



@pytest.mark.parametrize("tamper", TAMPERS_HERE, ids=lambda t: t.name)
def test_no_tamper_case_outscores_the_honest_submission_beneath_it(verified, tamper):
    pairs = {(t.name, t.unit): base for t, base in verified.tampering()}
    base = pairs[(tamper.name, tamper.unit)]
    tampered = entry(verified, tamper.name, tamper.unit)
    assert base is not None, f"{tamper.honest} was not graded"
    assert tampered.graded.score <= base.graded.score, (tampered.graded, base.graded)
    assert "held" in verified.tamper_table() and "FORGED" not in verified.tamper_table()


def test_no_learner_code_reached_the_answer_server_on_the_grading_machine(verified):
    assert verified.answers_fetched == 0
    assert entry(verified, "fetch-the-answer").graded.score == 0


def test_every_limit_tamper_case_is_a_trick_of_the_hostile_class():
    from .test_hostile_class import NAMED

    assert {t.name for t in TAMPERS} - {t.name for t in TAMPERS_HERE} == set(LIMIT_TAMPERS)
    assert set(NAMED) | {"close-std"} == {"memory", "fork", "print", "fill-tmp", "fill-work", "fill-sockets", "sleep",
                                          "close-std"}


@pytest.mark.parametrize("name", ["rebind-grade", "display-ok", "last-value-string"])
def test_an_autograded_cell_keeps_only_the_sealed_verdict_whatever_the_kernel_showed(verified, name):
    import glob

    import nbformat

    from lucy_runtime.notebooks.cells import test_cells

    tamper = next(t for t in TAMPERS if t.name == name)
    student = name.replace("-", "_")
    [path] = glob.glob(str(verified_root(verified) / "course-*" / "autograded" / student / tamper.unit / "*.ipynb"))
    for cell in test_cells(nbformat.read(path, as_version=4)):
        assert len(cell.outputs) == 1, cell.outputs
        assert cell.outputs[0]["output_type"] == "error", cell.outputs
        assert "RowDoesNotHold" in cell.outputs[0]["ename"]


def verified_root(report):
    return report.root


@pytest.mark.parametrize("tamper", [t for t in TAMPERS_HERE if t.honest != "blank-release" and not t.needs_sandbox],
                         ids=lambda t: t.name)
def test_lucy_check_and_the_gradebook_agree_on_a_tamper_case(verified, tamper):
    import glob
    from pathlib import Path

    from lucy_runtime.checker import SourceLearner, rows_for_cells, run_rows
    from lucy_runtime.notebooks.notebook import learner_implementation

    student = tamper.name.replace("-", "_")
    [folder] = glob.glob(str(verified_root(verified) / "course-*" / "submitted" / student))
    cells = learner_implementation(Path(folder))
    checked = run_rows(SourceLearner(cells), [r for r in rows_for_cells("all", cells)
                                               if f"ch07_unit_{r.unit.lower()}" == tamper.unit], seed=7)
    failing_in_check = {r.row_id for r in checked.results if not r.passed}
    assert failing_in_check == set(entry(verified, tamper.name, tamper.unit).failing_rows)
