"""``lucy demo``: release, then verify the grader (``make demo``)."""

from __future__ import annotations

from .proof import verify_command
from .release import release_command


def _demo(args) -> int:
    print("== 1. Regenerate release/ from source/ with nbgrader, and validate both")
    if release_command(args) != 0:
        return 1
    print("\n== 2. Autograde the reference, the blank release, correct alternatives and every educator case;"
          "\n      then generate feedback and export the grades")
    verified = verify_command(args)
    print("\n(`make mutation` measures how many cosmic-ray mutants of the reference the rows kill.)")
    return verified


def add_to(sub) -> None:
    """The ``demo`` subcommand, added to ``lucy``'s subparsers."""
    p = sub.add_parser("demo", help="release, then verify the grader")
    p.add_argument("--json")
    p.set_defaults(func=_demo)
