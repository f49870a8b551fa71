"""Each educator case's signature: the set of rows it fails, as the checker sees it.

A case's ``expected`` rows are the ones that *must* catch it; a case usually fails
more (``noop-finish`` loses every row that needs a working ``finish``). The class
report matches each learner's failing rows against the whole set, so the set is
measured, not written down: the rows of the case's unit run against the reference
cells of ``source/`` with the case's edits, as the sealed verdict runs a handed-in
notebook. That takes about 2 s a case, so the sets are kept in
``educator/case_signatures.json`` (beside the cases), with a fingerprint of what they were
measured from (the cases, the reference cells, the rows' ids and code in
``checker/rows.py`` and ``checker/topics/``). ``lucy report --refresh-cases`` measures
them again; a report made from a stale file says so, and so does a test.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from pathlib import Path

from ..notebooks.cells import grade_id, is_learner_cell
from ..checker.rows import ROWS
from ..course.course import REPO
from ..notebooks.notebook import graded_cells, learner_implementation, plain_cells
from .progress import Progress
from ..notebooks.units import UNIT_NOTEBOOKS, UNITS
from ..educator.cases import CASES, Case
from ..educator.practice_cases import PRACTICE_CASES
from .verify import apply_edits

SIGNATURES = Path(__file__).resolve().parent.parent / "educator" / "case_signatures.json"


@dataclass(frozen=True)
class Signatures:
    """case name → the rows it fails; ``fingerprint`` names what they were measured from."""

    failing: dict[str, frozenset[str]]
    fingerprint: str

    @property
    def stale(self) -> bool:
        """The cases, the reference or the rows changed since the sets were measured."""
        return self.fingerprint != fingerprint()

    def to_json(self) -> str:
        return json.dumps({"fingerprint": self.fingerprint,
                           "cases": {name: sorted(rows) for name, rows in sorted(self.failing.items())}}, indent=1)


def unit_rows(unit: str) -> list[str]:
    """The acceptance rows that grade ``unit``'s notebook, in the order the rows are listed."""
    return [row.id for row in ROWS.values() if UNIT_NOTEBOOKS[row.unit] == unit]


def fingerprint(repo: Path = REPO) -> str:
    """A digest of the cases, the reference cells in ``source/`` and the rows (their ids and their code)."""
    digest = hashlib.sha256()
    for case in CASES + PRACTICE_CASES:
        digest.update(repr(case).encode())
    for name, source in learner_implementation(repo / "source"):
        digest.update(f"{name}\n{source}\n".encode())
    digest.update(" ".join(ROWS).encode())
    checker = Path(__file__).resolve().parent.parent / "checker"
    for code in [checker / "rows.py", *sorted((checker / "topics").glob("*.py"))]:
        digest.update(code.read_bytes())
    return digest.hexdigest()[:16]


def case_cells(case: Case, repo: Path = REPO) -> list[tuple[str, str]]:
    """The reference learner cells of every unit with ``case``'s edits, as the sealed verdict reads a notebook."""
    cells = []
    for unit in UNITS:
        path = repo / "source" / unit / f"{unit}.ipynb"
        if not path.exists():
            continue
        notebook = plain_cells(path)
        for cell in notebook:
            if is_learner_cell(cell):
                cell["source"] = apply_edits(case, grade_id(cell), cell["source"])
        cells += [(f"{c.unit}:{c.grade_id}", c.source) for c in graded_cells(notebook, unit)]
    return cells


def measure(cases: tuple[Case, ...] = CASES + PRACTICE_CASES, *, repo: Path = REPO,
            progress: Progress | None = None) -> Signatures:
    """Run each case's unit rows against the reference with the case applied (one checker process)."""
    from ..checker import SourceLearner  # noqa: PLC0415 - the checker is needed only to measure
    from ..grading.process import CheckerProcess  # noqa: PLC0415

    failing = {}
    with CheckerProcess() as checker:
        for done, case in enumerate(cases, 1):
            if progress:
                progress.update(done, len(cases), case.name)
            rows = [ROWS[r] for r in unit_rows(case.unit)]
            report = checker.run_rows(SourceLearner(case_cells(case, repo)), rows, seed=7)
            failing[case.name] = frozenset(r.row_id for r in report.results if not r.passed)
    return Signatures(failing, fingerprint(repo))


def load(path: Path = SIGNATURES) -> Signatures | None:
    """The measured sets, or None when there is no readable file."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        return Signatures({name: frozenset(rows) for name, rows in data["cases"].items()}, str(data["fingerprint"]))
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return None


def save(signatures: Signatures, path: Path = SIGNATURES) -> Path:
    path.write_text(signatures.to_json() + "\n", encoding="utf-8")
    return path
