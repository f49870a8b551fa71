"""The class's grading runs, one line of scores per run, so a report can show how the class moved.

nbgrader keeps only the latest grade of each submission. So each ``lucy report`` compares
the gradebook with the last run it recorded for the assignment (every learner's score
and the time of their submission): when anything changed (a resubmission graded again,
a written answer scored), it adds a run to ``reports/history.json`` in the course
folder. A report made again on an unchanged gradebook adds nothing. The file holds
student ids: it stays with the course, like the gradebook.
"""

from __future__ import annotations

import datetime as dt
import json
import os
import tempfile
from dataclasses import dataclass, field
from pathlib import Path


@dataclass(frozen=True)
class Run:
    recorded_at: str
    scores: dict[str, float]
    stamps: dict[str, str]
    rows: dict[str, list[int]] = field(default_factory=dict)  # row → [learners who passed it, learners graded on it]
    why: str = ""  # e.g. "regrade: <the educator's reason>"

    @property
    def mean(self) -> float:
        return sum(self.scores.values()) / len(self.scores) if self.scores else 0.0


@dataclass(frozen=True)
class Movement:
    """From the previous run to the latest: learners whose score went up, down or stayed; new and gone."""

    since: str
    up: int
    down: int
    same: int
    new: int
    gone: int
    mean_before: float
    mean_after: float
    changes: tuple[float, ...]  # the score changes of the learners in both runs
    went_up: tuple[str, ...] = ()
    went_down: tuple[str, ...] = ()
    rows_moved: tuple[tuple[str, int, int, int, int], ...] = ()  # (row, passed, graded) before, then after
    why: str = ""  # what the later run was, when known (a regrade and its reason)


def _load(path: Path) -> dict:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        return data if isinstance(data, dict) and isinstance(data.get("runs"), dict) else {"runs": {}}
    except (OSError, ValueError):
        return {"runs": {}}


def _rows(value) -> dict[str, list[int]]:
    if not isinstance(value, dict):
        return {}
    return {str(k): [int(v[0]), int(v[1])] for k, v in value.items() if isinstance(v, list) and len(v) == 2}


def record_run(path: Path, assignment: str, now: dict[str, tuple[float, str]],
               rows: dict[str, tuple[int, int]] | None = None, why: str = "") -> tuple[tuple[Run, ...], Movement | None]:
    """Add this gradebook's scores (and each row's passed and graded counts) as a run of ``assignment`` when
    they differ from the last run; every run, and the movement from the run before the latest to the latest
    (None with one run)."""
    data = _load(path)
    runs = [Run(r["recorded_at"], r["scores"], r.get("stamps", {}), _rows(r.get("rows")), str(r.get("why", "")))
            for r in data["runs"].get(assignment, []) if isinstance(r, dict) and isinstance(r.get("scores"), dict)]
    scores = {s: score for s, (score, _) in sorted(now.items())}
    stamps = {s: stamp for s, (_, stamp) in sorted(now.items())}
    counts = {r: [int(p), int(g)] for r, (p, g) in sorted((rows or {}).items())}
    if not runs or runs[-1].scores != scores or runs[-1].stamps != stamps or (counts and runs[-1].rows != counts):
        runs.append(Run(dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"), scores, stamps, counts, why))
        data["runs"][assignment] = [{"recorded_at": r.recorded_at, "scores": r.scores, "stamps": r.stamps,
                                     "rows": r.rows, **({"why": r.why} if r.why else {})} for r in runs]
        path.parent.mkdir(parents=True, exist_ok=True)
        handle, tmp = tempfile.mkstemp(dir=path.parent, prefix=".history-", suffix=".json")
        with os.fdopen(handle, "w", encoding="utf-8") as out:
            json.dump(data, out, indent=1)
        os.replace(tmp, path)
    return tuple(runs), movement(runs[-2], runs[-1]) if len(runs) > 1 else None


def movement(before: Run, after: Run) -> Movement:
    both = sorted(set(before.scores) & set(after.scores))
    changes = tuple(after.scores[s] - before.scores[s] for s in both)
    moved: list[tuple[str, int, int, int, int]] = []
    for row in sorted(set(before.rows) & set(after.rows)):
        (p1, g1), (p2, g2) = before.rows[row], after.rows[row]
        if p1 * g2 != p2 * g1:  # the pass rate moved
            moved.append((row, p1, g1, p2, g2))
    return Movement(before.recorded_at, sum(c > 0 for c in changes), sum(c < 0 for c in changes),
                    sum(c == 0 for c in changes), len(set(after.scores) - set(before.scores)),
                    len(set(before.scores) - set(after.scores)), before.mean, after.mean, changes,
                    tuple(s for s in both if after.scores[s] > before.scores[s]),
                    tuple(s for s in both if after.scores[s] < before.scores[s]), tuple(moved), after.why)
