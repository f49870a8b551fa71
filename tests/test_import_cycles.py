"""No import cycle anywhere in lucy_runtime, and no import up the layers: its imports,
deferred ones included, form a graph without loops (found here) that runs one way (import-linter's
layers contract in pyproject.toml, checked by ``lint-imports``)."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from .conftest import REPO
from .imports import imports_of, module_name

PACKAGE = REPO / "lucy_runtime"


def modules() -> dict[str, Path]:
    return {module_name(p, REPO): p for p in sorted(PACKAGE.rglob("*.py"))}


def graph() -> dict[str, set[str]]:
    found = modules()
    return {name: imports_of(name, path, set(found)) for name, path in found.items()}


def cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    """Every strongly connected group of more than one module (Tarjan's algorithm)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    groups: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        for other in sorted(edges.get(node, ())):
            if other not in index:
                visit(other)
                low[node] = min(low[node], low[other])
            elif other in stack:
                low[node] = min(low[node], index[other])
        if low[node] == index[node]:
            group = []
            while True:
                member = stack.pop()
                group.append(member)
                if member == node:
                    break
            if len(group) > 1:
                groups.append(sorted(group))

    for node in sorted(edges):
        if node not in index:
            visit(node)
    return groups


def test_the_cycle_finder_finds_a_planted_cycle():
    planted = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}
    assert cycles(planted) == [["a", "b", "c"]]
    assert cycles({"a": {"b"}, "b": set()}) == []


def test_no_module_of_lucy_runtime_imports_itself_back():
    assert cycles(graph()) == []


def test_the_layer_check_reads_a_planted_deferred_import(tmp_path):
    planted = tmp_path / "lucy_runtime" / "transport.py"
    planted.parent.mkdir()
    planted.write_text("def send():\n    from .checker import kit\n", encoding="utf-8")
    known = {"lucy_runtime", "lucy_runtime.checker", "lucy_runtime.checker.kit"}
    assert imports_of("lucy_runtime.transport", planted, known) == {"lucy_runtime.checker", "lucy_runtime.checker.kit"}


LINT_IMPORTS = Path(sys.executable).parent / "lint-imports"


def lint_imports(root: Path) -> subprocess.CompletedProcess:
    """``lint-imports`` on the lucy_runtime folder under ``root``, with this repository's contract."""
    return subprocess.run([str(LINT_IMPORTS), "--no-cache", "--config", str(REPO / "pyproject.toml")], cwd=root,
                          capture_output=True, text=True, timeout=120)


def test_no_module_imports_a_layer_above_its_own():
    """The runtime knows nothing of the engine, the engine nothing of the checker, the checker
    nothing of grading, grading nothing of the educator's tools: no exceptions listed."""
    done = lint_imports(REPO)
    assert done.returncode == 0 and "1 kept, 0 broken" in done.stdout, done.stdout + done.stderr


@pytest.fixture
def copy_of_the_package(tmp_path: Path) -> Path:
    shutil.copytree(PACKAGE, tmp_path / "lucy_runtime", ignore=shutil.ignore_patterns("__pycache__"))
    return tmp_path


@pytest.mark.parametrize("planted, broken", [
    ("from .engine import child\n", "lucy_runtime.clock is not allowed to import lucy_runtime.engine"),
    ("def later():\n    from .educator import cli\n", "lucy_runtime.clock is not allowed to import lucy_runtime.educator"),
])
def test_the_layer_contract_breaks_on_a_planted_upward_import_deferred_or_not(copy_of_the_package, planted, broken):
    clock = copy_of_the_package / "lucy_runtime" / "clock.py"
    clock.write_text(clock.read_text(encoding="utf-8") + "\n\n" + planted, encoding="utf-8")
    done = lint_imports(copy_of_the_package)
    assert done.returncode != 0 and broken in done.stdout, done.stdout + done.stderr


def test_a_new_module_at_the_top_must_be_placed_in_a_layer(copy_of_the_package):
    (copy_of_the_package / "lucy_runtime" / "placed_nowhere.py").write_text("X = 1\n", encoding="utf-8")
    done = lint_imports(copy_of_the_package)
    assert done.returncode != 0 and "lucy_runtime.placed_nowhere" in done.stdout, done.stdout + done.stderr
