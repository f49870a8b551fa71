"""``lucy verify-grader`` and ``lucy mutation-score``: the grader's proof, through real nbgrader, and its
mutation score."""

from __future__ import annotations

import sys
from pathlib import Path

from ..notebooks.units import UNITS


def verify_command(args) -> int:
    """``lucy verify-grader`` (and the second step of ``lucy demo``)."""
    from ..proof.verify import select_for_verify, verify
    from ..errors import UnknownCase
    from ..proof.progress import RichProgress
    from ..grading.sandbox import detect

    print(detect().describe(), flush=True)  # learner code is sandboxed, or one warning says it is not
    try:
        selection = select_for_verify(getattr(args, "case", None) or [], getattr(args, "unit", None) or [])
    except UnknownCase as error:
        print(f"lucy verify-grader: {error}", file=sys.stderr)
        return 2
    report = verify(progress=RichProgress(), keep=getattr(args, "keep", False), **selection)
    _print_verified(report, keep=getattr(args, "keep", False))
    if args.json:
        Path(args.json).write_text(report.to_json())
    return 0 if report.ok else 1


def _print_verified(report, keep: bool) -> None:
    print("\nGrade table (autograded points only; written answers are marked by hand)\n")
    print(report.grade_table())
    print("\nKill matrix: educator cases (columns) × rows that lost them points\n")
    print(report.kill_matrix())
    print("\nTampering: each trick beside the honest submission beneath it (it may never score more)\n")
    print(report.tamper_table())
    if report.handback:
        h = report.handback
        where = h.grades_csv if report.root is not None else "the scratch course (gone with it; --keep keeps it)"
        print(f"\nnbgrader generate_feedback wrote {h.feedback_files} feedback files (no hidden test in any); "
              f"nbgrader export wrote {h.exported_rows} grades to {where}, each equal to the gradebook's score")
    print()
    for problem in report.problems:
        print(f"PROBLEM: {problem}")
    graded = len(report.entries)
    print(f"{'grader verified' if report.ok else 'GRADER NOT VERIFIED'}: {graded} submissions autograded by nbgrader "
          f"in {report.seconds} s ({report.seconds / max(graded, 1):.1f} s each)")
    if keep and report.root is not None:
        print(f"the scratch courses are kept in {report.root} (delete the folder when done)")


def _mutation(args) -> int:
    """The grader's mutation score: a report to read, not a gate."""
    from ..proof.mutation import BaselineFails, MutationToolFailed, mutation_score
    from ..proof.progress import RichProgress

    try:
        report = mutation_score(notebooks=args.notebook_dir, only=tuple(args.only), rows=args.rows,
                                workers=args.workers, seed=args.seed, progress=RichProgress())
    except (BaselineFails, MutationToolFailed, KeyError) as problem:
        print(f"NO MUTATION SCORE: {problem}")
        return 1
    print("\nMutants per cell (cosmic-ray edits of the reference in source/)\n")
    print(report.cell_table())
    print("\nRows that killed them (the first failing row of each mutant)\n")
    print(report.killers() or "(none)")
    print("\nSurvivors: the rows could not tell these edits from the reference. Each is a gap in the grader, "
          "or an edit that changes nothing that matters.\n")
    print(report.survivor_listing())
    print(f"\n{report.summary()}")
    if args.json:
        Path(args.json).parent.mkdir(parents=True, exist_ok=True)
        Path(args.json).write_text(report.to_json())
    return 0


def add_to(sub) -> None:
    """The ``verify-grader`` and ``mutation-score`` subcommands, added to ``lucy``'s subparsers."""
    p = sub.add_parser("verify-grader", help="autograde reference, blank and every case; print the kill matrix")
    p.add_argument("--json")
    p.add_argument("--keep", action="store_true", help="keep the scratch courses nbgrader graded (their folder is printed)")
    p.add_argument("--case", action="append", metavar="NAME",
                   help="grade only this educator case, alternative or tamper case (repeatable), beside the "
                        "references, the blank releases and the honest submissions the tampers ride on")
    p.add_argument("--unit", action="append", choices=UNITS, help="grade only this unit (repeatable)")
    p.set_defaults(func=verify_command)
    p = sub.add_parser("mutation-score", help="mutate the reference cells with cosmic-ray; how many mutants the rows kill")
    p.add_argument("notebook_dir", nargs="?", default="source")
    p.add_argument("--only", nargs="*", default=[], metavar="CELL", help="mutate only these cells (e.g. finish)")
    p.add_argument("--rows", default="all", help="the rows each mutant meets (default: all)")
    p.add_argument("--workers", type=int, default=2)
    p.add_argument("--seed", type=int, default=7)
    p.add_argument("--json")
    p.set_defaults(func=_mutation)
