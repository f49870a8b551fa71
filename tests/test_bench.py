"""`make bench`: the report's structure on a tiny configuration (no timed assertions)."""

from __future__ import annotations

import json

import pytest

from lucy_runtime.bench.bench import BenchConfig, run_bench, summary

from .conftest import REPO


def test_the_queue_part_reports_rates_ratios_and_transactions_per_item():
    report = run_bench(BenchConfig(notebook_dir=REPO / "source", sections=("queue",), items=5))
    q = report.queue
    assert q.items == 5 and q.queue_items_per_s > 0 and q.raw_commits_per_s > 0 and q.persist_queue_items_per_s > 0
    assert q.transactions_per_item >= 1  # admit, work and delivery each commit at least once between them
    assert report.rows is None and report.autograde is None and report.klass is None
    data = json.loads(report.to_json())
    assert set(data) >= {"config", "rows", "autograde", "class", "queue", "problems"}
    assert data["queue"]["vs_raw_commits"] == q.vs_raw_commits
    assert "transactions per item" in summary(report)


def test_an_unknown_bench_part_is_refused_by_name():
    with pytest.raises(ValueError, match="unknown bench sections"):
        run_bench(BenchConfig(sections=("rows", "speed")))


def test_lucy_bench_only_offers_exactly_the_sections_the_bench_has():
    from lucy_runtime.bench.bench import SECTIONS
    from lucy_runtime.cli.main import build_parser

    bench = build_parser()._subparsers._group_actions[0].choices["bench"]  # type: ignore[union-attr]
    only = next(a for a in bench._actions if a.dest == "only")
    assert tuple(only.choices) == SECTIONS


def test_make_bench_writes_artifacts_bench_json():
    assert "lucy bench --json artifacts/bench.json" in (REPO / "Makefile").read_text()


def test_the_loop_part_times_each_make_target_against_its_goal(tmp_path):
    repo = tmp_path / "repo"
    repo.mkdir()
    (repo / "Makefile").write_text("quick:\n\t@true\nbroken:\n\t@false\n")
    report = run_bench(BenchConfig(sections=("loop",), loop=(("quick", 60.0), ("broken", 30.0)), repo=repo))
    quick, broken = report.loop
    assert (quick.target, quick.goal_seconds, quick.exit_code) == ("quick", 60.0, 0)
    assert quick.of_goal == round(quick.seconds / 60.0, 2)
    assert broken.exit_code != 0 and report.problems == (f"make broken failed (exit {broken.exit_code}); see {broken.log}",)
    assert "make quick:" in summary(report) and "FAILED" in summary(report)
    assert [t["target"] for t in json.loads(report.to_json())["loop"]] == ["quick", "broken"]


def test_each_make_target_of_the_loop_is_measured_against_a_goal_stated_in_the_code():
    """The goals live beside the code that measures them, not in prose a test would have to parse."""
    from lucy_runtime.bench.bench import LOOP

    assert dict(LOOP) == {"test-fast": 60.0, "test": 600.0, "demo": 360.0}


@pytest.mark.nbgrader
def test_the_report_part_times_lucy_report_on_a_synthesised_class_beside_autograding_it():
    report = run_bench(BenchConfig(sections=("report",), learners=4))
    r = report.report
    assert r.learners == 4 and r.report_seconds > 0 and r.submission_seconds > 0
    assert r.autograde_seconds == round(4 * r.submission_seconds, 1) and r.of_autograde > 0
    assert report.problems == () and json.loads(report.to_json())["report"]["learners"] == 4
    assert "class report, 4 learners" in summary(report)
