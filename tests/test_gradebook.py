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

from lucy_runtime.gradebook import (
    GradebookUnreadable, course_db_url, stop_waiting_for_sqlite_writers, wait_for_sqlite_writers,
)

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
    from lucy_runtime.course import REPO

    (tmp_path / "nbgrader_config.py").write_text((REPO / "nbgrader_config.py").read_text())
    assert course_db_url(tmp_path) == f"sqlite:///{tmp_path.resolve() / 'gradebook.db'}"
    with (tmp_path / "nbgrader_config.py").open("a") as config:
        config.write('\nc.CourseDirectory.db_url = "postgresql+psycopg://lucy@127.0.0.1:5/x"\n')
    assert course_db_url(tmp_path) == "postgresql+psycopg://lucy@127.0.0.1:5/x"


def test_a_folder_without_nbgrader_config_is_refused_with_a_clear_error(tmp_path):
    with pytest.raises(GradebookUnreadable, match="no nbgrader_config.py"):
        course_db_url(tmp_path)
