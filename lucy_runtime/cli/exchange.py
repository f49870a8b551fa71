"""``lucy exchange``: the course's private exchange (lucy_runtime/grading/exchange.py): create it, add
learners, close or open an assignment's hand-ins."""

from __future__ import annotations

import sys
from pathlib import Path


def _exchange(args) -> int:
    """Make the course's exchange, give learners their folders, close or open hand-ins."""
    from traitlets.config.loader import PyFileConfigLoader

    from ..errors import LucyError
    from ..grading import exchange

    course = Path(args.course).resolve()
    if not (course / "nbgrader_config.py").is_file():
        print(f"lucy exchange {args.action}: {course} has no nbgrader_config.py: run it in the course directory "
              "(the repository's root is one) or name it with --course DIR", file=sys.stderr)
        return 2
    config = PyFileConfigLoader("nbgrader_config.py", path=str(course)).load_config()
    if "course_id" not in config.CourseDirectory:
        print(f"lucy exchange {args.action}: {course / 'nbgrader_config.py'} sets no "
              "c.CourseDirectory.course_id, so there is no course to make an exchange for", file=sys.stderr)
        return 2
    root = str(config.Exchange.root) if "root" in config.Exchange else exchange.exchange_root()
    course_id = str(config.CourseDirectory.course_id)
    try:
        if args.action == "create":
            made = exchange.create(root, course_id, grader=args.grader, reset=args.reset, one_account=args.one_account)
            print(f"the exchange of {course_id}: {made}" + (" (emptied first)" if args.reset else ""))
            print(f"every nbgrader of this environment uses it: {exchange.write_environment_config()}")
        elif args.action == "add":
            for folder in exchange.add(root, course_id, args.names, accounts=args.accounts):
                print(f"{folder.name}: hands in through {folder}")
        else:
            for name in args.names:
                exchange.close(root, course_id, name, closed=args.action == "close")
                print(f"{name}: hand-ins {'closed' if args.action == 'close' else 'open'}")
    except (OSError, LucyError) as error:  # not root where it must be; no course folder; no such account
        print(f"lucy exchange {args.action}: {error}", file=sys.stderr)
        return 2
    return 0


def add_to(sub) -> None:
    """The ``exchange`` subcommand, added to ``lucy``'s subparsers."""
    p = sub.add_parser("exchange", help="the course's private exchange: create it, add learners (as root), "
                                        "close or open an assignment's hand-ins")
    p.add_argument("action", choices=("create", "add", "close", "open"))
    p.add_argument("names", nargs="*", help="add: the learners' login names; close, open: assignments")
    p.add_argument("--course", default=".", help="the course directory (default: this folder)")
    p.add_argument("--accounts", action="store_true", help="add: make a system account for a learner who has none")
    p.add_argument("--grader", help="create: the account that collects and releases (put in the lucy-graders group)")
    p.add_argument("--one-account", action="store_true",
                   help="create: every learner is a folder of your own account (a try-out on one machine)")
    p.add_argument("--reset", action="store_true", help="create: empty the course's exchange first")
    p.set_defaults(func=_exchange)
