"""`lucy autograde` refuses what it cannot grade with one clear line, before any job starts."""

from __future__ import annotations

import shutil

import pytest

from lucy_runtime.cli.main import main

from .conftest import REPO


def test_a_folder_that_is_no_course_is_refused_clearly(tmp_path, capsys):
    assert main(["autograde", "ch07_unit_a", "--course", str(tmp_path)]) == 2
    assert "no nbgrader_config.py" in capsys.readouterr().err


def test_an_assignment_nobody_handed_in_is_refused_clearly(tmp_path, capsys):
    shutil.copy(REPO / "nbgrader_config.py", tmp_path)
    assert main(["autograde", "ch07_unit_a", "--course", str(tmp_path)]) == 2
    assert "no submission of 'ch07_unit_a'" in capsys.readouterr().err


def test_a_student_id_nbgrader_cannot_be_told_to_leave_out_is_refused_before_any_grading(tmp_path, capsys):
    shutil.copy(REPO / "nbgrader_config.py", tmp_path)
    for student in ("ada", "bea,cal"):
        (tmp_path / "submitted" / student / "ch07_unit_a").mkdir(parents=True)
    assert main(["autograde", "ch07_unit_a", "--course", str(tmp_path)]) == 2
    assert "'bea,cal' cannot be named" in capsys.readouterr().err
    assert not (tmp_path / "autograded").exists()


@pytest.mark.parametrize("jobs", ["0", "-1", "two"])
def test_jobs_must_be_a_whole_number_of_at_least_one(jobs, capsys):
    with pytest.raises(SystemExit):
        main(["autograde", "ch07_unit_a", "--jobs", jobs])
    assert "at least 1" in capsys.readouterr().err
