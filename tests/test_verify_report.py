"""The verify-grader report: its kinds, its judgement and its tables, from submissions graded by hand here."""

from __future__ import annotations

import json

import pytest

from lucy_runtime.course.course import GradedSubmission
from lucy_runtime.proof.verify import Entry, Kind, VerifyReport, judge

UNIT = "ch07_unit_a"


def entry(name: str, kind: Kind, score: float, failing: tuple[str, ...] = (), **more) -> Entry:
    graded = GradedSubmission(name, UNIT, score, 20.0, tuple(f"row_{r.replace('-', '_')}" for r in failing), 1.5)
    return Entry(name, kind, UNIT, graded=graded, **more)


REPORT = VerifyReport([
    entry("reference", Kind.REFERENCE, 20.0),
    entry("blank-release", Kind.BLANK, 0.0, ("finish-atomic", "claim-once")),
    entry("noop-finish", Kind.CASE, 15.0, ("finish-atomic", "claim-once"), expected=("finish-atomic",)),
    entry("lost-claim", Kind.CASE, 18.0, ("finish-atomic",), expected=("claim-once",)),
    entry("print-ok", Kind.TAMPER, 0.0, honest="blank-release"),
])


def test_an_entry_made_with_the_kinds_name_gets_the_kind():
    assert entry("x", "case", 1.0).kind is Kind.CASE
    with pytest.raises(ValueError):
        entry("x", "mutant", 1.0)


def test_the_kill_matrix_marks_expected_extra_and_missed_rows():
    matrix, legend = REPORT.kill_matrix().split("\n\n")
    lines = {line.split()[0]: line.split()[1:] for line in matrix.splitlines()[1:]}
    assert matrix.splitlines()[0].split() == ["1", "2"]
    assert lines == {"claim-once": ["+", "!"], "finish-atomic": ["X", "+"]}
    assert " 1 noop-finish" in legend and " 2 lost-claim" in legend


def test_the_grade_table_has_one_line_per_submission_with_its_kind_and_score():
    lines = REPORT.grade_table().splitlines()
    assert lines[0].split()[:5] == ["submission", "kind", "unit", "score", "s"]
    assert lines[3].split()[:5] == ["noop-finish", "case", UNIT, "15/20", "1.5"]
    assert len(lines) == 1 + len(REPORT.entries)


def test_the_tamper_table_says_held_when_the_trick_scores_no_more_than_its_honest_base():
    table = REPORT.tamper_table()
    assert table.splitlines()[1].split() == ["print-ok", UNIT, "0/20", "blank-release", "0/20", "held"]


def test_judge_names_a_case_caught_by_other_rows_than_expected():
    problems = judge(REPORT.entries)
    assert problems == ["case lost-claim was caught, but not by the rows expected to catch it: claim-once "
                        "(caught by finish-atomic)"]


def test_the_json_carries_kinds_as_plain_words():
    kinds = [s["kind"] for s in json.loads(REPORT.to_json())["submissions"]]
    assert kinds == ["reference", "blank", "case", "case", "tamper"]
