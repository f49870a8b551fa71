"""The grader's own checks, through real nbgrader: verify reports a case that survives, and
``nbgrader validate`` passes the source and fails the release.

Apart from test_grader_nbgrader.py so that the two pytest workers share the nbgrader runs.
"""

from __future__ import annotations

import pytest

from lucy_runtime.educator.cases import Case, Edit, by_name
from lucy_runtime.educator.verify import verify

pytestmark = pytest.mark.nbgrader


def test_verify_reports_a_case_that_survives(tmp_path):
    harmless = Case("harmless-edit", "ch07_unit_a", (Edit("work_once", "    if assignment is None:\n",
                                                          "    if assignment is None:  # a comment\n"),),
                    "changes nothing", ("empty-poll",), "")
    report = verify(cases=(harmless, by_name("noop-finish")), alternatives=(), tampers=(), workdir=tmp_path,
                    feedback=False, units=("ch07_unit_a",), workers=1)
    assert {(e.name, e.unit) for e in report.entries} == {(n, "ch07_unit_a") for n in
                                                          ("reference", "blank-release", "harmless-edit", "noop-finish")}
    assert not report.ok
    assert "case harmless-edit SURVIVES: it got full marks" in report.problems
    assert not [p for p in report.problems if "noop-finish" in p]


def test_the_source_passes_every_test_and_the_release_fails_every_autograded_test():
    from lucy_runtime.course import validate_release

    assert validate_release() == []
