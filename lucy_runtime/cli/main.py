"""The ``lucy`` command: its parser, assembled from one module per subcommand (or per small group of
closely related ones), and the dispatch to the subcommand named."""

from __future__ import annotations

import argparse
import os
import sys

from ..grading.nbgrader_main import leave_out_unused_imports
from . import autograde, bench, books, cases, checkpoint, demo, exchange, gradebook, hub, proof, regrade, release, report, rows

# In the order ``lucy --help`` lists them.
SUBCOMMANDS = (rows, cases, release, proof, bench, autograde, report, exchange, regrade, gradebook, books, checkpoint,
               hub, demo)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="lucy", description="Lucy, Chapter 7: durable work")
    sub = parser.add_subparsers(dest="command", required=True)
    for module in SUBCOMMANDS:
        module.add_to(sub)
    return parser


def subcommands() -> set[str]:
    """The names ``lucy`` answers to (the book may name only these)."""
    actions = [a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction)]
    return set(actions[0].choices)


def main(argv: list[str] | None = None) -> int:
    leave_out_unused_imports()
    args = build_parser().parse_args(argv)
    try:
        code = args.func(args)
        sys.stdout.flush()  # inside the try: a closed pipe shows up at the flush
        return code
    except BrokenPipeError:
        # The reader went away (`lucy rows | head`): stop quietly, as a Unix filter does.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return 0


if __name__ == "__main__":
    sys.exit(main())
