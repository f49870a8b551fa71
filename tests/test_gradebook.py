"""nbgrader gradebook writers on one SQLite file: with the course's hook, a write waits and lands."""

from __future__ import annotations

import os
import shutil
import sqlite3
import sys
import threading
from pathlib import Path

import pytest
from nbgrader.api import Gradebook, InvalidEntry
from sqlalchemy.exc import OperationalError

from lucy_runtime.grading.gradebook import GradebookUnreadable, course_db_url, stop_waiting_for_sqlite_writers, wait_for_sqlite_writers

HELD = 6.5
"""Seconds another grader holds the write lock: longer than the SQLite driver's 5 s default wait."""


@pytest.fixture
def hook_off():
    stop_waiting_for_sqlite_writers()
    yield
    stop_waiting_for_sqlite_writers()


@pytest.fixture(scope="module")
def empty_gradebook(tmp_path_factory) -> Path:
    """nbgrader's schema, made once (nbgrader runs `alembic` for a new gradebook, which is slow)."""
    path = tmp_path_factory.mktemp("schema") / "gradebook.db"
    mp = pytest.MonkeyPatch()
    mp.setenv("PATH", str(Path(sys.executable).parent) + os.pathsep + os.environ["PATH"])
    try:
        Gradebook(f"sqlite:///{path}").close()
    finally:
        mp.undo()
    return path


def write_while_another_grader_commits(path: Path) -> BaseException | None:
    """Another writer holds the lock for HELD seconds; meanwhile nbgrader adds a student."""
    url = f"sqlite:///{path}"
    holder = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
    holder.execute("BEGIN IMMEDIATE")
    holder.execute("INSERT INTO student (id) VALUES ('bea')")
    release = threading.Timer(HELD, lambda: holder.execute("COMMIT"))
    release.start()
    try:
        with Gradebook(url) as gb:
            gb.update_or_create_student("ada")
        return None
    except (OperationalError, InvalidEntry) as error:  # nbgrader wraps some in its own
        return error
    finally:
        release.join()
        holder.close()


def students(path: Path) -> set[str]:
    with Gradebook(f"sqlite:///{path}") as gb:
        return {s.id for s in gb.students}


def test_with_the_hook_a_gradebook_write_waits_for_another_grader_and_lands(tmp_path, hook_off, empty_gradebook):
    shutil.copy(empty_gradebook, tmp_path / "gradebook.db")
    wait_for_sqlite_writers()
    assert write_while_another_grader_commits(tmp_path / "gradebook.db") is None
    assert students(tmp_path / "gradebook.db") == {"ada", "bea"}


def test_without_the_hook_a_gradebook_write_gives_up_after_5_s_and_is_lost(tmp_path, hook_off, empty_gradebook):
    shutil.copy(empty_gradebook, tmp_path / "gradebook.db")
    error = write_while_another_grader_commits(tmp_path / "gradebook.db")
    assert error is not None and "database is locked" in str(error)
    assert students(tmp_path / "gradebook.db") == {"bea"}


def test_the_course_gradebook_url_comes_from_its_config_and_defaults_to_gradebook_db(tmp_path, hook_off):
    from lucy_runtime.course.course import REPO

    (tmp_path / "nbgrader_config.py").write_text((REPO / "nbgrader_config.py").read_text())
    assert course_db_url(tmp_path) == f"sqlite:///{tmp_path.resolve() / 'gradebook.db'}"
    with (tmp_path / "nbgrader_config.py").open("a") as config:
        config.write('\nc.CourseDirectory.db_url = "postgresql+psycopg://lucy@127.0.0.1:5/x"\n')
    assert course_db_url(tmp_path) == "postgresql+psycopg://lucy@127.0.0.1:5/x"


def test_a_folder_without_nbgrader_config_is_refused_with_a_clear_error(tmp_path):
    with pytest.raises(GradebookUnreadable, match="no nbgrader_config.py"):
        course_db_url(tmp_path)


# --- a server gradebook: a clear reason when it cannot be reached, and moving into one ------------

def test_a_server_that_does_not_answer_is_named_with_how_to_start_it():
    import socket

    from lucy_runtime.grading.gradebook import GradebookUnreachable, check_reachable

    with socket.socket() as s:  # a port nobody listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    with pytest.raises(GradebookUnreachable, match=rf"no PostgreSQL server answers at 127.0.0.1:{port}: start it"):
        check_reachable(f"postgresql+psycopg://lucy@127.0.0.1:{port}/lucy_ch07")
    check_reachable("sqlite:///nowhere/gradebook.db")  # a file nbgrader makes as needed


@pytest.mark.slow
def test_no_role_no_password_and_a_wrong_password_are_each_named_with_what_to_do(tmp_path, monkeypatch):
    from sqlalchemy.engine import make_url

    from lucy_runtime.grading.gradebook import GradebookUnreachable, check_reachable

    from .pg import postgres

    with postgres("lucy_ch07", role=("lucy", "right-password")) as url:
        where = f"127.0.0.1:{make_url(url).port}"
        monkeypatch.setenv("PGPASSFILE", str(tmp_path / "none"))
        with pytest.raises(GradebookUnreachable, match="asks role 'lucy' for a password and none was given"):
            check_reachable(url)
        pgpass = tmp_path / "pgpass"
        pgpass.write_text(f"{where}:lucy_ch07:lucy:wrong-password\n")
        pgpass.chmod(0o600)
        monkeypatch.setenv("PGPASSFILE", str(pgpass))
        with pytest.raises(GradebookUnreachable, match="refused role 'lucy' with the password given"):
            check_reachable(url)
        pgpass.write_text(f"{where}:lucy_ch07:lucy:right-password\n")
        check_reachable(url)
    with postgres("lucy_ch07") as trusting:  # a server that trusts loopback says so when a role is missing
        with pytest.raises(GradebookUnreachable, match="has no role 'nobody-here'"):
            check_reachable(trusting.replace("postgres@", "nobody-here@"))
        with pytest.raises(GradebookUnreachable, match="has no database 'lucy_ch08'"):
            check_reachable(trusting.replace("/lucy_ch07", "/lucy_ch08"))


@pytest.mark.slow
def test_a_gradebook_moves_from_sqlite_into_an_empty_postgresql_database_row_for_row(tmp_path, empty_gradebook):
    from lucy_runtime.grading.gradebook import migrate

    from .pg import postgres

    path = tmp_path / "gradebook.db"
    shutil.copy(empty_gradebook, path)
    source = f"sqlite:///{path}"
    with Gradebook(source) as gb:
        gb.add_assignment("ch07_unit_a")
        gb.add_notebook("ch07_unit_a", "ch07_unit_a")
        gb.add_grade_cell("row_finish_atomic", "ch07_unit_a", "ch07_unit_a", max_score=2, cell_type="code")
        for student in ("ada", "bea"):
            gb.add_student(student, first_name=student.title())
            gb.add_submission("ch07_unit_a", student)
        grade = gb.find_grade("row_finish_atomic", "ch07_unit_a", "ch07_unit_a", "ada")
        grade.auto_score = 2
        gb.db.commit()
    with postgres("lucy_ch07") as url:
        moved = migrate(source, url)
        assert dict(moved.rows)["student"] == 2 and dict(moved.rows)["grade"] == 2
        with Gradebook(url) as gb:
            assert {s.id: s.first_name for s in gb.students} == {"ada": "Ada", "bea": "Bea"}
            assert gb.find_submission("ch07_unit_a", "ada").score == 2
            assert gb.find_submission("ch07_unit_a", "bea").score == 0
        with pytest.raises(GradebookUnreadable, match="already holds rows"):
            migrate(source, url)  # nothing is merged into a gradebook in use
