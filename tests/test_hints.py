"""Every hint names the cause the observation shows, not a neighbouring one."""

from __future__ import annotations

from lucy_runtime.checker import SourceLearner, SwappedLearner, run_rows
from lucy_runtime.checker.rows import ROWS
from lucy_runtime.educator.cases import Edit

SENDING_MARK = ("        tx.execute(\n"
                "            \"UPDATE report SET delivery = 'sending', attempts = attempts + 1 \"\n"
                "            \", first_sent_at = COALESCE(first_sent_at, ?) WHERE report_id = ? AND delivery = 'pending'\",\n"
                "            (policy.now(), row[\"report_id\"]),\n"
                "        )\n")


def result_of(learner, row_id: str):
    return run_rows(learner, [ROWS[row_id]], seed=29).results[0]


def test_hint_names_the_missing_sending_mark_when_a_crash_leads_to_a_second_send(reference_cells):
    unmarked = [(n, Edit("deliver_one", SENDING_MARK, "").apply(s) if n.endswith(":deliver_one") else s)
                for n, s in reference_cells]
    result = result_of(SourceLearner(unmarked), "delivery-never-confirmed-unsent")
    assert not result.passed and "2 times" in result.observation
    assert "Commit 'sending'" in result.hint and "never before the send" not in result.hint


def test_hint_names_an_unfinished_finish_not_a_refusal_when_broken_finish_stands_in(reference_cells):
    broken = SwappedLearner(SourceLearner(reference_cells), {"finish": "broken_finish"})
    result = result_of(broken, "refused-leaves-no-trace")
    assert not result.passed and "not done" in result.observation
    assert "finish must mark the work done" in result.hint and "refusal" not in result.hint.lower()
    assert result_of(SourceLearner(reference_cells), "refused-leaves-no-trace").passed
