"""``lucy regrade ASSIGNMENT --reason "..."``: the command line of ``regrade.py``."""

from __future__ import annotations

import sys
from pathlib import Path

from ..errors import LucyError
from .arguments import positive


def _regrade(args) -> int:
    from ..course.regrade import Released, regrade  # noqa: PLC0415 - deferred: it loads nbformat and the grading modules

    if not args.reason or not args.reason.strip():
        print("lucy regrade: say why, in one line, with --reason (it goes in the record, and in the note of a "
              "lowered released score)", file=sys.stderr)
        return 2

    def progress(outcome, done: int, total: int) -> None:
        print(f"[{done}/{total}] {outcome.student}: {outcome.status.value} ({outcome.seconds:g} s)", flush=True)

    try:
        done = regrade(Path(args.course), args.assignment, " ".join(args.reason.split()),
                       released=Released(args.released) if args.released else None, jobs=args.jobs,
                       timeout=args.timeout, on_done=progress)
    except LucyError as error:  # no course here, nothing handed in, nothing graded before
        print(f"lucy regrade: {error}", file=sys.stderr)
        return 2
    if done.resumed:
        print(f"finished the regrade of {done.assignment} that was stopped while swapping in (reason: {done.reason})")
    print()
    for x in done.learners:
        said = f"{x.student}: {x.before:g} -> {x.after:g} of {x.max_score:g}"
        if x.released is not None:
            said += f" (feedback shows {x.released:g})"
        if x.decision:
            said += f"; {x.decision}"
        print(said if x.changes else f"{said}, unchanged")
        for change in x.changes:
            print(f"    {change.notebook}/{change.cell}: {change.before:g} -> {change.after:g}")
    for outcome in done.not_graded:
        print(f"NOT REGRADED: {outcome.student} ({outcome.status.value}): their grades are as before")
    if done.never_graded:
        print(f"never graded before, left for `lucy autograde {done.assignment}`: {', '.join(done.never_graded)}")
    if done.stopped:
        print(f"\nSTOPPED: {done.stopped}")
        return 1
    print(f"\n{len(done.changed)} of {len(done.learners)} learners' grades changed; recorded in {done.log}")
    return 0 if not done.not_graded else 1


def add_to(sub) -> None:
    """The ``regrade`` subcommand, added to ``lucy``'s subparsers."""
    p = sub.add_parser("regrade", help="grade every collected submission of ASSIGNMENT again with the current grader, "
                                       "keeping manual scores; print whose score moved and by which rows")
    p.add_argument("assignment")
    p.add_argument("--reason", required=True, help="why, in one line (recorded in regrades.jsonl)")
    p.add_argument("--released", choices=("keep-higher", "lower-with-note"),
                   help="for learners whose feedback shows a higher score than the regrade gives: keep it, or lower "
                        "it with the reason in their feedback (without it, the regrade stops and changes nothing)")
    p.add_argument("--jobs", type=positive, default=2, help="submissions graded at once (default 2)")
    p.add_argument("--timeout", type=positive, default=900, help="seconds one submission may take (default 900)")
    p.add_argument("--course", default=".", help="the course directory (default: this folder)")
    p.set_defaults(func=_regrade)

