"""How much of the reference can change before the checker notices: the grader's mutation score.

cosmic-ray takes the reference learner cells from ``source/`` and makes one small edit
at a time (``==`` to ``!=``, ``True`` to ``False``, a ``break`` to a ``continue``, ...).
Each edited copy is a mutant. The checker's rows run against every mutant: a mutant
that fails a row is *killed*; one that passes every row *survived*. Survivors are where
the grader is blind, or where the edit changed nothing that matters (an equivalent
mutant). Read them; this is a report, not a gate.

Each cell is its own file under ``cells/`` so the report can say which cell a mutant
lives in. Work is split over ``workers`` shards, each with its own copy of the cells,
because cosmic-ray edits the files in place while the rows run.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib.util
import json
import shlex
import shutil
import subprocess
import sys
import tempfile
import time
from collections import Counter
from dataclasses import asdict, dataclass, field
from enum import StrEnum
from pathlib import Path
from typing import cast

import pandas as pd

from ..checker import SourceLearner, rows_for_cells, run_row
from ..notebooks.cells import is_definitions
from ..checker.harness import Harness
from ..errors import BaselineFails, MutationToolFailed, UnknownName
from ..notebooks.notebook import learner_implementation
from .progress import Progress
from .tables import text_table

CELLS = "cells"
PROGRESS = "progress.log"
SESSION = "session.sqlite"
CONFIG = "cosmic-ray.toml"
KILLED_BY = "KILLED BY "


# -- cells on disk ------------------------------------------------------------------

def cell_file_name(index: int, name: str) -> str:
    unit, grade_id = name.split(":")
    return f"{index:02d}_{unit}__{grade_id}.py"


def cell_name(path: str | Path) -> str:
    unit, grade_id = Path(path).stem.split("_", 1)[1].split("__")
    return f"{unit}:{grade_id}"


def write_cells(cells: list[tuple[str, str]], folder: Path) -> list[Path]:
    folder.mkdir(parents=True, exist_ok=True)
    paths = []
    for index, (name, source) in enumerate(cells):
        path = folder / cell_file_name(index, name)
        path.write_text(source if source.endswith("\n") else source + "\n")
        paths.append(path)
    return paths


def read_cells(folder: Path) -> list[tuple[str, str]]:
    return [(cell_name(p), p.read_text()) for p in sorted(folder.glob("*.py"))]


# -- the test command cosmic-ray runs on each mutant --------------------------------------

def check_cells(folder: Path, *, seed: int, rows: str = "all") -> tuple[bool, str]:
    """Run the rows against the cells in ``folder`` and stop at the first failing one."""
    cells = read_cells(folder)
    chosen = rows_for_cells(rows, cells)
    with Harness(SourceLearner(cells), seed=seed) as harness:
        for row in chosen:
            result = run_row(row, harness)
            if not result.passed:
                return False, f"{KILLED_BY}{row.id}: {result.observation}"
    return True, f"all {len(chosen)} rows hold"


def _check_main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="python -m lucy_runtime.proof.mutation")
    parser.add_argument("folder", type=Path)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--rows", default="all")
    parser.add_argument("--progress", type=Path, help="append one line per run here")
    args = parser.parse_args(argv)
    passed, line = check_cells(args.folder, seed=args.seed, rows=args.rows)
    print(line, flush=True)
    if args.progress:
        with args.progress.open("a") as log:
            log.write((MutantOutcome.SURVIVED if passed else MutantOutcome.KILLED) + "\n")
    return 0 if passed else 1


# -- results --------------------------------------------------------------------------

class MutantOutcome(StrEnum):
    KILLED = "killed"  # some row failed
    SURVIVED = "survived"  # every row passed: the rows cannot tell this edit from the reference
    INCOMPETENT = "incompetent"  # the mutant did not even run (cosmic-ray gave up on it)


@dataclass(frozen=True)
class Mutant:
    cell: str
    line: int
    operator: str
    outcome: MutantOutcome
    killed_by: str = ""
    diff: str = ""

    def __post_init__(self) -> None:
        object.__setattr__(self, "outcome", MutantOutcome(self.outcome))


@dataclass
class MutationReport:
    mutants: list[Mutant]
    seconds: float = 0.0
    cells: list[str] = field(default_factory=list)

    def count(self, outcome: MutantOutcome | str) -> int:
        return sum(m.outcome == MutantOutcome(outcome) for m in self.mutants)

    @property
    def scored(self) -> int:
        """Mutants that ran (incompetent ones did not even start)."""
        return self.count(MutantOutcome.KILLED) + self.count(MutantOutcome.SURVIVED)

    @property
    def share_killed(self) -> float:
        return self.count(MutantOutcome.KILLED) / self.scored if self.scored else 0.0

    @property
    def survivors(self) -> list[Mutant]:
        return [m for m in self.mutants if m.outcome is MutantOutcome.SURVIVED]

    def summary(self) -> str:
        return (f"mutation score: {self.count(MutantOutcome.KILLED)} of {self.scored} mutants killed "
                f"({self.share_killed:.0%}); {self.count(MutantOutcome.SURVIVED)} survived, "
                f"{self.count(MutantOutcome.INCOMPETENT)} incompetent; {self.seconds} s")

    def cell_table(self) -> str:
        """Per cell (in notebook order): how many mutants, how many killed, how many survived."""
        frame = pd.DataFrame([{"cell": m.cell, "outcome": str(m.outcome)} for m in self.mutants],
                             columns=["cell", "outcome"])
        counts = pd.crosstab(frame["cell"], frame["outcome"])
        counts = counts.reindex(index=[c for c in self.cells if c in counts.index],
                                columns=[MutantOutcome.KILLED.value, MutantOutcome.SURVIVED.value], fill_value=0)
        counts.insert(0, "mutants", frame["cell"].value_counts())
        return text_table(counts.rename_axis(columns=None).reset_index(), left=("cell",))

    def killers(self) -> str:
        counts = Counter(m.killed_by for m in self.mutants if m.killed_by)
        if not counts:
            return ""
        table = pd.DataFrame(counts.most_common(), columns=["row", "mutants"])
        return text_table(table, left=("row",))

    def survivor_listing(self) -> str:
        if not self.survivors:
            return "no survivors"
        blocks = []
        for m in self.survivors:
            changed = [line for line in m.diff.splitlines() if line[:1] in "+-" and line[:3] not in ("+++", "---")]
            blocks.append(f"{m.cell} line {m.line} ({m.operator})\n" + "\n".join(f"    {line}" for line in changed))
        return "\n".join(blocks)

    def to_json(self) -> str:
        return json.dumps({"seconds": self.seconds, "mutants": len(self.mutants),
                           **{outcome.value: self.count(outcome) for outcome in MutantOutcome},
                           "share_killed": round(self.share_killed, 4),
                           "survivors": [asdict(m) for m in self.survivors],
                           "all": [asdict(m) for m in self.mutants]}, indent=2)


# -- running cosmic-ray -------------------------------------------------------------------

def _tool() -> str:
    beside = Path(sys.executable).with_name("cosmic-ray")
    return str(beside) if beside.exists() else "cosmic-ray"


def _cosmic_ray(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    command = [_tool(), *args]
    done = subprocess.run(command, cwd=cwd, capture_output=True, text=True)
    if done.returncode != 0:
        raise MutationToolFailed(command, done.stdout + done.stderr)
    return done


def _config(mutated: list[Path], *, seed: int, rows: str, timeout: float) -> str:
    test = " ".join(shlex.quote(p) for p in (sys.executable, "-m", "lucy_runtime.proof.mutation", CELLS,
                                             "--seed", str(seed), "--rows", rows, "--progress", PROGRESS))
    paths = ", ".join(json.dumps(f"{CELLS}/{p.name}") for p in mutated)
    return (f"[cosmic-ray]\nmodule-path = [{paths}]\ntimeout = {timeout}\nexcluded-modules = []\n"
            f"test-command = {json.dumps(test)}\n\n[cosmic-ray.distributor]\nname = \"local\"\n")


def _shard(root: Path, index: int, workers: int) -> None:
    """Leave shard ``index`` every ``workers``-th mutant; mark the rest as someone else's."""
    from cosmic_ray.work_db import WorkDB, use_db  # noqa: PLC0415 - a dev dependency, absent in a course install
    from cosmic_ray.work_item import WorkerOutcome, WorkResult  # noqa: PLC0415 - a dev dependency, absent in a course install

    with use_db(str(root / SESSION), WorkDB.Mode.open) as db:
        for position, item in enumerate(sorted(db.work_items, key=lambda w: w.job_id)):
            if position % workers != index:
                db.set_result(item.job_id, WorkResult(worker_outcome=WorkerOutcome.SKIPPED))


def _collect(root: Path) -> list[Mutant]:
    from cosmic_ray.work_db import WorkDB, use_db  # noqa: PLC0415 - a dev dependency, absent in a course install
    from cosmic_ray.work_item import TestOutcome, WorkerOutcome  # noqa: PLC0415 - a dev dependency, absent in a course install

    found = []
    with use_db(str(root / SESSION), WorkDB.Mode.open) as db:
        for item, result in db.completed_work_items:
            if result.worker_outcome == WorkerOutcome.SKIPPED:
                continue
            spec = item.mutations[0]
            if result.worker_outcome != WorkerOutcome.NORMAL:
                outcome = MutantOutcome.INCOMPETENT
            else:
                outcome = {TestOutcome.KILLED: MutantOutcome.KILLED, TestOutcome.SURVIVED: MutantOutcome.SURVIVED}.get(
                    result.test_outcome, MutantOutcome.INCOMPETENT)
            output = result.output or ""
            killed_by = ""
            if outcome is MutantOutcome.KILLED:
                killed_by = next((line[len(KILLED_BY):].split(":")[0] for line in output.splitlines()
                                  if line.startswith(KILLED_BY)), "timeout" if output == "timeout" else "crashed")
            found.append(Mutant(cell_name(spec.module_path), spec.start_pos[0], spec.operator_name, outcome,
                                killed_by, result.diff or ""))
    return sorted(found, key=lambda m: (m.cell, m.line, m.operator))


# Cells left unmutated: imports hold no logic, and broken_finish is written to fail rows on purpose.
NOT_MUTATED = ("imports", "broken_finish")


def mutation_score(*, notebooks: str | Path = "source", cells: list[tuple[str, str]] | None = None,
                   only: tuple[str, ...] = (), workers: int = 2, seed: int = 7, rows: str = "all",
                   timeout: float = 300.0, workdir: Path | None = None,
                   progress: Progress | None = None) -> MutationReport:
    """Mutate the learner cells of ``notebooks`` (or ``cells``; only those named in ``only``) and run ``rows`` on each."""
    if importlib.util.find_spec("cosmic_ray") is None:
        raise MutationToolFailed(["cosmic-ray"], "cosmic-ray is not installed here: pip install -e '.[dev]' "
                                                 "(or run `make mutation`, which installs it)")
    started = time.monotonic()
    cells = cells if cells is not None else learner_implementation(notebooks)
    names = [name for name, _ in cells]
    unknown = [wanted for wanted in only if not any(_names(name, wanted) for name in names)]
    if unknown:
        raise UnknownName(f"no learner cell named {', '.join(unknown)}; cells are: {', '.join(names)}")
    chosen = [name for name in names if (not only or any(_names(name, wanted) for wanted in only))
              and name.split(":")[1] not in NOT_MUTATED and not is_definitions(name)]
    if not chosen:
        raise UnknownName(f"nothing to mutate: {', '.join(only)} holds no logic ({', '.join(NOT_MUTATED)} are left as they are)")
    # A scratch folder of its own goes when the score is taken: everything it keeps is in the report.
    with contextlib.nullcontext(workdir) if workdir is not None else tempfile.TemporaryDirectory(
            prefix="lucy-mutation-") as root:
        return _score(cells, chosen, Path(root), workers=workers, seed=seed, rows=rows, timeout=timeout,
                      progress=progress, started=started)


def _score(cells: list[tuple[str, str]], chosen: list[str], root: Path, *, workers: int, seed: int, rows: str,
           timeout: float, progress: Progress | None, started: float) -> MutationReport:
    names = [name for name, _ in cells]
    first = root / "shard-0"
    paths = write_cells(cells, first / CELLS)
    mutated = [path for path, name in zip(paths, names) if name in chosen]

    passed, line = check_cells(first / CELLS, seed=seed, rows=rows)
    if not passed:
        raise BaselineFails(f"the unmutated reference fails: {line}")

    (first / CONFIG).write_text(_config(mutated, seed=seed, rows=rows, timeout=timeout))
    _cosmic_ray("init", CONFIG, SESSION, cwd=first)
    shards = [first]
    for index in range(1, workers):
        shard = root / f"shard-{index}"
        shutil.copytree(first, shard)
        shards.append(shard)
    for index, shard in enumerate(shards):
        _shard(shard, index, workers)
    total, reported = _mutant_count(first), -1
    running = []
    for shard in shards:
        with (shard / "exec.log").open("w") as log:  # a file, not a pipe: nobody reads a pipe while we wait
            running.append(subprocess.Popen([_tool(), "exec", CONFIG, SESSION], cwd=shard, stdout=log,
                                            stderr=subprocess.STDOUT))
    while any(p.poll() is None for p in running):
        time.sleep(1)
        done = sum(len((s / PROGRESS).read_text().splitlines()) for s in shards if (s / PROGRESS).exists())
        if progress and done != reported:
            progress.update(done, total, "mutants")
            reported = done
    for process, shard in zip(running, shards):
        if process.returncode != 0:
            raise MutationToolFailed([str(a) for a in cast(list, process.args)], (shard / "exec.log").read_text())
    mutants = [m for shard in shards for m in _collect(shard)]
    return MutationReport(mutants, round(time.monotonic() - started, 1), chosen)


def _names(name: str, wanted: str) -> bool:
    """``wanted`` names the cell ``unit:grade_id`` in full or by its grade id."""
    return wanted in (name, name.split(":")[1])


def _mutant_count(shard: Path) -> int:
    from cosmic_ray.work_db import WorkDB, use_db  # noqa: PLC0415 - a dev dependency, absent in a course install

    with use_db(str(shard / SESSION), WorkDB.Mode.open) as db:
        return db.num_work_items


if __name__ == "__main__":
    sys.exit(_check_main(sys.argv[1:]))
