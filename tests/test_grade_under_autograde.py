"""Under `nbgrader autograde` a row runs once: the sealed verdict decides, the kernel's grade() does not run it."""

from __future__ import annotations

import pytest

from lucy_runtime.checker import SEALED_ENV, ROWS, GradeFailure, grade


def a_row() -> str:
    return next(iter(ROWS))


def test_under_autograde_grade_leaves_the_row_to_the_sealed_verdict(monkeypatch, capsys):
    monkeypatch.setenv(SEALED_ENV, "sealed")
    assert grade(a_row(), namespace={}) is None  # nothing is defined, so running the row would fail it
    assert "graded outside the notebook" in capsys.readouterr().out


def test_working_interactively_grade_runs_the_row(monkeypatch):
    monkeypatch.delenv(SEALED_ENV, raising=False)
    with pytest.raises(GradeFailure):
        grade(a_row(), namespace={})
