"""No import cycle anywhere in lucy_runtime, and no import up the layers: its imports,
deferred ones included, form a graph without loops that runs one way (``LAYERS``)."""

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


LAYERS = (
    ("runtime", ("lucy_runtime",)),
    ("fakes", ("lucy_runtime.fakes",)),
    ("engine", ("lucy_runtime.engine",)),
    ("learner tools", ("lucy_runtime.practice", "lucy_runtime.explore")),
    ("checker", ("lucy_runtime.checker",)),
    ("grading", ("lucy_runtime.grading",)),
    ("educator", ("lucy_runtime.educator",)),
)
"""Lowest first. A module may import its own layer and the layers below it, never one above.
The runtime is every module at the top of ``lucy_runtime``: what a learner imports."""


def layer(name: str) -> int:
    """The layer of a module: the one whose package holds it most closely."""
    best, depth = 0, -1
    for rank, (_, packages) in enumerate(LAYERS):
        for package in packages:
            if (name == package or name.startswith(package + ".")) and package.count(".") > depth:
                best, depth = rank, package.count(".")
    return best


def graph() -> dict[str, set[str]]:
    found = modules()
    return {name: imports_of(name, path, set(found)) for name, path in found.items()}


def upward(edges: dict[str, set[str]]) -> list[str]:
    """Every import of a module in a higher layer, as 'importer (layer) -> imported (layer)'."""
    return [f"{a} ({LAYERS[layer(a)][0]}) -> {b} ({LAYERS[layer(b)][0]})"
            for a in sorted(edges) for b in sorted(edges[a]) if layer(b) > layer(a)]


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


def test_every_module_has_a_layer_of_its_package():
    assert layer("lucy_runtime.store") == 0 and layer("lucy_runtime.engine.child") == 2
    assert layer("lucy_runtime.checker.topics.sweep") == 4 and layer("lucy_runtime.educator.cli") == 6
    assert {LAYERS[layer(name)][0] for name in modules()} == {name for name, _ in LAYERS}


def test_the_layer_check_finds_a_planted_upward_import():
    edges = graph()
    edges["lucy_runtime.telegram"] = edges["lucy_runtime.telegram"] | {"lucy_runtime.engine.child"}
    edges["lucy_runtime.engine.child"] = edges["lucy_runtime.engine.child"] | {"lucy_runtime.grading.sandbox"}
    assert upward(edges) == ["lucy_runtime.engine.child (engine) -> lucy_runtime.grading.sandbox (grading)",
                             "lucy_runtime.telegram (runtime) -> lucy_runtime.engine.child (engine)"]


def test_the_layer_check_reads_a_planted_deferred_import(tmp_path):
    planted = tmp_path / "lucy_runtime" / "transport.py"
    planted.parent.mkdir()
    planted.write_text("def send():\n    from .checker import kit\n", encoding="utf-8")
    known = {"lucy_runtime", "lucy_runtime.checker", "lucy_runtime.checker.kit"}
    assert imports_of("lucy_runtime.transport", planted, known) == {"lucy_runtime.checker", "lucy_runtime.checker.kit"}


def test_no_module_imports_a_layer_above_its_own():
    """The runtime knows nothing of the engine, the engine nothing of the checker, the checker
    nothing of grading, grading nothing of the educator's tools: no exceptions listed."""
    assert upward(graph()) == []
