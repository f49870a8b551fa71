"""``lucy gradebook``: is the course's gradebook reachable; or move it into an empty server database
(lucy_runtime/grading/gradebook.py)."""

from __future__ import annotations

import sys
from pathlib import Path


def _gradebook(args) -> int:
    """Is the course's gradebook reachable; or move it into an empty server database."""
    from ..errors import LucyError
    from ..grading.gradebook import check_reachable, course_db_url, migrate

    try:
        url = course_db_url(Path(args.course))
        if args.action == "check":
            check_reachable(url)
            print(f"gradebook reachable: {url}")
            return 0
        if not args.to:
            print("lucy gradebook migrate: name the empty database to move into, with --to URL", file=sys.stderr)
            return 2
        moved = migrate(url, args.to)
    except LucyError as error:
        print(f"lucy gradebook: {error}", file=sys.stderr)
        return 2
    for table, count in moved.rows:
        print(f"{table}: {count} rows")
    print(f"\nmoved {sum(n for _, n in moved.rows)} rows from {moved.source} to {moved.target}.\n"
          f"Now set, in nbgrader_config.py:  c.CourseDirectory.db_url = {moved.target!r}\n"
          "(the old gradebook stays as it was: keep it until the new one has served a grading run)")
    return 0


def add_to(sub) -> None:
    """The ``gradebook`` subcommand, added to ``lucy``'s subparsers."""
    p = sub.add_parser("gradebook", help="check that the course's gradebook can be reached, or move it into an "
                                         "empty server database (SQLite to PostgreSQL)")
    p.add_argument("action", choices=("check", "migrate"))
    p.add_argument("--to", help="for migrate: the empty database's URL, e.g. postgresql+psycopg://lucy@127.0.0.1:5432/lucy_ch07")
    p.add_argument("--course", default=".", help="the course directory (default: this folder)")
    p.set_defaults(func=_gradebook)
