"""The ``lucy`` command."""

from __future__ import annotations

import argparse
import os
import json
import sys
import time
from pathlib import Path


def _rows(args) -> int:
    from .checker.rows import ROWS

    for row in ROWS.values():
        print(f"{row.id:<28} unit {row.unit}  {row.topic:<10} {row.covers}")
    return 0


def _check(args) -> int:
    from .checker import SourceLearner, rows_for_cells, run_rows
    from .notebook import learner_implementation

    started = time.monotonic()
    cells = learner_implementation(args.notebook_dir)
    rows = rows_for_cells(args.rows, cells)
    report = run_rows(SourceLearner(cells), rows, seed=args.seed, title=f"lucy check {args.notebook_dir}")
    print(report)
    for result in report.results:
        crashes = f"  {result.crash_points} crash points" if result.crash_points else ""
        print(f"  {result.row_id:<28} {result.seconds:6.2f} s{crashes}")
    seconds = round(time.monotonic() - started, 2)
    print(f"crash points tried: {report.crash_points}")
    print(f"{sum(r.passed for r in report.results)} passed, {sum(not r.passed for r in report.results)} failed "
          f"in {seconds} s")
    if args.json:
        Path(args.json).write_text(json.dumps({"seconds": seconds, "crash_points_tried": report.crash_points,
                                               "rows": json.loads(report.to_json())}, indent=2))
    return 0 if report.passed else 1


def _cases(args) -> int:
    from .educator.alternatives import ALTERNATIVES
    from .educator.cases import CASES

    for case in CASES:
        print(f"{case.name:<28} {case.unit}  caught by: {', '.join(case.expected)}\n    {case.breaks}")
    print("\nCorrect alternatives (must get full marks):")
    for case in ALTERNATIVES:
        print(f"{case.name:<28} {case.breaks}")
    return 0


def _sync(args) -> int:
    from .notebook import pair_differences, sync_from_markdown

    for markdown in sorted(Path("source").glob("*/*.md")):
        target = sync_from_markdown(markdown)
        problems = pair_differences(target)
        print(f"{markdown} -> {target}" + (f"  PROBLEMS: {problems}" if problems else ""))
    return 0


def _release(args) -> int:
    from .course import generate_release, validate_release

    for path in generate_release():
        print(f"released {path}")
    if getattr(args, "no_validate", False):
        return 0
    problems = validate_release()
    for problem in problems:
        print(f"PROBLEM: {problem}")
    print("validated: every source passes its tests; every release fails every autograded test"
          if not problems else "RELEASE NOT VALID")
    return 1 if problems else 0


def _verify(args) -> int:
    from .educator.verify import verify
    from .progress import RichProgress
    from .sandbox import detect

    print(detect().describe(), flush=True)  # learner code is sandboxed, or one warning says it is not
    report = verify(progress=RichProgress())
    print("\nGrade table (autograded points only; written answers are marked by hand)\n")
    print(report.grade_table())
    print("\nKill matrix: educator cases (columns) × rows that lost them points\n")
    print(report.kill_matrix())
    print("\nTampering: each trick beside the honest submission beneath it (it may never score more)\n")
    print(report.tamper_table())
    if report.handback:
        h = report.handback
        print(f"\nnbgrader generate_feedback wrote {h.feedback_files} feedback files (no hidden test in any); "
              f"nbgrader export wrote {h.exported_rows} grades to {h.grades_csv}, each equal to the gradebook's score")
    print()
    for problem in report.problems:
        print(f"PROBLEM: {problem}")
    graded = len(report.entries)
    print(f"{'grader verified' if report.ok else 'GRADER NOT VERIFIED'}: {graded} submissions autograded by nbgrader "
          f"in {report.seconds} s ({report.seconds / max(graded, 1):.1f} s each)")
    if args.json:
        Path(args.json).write_text(report.to_json())
    return 0 if report.ok else 1


def _mutation(args) -> int:
    """The grader's mutation score: a report to read, not a gate."""
    from .educator.mutation import BaselineFails, MutationToolFailed, mutation_score
    from .progress import RichProgress

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


CRASH_ROWS = ("restart-keeps-work", "finish-atomic", "finish-durable", "running-crash-visible")


def _bench(args) -> int:
    """Time every row on the reference in one run; print ratios to the budgets, not verdicts."""
    from .checker import SourceLearner, run_rows, select_rows
    from .checker.child import run_in_child
    from .notebook import learner_implementation

    learner = SourceLearner(learner_implementation(args.notebook_dir))
    started = time.monotonic()
    for _ in range(20):
        run_in_child(lambda: None)
    fork_cost = (time.monotonic() - started) / 20
    report = run_rows(learner, select_rows("all"), seed=1)
    total = sum(r.seconds for r in report.results)
    print(f"{'row':<28} {'seconds':>8} {'x one fork':>11}")
    for r in report.results:
        print(f"{r.row_id:<28} {r.seconds:>8.3f} {r.seconds / fork_cost:>11.0f}")
    slowest_crash = max((r for r in report.results if r.row_id in CRASH_ROWS), key=lambda r: r.seconds)
    print(f"\nall {len(report.results)} rows: {total:.2f} s = {total / 10:.2f} of the 10 s budget")
    print(f"slowest crash row ({slowest_crash.row_id}): {slowest_crash.seconds:.2f} s = "
          f"{slowest_crash.seconds:.2f} of the 1 s budget")
    print(f"one fork + exit: {fork_cost * 1000:.1f} ms")
    return 0 if report.passed else 1


def _solutions_book(args) -> int:
    """The worked answers, printed from the solution cells of source/ (never stored twice)."""
    from .solutions import solutions_book

    text = solutions_book(args.source)
    if args.out:
        Path(args.out).write_text(text)
        print(f"written to {args.out}")
    else:
        print(text)
    return 0


def _book(args) -> int:
    from .book import BookBuildFailed, Edition, build

    editions = list(Edition) if args.edition == "both" else [Edition(args.edition)]
    for edition in editions:
        print(f"building the {edition.value} edition ...", flush=True)
        try:
            built = build(Path.cwd(), edition, Path(args.out), Path(args.mermaid) if args.mermaid else None)
        except BookBuildFailed as problem:
            print(f"BOOK NOT BUILT: {problem}")
            return 1
        print(f"{edition.value} edition: {len(built.pages)} pages, open {built.html / 'index.html'}")
    return 0


def _checkpoint(args) -> int:
    from .checkpoint import run_checkpoint, save_record, table

    if args.chapter != "ch07":
        print(f"this runtime holds the chapter 7 checkpoint only, not {args.chapter!r}")
        return 2
    report = run_checkpoint(args.notebook_dir, execute=not args.no_execute)
    print(table(report))
    record = save_record(report, Path(args.notebook_dir), Path(args.records))
    print(f"\nrecord saved to {record}")
    if args.json:
        Path(args.json).write_text(record.read_text())
    print("READY for Chapter 8: Telegram" if report.ready else "NOT READY for Chapter 8: fix the rows marked FAIL")
    return 0 if report.ready else 1


def _demo(args) -> int:
    print("== 1. Regenerate release/ from source/ with nbgrader, and validate both")
    if _release(args) != 0:
        return 1
    print("\n== 2. Autograde the reference, the blank release, correct alternatives and every educator case;"
          "\n      then generate feedback and export the grades")
    verified = _verify(args)
    print("\n(`make mutation` measures how many cosmic-ray mutants of the reference the rows kill.)")
    return verified


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="lucy", description="Lucy, Chapter 7: durable work")
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser("rows", help="list the acceptance rows").set_defaults(func=_rows)
    p = sub.add_parser("check", help="run every row against the learner cells in NOTEBOOK_DIR")
    p.add_argument("notebook_dir")
    p.add_argument("--rows", default="all", help="a row id, a topic, a unit (A/B) or 'all'")
    p.add_argument("--json")
    p.add_argument("--seed", type=int)
    p.set_defaults(func=_check)
    sub.add_parser("cases", help="list the educator cases").set_defaults(func=_cases)
    sub.add_parser("sync", help="write each source notebook from its Markdown pair").set_defaults(func=_sync)
    p = sub.add_parser("release", help="regenerate release/ with nbgrader, then validate source and release")
    p.add_argument("--no-validate", action="store_true", help="only regenerate")
    p.set_defaults(func=_release)
    p = sub.add_parser("verify-grader", help="autograde reference, blank and every case; print the kill matrix")
    p.add_argument("--json")
    p.set_defaults(func=_verify)
    p = sub.add_parser("mutation-score", help="mutate the reference cells with cosmic-ray; how many mutants the rows kill")
    p.add_argument("notebook_dir", nargs="?", default="source")
    p.add_argument("--only", nargs="*", default=[], metavar="CELL", help="mutate only these cells (e.g. finish)")
    p.add_argument("--rows", default="all", help="the rows each mutant meets (default: all)")
    p.add_argument("--workers", type=int, default=2)
    p.add_argument("--seed", type=int, default=7)
    p.add_argument("--json")
    p.set_defaults(func=_mutation)
    p = sub.add_parser("bench", help="time the rows on the reference (ratios to the budgets)")
    p.add_argument("notebook_dir", nargs="?", default="source")
    p.set_defaults(func=_bench)
    p = sub.add_parser("solutions-book", help="print the worked answers from source/ (for educators)")
    p.add_argument("--out")
    p.add_argument("--source", default="source", help="the folder of reference notebooks")
    p.set_defaults(func=_solutions_book)
    p = sub.add_parser("book", help="build the chapter as a website (learner and educator editions)")
    p.add_argument("--edition", choices=["learner", "educator", "both"], default="both")
    p.add_argument("--out", default="build/book")
    p.add_argument("--mermaid", help="mermaid's dist folder (default: .venv/node/node_modules/mermaid/dist)")
    p.set_defaults(func=_book)
    p = sub.add_parser("checkpoint", help="is this learner ready for Chapter 8? (runs notebooks, rows, Telegram, clock)")
    p.add_argument("chapter", help="ch07")
    p.add_argument("notebook_dir")
    p.add_argument("--json")
    p.add_argument("--records", default="checkpoints/records", help="where the saved record goes")
    p.add_argument("--no-execute", action="store_true", help="skip running the notebooks top to bottom")
    p.set_defaults(func=_checkpoint)
    p = sub.add_parser("demo", help="release, then verify the grader")
    p.add_argument("--json")
    p.set_defaults(func=_demo)
    return parser


def subcommands() -> set[str]:
    """The names ``lucy`` answers to (the book may name only these)."""
    actions = [a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction)]
    return set(actions[0].choices)


def main(argv: list[str] | None = None) -> int:
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
