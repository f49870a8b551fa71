"""What a learner reads in the feedback page: lines that fit the page, and no empty tables."""

from __future__ import annotations

from lucy_runtime.checker.results import CheckReport, RowResult
from lucy_runtime.grading.sealed import verdict_outputs

LONG_HINT = ("Move the work to done and insert its report in one `with queue.store.transaction() as tx:` block, "
             "so that a crash between the two statements leaves both or neither, never a done work without its report.")


def test_a_failing_rows_observation_and_hint_are_wrapped_to_the_width_of_the_page():
    verdict = RowResult("finish-atomic", False, "after a crash at 'write: INSERT INTO report' the work was done "
                        "and no report existed, which is exactly the half-done state this row exists to catch", LONG_HINT, 0.1)
    [output] = verdict_outputs(verdict)
    lines = [line for entry in output["traceback"] for line in entry.splitlines()]
    assert max(map(len, lines)) <= 100, lines
    assert " ".join(" ".join(lines).split()).count("Hint: Move the work to done") == 1
    assert output["evalue"].endswith("this row exists to catch"), "the value nbgrader records stays whole"


def test_a_self_check_that_ran_no_row_shows_no_empty_table():
    report = CheckReport((), "Self-check 'finish'", not_run="not run while nbgrader autogrades this notebook")
    html = report._repr_html_()
    assert "<table" not in html and "not run while nbgrader autogrades" in html
    ran = CheckReport((RowResult("finish-atomic", True, "held", "", 0.1),), "Self-check 'finish'")
    assert "<table" in ran._repr_html_()
