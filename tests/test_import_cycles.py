"""No import cycle anywhere in lucy_runtime: its imports, deferred ones included, form a graph without loops."""

from __future__ import annotations

import ast
from pathlib import Path

from .conftest import REPO

PACKAGE = REPO / "lucy_runtime"


def module_name(path: Path) -> str:
    parts = path.relative_to(REPO).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def modules() -> dict[str, Path]:
    return {module_name(p): p for p in sorted(PACKAGE.rglob("*.py"))}


def imports_of(name: str, path: Path, known: set[str]) -> set[str]:
    """The lucy_runtime modules ``name`` imports, at the top or deferred inside a function.

    A deferred import that closes a loop is still a loop: it only moves the failure to
    whichever caller comes first. Importing ``a.b.c`` also loads the packages above it.
    """
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        targets = []
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join(anchor + ([node.module] if node.module else []))
            targets = [base] + [f"{base}.{alias.name}" for alias in node.names]
        for target in targets:
            parts = target.split(".")
            found |= {".".join(parts[:n]) for n in range(1, len(parts) + 1)} & known
    # The packages that hold ``name`` are loading already when it loads: no edge back to them.
    return {target for target in found if not (name == target or name.startswith(target + "."))}


# The loop left, deferred inside functions: the practice notebook's kill hooks (deferred) run
# checker.child, whose package loads the practice rows, which import the practice fakes beside
# the hooks. Moving the supervised-process engine (child, faults, series) out of the checker
# package, below practice/, explore/ and the checker, removes these edges; then delete them here.
ALLOWED = {("lucy_runtime.practice.kill", "lucy_runtime.checker"),
           ("lucy_runtime.practice.kill", "lucy_runtime.checker.child"),
           ("lucy_runtime.practice.kill", "lucy_runtime.checker.faults")}


def graph() -> dict[str, set[str]]:
    found = modules()
    return {name: imports_of(name, path, set(found)) - {b for a, b in ALLOWED if a == name}
            for name, path in found.items()}


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


def test_the_allowed_edges_still_exist():
    """An allowed edge that is gone must leave the list, so the list cannot hide a new loop."""
    found = modules()
    for importer, imported in ALLOWED:
        assert imported in imports_of(importer, found[importer], set(found)), (importer, imported)
