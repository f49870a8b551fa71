"""Unit B loads the learner's own Unit A, and says where from without showing the grader's machine."""

from __future__ import annotations

import shutil

from lucy_runtime.carry import load_unit_a

from .conftest import REPO


def test_feedback_names_unit_a_relative_to_the_course_never_by_an_absolute_path(tmp_path, capsys):
    course = tmp_path / "course"
    unit_a = course / "submitted" / "ada" / "ch07_unit_a"
    unit_b = course / "autograded" / "ada" / "ch07_unit_b"
    unit_a.mkdir(parents=True)
    unit_b.mkdir(parents=True)
    shutil.copy(REPO / "release" / "ch07_unit_a" / "ch07_unit_a.ipynb", unit_a)
    defined = load_unit_a({}, unit_b)
    printed = capsys.readouterr().out
    assert "create_schema" in defined
    assert "submitted/ada/ch07_unit_a/ch07_unit_a.ipynb" in printed
    assert str(tmp_path) not in printed


def test_next_to_unit_b_the_path_is_relative_to_the_folder_that_holds_both(tmp_path, capsys):
    (tmp_path / "ch07_unit_a").mkdir()
    (tmp_path / "ch07_unit_b").mkdir()
    shutil.copy(REPO / "release" / "ch07_unit_a" / "ch07_unit_a.ipynb", tmp_path / "ch07_unit_a")
    load_unit_a({}, tmp_path / "ch07_unit_b")
    printed = capsys.readouterr().out
    assert "from ch07_unit_a/ch07_unit_a.ipynb:" in printed and str(tmp_path) not in printed
