"""The course's gradebook: where it lives, whether it can be reached, moving it to a server,
and SQLite writers that wait their turn.

nbgrader keeps its gradebook through SQLAlchemy at ``CourseDirectory.db_url``: a SQLite
file by default, or a server such as PostgreSQL. Several ``nbgrader autograde``
processes may write one SQLite file at once (``lucy autograde --jobs N``). SQLite lets
one writer in at a time and makes the others wait, but only for the driver's default
of 5 s: a writer still waiting then fails with "database is locked", nbgrader stops,
and that student's grades are lost. So the course's ``nbgrader_config.py`` calls
:func:`wait_for_sqlite_writers`: every SQLite connection in that process waits up to
:data:`WAIT_SECONDS` for the lock. Python's sqlite3 driver begins a transaction just
before its first write, so a waiting writer holds no lock another one needs.

A server gradebook that cannot be reached makes nbgrader print a traceback that ends in
advice to run ``nbgrader db upgrade``, which helps with none of the usual causes. So
:func:`check_reachable` connects first and says which it is: no server answering, no
such role, no password, a refused password, no such database. :func:`migrate` moves a
course's gradebook, mid-term, from its SQLite file into an empty server database.
"""

from __future__ import annotations

import os
import sqlite3
import sys
from dataclasses import dataclass
from pathlib import Path

from sqlalchemy import event
from sqlalchemy.pool import Pool

from ..errors import GradebookUnreachable, GradebookUnreadable

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
    return _course_directory(root).db_url


def course_id(root: Path) -> str:
    """The course's id as its ``nbgrader_config.py`` sets it (``CourseDirectory.course_id``), else the folder's name."""
    return _course_directory(root).course_id or Path(root).resolve().name


def course_config(root: Path):
    """The course's ``nbgrader_config.py``, loaded as nbgrader loads it (a traitlets ``Config``)."""
    from traitlets.config.loader import ConfigFileNotFound, PyFileConfigLoader  # noqa: PLC0415

    root = Path(root).resolve()
    try:
        config = PyFileConfigLoader("nbgrader_config.py", path=str(root)).load_config()
    except ConfigFileNotFound:
        raise GradebookUnreadable(f"{root} has no nbgrader_config.py: is it a course directory?") from None
    config.CourseDirectory.root = str(root)
    return config


def _course_directory(root: Path):
    # Deferred: nbgrader takes seconds to import; only this function needs it.
    from nbgrader.coursedir import CourseDirectory  # noqa: PLC0415

    return CourseDirectory(config=course_config(root))


def _where(url) -> str:
    return f"{url.host or 'localhost'}:{url.port or 5432}"


def _explain(url, message: str) -> str:
    """The cause of a failed connection to ``url``, in words, and what to do."""
    user, db, where = url.username or "your user", url.database, _where(url)
    if "password authentication failed" in message:
        return (f"the server at {where} refused role {user!r} with the password given: correct its line in "
                f"~/.pgpass ({where}:{db}:{user}:PASSWORD, mode 600), or, if there is no such role, as root "
                f"`runuser -u postgres -- createuser --pwprompt {user}`")
    if "no password supplied" in message:
        return (f"the server at {where} asks role {user!r} for a password and none was given: add the line "
                f"{where}:{db}:{user}:PASSWORD to ~/.pgpass of the user who grades (chmod 600 ~/.pgpass)")
    if "role" in message and "does not exist" in message:
        return (f"the server at {where} has no role {user!r}: as root, "
                f"`runuser -u postgres -- createuser --pwprompt {user}`")
    if "database" in message and "does not exist" in message:
        return (f"the server at {where} has no database {db!r}: as root, "
                f"`runuser -u postgres -- createdb --owner {user} {db}`")
    if "Connection refused" in message or "could not connect" in message or "timeout" in message:
        return (f"no PostgreSQL server answers at {where}: start it (on Debian, as root: "
                "`pg_ctlcluster 15 main start`, or `service postgresql start`) and check the port")
    first = message.strip().splitlines()[0] if message.strip() else "no reason given"
    return f"the gradebook at {where} cannot be reached: {first}"


def check_reachable(db_url: str) -> None:
    """Connect to a server gradebook once; GradebookUnreachable saying why when that fails.
    A SQLite gradebook is a file nbgrader makes as needed: nothing to check."""
    from sqlalchemy import create_engine  # noqa: PLC0415 - deferred: only a server gradebook needs an engine here
    from sqlalchemy.engine import make_url  # noqa: PLC0415
    from sqlalchemy.exc import OperationalError  # noqa: PLC0415

    url = make_url(db_url)
    if url.get_backend_name() == "sqlite":
        return
    engine = create_engine(url, connect_args={"connect_timeout": 10} if url.get_backend_name() == "postgresql" else {})
    try:
        with engine.connect():
            pass
    except OperationalError as error:
        raise GradebookUnreachable(_explain(url, str(error.orig or error))) from None
    finally:
        engine.dispose()


@dataclass(frozen=True)
class Migration:
    """What ``migrate`` copied: rows per table, in the order it copied them."""

    source: str
    target: str
    rows: tuple[tuple[str, int], ...]


def migrate(source_url: str, target_url: str) -> Migration:
    """Copy every row of the gradebook at ``source_url`` into the empty one at ``target_url``.

    The target gets nbgrader's schema first (nbgrader makes it, as it would for a new course);
    then every table, parents before children, and the counts are compared. A target that
    already holds rows is refused: nothing is merged."""
    from nbgrader.api import Base, Gradebook  # noqa: PLC0415 - deferred: nbgrader takes seconds to import
    from sqlalchemy import create_engine, delete, func, insert, inspect, select  # noqa: PLC0415

    check_reachable(target_url)
    # nbgrader runs `alembic` by name for a new gradebook: this interpreter's folder holds it.
    os.environ["PATH"] = os.path.dirname(sys.executable) + os.pathsep + os.environ.get("PATH", "")
    target = create_engine(target_url)
    try:
        names = set(inspect(target).get_table_names())
        with target.connect() as conn:
            filled = [t.name for t in Base.metadata.sorted_tables if t.name in names
                      and conn.execute(select(func.count()).select_from(t)).scalar()]
        if filled:
            raise GradebookUnreadable(f"the target gradebook already holds rows ({', '.join(filled)}): "
                                      "migrate moves a gradebook into an empty database only")
        Gradebook(target_url).close()  # nbgrader's tables and its alembic version
        source = create_engine(source_url)
        copied = []
        try:
            with source.connect() as read, target.begin() as write:
                for table in reversed(Base.metadata.sorted_tables):  # the course row nbgrader just made
                    write.execute(delete(table))
                for table in Base.metadata.sorted_tables:
                    rows = [dict(r._mapping) for r in read.execute(select(table))]
                    if rows:
                        write.execute(insert(table), rows)
                    copied.append((table.name, len(rows)))
            with target.connect() as check:
                for name, count in copied:
                    table = Base.metadata.tables[name]
                    found = check.execute(select(func.count()).select_from(table)).scalar()
                    if found != count:
                        raise GradebookUnreadable(f"table {name}: {count} rows read, {found} in the target")
        finally:
            source.dispose()
    finally:
        target.dispose()
    return Migration(source_url, target_url, tuple(copied))
