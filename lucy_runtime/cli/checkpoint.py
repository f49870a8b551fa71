"""``lucy checkpoint ch07 DIR``: is this learner ready for Chapter 8? The learner's own ``lucy`` (the learner
distribution has no educator tools, lucy_runtime/grading/learner_cli.py) runs the same function."""

from __future__ import annotations


def _checkpoint(args) -> int:
    from ..grading.learner_cli import checkpoint

    return checkpoint(args.chapter, args.notebook_dir, args.records, args.json, execute=not args.no_execute)


def add_to(sub) -> None:
    """The ``checkpoint`` subcommand, added to ``lucy``'s subparsers."""
    p = sub.add_parser("checkpoint", help="is this learner ready for Chapter 8? (runs notebooks, rows, Telegram, clock)")
    p.add_argument("chapter", help="ch07")
    p.add_argument("notebook_dir")
    p.add_argument("--json")
    p.add_argument("--records", default="checkpoints/records", help="where the saved record goes")
    p.add_argument("--no-execute", action="store_true", help="skip running the notebooks top to bottom")
    p.set_defaults(func=_checkpoint)
