"""``lucy checkpoint ch07``: is this learner's chapter-7 code ready for Telegram and the clock?

1. The learner's completed Unit A, Unit B and practice notebooks run top to bottom (Unit B's
   optional part may be left unwritten: its cells are not counted).
2. Every acceptance row holds on the learner-owned cells taken from them, except the rows of
   Unit B's optional part and the hand-off row that needs its code (``NOT_REQUIRED``), which are
   run and shown but not required.
3. The Telegram adapter (against a fake Bot API on 127.0.0.1) and the clock producer
   run end to end through the learner's own ``admit``, ``work_once`` and ``deliver_one``,
   including a capacity refusal on each path: recorded and (on Telegram) answered "busy".
   These are rows too, from the one registry (``checker/checkpoint_rows.py``).

Learner code runs only in forked children, exactly as in the checker, and in the notebooks'
kernels. Where the machine gives the grading sandbox (``sandbox.py``), ``run_checkpoint_isolated``
runs the whole checkpoint inside it, on a copy of the notebooks: the course, the network and
the machine beyond the limits are out of reach, as under ``nbgrader autograde``. The verdict
is the learner's own gate to Chapter 8, not a grade: code that runs as the same user as the
checkpoint could forge it, and would only fool its author.
"""

from __future__ import annotations

import datetime as dt
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict, dataclass
from pathlib import Path

from . import sandbox
from .handin import copy_regular_files
from ..checker import SEALED_ENV, SourceLearner, run_rows
from ..checker.results import CheckReport, RowResult
from ..checker.rows import CHECKPOINT_ROWS, ROWS
from ..engine.limits import LIMIT_HINT, Limits, group_label
from ..notebooks.notebook import UNITS, find_notebooks, learner_implementation

OPTIONAL_PART = "## Optional part"
"""How the heading of Unit B's optional part starts: its cells and rows are not required."""

OPTIONAL_ROWS = frozenset({"model-recovers", "model-fails-for-good", "model-failure-atomic", "reconcile-unknown",
                           "reconcile-after-retention", "idempotency-key-stable", "second-generation",
                           "stale-finish-refused", "release-fenced", "crash-sweep", "model-based", "operator-numbers",
                           "delivery-key-forgotten", "delivery-moved-meanwhile", "bug-held",
                           "held-failed-with-apology", "operator-sees-every-stuck-state",
                           "model-rides-out-outage"})
"""The rows graded in Unit B's optional part (a test keeps this in step with the notebook)."""

NOT_REQUIRED = OPTIONAL_ROWS | {"telegram-model-outage"}
"""What the checkpoint runs and shows but does not require: the optional part's rows, and the hand-off
row that runs the optional part's ``work_once_retrying`` and ``fail_attempt``."""


@dataclass(frozen=True)
class CheckpointReport:
    results: tuple[RowResult, ...]
    seconds: float

    @property
    def ready(self) -> bool:
        required = [r for r in self.results if r.row_id not in NOT_REQUIRED]
        return bool(required) and all(r.passed for r in required)


def execute_notebooks(folder: Path) -> RowResult:
    """Run each unit notebook top to bottom in a fresh kernel, in a scratch copy."""
    import nbformat  # noqa: PLC0415 - nbformat and nbclient load only when notebooks run
    from nbclient import NotebookClient  # noqa: PLC0415

    started = time.monotonic()
    notebooks = find_notebooks(folder)
    found = sorted(p.stem for p in notebooks)
    if found != sorted(UNITS):
        return RowResult("notebooks-run", False, f"found notebooks for {found or 'no unit'}; all of {', '.join(UNITS)} are needed",
                         f"Put your completed {', '.join(UNITS)} folders in the folder you check.", 0.0)
    problems = []
    with tempfile.TemporaryDirectory(prefix="lucy-checkpoint-") as scratch:
        for path in notebooks:
            shutil.copytree(path.parent, Path(scratch) / path.stem, dirs_exist_ok=True)
        # Each notebook makes a workspace in the temporary folder: the kernel's is in the scratch copy, and goes with it.
        kernel_tmp = Path(scratch) / "tmp"
        kernel_tmp.mkdir()
        for unit in UNITS:
            path = Path(scratch) / unit / f"{unit}.ipynb"
            nb = nbformat.read(str(path), as_version=4)
            NotebookClient(nb, timeout=300, kernel_name="python3", allow_errors=True,
                           resources={"metadata": {"path": str(path.parent)}}).execute(
                env={**os.environ, "TMPDIR": str(kernel_tmp)})
            for index, cell in enumerate(required_cells(nb.cells)):
                for out in cell.get("outputs", []):
                    if out.get("output_type") == "error":
                        problems.append(f"{unit} cell {index}: {out.get('ename')}: {str(out.get('evalue'))[:120]}")
    seconds = round(time.monotonic() - started, 1)
    if problems:
        return RowResult("notebooks-run", False, f"{len(problems)} cells raised; first: {problems[0]}",
                         "Run each notebook with Kernel ▸ Restart Kernel and Run All Cells, and fix the first error.",
                         seconds)
    return RowResult("notebooks-run", True, f"all {len(UNITS)} notebooks ran top to bottom without an error", "", seconds)


def required_cells(cells: list) -> list:
    """The cells before the optional part's heading: the ones that must run without an error."""
    for index, cell in enumerate(cells):
        if cell.get("cell_type") == "markdown" and str(cell.get("source", "")).startswith(OPTIONAL_PART):
            return cells[:index]
    return cells


def run_checkpoint(folder: str | os.PathLike, *, execute: bool = True, seed: int | None = None) -> CheckpointReport:
    started = time.monotonic()
    folder = Path(folder)
    results: list[RowResult] = []
    if execute:
        results.append(execute_notebooks(folder))
    learner = SourceLearner(learner_implementation(folder))
    results += run_rows(learner, [*ROWS.values(), *CHECKPOINT_ROWS.values()], seed=seed).results
    return CheckpointReport(tuple(results), round(time.monotonic() - started, 1))


RESULT_MARK = "lucy-checkpoint-result: "
"""Starts the line on which ``python -m lucy_runtime.grading.checkpoint --inside`` prints its results."""


def run_checkpoint_isolated(folder: str | os.PathLike, *, execute: bool = True, seed: int | None = None,
                            limits: Limits | None = None, log=None) -> CheckpointReport:
    """``run_checkpoint`` inside the grading sandbox, on a copy of ``folder``; where this machine
    gives no sandbox, as it is, after the one warning line that says so."""
    box = sandbox.detect()
    if not box.isolated:
        sandbox._warn_once(box, log)
        return run_checkpoint(folder, execute=execute, seed=seed)
    limits = limits or Limits()
    started = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="lucy-checkpoint-box-") as scratch:
        scratch = os.path.realpath(scratch)
        work = Path(scratch) / "notebooks"
        # Plain files only, nothing followed (grading/handin.py): a link in the folder is left out, by name.
        for refusal in copy_regular_files(folder, work, skip=frozenset({".ipynb_checkpoints", "__pycache__"})):
            print(f"lucy checkpoint: {refusal.line('left out of the checkpoint')}", file=sys.stderr)
        sandbox.hand_to_grader(box, work, enterable=True)  # a pytest tmp folder is 0700
        group, tree_limits = sandbox.tree_cgroup(limits, f"checkpoint-{group_label(folder)}", log)
        argv = [sys.executable, "-m", "lucy_runtime.grading.checkpoint", "--inside", str(work)]
        argv += ([] if execute else ["--no-execute"]) + ([] if seed is None else ["--seed", str(seed)])
        # The notebooks' own check() cells run their rows, as on the learner's machine (not as under autograde).
        argv = box.command(argv, workdir=work, limits=tree_limits, env={SEALED_ENV: ""})
        if group is not None:
            argv = group.wrap(argv)
        try:
            done = subprocess.run(argv, capture_output=True, text=True, cwd="/", env={"PATH": "/usr/bin:/bin"},
                                  timeout=limits.wall_seconds)
        except subprocess.TimeoutExpired:
            return _stopped(f"the checkpoint did not finish within the wall time limit ({limits.wall_seconds} s)",
                            started)
        finally:
            if group is not None:
                breaches = group.breaches(limits)
                group.close()
        found = [line[len(RESULT_MARK):] for line in done.stdout.splitlines() if line.startswith(RESULT_MARK)]
        if not found:
            said = "; ".join(f"the {b} limit" for b in breaches) if group is not None and breaches else \
                f"exit {done.returncode}: {done.stderr.strip()[-300:]}"
            return _stopped(f"the checkpoint stopped before it could report ({said})", started)
        results = tuple(RowResult(**r) for r in json.loads(found[-1]))
    return CheckpointReport(results, round(time.monotonic() - started, 1))


def _stopped(why: str, started: float) -> CheckpointReport:
    return CheckpointReport((RowResult("checkpoint-ran", False, why, LIMIT_HINT, 0.0),),
                            round(time.monotonic() - started, 1))


def save_record(report: CheckpointReport, folder: Path, records: Path) -> Path:
    records.mkdir(parents=True, exist_ok=True)
    stamp = dt.datetime.now(dt.timezone.utc).strftime("%Y%m%dT%H%M%SZ")
    path = records / f"ch07-{stamp}.json"
    path.write_text(json.dumps({"checkpoint": "ch07", "notebooks": str(folder), "ready": report.ready,
                                "seconds": report.seconds, "rows": [asdict(r) for r in report.results]}, indent=2))
    return path


def table(report: CheckpointReport) -> str:
    shown = repr(CheckReport(report.results, "Checkpoint ch07 (before Chapter 8: Telegram)"))
    optional = sorted(r.row_id for r in report.results if r.row_id in NOT_REQUIRED)
    if optional:
        shown += "\nNot required (Unit B's optional part), shown for you: " + ", ".join(optional)
    return shown


def _inside(argv: list[str]) -> int:
    """``python -m lucy_runtime.grading.checkpoint --inside DIR [--no-execute] [--seed N]``: the checkpoint in
    the sandbox, its results on one line of stdout after ``RESULT_MARK``."""
    import argparse  # noqa: PLC0415 - only this entry point parses arguments

    parser = argparse.ArgumentParser(prog="python -m lucy_runtime.grading.checkpoint")
    parser.add_argument("--inside", required=True)
    parser.add_argument("--no-execute", action="store_true")
    parser.add_argument("--seed", type=int)
    args = parser.parse_args(argv)
    report = run_checkpoint(args.inside, execute=not args.no_execute, seed=args.seed)
    print(RESULT_MARK + json.dumps([asdict(r) for r in report.results]), flush=True)
    return 0


if __name__ == "__main__":
    # Run in the importable module, not in __main__, as the sandbox's orchestrator does.
    from lucy_runtime.grading import checkpoint as _module  # noqa: PLC0415

    raise SystemExit(_module._inside(sys.argv[1:]))
