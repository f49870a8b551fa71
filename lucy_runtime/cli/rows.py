"""``lucy rows`` and ``lucy check``: the acceptance rows, listed, and run against a learner's cells."""

from __future__ import annotations

import json
import time
from pathlib import Path


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


def add_to(sub) -> None:
    """The ``rows`` and ``check`` subcommands, added to ``lucy``'s subparsers."""
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
