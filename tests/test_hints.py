"""Every hint names the cause the observation shows, not a neighbouring one."""

from __future__ import annotations

import pytest

from lucy_runtime.checker import SourceLearner, SwappedLearner, run_rows
from lucy_runtime.checker.rows import ROWS
from lucy_runtime.educator.cases import Edit

SENDING_MARK = ("        if tx.execute(\n"
                "            \"UPDATE report SET delivery = 'sending', attempts = attempts + 1 \"\n"
                "            \", first_sent_at = COALESCE(first_sent_at, ?) WHERE report_id = ? AND delivery = 'pending'\",\n"
                "            (policy.now(), row[\"report_id\"]),\n"
                "        ).rowcount != 1:\n"
                "            raise WrongState(f\"report {row['report_id']!r} left 'pending' while we looked at it\")\n")


def result_of(learner, row_id: str):
    return run_rows(learner, [ROWS[row_id]], seed=29).results[0]


ROW_COUNT_CHECK = ("        if moved != 1:\n"
                   "            raise WrongState(f\"report {report_id!r} left 'sending' while it was on the wire; "
                   "its state is not ours\")\n")


def without(cells, *texts: str):
    """``cells`` with each of ``texts`` taken out of the learner's ``deliver_one``."""
    def edit(source: str) -> str:
        for text in texts:
            source = Edit("deliver_one", text, "").apply(source)
        return source
    return [(n, edit(s) if n.endswith(":deliver_one") else s) for n, s in cells]


def test_hint_names_the_missing_sending_mark_when_a_crash_leads_to_a_second_send(reference_cells):
    result = result_of(SourceLearner(without(reference_cells, SENDING_MARK, ROW_COUNT_CHECK)),
                       "delivery-never-confirmed-unsent")
    assert not result.passed and "2 times" in result.observation
    assert "Commit 'sending'" in result.hint and "never before the send" not in result.hint


def test_hint_names_the_missing_sending_mark_when_the_learners_own_row_count_check_catches_it(reference_cells):
    """With the row-count check of Unit B's deliver_one, a missing 'sending' mark stops at the first send."""
    result = result_of(SourceLearner(without(reference_cells, SENDING_MARK)), "delivery-never-confirmed-unsent")
    assert not result.passed and "raised WrongState" in result.observation
    assert "Commit 'sending'" in result.hint


def test_hint_names_an_unfinished_finish_not_a_refusal_when_broken_finish_stands_in(reference_cells):
    broken = SwappedLearner(SourceLearner(reference_cells), {"finish": "broken_finish"})
    result = result_of(broken, "refused-leaves-no-trace")
    assert not result.passed and "not done" in result.observation
    assert "finish must mark the work done" in result.hint and "refusal" not in result.hint.lower()
    assert result_of(SourceLearner(reference_cells), "refused-leaves-no-trace").passed


def with_edit(cells, cell: str, edit: Edit, unit: str = "ch07_unit_a"):
    return [(n, edit.apply(s) if n == f"{unit}:{cell}" else s) for n, s in cells]


def unit_a(cells):
    return [(n, s) for n, s in cells if n.startswith("ch07_unit_a:")]


def test_a_bare_pass_finish_gets_hints_that_point_at_finish(reference_cells):
    bare = with_edit(unit_a(reference_cells), "finish", Edit("finish", None, "pass"))
    for row_id in ("refused-leaves-no-trace", "report-to-admitted-session"):
        result = result_of(SourceLearner(bare), row_id)
        assert not result.passed, row_id
        assert "finish" in result.hint, (row_id, result.hint)
        assert "Decide refusal" not in result.hint and "never from the loop's result" not in result.hint, result.hint


def test_nothing_stored_does_not_get_the_session_id_hint(reference_cells):
    nothing = with_edit(unit_a(reference_cells), "finish",
                        Edit("finish", None, "return Report(f\"r-{assignment.work_id}-1\", assignment.work_id, 1, "
                                             "assignment.session_id, result.text)"))
    result = result_of(SourceLearner(nothing), "report-to-admitted-session")
    assert not result.passed and "session_id from the stored work row" not in result.hint, result.hint
    assert "stor" in result.hint.lower() and "report" in result.hint.lower()


def test_a_claim_with_an_sql_typo_does_not_get_the_capacity_hint(reference_cells):
    typo = with_edit(unit_a(reference_cells), "claim", Edit("claim", "WHERE state = 'pending' ORDER BY work_id",
                                                             "WHER state = 'pending' ORDER BY work_id"))
    result = result_of(SourceLearner(typo), "capacity-bounded")
    assert not result.passed
    assert "capacity" not in result.hint.lower() or "claim" in result.hint.lower(), result.hint
    assert "SQL" in result.hint or "syntax" in result.hint.lower() or "claim raised" in result.hint, result.hint


def test_second_generation_with_a_missing_guard_says_guard_not_try_except(reference_cells):
    b = [(n, s) for n, s in reference_cells if not n.startswith("ch07_practice")]
    unguarded = with_edit(b, "requeue", Edit("requeue", "\"WHERE work_id = ? AND state = 'done'\",",
                                             "\"WHERE work_id = ?\","), unit="ch07_unit_b")
    result = result_of(SourceLearner(unguarded), "second-generation")
    assert not result.passed
    assert "state = 'done'" in result.hint or "guard" in result.hint.lower(), result.hint
    assert "except" not in result.hint, result.hint


def test_practice_observations_name_rows_by_their_role_not_by_the_checkers_made_up_ids(reference_cells):
    """The learner's own table says m1; a made-up id such as m-x7o2od in a message points at nothing they can see."""
    import re

    from lucy_runtime.educator.practice_cases import PRACTICE_CASES

    practice = [(n, s) for n, s in reference_cells if n.startswith("ch07_practice:")]
    status_first = next(c for c in PRACTICE_CASES if c.name == "practice-status-before-publish")
    edited = [(n, e.apply(s) if n == f"ch07_practice:{e.cell}" else s) for n, s in practice for e in status_first.edits]
    results = run_rows(SourceLearner(edited), [ROWS["practice-in-flight-resume"], ROWS["practice-publish-sweep"],
                                                ROWS["practice-kill-window"]], seed=29).results
    assert [r.passed for r in results] == [False, False, True]
    for result in results:
        assert not re.search(r"\bm-[a-z0-9]{4,}\b", result.observation), result.observation



PLANTED_BY = {("report", "unknown", "needs_person"): "operator-sees-every-stuck-state",
              ("report", "unknown", "pending"): "delivery-key-forgotten",
              ("report", "sending", "pending"): "delivery-moved-meanwhile",
              ("work", "running", "needs_person"): "release-fenced",
              ("work", "running", "pending"): "model-fails-for-good"}
"""A row whose scenario the checker plants with each of its own setup moves."""


def refusing(table: str, leaving: str, to: str) -> Edit:
    """A schema edit: a trigger of the learner's that refuses one move of ``table``."""
    column = "delivery" if table == "report" else "state"
    return Edit("schema", "    UNIQUE (work_id, generation)\n);\n",
                "    UNIQUE (work_id, generation)\n);\n"
                f"CREATE TRIGGER IF NOT EXISTS no_such_move BEFORE UPDATE OF {column} ON {table}\n"
                f"WHEN OLD.{column} = '{leaving}' AND NEW.{column} = '{to}'\n"
                "BEGIN SELECT RAISE(ABORT, 'this schema refuses the move'); END;\n")


def test_every_setup_move_of_the_checker_has_a_row_here():
    from lucy_runtime.checker.setup_moves import REPORT_MOVES, WORK_MOVES

    assert set(PLANTED_BY) == {("report", *m) for m in REPORT_MOVES} | {("work", *m) for m in WORK_MOVES}


@pytest.mark.parametrize("move", PLANTED_BY, ids=lambda m: f"{m[0]}-{m[1]}-to-{m[2]}")
def test_a_schema_that_refuses_the_checkers_own_setup_move_gets_the_setup_hint_not_one_that_blames_its_sql(
        reference_cells, move):
    """The row plants its scenario by moving a row itself, along a drawn arrow; a learner's trigger refuses it."""
    table, leaving, to = move
    result = result_of(SourceLearner(with_edit(reference_cells, "schema", refusing(*move))), PLANTED_BY[move])
    assert not result.passed
    assert "could not set up its scenario" in result.observation
    assert f"from {leaving!r} to {to!r}" in result.observation and "this schema refuses" in result.observation
    assert "not a mistake in your SQL" in result.hint and "diagrams draw" in result.hint
    assert "your code raised" not in result.observation and "SQLite could not run" not in result.hint
    assert "Unit A" not in result.hint


def practice_with(reference_cells, case_name: str):
    from lucy_runtime.educator.practice_cases import PRACTICE_CASES

    case = next(c for c in PRACTICE_CASES if c.name == case_name)
    cells = [(n, s) for n, s in reference_cells if n.startswith("ch07_practice:")]
    for edit in case.edits:
        cells = with_edit(cells, edit.cell, edit, unit="ch07_practice")
    return SourceLearner(cells)


def test_practice_per_attempt_keys_get_a_hint_about_the_key_changing_not_about_counting_attempts(reference_cells):
    for case, row in (("practice-publish-per-attempt-key", "practice-in-flight-resume"),
                      ("practice-per-attempt-key", "practice-grant-at-most-once")):
        result = result_of(practice_with(reference_cells, case), row)
        assert not result.passed and "different keys" in result.observation, result.observation
        assert "changes between attempts" in result.hint and "count" not in result.hint.lower(), result.hint


def test_practice_a_digest_mismatch_is_reported_as_one_not_as_a_refusal(reference_cells):
    for case in ("practice-recover-trusts-any-receipt", "practice-recover-drops-refusal"):
        result = result_of(practice_with(reference_cells, case), "practice-recover-from-receipt")
        assert not result.passed and "digest" in result.observation, result.observation
        assert "refused" not in result.observation, result.observation


def test_practice_a_recovery_that_never_submits_is_told_to_call_the_service_s_submit(reference_cells):
    practice = [(n, s) for n, s in reference_cells if n.startswith("ch07_practice:")]
    silent = with_edit(practice, "recover_cases", Edit("recover_cases", "answer = service.submit(key, row[\"proposal\"])",
                                                        "continue"), unit="ch07_practice")
    result = result_of(SourceLearner(silent), "practice-recover-from-receipt")
    assert not result.passed and "no submit request" in result.observation, result.observation
    assert "service.submit(" in result.hint, result.hint


def test_practice_a_500_taken_for_a_refusal_hears_that_it_may_have_arrived(reference_cells):
    result = result_of(practice_with(reference_cells, "practice-500-refused-at-once"), "practice-grant-error-classes")
    assert not result.passed and "commit-then-500" in result.observation, result.observation
    assert "may have arrived" in result.hint and "refused at once" not in result.hint, result.hint


def test_practice_hints_name_causes_not_formulas():
    hints = {row.id: row.hint for row in ROWS.values() if row.unit == "P"}
    assert "2 **" not in hints["practice-grant-backoff"] and "uniform" not in hints["practice-grant-backoff"]
    assert [r for r, h in hints.items() if "WHERE" in h or "UPDATE" in h] == []
