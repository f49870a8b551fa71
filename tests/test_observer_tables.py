"""The observer finds the learner's base tables by their columns, whatever views or
copies sit beside them, and says exactly what it found when it cannot decide."""

from __future__ import annotations

import sqlite3
from contextlib import closing

import pytest

from lucy_runtime.checker.observe import Snapshot, snapshot
from lucy_runtime.checker.rows import Fail, seen
from lucy_runtime.work import REPORT_COLUMNS, WORK_COLUMNS


def table(name: str, columns: tuple[str, ...], *extra: str) -> str:
    return f"CREATE TABLE {name} ({', '.join(columns + extra)});"


@pytest.fixture
def db(tmp_path):
    def make(*statements: str) -> str:
        path = tmp_path / "lucy.sqlite3"
        with closing(sqlite3.connect(path)) as conn:
            conn.executescript(table("work", WORK_COLUMNS) + "\n".join(statements))
            conn.execute("INSERT INTO work VALUES (1, 's1', 'chat-1', 'brief ACME', 'done')")
            conn.commit()
        return str(path)

    return make


A_REPORT = "INSERT INTO report VALUES ('r-1-1', 1, 1, 'chat-1', 'ACME up', 'pending');"


def test_a_view_over_the_report_table_is_not_a_second_report_table(db):
    seen_now = snapshot(db(table("report", REPORT_COLUMNS), A_REPORT,
                           "CREATE VIEW outbox AS SELECT * FROM report WHERE delivery IN ('pending', 'unknown');",
                           "CREATE VIEW all_work AS SELECT * FROM work;"))
    assert seen_now["problems"] == []
    assert seen_now["tables"] == {"work": "work", "report": "report"}
    assert [r["report_id"] for r in seen_now["reports"]] == ["r-1-1"]


def test_an_archive_table_with_the_same_columns_does_not_hide_the_report_table(db):
    seen_now = snapshot(db(table("report", REPORT_COLUMNS), A_REPORT,
                           table("report_archive", REPORT_COLUMNS, "archived_at")))
    assert seen_now["problems"] == [] and seen_now["tables"]["report"] == "report"


def test_reports_kept_under_other_column_names_are_read_through_a_view_that_has_the_observers(db):
    seen_now = snapshot(db("CREATE TABLE answers (id, work, gen, session, text, delivered);",
                           "INSERT INTO answers VALUES ('r-1-1', 1, 1, 'chat-1', 'ACME up', 'pending');",
                           "CREATE VIEW report AS SELECT id AS report_id, work AS work_id, gen AS generation, "
                           "session AS session_id, text AS body, delivered AS delivery FROM answers;"))
    assert seen_now["problems"] == [] and seen_now["tables"]["report"] == "report"
    assert seen_now["reports"][0]["body"] == "ACME up"


def test_two_equally_plausible_report_tables_are_named_with_their_columns_and_the_hint_does_not_blame_a_connection(db):
    seen_now = snapshot(db(table("replies", REPORT_COLUMNS), table("sent_replies", REPORT_COLUMNS, "receipt"),
                           "CREATE VIEW outbox AS SELECT * FROM replies;",
                           "INSERT INTO replies VALUES ('r-1-1', 1, 1, 'chat-1', 'ACME up', 'pending');"))
    assert seen_now["ambiguous"] == ["report"]
    (problem,) = seen_now["problems"]
    assert "replies (report_id, work_id, generation, session_id, body, delivery)" in problem
    assert "sent_replies (report_id, work_id, generation, session_id, body, delivery, receipt)" in problem
    assert "none is named 'report'" in problem and "views outbox were set aside" in problem
    with pytest.raises(Fail) as failure:
        seen(Snapshot(**{**seen_now, "work": seen_now["work"]}))
    assert "connection" not in failure.value.hint and "'report'" in failure.value.hint


def test_a_fresh_interpreter_without_site_packages_or_this_package_reads_the_database(db):
    """Every row starts the observer at least once: it runs as a bare script (``-I -S``), so it
    must need nothing but the standard library, and it must see what a fresh process sees."""
    import ast

    from lucy_runtime import observer
    from lucy_runtime.checker.observe import observe_many

    tree = ast.parse(open(observer.__file__, encoding="utf-8").read())
    relative = [node.module for node in ast.walk(tree) if isinstance(node, ast.ImportFrom) and node.level]
    assert relative == [], "the observer script cannot import from its own package"
    (seen_now,) = observe_many([{"db": db(table("report", REPORT_COLUMNS), A_REPORT)}], fork=False)
    assert [w["state"] for w in seen_now.work] == ["done"] and [r["body"] for r in seen_now.reports] == ["ACME up"]
    assert seen_now.problems == []


def test_a_forked_observer_sees_what_a_fresh_interpreter_sees(db):
    from lucy_runtime.checker.observe import observe_many

    targets = [{"db": db(table("report", REPORT_COLUMNS), A_REPORT)}, {"db": "/nowhere/lucy.sqlite3"}]
    forked = observe_many(targets, fork=True)
    assert forked == observe_many(targets, fork=False)
    assert [r["body"] for r in forked[0].reports] == ["ACME up"] and forked[1].problems


@pytest.mark.parametrize("learner, forks", [("source", True), ("kernel", False), ("swapped kernel", False)])
def test_the_observer_forks_only_from_a_process_where_no_learner_code_has_run(monkeypatch, learner, forks):
    """A kernel's check() runs the learner's cells in the kernel itself: its observer is a new interpreter."""
    from lucy_runtime.checker import observe
    from lucy_runtime.checker.harness import Harness, KernelLearner, SourceLearner, SwappedLearner

    code = {"source": SourceLearner([]), "kernel": KernelLearner({}),
            "swapped kernel": SwappedLearner(KernelLearner({}), {"finish": "broken_finish"})}[learner]
    asked = []
    monkeypatch.setattr(observe, "in_fresh_process", lambda read, targets, **how: asked.append(how["fork"]) or [])
    with Harness(code) as harness:
        harness.observe([harness.scenario("any")])
    assert asked == [forks]


def test_a_forked_observer_that_cannot_read_in_time_is_stopped_and_says_so(db):
    from lucy_runtime.checker.observe import observe_many
    from lucy_runtime.errors import ObserverFailed

    path = db(table("report", REPORT_COLUMNS), A_REPORT)
    with closing(sqlite3.connect(path, isolation_level=None)) as holder:
        holder.execute("BEGIN EXCLUSIVE")  # the observer's connection now waits for the lock
        with pytest.raises(ObserverFailed, match="did not finish in 0.5 s"):
            observe_many([{"db": path}], fork=True, timeout=0.5)
    (seen_now,) = observe_many([{"db": path}], fork=True)
    assert seen_now.reports[0]["body"] == "ACME up"


def test_a_forked_observer_that_fails_reports_why():
    from lucy_runtime.checker.observe import observe_many
    from lucy_runtime.errors import ObserverFailed

    with pytest.raises(ObserverFailed, match="KeyError: 'db'"):
        observe_many([{"log": "/nowhere"}], fork=True)
