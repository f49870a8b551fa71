"""No definition in lucy_runtime that nothing names: every function, class and method is named
somewhere besides its own definition (code, tests, the config, notebooks' Markdown, the book)."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import jupyter_server.extension.manager
import nbgrader.exchange.abc

from .conftest import REPO

HOOKS = re.compile(r"^_[a-z]+(_[a-z]+)*_$|^__\w+__$")
"""Names a framework calls: IPython's ``_ipython_display_``, ``_repr_html_``; Python's dunders."""


FRAMEWORKS = (Path(nbgrader.exchange.abc.__file__).parent, Path(jupyter_server.extension.manager.__file__).parent)
"""Code that calls our overrides and hooks by name: nbgrader's exchange (``init_src``, ``ensure_root``),
jupyter_server's extension loader (``_load_jupyter_server_extension``)."""


def texts() -> dict[Path, str]:
    frameworks = [p for f in FRAMEWORKS for p in ([f] if f.is_file() else sorted(f.glob("*.py")))]
    paths = [*frameworks, *REPO.glob("lucy_runtime/**/*.py"), *REPO.glob("tests/*.py"), REPO / "nbgrader_config.py",
             REPO / "pyproject.toml", REPO / "Makefile", *REPO.glob("source/*/*.md"), *REPO.glob("chapters/**/*.md")]
    return {p: p.read_text(encoding="utf-8", errors="replace") for p in paths}


def unnamed_definitions(found: dict[Path, str]) -> list[str]:
    """Functions, classes and methods of lucy_runtime whose name appears nowhere but at their definition."""
    counts: dict[str, int] = {}
    for text in found.values():
        for word in re.findall(r"\w+", text):
            counts[word] = counts.get(word, 0) + 1
    unnamed = []
    for path, text in found.items():
        if "lucy_runtime" not in path.parts or path.suffix != ".py":
            continue
        for node in ast.walk(ast.parse(text)):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and not node.decorator_list:
                if counts.get(node.name, 0) <= 1 and not HOOKS.match(node.name):
                    unnamed.append(f"{path.relative_to(REPO)}:{node.lineno} {node.name}")
    return unnamed


def test_every_definition_is_named_somewhere_else():
    assert unnamed_definitions(texts()) == []


def test_a_planted_definition_nothing_calls_is_found():
    planted = {REPO / "lucy_runtime" / "planted.py": "def used():\n    pass\n\n\ndef never_called_anywhere():\n    used()\n"}
    assert unnamed_definitions(planted) == ["lucy_runtime/planted.py:5 never_called_anywhere"]
