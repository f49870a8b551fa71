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


@pytest.fixture(scope="session")
def checker():
    """One small checker process per test worker (lucy_runtime/checker/process.py): the rows' many
    children fork from it rather than from this worker, which costs several times more per fork."""
    from lucy_runtime.checker.process import CheckerProcess

    with CheckerProcess() as process:
        yield process


@pytest.fixture
def store(tmp_path: Path) -> Store:
    with Store(tmp_path / "lucy.sqlite3") as opened:
        yield opened


# The order modules start in. With `--dist loadfile` each module runs whole on one worker, and a
# long module that starts last leaves the other worker idle at the end; pytest-xdist's own
# reordering counts tests, not seconds, so the Makefile turns it off (--no-loadscope-reorder).
# The verify (test_grader_nbgrader) takes one worker for about 6 minutes and grades in two
# nbgrader processes of its own, so the cores stay busy whatever the other worker does: the
# modules that spend their time waiting (on a browser, JupyterLab, PostgreSQL, a time limit) go
# beside it. After it, both workers run modules that keep a core busy, longest first. In a run
# with the waiting modules after the verify, the cores were 15% idle for its last 4 minutes
# (`vmstat`, 2026-12-01).
BESIDE_THE_VERIFY = ("test_readme_educator", "test_parallel_autograde", "test_browser", "test_book_site")
LONGEST_FIRST = ("test_grader_nbgrader", *BESIDE_THE_VERIFY, "test_alternatives", "test_grader_self_checks",
                 "test_checkpoint", "test_grading_isolation", "test_failed_release_changes_nothing", "test_rows",
                 "test_cli", "test_crash_injection", "test_mutation", "test_code_health", "test_educator_cycle",
                 "test_docs", "test_telegram", "test_gradebook", "test_checker_behaviour", "test_notebooks")


def pytest_collection_modifyitems(items):
    rank = {name: i for i, name in enumerate(LONGEST_FIRST)}
    items.sort(key=lambda item: rank.get(Path(item.nodeid.split("::")[0]).stem, len(rank)))
