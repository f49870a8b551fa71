"""``lucy autograde ASSIGNMENT``: every submission of an assignment graded in parallel through Dask, as
nbgrader autograde grades it (lucy_runtime/course/parallel.py)."""

from __future__ import annotations

import sys
from pathlib import Path

from .arguments import positive


def _progress(outcome, done: int, total: int) -> None:
    bar = "#" * (30 * done // total)
    stopped = f"; stopped: {outcome.stopped}" if outcome.stopped else ""
    print(f"[{bar:<30}] {done}/{total}  {outcome.student}: {outcome.status.value} ({outcome.seconds:g} s{stopped})",
          flush=True)


def _autograde(args) -> int:
    """Autograde every submission of an assignment in parallel through Dask."""
    from ..course.parallel import autograde_class
    from ..course.scheduler import TlsFiles, open_to_anyone
    from ..course.submitted import refused_at_hand_in
    from ..errors import LucyError

    refused, unsafe = refused_at_hand_in(Path(args.course), args.assignment)
    for student, line in unsafe:
        print(f"NOT GRADED: {student}: {line} (submitted/ holds what only collect should write: collect again)",
              file=sys.stderr)
    warning = open_to_anyone(args.scheduler) if args.scheduler else None
    if warning:
        print(f"lucy autograde: {warning}", file=sys.stderr, flush=True)
    try:
        result = autograde_class(Path(args.course), args.assignment, jobs=args.jobs, scheduler=args.scheduler,
                                 tls=TlsFiles(args.tls_ca_file, args.tls_cert, args.tls_key),
                                 timeout=args.timeout, on_done=_progress, force=args.force)
    except LucyError as error:  # no course here, no such assignment, nothing handed in, no scheduler
        print(f"lucy autograde: {error}", file=sys.stderr)
        return 2
    _print_problems(result, refused)
    print()
    _print_scores(result)
    print(_summary(result))
    if args.json:
        Path(args.json).write_text(result.to_json())
    return 0 if result.ok else 1


def _print_problems(result, refused: list[tuple[str, str]]) -> None:
    """The submissions not graded, those stopped, and what collect refused."""
    for outcome in result.unfinished:
        print(f"\nNOT GRADED: {outcome.student} ({outcome.status.value}); the end of nbgrader's log:\n"
              f"{outcome.log_tail[-800:]}")
    for outcome in result.outcomes:
        if outcome.stopped:
            print(f"STOPPED: {outcome.student}: {outcome.stopped}")
    for student, line in refused:
        print(f"REFUSED: {student}: {line}")


def _print_scores(result) -> None:
    from ..course.parallel import Status

    for outcome in result.outcomes:
        if outcome.score is not None:
            waits = (f"; {outcome.waiting} written answer{'s' if outcome.waiting != 1 else ''} to grade in formgrader"
                     if outcome.waiting else "")
            again = " (unchanged since graded)" if outcome.status is Status.UNCHANGED else ""
            print(f"{outcome.student}: {outcome.score:g} of {outcome.max_score:g}{waits}{again}")


def _summary(result) -> str:
    from ..course.parallel import Status

    graded = sum(o.status is Status.GRADED for o in result.outcomes)
    unchanged = sum(o.status is Status.UNCHANGED for o in result.outcomes)
    bought = (f"; {result.speedup:g} x the time of one submission after another" if result.speedup else "")
    return (f"\n{graded} of {len(result.outcomes)} submissions of {result.assignment} graded in {result.seconds:g} s "
            f"({result.jobs} jobs, {result.engine}{bought})"
            + (f"; {unchanged} unchanged since graded (--force grades them again)" if unchanged else "")
            + (f"; not graded: {', '.join(o.student for o in result.unfinished)}" if result.unfinished else ""))


def add_to(sub) -> None:
    """The ``autograde`` subcommand, added to ``lucy``'s subparsers."""
    p = sub.add_parser("autograde", help="autograde every submission of ASSIGNMENT in parallel (Dask), as nbgrader does")
    p.add_argument("assignment")
    p.add_argument("--jobs", type=positive, default=2, help="submissions graded at once (default 2)")
    p.add_argument("--scheduler", help="a Dask scheduler address (tls://host:8786); default: a LocalCluster here")
    p.add_argument("--tls-ca-file", help="for a tls:// scheduler: the course's CA certificate (PEM); "
                                         "default: Dask's distributed.comm.tls.ca-file")
    p.add_argument("--tls-cert", help="this client's certificate (PEM); default: distributed.comm.tls.client.cert")
    p.add_argument("--tls-key", help="this client's private key (PEM); default: distributed.comm.tls.client.key")
    p.add_argument("--timeout", type=positive, default=900, help="seconds one submission may take (default 900)")
    p.add_argument("--course", default=".", help="the course directory (default: this folder)")
    p.add_argument("--force", action="store_true",
                   help="grade again submissions graded before and not handed in since (as nbgrader autograde --force)")
    p.add_argument("--json", help="write the outcome of every submission here")
    p.set_defaults(func=_autograde)
