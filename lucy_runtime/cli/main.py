"""The ``lucy`` command."""

from __future__ import annotations

import argparse
import os
import json
import sys
import time
from pathlib import Path

from ..grading.nbgrader_main import leave_out_unused_imports
from ..notebooks.units import UNITS


def _rows(args) -> int:
    from ..checker.rows import ROWS

    if args.blocks or args.write_blocks:
        from ..books.block_rows import blocks, table, write_blocks

        if args.write_blocks:
            for page in write_blocks([Path(p) for p in args.write_blocks], Path(args.source)):
                print(f"rewrote the rows of each block in {page}")
        else:
            print(table(blocks(Path(args.source))))
        return 0
    for row in ROWS.values():
        print(f"{row.id:<28} unit {row.unit}  {row.topic:<10} {row.covers}")
    return 0


def _check(args) -> int:
    from ..checker import SourceLearner, rows_for_cells, run_rows
    from ..notebooks.notebook import learner_implementation

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
    from ..educator.alternatives import ALTERNATIVES
    from ..educator.cases import CASES
    from ..educator.practice_cases import PRACTICE_ALTERNATIVES, PRACTICE_CASES

    for case in CASES + PRACTICE_CASES:
        print(f"{case.name:<28} {case.unit}  caught by: {', '.join(case.expected)}\n    {case.breaks}")
    print("\nCorrect alternatives (must get full marks):")
    for case in ALTERNATIVES + PRACTICE_ALTERNATIVES:
        print(f"{case.name:<28} {case.breaks}")
    return 0


def _hand_in(args) -> int:
    """Fill a fetched unit notebook as a learner who wrote the reference (code and written answers)
    would, or with a case's mistake."""
    import nbformat

    from ..course.course import REPO
    from ..educator.cases import by_name
    from ..proof.verify import filled, with_written_answers

    notebook = Path(args.notebook)
    unit = notebook.stem
    source = REPO / "source" / unit / f"{unit}.ipynb"
    if not notebook.exists() or not source.exists():
        print(f"lucy hand-in: {notebook} is not a fetched unit notebook (no {notebook} or no {source})")
        return 2
    try:
        case = by_name(args.case) if args.case else None
    except KeyError:
        print(f"lucy hand-in: no educator case {args.case!r} (`lucy cases` lists them)")
        return 2
    if case is not None and case.unit != unit:
        print(f"lucy hand-in: case {case.name} is a mistake in {case.unit}, not in {unit}")
        return 2
    release, reference = nbformat.read(str(notebook), as_version=4), nbformat.read(str(source), as_version=4)
    nbformat.write(with_written_answers(filled(release, reference, case), reference), str(notebook))
    print(f"{notebook}: the reference" + (f" with case {case.name}: {case.breaks}" if case else ""))
    return 0


def _sync(args) -> int:
    from ..notebooks.notebook import pair_differences, sync_from_markdown

    for markdown in sorted(Path("source").glob("*/*.md")):
        target = sync_from_markdown(markdown)
        problems = pair_differences(target)
        print(f"{markdown} -> {target}" + (f"  PROBLEMS: {problems}" if problems else ""))
    return 0


def _release(args) -> int:
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


def _verify(args) -> int:
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
    if getattr(args, "keep", False) and report.root is not None:
        print(f"the scratch courses are kept in {report.root} (delete the folder when done)")
    if args.json:
        Path(args.json).write_text(report.to_json())
    return 0 if report.ok else 1


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


def _bench(args) -> int:
    """Ratios from one run (lucy_runtime/bench/bench.py); `make bench` keeps them in artifacts/bench.json."""
    from ..bench.bench import BenchConfig, run_bench, summary

    config = BenchConfig(notebook_dir=Path(args.notebook_dir), sections=tuple(args.only or BenchConfig.sections),
                         submissions=args.submissions, items=args.items,
                         learners=args.learners, hub_learners=args.hub_learners)
    report = run_bench(config, progress=lambda text: print(f"== {text}", flush=True))
    print(summary(report))
    if args.json:
        Path(args.json).parent.mkdir(parents=True, exist_ok=True)
        Path(args.json).write_text(report.to_json())
        print(f"written to {args.json}")
    return 1 if report.problems else 0


def _report(args) -> int:
    """What the class did: the report an educator reads before the next session."""
    from ..report.report import class_report
    from ..report.report_html import write_report
    from ..errors import LucyError

    if args.refresh_cases:
        from ..proof.signatures import measure, save
        from ..proof.progress import RichProgress

        print(f"measured the failing rows of every educator case: {save(measure(progress=RichProgress()))}")
        if not args.assignment and not args.all:
            return 0
    if bool(args.assignment) == args.all:
        print("lucy report: name one ASSIGNMENT, or --all", file=sys.stderr)
        return 2
    from ..grading.handin import scan

    unsafe = [f"{folder.parent.name}/{folder.name}: {r.line('not read')}"
              for folder in sorted((Path(args.course) / "autograded").glob(f"*/{'*' if args.all else args.assignment}"))
              for r in scan(folder)]
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
    for part in report.parts:
        matched = sum(len(g.students) for g in part.groups if g.kind == "case")
        unknown = sum(len(g.students) for g in part.groups if g.kind == "none")
        print(f"{part.assignment}: {len(part.learners)} learners; {matched} fail like an educator case, {unknown} like "
              f"none; {len(part.evidence_problems)} evidence files missing or unreadable")
    if report.signatures_stale:
        print("the educator cases changed since their failing rows were measured: run lucy report --refresh-cases")
    print(f"report: {written.html}\nfor the class (anonymized): {written.anonymized}\nper learner: {written.csv}\n"
          f"made in {report.seconds:g} s")
    return 0


def _positive(text: str) -> int:
    if not text.isdigit() or int(text) < 1:
        raise argparse.ArgumentTypeError(f"expected a whole number of at least 1, got {text!r}")
    return int(text)


def _refused_at_hand_in(course: Path, assignment: str) -> tuple[list[tuple[str, str]], list[tuple[str, str]]]:
    """What collect refused of each hand-in; and what is in submitted/ now that no step may read
    (a link, a FIFO, ... put there around collect), which is moved aside before grading."""
    from ..grading.exchange import refusals_of
    from ..grading.handin import scan

    refused, unsafe = [], []
    for folder in sorted((course / "submitted").glob(f"*/{assignment}")):
        student = folder.parent.name
        refused += [(student, line) for line in refusals_of(folder)]
        found = scan(folder)
        if found:
            unsafe += [(student, r.line()) for r in found]
            folder.rename(folder.with_name(f"{assignment}.unsafe-{os.getpid()}"))
    return refused, unsafe


def _autograde(args) -> int:
    """Autograde every submission of an assignment in parallel through Dask."""
    from ..course.parallel import Status, autograde_class
    from ..course.scheduler import TlsFiles, open_to_anyone
    from ..errors import LucyError

    def progress(outcome, done: int, total: int) -> None:
        bar = "#" * (30 * done // total)
        stopped = f"; stopped: {outcome.stopped}" if outcome.stopped else ""
        print(f"[{bar:<30}] {done}/{total}  {outcome.student}: {outcome.status.value} ({outcome.seconds:g} s{stopped})",
              flush=True)

    refused, unsafe = _refused_at_hand_in(Path(args.course), args.assignment)
    for student, line in unsafe:
        print(f"NOT GRADED: {student}: {line} (submitted/ holds what only collect should write: collect again)",
              file=sys.stderr)
    warning = open_to_anyone(args.scheduler) if args.scheduler else None
    if warning:
        print(f"lucy autograde: {warning}", file=sys.stderr, flush=True)
    try:
        result = autograde_class(Path(args.course), args.assignment, jobs=args.jobs, scheduler=args.scheduler,
                                 tls=TlsFiles(args.tls_ca_file, args.tls_cert, args.tls_key),
                                 timeout=args.timeout, on_done=progress, force=args.force)
    except LucyError as error:  # no course here, no such assignment, nothing handed in, no scheduler
        print(f"lucy autograde: {error}", file=sys.stderr)
        return 2
    for outcome in result.unfinished:
        print(f"\nNOT GRADED: {outcome.student} ({outcome.status.value}); the end of nbgrader's log:\n"
              f"{outcome.log_tail[-800:]}")
    for outcome in result.outcomes:
        if outcome.stopped:
            print(f"STOPPED: {outcome.student}: {outcome.stopped}")
    for student, line in refused:
        print(f"REFUSED: {student}: {line}")
    print()
    for outcome in result.outcomes:
        if outcome.score is not None:
            waits = (f"; {outcome.waiting} written answer{'s' if outcome.waiting != 1 else ''} to grade in formgrader"
                     if outcome.waiting else "")
            again = " (unchanged since graded)" if outcome.status is Status.UNCHANGED else ""
            print(f"{outcome.student}: {outcome.score:g} of {outcome.max_score:g}{waits}{again}")
    graded = sum(o.status is Status.GRADED for o in result.outcomes)
    unchanged = sum(o.status is Status.UNCHANGED for o in result.outcomes)
    bought = (f"; {result.speedup:g} x the time of one submission after another" if result.speedup else "")
    print(f"\n{graded} of {len(result.outcomes)} submissions of {result.assignment} graded in {result.seconds:g} s "
          f"({result.jobs} jobs, {result.engine}{bought})"
          + (f"; {unchanged} unchanged since graded (--force grades them again)" if unchanged else "")
          + (f"; not graded: {', '.join(o.student for o in result.unfinished)}" if result.unfinished else ""))
    if args.json:
        Path(args.json).write_text(result.to_json())
    return 0 if result.ok else 1


def _exchange(args) -> int:
    """Make the course's exchange, give learners their folders, close or open hand-ins."""
    from traitlets.config.loader import PyFileConfigLoader

    from ..errors import LucyError
    from ..grading import exchange

    config = PyFileConfigLoader("nbgrader_config.py", path=str(Path(args.course).resolve())).load_config()
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


def _gradebook(args) -> int:
    """Is the course's gradebook reachable; or move it into an empty server database."""
    from ..errors import LucyError
    from ..grading.gradebook import check_reachable, course_db_url, migrate

    try:
        url = course_db_url(Path(args.course))
        if args.action == "check":
            check_reachable(url)
            print(f"gradebook reachable: {url}")
            return 0
        if not args.to:
            print("lucy gradebook migrate: name the empty database to move into, with --to URL", file=sys.stderr)
            return 2
        moved = migrate(url, args.to)
    except LucyError as error:
        print(f"lucy gradebook: {error}", file=sys.stderr)
        return 2
    for table, count in moved.rows:
        print(f"{table}: {count} rows")
    print(f"\nmoved {sum(n for _, n in moved.rows)} rows from {moved.source} to {moved.target}.\n"
          f"Now set, in nbgrader_config.py:  c.CourseDirectory.db_url = {moved.target!r}\n"
          "(the old gradebook stays as it was: keep it until the new one has served a grading run)")
    return 0


def _solutions_book(args) -> int:
    """The worked answers, printed from the solution cells of source/ (never stored twice)."""
    from ..books.solutions import solutions_book

    text = solutions_book(args.source)
    if args.out:
        Path(args.out).write_text(text)
        print(f"written to {args.out}")
    else:
        print(text)
    return 0


def _book(args) -> int:
    from ..books.book import BookBuildFailed, Edition, build

    editions = list(Edition) if args.edition == "both" else [Edition(args.edition)]
    for edition in editions:
        print(f"building the {edition.value} edition ...", flush=True)
        try:
            built = build(Path.cwd(), edition, Path(args.out).resolve(), Path(args.mermaid) if args.mermaid else None)
        except BookBuildFailed as problem:
            print(f"BOOK NOT BUILT: {problem}")
            return 1
        print(f"{edition.value} edition: {len(built.pages)} pages, open {built.html / 'index.html'}")
    return 0


def _checkpoint(args) -> int:
    # The learner's own `lucy` (the learner distribution has no educator/) runs the same function.
    from ..grading.learner_cli import checkpoint

    return checkpoint(args.chapter, args.notebook_dir, args.records, args.json, execute=not args.no_execute)


def _hub(args) -> int:
    import secrets

    from ..errors import HubError
    from ..hub.accounts import add_learners, ensure_grader, learners
    from ..hub.server import HubClient, set_up, start, stop
    from ..hub.site import Site, make_exchange

    site = Site.from_environment()
    try:
        if args.action == "setup":
            password = set_up(site)
            if password:
                print(f"the grader's account {site.grader}, first password: {password} (`passwd {site.grader}` changes it)")
            print(f"the class is set up: the grader {site.grader}, learners {', '.join(learners(site)) or '(none yet)'}, "
                  f"the exchange {site.exchange}, the learners' environment {site.learner_env}")
        elif args.action == "add-learner":
            if not args.names:
                print("lucy hub add-learner: name one learner or more")
                return 2
            passwords = {name: secrets.token_urlsafe(9) for name in args.names}
            grader_password = ensure_grader(site)
            if grader_password:
                print(f"the grader's account {site.grader}, first password: {grader_password}")
            make_exchange(site)
            add_learners(site, passwords)
            print("each learner's account and first password (give it to them; `passwd NAME` changes it):")
            for name, password in passwords.items():
                print(f"  {name} {password}")
            if HubClient(site, timeout=5).admit(list(passwords)):
                print(f"the hub at {site.url} lets them in now")
            else:
                print("the hub lets them in when it starts (`make hub`)")
        elif args.action == "start":
            process = start(site, site.course / "hub" / "jupyterhub_config.py")
            try:
                HubClient(site).wait_up(process)
            except HubError:
                stop(process)  # a hub that did not come up leaves no proxy behind
                raise
            print(f"the class's hub is up at {site.url} (formgrader: {site.url}/services/{site.service}/formgrader); "
                  "Ctrl-C stops it")
            try:
                return process.wait()
            except KeyboardInterrupt:
                return stop(process)
    except HubError as problem:
        print(f"lucy hub: {problem}")
        return 2
    return 0


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
    p = sub.add_parser("rows", help="list the acceptance rows")
    p.add_argument("--blocks", action="store_true", help="the rows each teaching block grades, as a Markdown table")
    p.add_argument("--write-blocks", nargs="+", metavar="PAGE", help="put that table between the markers of each PAGE")
    p.add_argument("--source", default="source", help="the folder of the source notebooks (default: source)")
    p.set_defaults(func=_rows)
    p = sub.add_parser("check", help="run every row against the learner cells in NOTEBOOK_DIR")
    p.add_argument("notebook_dir")
    p.add_argument("--rows", default="all", help="a row id, a topic, a unit (A/B) or 'all'")
    p.add_argument("--json")
    p.add_argument("--seed", type=int)
    p.set_defaults(func=_check)
    sub.add_parser("cases", help="list the educator cases").set_defaults(func=_cases)
    p = sub.add_parser("hand-in", help="fill a fetched notebook with the reference, or with an educator case's "
                                       "mistake (to try the exchange as a learner would)")
    p.add_argument("notebook", help="the fetched notebook, e.g. ch07_unit_a/ch07_unit_a.ipynb")
    p.add_argument("--case", help="an educator case of that unit (`lucy cases`), e.g. finish-bare-pass")
    p.set_defaults(func=_hand_in)
    sub.add_parser("sync", help="write each source notebook from its Markdown pair").set_defaults(func=_sync)
    p = sub.add_parser("release", help="regenerate release/ with nbgrader, then validate source and release")
    p.add_argument("--no-validate", action="store_true", help="only regenerate")
    p.set_defaults(func=_release)
    p = sub.add_parser("verify-grader", help="autograde reference, blank and every case; print the kill matrix")
    p.add_argument("--json")
    p.add_argument("--keep", action="store_true", help="keep the scratch courses nbgrader graded (their folder is printed)")
    p.add_argument("--case", action="append", metavar="NAME",
                   help="grade only this educator case, alternative or tamper case (repeatable), beside the "
                        "references, the blank releases and the honest submissions the tampers ride on")
    p.add_argument("--unit", action="append", choices=UNITS, help="grade only this unit (repeatable)")
    p.set_defaults(func=_verify)
    p = sub.add_parser("mutation-score", help="mutate the reference cells with cosmic-ray; how many mutants the rows kill")
    p.add_argument("notebook_dir", nargs="?", default="source")
    p.add_argument("--only", nargs="*", default=[], metavar="CELL", help="mutate only these cells (e.g. finish)")
    p.add_argument("--rows", default="all", help="the rows each mutant meets (default: all)")
    p.add_argument("--workers", type=int, default=2)
    p.add_argument("--seed", type=int, default=7)
    p.add_argument("--json")
    p.set_defaults(func=_mutation)
    p = sub.add_parser("bench", help="ratios from one run: rows, autograde, class grading, the class report, the queue, the make loop")
    p.add_argument("notebook_dir", nargs="?", default="source")
    # bench.SECTIONS, written out: importing the bench would slow every lucy command (tests/test_bench.py).
    p.add_argument("--only", nargs="*", choices=("rows", "autograde", "class", "report", "queue", "loop", "hub"),
                   help="run only these parts")
    p.add_argument("--hub-learners", type=int, default=30, help="learner accounts in the class on JupyterHub (hub part)")
    p.add_argument("--submissions", type=int, default=8, help="class size for the parallel grading ratio")
    p.add_argument("--items", type=int, default=200, help="items through the queue")
    p.add_argument("--learners", type=int, default=300, help="class size for the report part (synthesised)")
    p.add_argument("--json", help="write the report here (make bench: artifacts/bench.json)")
    p.set_defaults(func=_bench)
    p = sub.add_parser("autograde", help="autograde every submission of ASSIGNMENT in parallel (Dask), as nbgrader does")
    p.add_argument("assignment")
    p.add_argument("--jobs", type=_positive, default=2, help="submissions graded at once (default 2)")
    p.add_argument("--scheduler", help="a Dask scheduler address (tls://host:8786); default: a LocalCluster here")
    p.add_argument("--tls-ca-file", help="for a tls:// scheduler: the course's CA certificate (PEM); "
                                         "default: Dask's distributed.comm.tls.ca-file")
    p.add_argument("--tls-cert", help="this client's certificate (PEM); default: distributed.comm.tls.client.cert")
    p.add_argument("--tls-key", help="this client's private key (PEM); default: distributed.comm.tls.client.key")
    p.add_argument("--timeout", type=_positive, default=900, help="seconds one submission may take (default 900)")
    p.add_argument("--course", default=".", help="the course directory (default: this folder)")
    p.add_argument("--force", action="store_true",
                   help="grade again submissions graded before and not handed in since (as nbgrader autograde --force)")
    p.add_argument("--json", help="write the outcome of every submission here")
    p.set_defaults(func=_autograde)
    p = sub.add_parser("report", help="what the class did: rows failed, misconceptions, predictions, per learner (HTML, CSV)")
    p.add_argument("assignment", nargs="?", help="e.g. ch07_unit_a")
    p.add_argument("--all", action="store_true", help="every assignment with a graded submission, in one report")
    p.add_argument("--course", default=".", help="the course directory (default: this folder)")
    p.add_argument("--out", help="where the files go (default: COURSE/reports)")
    p.add_argument("--refresh-cases", action="store_true",
                   help="measure again the rows each educator case fails (after the cases or the rows changed)")
    p.set_defaults(func=_report)
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
    from . import regrade as regrade_cli  # noqa: PLC0415 - each new subcommand keeps its own module

    regrade_cli.add_to(sub)
    p = sub.add_parser("gradebook", help="check that the course's gradebook can be reached, or move it into an "
                                         "empty server database (SQLite to PostgreSQL)")
    p.add_argument("action", choices=("check", "migrate"))
    p.add_argument("--to", help="for migrate: the empty database's URL, e.g. postgresql+psycopg://lucy@127.0.0.1:5432/lucy_ch07")
    p.add_argument("--course", default=".", help="the course directory (default: this folder)")
    p.set_defaults(func=_gradebook)
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
    p = sub.add_parser("hub", help="the class on JupyterHub (as root): setup, add-learner NAME..., start")
    p.add_argument("action", choices=["setup", "add-learner", "start"])
    p.add_argument("names", nargs="*", help="add-learner: the learners' account names")
    p.set_defaults(func=_hub)
    p = sub.add_parser("demo", help="release, then verify the grader")
    p.add_argument("--json")
    p.set_defaults(func=_demo)
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
