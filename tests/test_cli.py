"""The lucy command as an educator types it."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys

import nbformat
import pytest

from lucy_runtime.educator.cases import by_name
from lucy_runtime.proof.verify import filled, with_written_answers
from lucy_runtime.notebooks.cells import nbgrader_meta

from .conftest import REPO


def lucy(*args, cwd=REPO, env=None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "lucy_runtime.cli", *args], cwd=cwd, capture_output=True,
                          text=True, timeout=600, env=env)


def test_rows_lists_every_row_with_the_line_it_covers():
    done = lucy("rows")
    assert done.returncode == 0
    assert "finish-atomic" in done.stdout and "Fail between terminal state and report insertion" in done.stdout


def test_check_passes_the_reference_and_writes_json(tmp_path):
    done = lucy("check", "source", "--json", str(tmp_path / "check.json"))
    assert done.returncode == 0, done.stdout + done.stderr
    data = json.loads((tmp_path / "check.json").read_text())
    assert data["seconds"] > 0 and all(r["passed"] for r in data["rows"])
    assert {"row_id", "passed", "observation", "hint", "seconds", "crash_points"} <= set(data["rows"][0])
    by_row = {r["row_id"]: r["crash_points"] for r in data["rows"]}
    assert by_row["finish-atomic"] >= 3 and by_row["crash-sweep"] >= 10 and by_row["duplicate-identical"] == 0
    assert data["crash_points_tried"] == sum(by_row.values())


def test_check_fails_a_submission_with_a_noop_finish(tmp_path):
    unit = "ch07_unit_a"
    source = nbformat.read(str(REPO / "source" / unit / f"{unit}.ipynb"), as_version=4)
    release = nbformat.read(str(REPO / "release" / unit / f"{unit}.ipynb"), as_version=4)
    (tmp_path / unit).mkdir()
    nbformat.write(filled(release, source, by_name("noop-finish")), str(tmp_path / unit / f"{unit}.ipynb"))
    done = lucy("check", str(tmp_path), "--json", str(tmp_path / "out.json"))
    assert done.returncode == 1
    failing = {r["row_id"] for r in json.loads((tmp_path / "out.json").read_text())["rows"] if not r["passed"]}
    assert {"integrated-path", "finish-atomic", "finish-durable"} <= failing
    assert "hint:" in done.stdout


def test_check_on_a_blank_release_says_what_is_not_written(tmp_path):
    shutil.copytree(REPO / "release", tmp_path / "release")
    done = lucy("check", str(tmp_path / "release"), "--rows", "schema")
    assert done.returncode == 1 and "not written yet" in done.stdout


def test_hand_in_fills_a_fetched_notebook_as_a_learner_who_wrote_the_reference_or_a_case(tmp_path):
    unit = "ch07_unit_a"
    source = nbformat.read(str(REPO / "source" / unit / f"{unit}.ipynb"), as_version=4)
    release = nbformat.read(str(REPO / "release" / unit / f"{unit}.ipynb"), as_version=4)
    for name, case in (("ada", None), ("bea", by_name("finish-bare-pass"))):
        fetched = tmp_path / name / unit / f"{unit}.ipynb"
        fetched.parent.mkdir(parents=True)
        shutil.copy(REPO / "release" / unit / f"{unit}.ipynb", fetched)
        done = lucy("hand-in", str(fetched), *(["--case", case.name] if case else []), cwd=tmp_path)
        assert done.returncode == 0, done.stdout + done.stderr
        handed_in = nbformat.read(str(fetched), as_version=4)
        expected = with_written_answers(filled(release, source, case), source)
        assert [c.source for c in handed_in.cells] == [c.source for c in expected.cells]
        written = next(c for c in handed_in.cells if nbgrader_meta(c).get("grade_id") == "explain_worker_crash")
        assert written.source != "YOUR ANSWER HERE" and "running" in written.source
    code = {nbgrader_meta(c).get("grade_id"): c.source for c in handed_in.cells if c.cell_type == "code"}
    assert not any('NotImplementedError("write this function' in text for text in code.values())
    assert code["finish"].rstrip().endswith("    pass")


def test_hand_in_names_an_unknown_case_or_one_of_the_other_unit(tmp_path):
    unit = "ch07_unit_b"
    fetched = tmp_path / unit / f"{unit}.ipynb"
    fetched.parent.mkdir()
    shutil.copy(REPO / "release" / unit / f"{unit}.ipynb", fetched)
    unknown = lucy("hand-in", str(fetched), "--case", "no-such-case", cwd=tmp_path)
    assert unknown.returncode == 2 and "no educator case 'no-such-case'" in unknown.stdout
    other = lucy("hand-in", str(fetched), "--case", "finish-bare-pass", cwd=tmp_path)
    assert other.returncode == 2 and "a mistake in ch07_unit_a, not in ch07_unit_b" in other.stdout
    assert fetched.read_bytes() == (REPO / "release" / unit / f"{unit}.ipynb").read_bytes()


def test_exchange_outside_a_course_says_where_it_looked_in_one_line(tmp_path):
    outside = lucy("exchange", "close", "ch07_unit_a", "--course", str(tmp_path), cwd=tmp_path)
    assert outside.returncode == 2 and outside.stderr.splitlines() == [
        f"lucy exchange close: {tmp_path.resolve()} has no nbgrader_config.py: run it in the course directory "
        "(the repository's root is one) or name it with --course DIR"]
    (tmp_path / "nbgrader_config.py").write_text("c = get_config()\n", encoding="utf-8")
    nameless = lucy("exchange", "close", "ch07_unit_a", "--course", str(tmp_path), cwd=tmp_path)
    assert nameless.returncode == 2 and "sets no c.CourseDirectory.course_id" in nameless.stderr
    assert "Traceback" not in outside.stderr + nameless.stderr


def test_cases_lists_every_case_and_alternative():
    done = lucy("cases")
    assert done.returncode == 0 and "noop-finish" in done.stdout and "report-by-trigger" in done.stdout


def test_the_solutions_book_is_generated_from_the_source_solution_cells():
    done = lucy("solutions-book")
    assert done.returncode == 0
    assert "#### `finish`" in done.stdout and "#### `deliver_one`" in done.stdout
    assert "BEGIN SOLUTION" not in done.stdout


def test_book_without_mermaid_says_what_is_missing_and_fails(tmp_path):
    done = lucy("book", "--edition", "learner", "--out", str(tmp_path / "book"), "--mermaid", str(tmp_path / "none"))
    assert done.returncode == 1
    assert "BOOK NOT BUILT" in done.stdout and "make book" in done.stdout


@pytest.mark.slow  # cosmic-ray mutates a cell and runs a row on every mutant
def test_mutation_score_reports_the_share_killed_and_the_survivors_as_diffs(tmp_path):
    scratch = tmp_path / "tmp"
    scratch.mkdir()
    done = lucy("mutation-score", "--only", "requeue", "--rows", "generation", "--json", str(tmp_path / "m.json"),
                env={**os.environ, "TMPDIR": str(scratch)})
    assert done.returncode == 0, done.stdout + done.stderr
    assert not list(scratch.glob("lucy-mutation-*")), "the mutants' scratch folder outlived the run"
    data = json.loads((tmp_path / "m.json").read_text())
    assert data["killed"] + data["survived"] == len(data["all"]) > 0
    assert f"{data['killed']} of {data['killed'] + data['survived']} mutants killed" in done.stdout
    assert "second-generation" in done.stdout  # the row that killed them
    for survivor in data["survivors"]:
        assert f"{survivor['cell']} line {survivor['line']}" in done.stdout and survivor["diff"].startswith("---")


def test_mutation_score_names_an_unknown_cell_instead_of_a_traceback():
    done = lucy("mutation-score", "--only", "nonsense")
    assert done.returncode == 1 and "NO MUTATION SCORE: " in done.stdout and "Traceback" not in done.stderr


def test_lucy_ends_quietly_when_the_reader_of_its_output_goes_away():
    import subprocess
    import sys

    # `true` reads nothing and is gone before lucy writes: every write meets a closed pipe.
    done = subprocess.run(f"'{sys.executable}' -m lucy_runtime.cli rows | true", shell=True, capture_output=True,
                          text=True, timeout=120)
    assert "Traceback" not in done.stderr and "BrokenPipeError" not in done.stderr, done.stderr


@pytest.mark.nbgrader  # generates a course and autogrades three submissions with real nbgrader
def test_verify_grader_grades_only_the_named_case_and_keeps_nothing_unless_asked(tmp_path):
    """A contributor who changed one case grades it, not all of them; the scratch courses go with the run."""
    env = {**os.environ, "TMPDIR": str(tmp_path)}
    done = lucy("verify-grader", "--case", "noop-finish", "--unit", "ch07_unit_a", env=env)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert "grader verified: 3 submissions" in done.stdout  # the reference, the blank release, the case
    assert "noop-finish" in done.stdout and "split-finish" not in done.stdout
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith("lucy-verify-")] == []
    assert "kept in" not in done.stdout


def test_verify_grader_names_a_case_it_does_not_know_and_grades_nothing():
    done = lucy("verify-grader", "--case", "no-such-case")
    assert done.returncode == 2 and "no case, alternative or tamper case named 'no-such-case'" in done.stderr
    assert "Traceback" not in done.stderr


def test_verify_grader_selects_a_tamper_with_the_honest_case_beneath_it():
    from lucy_runtime.proof.verify import select_for_verify

    chosen = select_for_verify(["sniff-the-injector"], [])
    assert [t.name for t in chosen["tampers"]] == ["sniff-the-injector"]
    assert [c.name for c in chosen["cases"]] == ["finish-two-transactions"] and chosen["units"] == ("ch07_unit_a",)
    everything = select_for_verify([], ["ch07_unit_b"])
    assert everything["units"] == ("ch07_unit_b",) and {c.unit for c in everything["cases"]} == {"ch07_unit_b"}
