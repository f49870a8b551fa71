"""No private name crosses a package: a name with a leading underscore is imported only inside the
package that defines it (the modules at the top of lucy_runtime count as one package)."""

from __future__ import annotations

import ast
from pathlib import Path

from .conftest import REPO
from .imports import module_name

ALLOWED: set[tuple[str, str, str]] = set()


def package_of(module: str, root: Path) -> str:
    """``lucy_runtime.course`` for anything in it; ``lucy_runtime`` for the modules at the top."""
    parts = module.split(".")
    return ".".join(parts[:2]) if len(parts) > 1 and (root / "lucy_runtime" / parts[1]).is_dir() else parts[0]


def private_imports(root: Path) -> set[tuple[str, str, str]]:
    """(importer, imported module, name) for each private name imported from another package."""
    found = set()
    for path in sorted((root / "lucy_runtime").rglob("*.py")):
        name = module_name(path, root)
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if not isinstance(node, ast.ImportFrom):
                continue
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join(anchor + ([node.module] if node.module else []))
            if not base.startswith("lucy_runtime"):
                continue
            for alias in node.names:
                private = alias.name.startswith("_") and not alias.name.startswith("__")
                if private and package_of(base, root) != package_of(name, root):
                    found.add((name, base, alias.name))
    return found


def test_no_private_name_is_imported_from_another_package():
    assert private_imports(REPO) == ALLOWED


def test_a_planted_private_import_across_packages_is_found(tmp_path):
    planted = tmp_path / "lucy_runtime" / "grading" / "planted.py"
    planted.parent.mkdir(parents=True)
    (tmp_path / "lucy_runtime" / "course").mkdir()
    planted.write_text("from ..course.course import _env\nfrom .sandbox import _inside\n", encoding="utf-8")
    assert private_imports(tmp_path) == {("lucy_runtime.grading.planted", "lucy_runtime.course.course", "_env")}
