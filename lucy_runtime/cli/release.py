"""``lucy sync`` and ``lucy release``: each source notebook from its Markdown pair, and release/ from source/."""

from __future__ import annotations

from pathlib import Path


def _sync(args) -> int:
    from ..notebooks.notebook import pair_differences, sync_from_markdown

    for markdown in sorted(Path("source").glob("*/*.md")):
        target = sync_from_markdown(markdown)
        problems = pair_differences(target)
        print(f"{markdown} -> {target}" + (f"  PROBLEMS: {problems}" if problems else ""))
    return 0


def release_command(args) -> int:
    """``lucy release`` (and the first step of ``lucy demo``)."""
    from ..course.course import NbgraderFailed, release

    validate = not getattr(args, "no_validate", False)
    try:
        done = release(validate=validate)
    except NbgraderFailed as failed:
        print(f"{failed}\nrelease/ is unchanged")
        return 1
    for problem in done.problems:
        print(f"PROBLEM: {problem}")
    if done.problems:
        print("RELEASE NOT VALID: release/ is unchanged")
        return 1
    for path in done.released:
        print(f"released {path}")
    if validate:
        print("validated: every source passes its tests; every release fails every autograded test")
    return 0


def add_to(sub) -> None:
    """The ``sync`` and ``release`` subcommands, added to ``lucy``'s subparsers."""
    sub.add_parser("sync", help="write each source notebook from its Markdown pair").set_defaults(func=_sync)
    p = sub.add_parser("release", help="regenerate release/ with nbgrader, then validate source and release")
    p.add_argument("--no-validate", action="store_true", help="only regenerate")
    p.set_defaults(func=release_command)
