from __future__ import annotations

import os
import tempfile
from pathlib import Path

import pytest

from lucy_runtime.notebooks.cells import grade_id, is_definitions, is_learner_cell
from lucy_runtime.checker import SourceLearner
from lucy_runtime.educator.cases import Case
from lucy_runtime.proof.verify import apply_edits
from lucy_runtime.notebooks.notebook import graded_cells, learner_implementation, plain_cells
from lucy_runtime.store import Store

REPO = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="session")
def reference_cells() -> list[tuple[str, str]]:
    """The reference, taken from the solution cells of source/ (its only copy)."""
    return learner_implementation(REPO / "source")


def with_case(cells: list[tuple[str, str]], case: Case) -> list[tuple[str, str]]:
    """``cells`` with ``case``'s edits, taken as the sealed verdict takes a handed-in notebook's cells:
    each unit's source notebook with the edited learner cells in it, read by ``graded_cells``, so
    the definitions of unmarked cells (``definitions-N``) are the ones the edited cells use."""
    sources = dict(cells)
    changed = []
    for unit in dict.fromkeys(name.split(":", 1)[0] for name in sources):
        notebook = plain_cells(REPO / "source" / unit / f"{unit}.ipynb")
        for cell in notebook:
            name = f"{unit}:{grade_id(cell)}"
            if is_learner_cell(cell) and name in sources:
                cell["source"] = apply_edits(case, grade_id(cell), sources.pop(name))
        changed += [(f"{c.unit}:{c.grade_id}", c.source) for c in graded_cells(notebook, unit)]
    assert all(is_definitions(name.split(":", 1)[1]) for name in sources), f"not in source/: {sorted(sources)}"
    return changed


def temporary_folder_at(patch: pytest.MonkeyPatch, folder: Path) -> Path:
    """This process and every process it starts from now on make their temporary files in ``folder``
    (a test that something leaves nothing behind then looks there, not in the shared /tmp)."""
    patch.setenv("TMPDIR", str(folder))
    patch.setattr(tempfile, "tempdir", str(folder))
    return folder


def learner_with(cells: list[tuple[str, str]], case: Case | None = None) -> SourceLearner:
    return SourceLearner(with_case(cells, case) if case else cells)


def in_ci() -> bool:
    """CI machines set CI (to true, or 1)."""
    return os.environ.get("CI", "").strip().lower() not in ("", "0", "false", "no")


def need(tool: str, present: bool, install: str) -> None:
    """Go on only where ``tool`` is present (bubblewrap's sandbox, chromium, PostgreSQL, root).

    Missing, the test fails under CI, so a machine without the tool cannot stay green with the
    proof left out; elsewhere (``make test-fast`` on a laptop) it is skipped, saying ``install``.
    """
    if present:
        return
    message = f"{tool} is missing: {install}"
    if in_ci():
        pytest.fail(f"{message} (CI is set, so a missing tool fails the test instead of skipping it)")
    pytest.skip(message)


def need_sandbox(box, *, drops_user: bool = False) -> None:
    """``need`` for the grading sandbox ``box`` (``sandbox.detect()``), with a grader user if asked."""
    need("bubblewrap's grading sandbox" + (" with a grader user" if drops_user else ""),
         box.drops_user if drops_user else box.isolated,
         f"{box.reason or box.mode}; `make test` installs bubblewrap (as root: apt-get install -y bubblewrap)")


@pytest.fixture(scope="session")
def checker():
    """One small checker process per test worker (lucy_runtime/grading/process.py): the rows' many
    children fork from it rather than from this worker, which costs several times more per fork."""
    from lucy_runtime.grading.process import CheckerProcess

    with CheckerProcess() as process:
        yield process


@pytest.fixture
def store(tmp_path: Path) -> Store:
    with Store(tmp_path / "lucy.sqlite3") as opened:
        yield opened


# Longest first. With `--dist loadfile` each module runs whole on one worker, and a long
# module that starts last leaves the other worker idle at the end. These modules took the
# longest in a `--durations` run (2026-12-01); pytest-xdist's own reordering counts tests,
# not seconds, so the Makefile turns it off (--no-loadscope-reorder) and this order holds.
# Starting the modules that mostly wait (browser, JupyterLab, PostgreSQL) beside the verify
# instead was tried (2026-12-01): the verify then took 426 s instead of about 380, and the
# fresh clone 11:01 against 10:27 and 10:35 in this order.
LONGEST_FIRST = ("test_grader_nbgrader", "test_hostile_class", "test_readme_educator", "test_hub_class", "test_alternatives",
                 "test_hub_browser", "test_private_exchange",
                 "test_parallel_autograde", "test_regrade",
                 "test_class_report", "test_cluster_grading", "test_grader_self_checks", "test_checkpoint",
                 "test_grading_isolation", "test_book_site", "test_failed_release_changes_nothing", "test_browser",
                 "test_browser_safety", "test_rows", "test_cli", "test_crash_injection", "test_educator_cycle",
                 "test_code_health", "test_mutation", "test_runs_from_nothing")


def pytest_collection_modifyitems(items):
    rank = {name: i for i, name in enumerate(LONGEST_FIRST)}
    items.sort(key=lambda item: rank.get(Path(item.nodeid.split("::")[0]).stem, len(rank)))
