"""``lucy report``: what the class did, the report an educator reads before the next session
(lucy_runtime/report/)."""

from __future__ import annotations

import sys
from pathlib import Path


def _report(args) -> int:
    """What the class did: the report an educator reads before the next session."""
    from ..course.submitted import unsafe_in_autograded
    from ..errors import LucyError
    from ..report.report import class_report
    from ..report.report_html import write_report

    if args.refresh_cases:
        from ..proof.signatures import measure, save
        from ..proof.progress import RichProgress

        print(f"measured the failing rows of every educator case: {save(measure(progress=RichProgress()))}")
        if not args.assignment and not args.all:
            return 0
    if bool(args.assignment) == args.all:
        print("lucy report: name one ASSIGNMENT, or --all", file=sys.stderr)
        return 2
    unsafe = unsafe_in_autograded(Path(args.course), None if args.all else args.assignment)
    if unsafe:  # only collect writes what autograde reads: something went around it
        print("lucy report: autograded/ holds what no step may read (collect, then autograde, those learners "
              "again):\n  " + "\n  ".join(unsafe), file=sys.stderr)
        return 2
    try:
        report = class_report(Path(args.course), None if args.all else (args.assignment,))
    except LucyError as error:  # no course here, no gradebook, nothing graded yet
        print(f"lucy report: {error}", file=sys.stderr)
        return 2
    name = "all" if args.all else args.assignment
    written = write_report(report, Path(args.out) if args.out else Path(args.course) / "reports", name)
    _print_written(report, written)
    return 0


def _print_written(report, written) -> None:
    for part in report.parts:
        matched = sum(len(g.students) for g in part.groups if g.kind == "case")
        unknown = sum(len(g.students) for g in part.groups if g.kind == "none")
        print(f"{part.assignment}: {len(part.learners)} learners; {matched} fail like an educator case, {unknown} like "
              f"none; {len(part.evidence_problems)} evidence files missing or unreadable")
    if report.signatures_stale:
        print("the educator cases changed since their failing rows were measured: run lucy report --refresh-cases")
    print(f"report: {written.html}\nfor the class (anonymized): {written.anonymized}\nper learner: {written.csv}\n"
          f"made in {report.seconds:g} s")


def add_to(sub) -> None:
    """The ``report`` subcommand, added to ``lucy``'s subparsers."""
    p = sub.add_parser("report", help="what the class did: rows failed, misconceptions, predictions, per learner (HTML, CSV)")
    p.add_argument("assignment", nargs="?", help="e.g. ch07_unit_a")
    p.add_argument("--all", action="store_true", help="every assignment with a graded submission, in one report")
    p.add_argument("--course", default=".", help="the course directory (default: this folder)")
    p.add_argument("--out", help="where the files go (default: COURSE/reports)")
    p.add_argument("--refresh-cases", action="store_true",
                   help="measure again the rows each educator case fails (after the cases or the rows changed)")
    p.set_defaults(func=_report)
