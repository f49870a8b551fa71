"""Chapter 4's store: what a fresh process sees is exactly what was committed."""

from __future__ import annotations

import os
import sqlite3
import subprocess
import sys

import pytest

from lucy_runtime.errors import InvalidField, StoreMisuse
from lucy_runtime.store import Migration, Store, split_statements, statement_kind

TABLE = "CREATE TABLE note (id INTEGER PRIMARY KEY, text TEXT NOT NULL)"


def read_in_fresh_process(path, sql: str) -> list:
    """Open the file from a new interpreter: nothing of this process's memory helps."""
    code = (
        "import json, sqlite3, sys\n"
        "rows = sqlite3.connect(sys.argv[1]).execute(sys.argv[2]).fetchall()\n"
        "print(json.dumps(rows))\n"
    )
    done = subprocess.run([sys.executable, "-c", code, str(path), sql], capture_output=True, text=True, check=True)
    import json

    return [tuple(r) for r in json.loads(done.stdout)]


def test_committed_rows_are_seen_by_a_fresh_process(store):
    with store.transaction() as tx:
        tx.execute(TABLE)
        tx.execute("INSERT INTO note (text) VALUES (?)", ("kept",))
    assert read_in_fresh_process(store.path, "SELECT text FROM note") == [("kept",)]


def test_a_rolled_back_transaction_leaves_nothing_behind(store):
    with store.transaction() as tx:
        tx.execute(TABLE)
    with pytest.raises(ValueError):
        with store.transaction() as tx:
            tx.execute("INSERT INTO note (text) VALUES ('lost')")
            raise ValueError("stop")
    assert read_in_fresh_process(store.path, "SELECT COUNT(*) FROM note") == [(0,)]


@pytest.mark.parametrize("exc", [KeyboardInterrupt, SystemExit, GeneratorExit])
def test_a_base_exception_inside_a_transaction_rolls_back(store, exc):
    with store.transaction() as tx:
        tx.execute(TABLE)
    with pytest.raises(exc):
        with store.transaction() as tx:
            tx.execute("INSERT INTO note (text) VALUES ('lost')")
            raise exc()
    assert store.query("SELECT COUNT(*) AS n FROM note")[0]["n"] == 0
    with store.transaction() as tx:  # the store is usable again afterwards
        tx.execute("INSERT INTO note (text) VALUES ('after')")
    assert read_in_fresh_process(store.path, "SELECT text FROM note") == [("after",)]


def test_a_process_killed_mid_transaction_leaves_only_what_was_committed(tmp_path):
    path = tmp_path / "killed.sqlite3"
    with Store(path) as s, s.transaction() as tx:
        tx.execute(TABLE)
        tx.execute("INSERT INTO note (text) VALUES ('committed')")
    pid = os.fork()
    if pid == 0:
        child = Store(path)
        with child.transaction() as tx:
            tx.execute("INSERT INTO note (text) VALUES ('never committed')")
            os._exit(9)
    os.waitpid(pid, 0)
    assert read_in_fresh_process(path, "SELECT text FROM note") == [("committed",)]


def test_wal_busy_timeout_and_foreign_keys_are_on(store):
    assert store.query("PRAGMA journal_mode")[0][0] == "wal"
    assert store.query("PRAGMA foreign_keys")[0][0] == 1
    assert store.query("PRAGMA busy_timeout")[0][0] == 5000


def test_nested_transactions_are_refused(store):
    with store.transaction():
        with pytest.raises(StoreMisuse, match="already open"):
            with store.transaction():
                pass


def test_executescript_is_refused_because_it_would_commit_early(store):
    with store.transaction() as tx:
        with pytest.raises(StoreMisuse, match="execute_script"):
            tx.executescript(TABLE)


def test_execute_script_keeps_every_statement_in_the_transaction(store):
    script = TABLE + ";\nCREATE TRIGGER t AFTER INSERT ON note BEGIN SELECT 1; END;\nINSERT INTO note (text) VALUES ('a;b');"
    assert len(split_statements(script)) == 3
    with pytest.raises(RuntimeError):
        with store.transaction() as tx:
            tx.execute_script(script)
            raise RuntimeError
    assert store.tables() == []


def test_a_finished_transaction_handle_cannot_be_used(store):
    with store.transaction() as tx:
        tx.execute(TABLE)
    with pytest.raises(StoreMisuse, match="ended"):
        tx.execute("INSERT INTO note (text) VALUES ('late')")


def test_query_only_reads(store):
    with pytest.raises(StoreMisuse):
        store.query("DELETE FROM note")


MIGRATIONS = (
    Migration(1, "notes", (TABLE,)),
    Migration(2, "tags", ("ALTER TABLE note ADD COLUMN tag TEXT",)),
)


def test_migrations_run_once_per_component_and_are_versioned(store):
    assert store.migrate("notes", MIGRATIONS[:1]) == 1
    assert store.migrate("notes", MIGRATIONS) == 2
    assert store.migrate("notes", MIGRATIONS) == 2  # nothing runs twice
    assert store.schema_version("other") == 0
    columns = [r[1] for r in store.query("PRAGMA table_info(note)")]
    assert columns == ["id", "text", "tag"]


def test_a_failing_migration_step_leaves_the_version_unchanged(store):
    store.migrate("notes", MIGRATIONS[:1])
    broken = MIGRATIONS[:1] + (Migration(2, "broken", ("ALTER TABLE nowhere ADD COLUMN x",)),)
    with pytest.raises(sqlite3.OperationalError):
        store.migrate("notes", broken)
    assert store.schema_version("notes") == 1


def test_migration_versions_must_increase(store):
    with pytest.raises(StoreMisuse):
        store.migrate("x", (Migration(2, "b", (TABLE,)), Migration(1, "a", (TABLE,))))


@pytest.mark.parametrize("text", [
    "it's \"quoted\"",
    "x'); DROP TABLE note; --",
    "naïve café, 日本語, עברית",
    "🚀📈🧾 emoji",
    "a" * (64 * 1024),
    "line\nbreaks\r\nand\ttabs\x00nul",
])
def test_text_is_stored_and_returned_verbatim(store, text):
    with store.transaction() as tx:
        tx.execute(TABLE)
        tx.execute("INSERT INTO note (text) VALUES (?)", (text,))
    assert read_in_fresh_process(store.path, "SELECT text FROM note") == [(text,)]


@pytest.mark.parametrize("kwargs, field", [
    ({"path": None}, "path"),
    ({"path": 42}, "path"),
    ({"busy_timeout_ms": True}, "busy_timeout_ms"),
    ({"busy_timeout_ms": "5000"}, "busy_timeout_ms"),
    ({"busy_timeout_ms": -1}, "busy_timeout_ms"),
])
def test_wrong_types_are_refused_with_the_field_named(tmp_path, kwargs, field):
    arguments = {"path": str(tmp_path / "x.sqlite3"), **kwargs}
    with pytest.raises(InvalidField) as caught:
        Store(arguments.pop("path"), **arguments)
    assert caught.value.field == field


def test_migration_refuses_a_bool_version():
    with pytest.raises(InvalidField, match="version"):
        Migration(True, "x", (TABLE,))


@pytest.mark.parametrize("sql, kind", [
    ("INSERT INTO t VALUES (1)", "write"),
    ("  -- comment\n update t set x = 1", "write"),
    ("WITH x AS (SELECT 1) INSERT INTO t SELECT * FROM x", "write"),
    ("WITH x AS (SELECT 'insert') SELECT * FROM x", "read"),
    ("SELECT * FROM t", "read"),
    ("BEGIN IMMEDIATE", "begin"),
    ("COMMIT", "commit"),
    ("PRAGMA user_version", "read"),
    ("PRAGMA table_info(note)", "read"),
    ("PRAGMA user_version = 3", "other"),
])
def test_statement_kinds(sql, kind):
    assert statement_kind(sql) == kind


def test_the_statement_hook_sees_every_statement_before_it_runs_and_each_commit_after(store):
    seen = []
    store.set_hook(lambda kind, sql: seen.append(kind))
    with store.transaction() as tx:
        tx.execute(TABLE)
        tx.execute("SELECT 1")
    assert seen == ["begin", "write", "read", "commit", "committed"]
