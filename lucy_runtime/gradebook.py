"""The course's gradebook: where it lives, and SQLite writers that wait their turn.

nbgrader keeps its gradebook through SQLAlchemy at ``CourseDirectory.db_url``: a SQLite
file by default, or a server such as PostgreSQL. Several ``nbgrader autograde``
processes may write one SQLite file at once (``lucy autograde --jobs N``). SQLite lets
one writer in at a time and makes the others wait, but only for the driver's default
of 5 s: a writer still waiting then fails with "database is locked", nbgrader stops,
and that student's grades are lost. So the course's ``nbgrader_config.py`` calls
:func:`wait_for_sqlite_writers`: every SQLite connection in that process waits up to
:data:`WAIT_SECONDS` for the lock. Python's sqlite3 driver begins a transaction just
before its first write, so a waiting writer holds no lock another one needs.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

from sqlalchemy import event
from sqlalchemy.pool import Pool

from .errors import GradebookUnreadable

WAIT_SECONDS = 600
"""How long a SQLite writer waits for the lock before it gives up."""


def _on_connect(dbapi_connection, _record) -> None:
    if isinstance(dbapi_connection, sqlite3.Connection):
        dbapi_connection.execute(f"PRAGMA busy_timeout = {WAIT_SECONDS * 1000}")


def wait_for_sqlite_writers() -> None:
    """From now on, every SQLAlchemy SQLite connection in this process waits for the write lock."""
    if not event.contains(Pool, "connect", _on_connect):
        event.listen(Pool, "connect", _on_connect)


def stop_waiting_for_sqlite_writers() -> None:
    """Undo :func:`wait_for_sqlite_writers` (for tests that show what goes wrong without it)."""
    if event.contains(Pool, "connect", _on_connect):
        event.remove(Pool, "connect", _on_connect)


def course_db_url(root: Path) -> str:
    """The gradebook URL that nbgrader uses in the course at ``root`` (its ``nbgrader_config.py`` read)."""
    # Deferred: nbgrader takes seconds to import; only this function needs it.
    from nbgrader.coursedir import CourseDirectory  # noqa: PLC0415
    from traitlets.config.loader import ConfigFileNotFound, PyFileConfigLoader  # noqa: PLC0415

    root = Path(root).resolve()
    try:
        config = PyFileConfigLoader("nbgrader_config.py", path=str(root)).load_config()
    except ConfigFileNotFound:
        raise GradebookUnreadable(f"{root} has no nbgrader_config.py: is it a course directory?") from None
    config.CourseDirectory.root = str(root)
    return CourseDirectory(config=config).db_url
