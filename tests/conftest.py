from __future__ import annotations

from pathlib import Path

import pytest

from lucy_runtime.checker import SourceLearner
from lucy_runtime.educator.cases import Case
from lucy_runtime.notebook import learner_implementation
from lucy_runtime.store import Store

REPO = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="session")
def reference_cells() -> list[tuple[str, str]]:
    """The reference, taken from the solution cells of source/ (its only copy)."""
    return learner_implementation(REPO / "source")


def with_case(cells: list[tuple[str, str]], case: Case) -> list[tuple[str, str]]:
    changed = []
    for name, source in cells:
        grade_id = name.split(":", 1)[1]
        for edit in case.edits:
            if edit.cell == grade_id:
                source = edit.apply(source)
        changed.append((name, source))
    return changed


def learner_with(cells: list[tuple[str, str]], case: Case | None = None) -> SourceLearner:
    return SourceLearner(with_case(cells, case) if case else cells)


@pytest.fixture
def store(tmp_path: Path) -> Store:
    with Store(tmp_path / "lucy.sqlite3") as opened:
        yield opened
