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


def counting_namespace() -> tuple[dict, list]:
    calls: list[str] = []

    def create_schema(store):
        calls.append("create_schema")
        raise NotImplementedError

    return {"create_schema": create_schema}, calls


def test_under_autograde_a_self_check_runs_no_row_and_says_why(monkeypatch):
    from lucy_runtime.checker import check

    monkeypatch.setenv(SEALED_ENV, "sealed")
    namespace, calls = counting_namespace()
    report = check("schema", namespace=namespace)
    assert calls == [] and report.results == () and report.failing == [] and not report.passed
    assert "checked outside it" in repr(report) and "checked outside it" in report._repr_html_()


def test_working_interactively_a_self_check_runs_its_rows(monkeypatch):
    from lucy_runtime.checker import check

    monkeypatch.delenv(SEALED_ENV, raising=False)
    namespace, calls = counting_namespace()
    report = check("schema", namespace=namespace)
    assert report.results and report.failing and not report.not_run  # the rows ran (in children) and failed
