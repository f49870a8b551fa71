"""Which modules of this repository a Python file imports, read from its source (no import runs).

Light on purpose: ``tests/changed.py`` uses it before pytest starts.
"""

from __future__ import annotations

import ast
from pathlib import Path


def module_name(path: Path, root: Path) -> str:
    parts = path.relative_to(root).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


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
