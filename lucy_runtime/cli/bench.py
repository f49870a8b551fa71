"""``lucy bench``: ratios from one run (lucy_runtime/bench/bench.py); `make bench` keeps them in artifacts/bench.json."""

from __future__ import annotations

from pathlib import Path


def _bench(args) -> int:
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


def add_to(sub) -> None:
    """The ``bench`` subcommand, added to ``lucy``'s subparsers."""
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
