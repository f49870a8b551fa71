"""`make bench`: the report's structure on a tiny configuration (no timed assertions)."""

from __future__ import annotations

import json

import pytest

from lucy_runtime.bench import BenchConfig, run_bench, summary

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


def test_make_bench_writes_artifacts_bench_json():
    assert "lucy bench --json artifacts/bench.json" in (REPO / "Makefile").read_text()
