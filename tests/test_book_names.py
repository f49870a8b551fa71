"""Every row, function, command, module and file the book names exists; every row is in the book."""

from __future__ import annotations

import ast
import builtins
import importlib
import re
from pathlib import Path

import pytest

from lucy_runtime.checker import select_rows
from lucy_runtime.checker.rows import ROWS
from lucy_runtime.cli.main import subcommands
from lucy_runtime.educator.alternatives import ALTERNATIVES
from lucy_runtime.educator.cases import CASES
from lucy_runtime.proof.tampers import TAMPERS
from lucy_runtime.books.solutions import source_notebooks
from lucy_runtime.notebooks.notebook import read

from .conftest import REPO

BOOK = sorted((REPO / "chapters").rglob("*.md"))
INLINE = re.compile(r"(?<!`)`([^`\n]+)`(?!`)")
LINK = re.compile(r"\]\(([^)#\s]+)(?:#[^)]*)?\)")
KEBAB = re.compile(r"^[a-z]+(?:-[a-z]+)+$")
CALL = re.compile(r"^([A-Za-z_][\w.]*)\(")
PATHLIKE = re.compile(r"^[\w.-]+(?:/[\w.-]+)+/?$|^[\w-]+\.(?:py|md|ipynb|json|csv|toml|txt)$")
# Folders that exist only after a run (nbgrader's, the build's): a path in them is an example.
MADE_AT_RUN_TIME = ("submitted/", "autograded/", "feedback/", "build/", "artifacts/", "checkpoints/records", "reports/",
                    "grades.csv", "gradebook.db")
AWAITING_MERGE: set[str] = set()  # files the book names before the branch that builds them is merged
OTHER_NAMES = {"lucy-ch07", "lucy-grader", "jupyter-book"}  # the course id, the grading user, a tool


def _make_targets() -> set[str]:
    return set(re.findall(r"^([a-z][\w-]*):", (REPO / "Makefile").read_text(), re.M))


def _defined_names() -> set[str]:
    names = set(dir(builtins))
    for path in (REPO / "lucy_runtime").rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, (ast.FunctionDef, ast.ClassDef, ast.AsyncFunctionDef)):
                names.add(node.name)
    for notebook in source_notebooks(REPO / "source"):
        for cell in read(notebook).cells:
            if cell.cell_type == "code":
                names.update(re.findall(r"^def (\w+)", cell.source, re.M))
    return names


def _resolves(dotted: str) -> bool:
    parts = dotted.split(".")
    for cut in range(len(parts), 0, -1):
        try:
            thing = importlib.import_module(".".join(parts[:cut]))
        except ImportError:
            continue
        try:
            for attribute in parts[cut:]:
                thing = getattr(thing, attribute)
        except AttributeError:
            return False
        return True
    return False


def _sqlite_method(name: str) -> bool:
    import sqlite3

    return hasattr(sqlite3.Cursor, name) or hasattr(sqlite3.Connection, name)


class Known:
    def __init__(self):
        self.rows = set(ROWS)
        from lucy_runtime.educator.practice_cases import PRACTICE_ALTERNATIVES, PRACTICE_CASES

        self.kebab = (self.rows | {c.name for c in CASES + PRACTICE_CASES + PRACTICE_ALTERNATIVES}
                      | {a.name for a in ALTERNATIVES}
                      | {t.name for t in TAMPERS} | subcommands() | _make_targets() | OTHER_NAMES)
        self.functions = _defined_names()
        self.subcommands = subcommands()
        self.targets = _make_targets()


def problems_in(text: str, folder: Path, known: Known) -> list[str]:
    """What one Markdown text names that does not exist (folder: where its links start)."""
    found = []
    code_free = re.sub(r"^```.*?^```", "", text, flags=re.S | re.M)
    shell = "\n".join(re.findall(r"^```sh\n(.*?)^```", text, re.S | re.M))
    for token in INLINE.findall(code_free) + shell.splitlines():
        token = token.strip()
        if KEBAB.match(token) and token not in known.kebab:
            found.append(f"`{token}` is no row, educator case, alternative, tamper, command or make target")
        words = token.split()
        if len(words) >= 2 and words[0] in ("lucy", ".venv/bin/lucy") and words[1] not in known.subcommands:
            found.append(f"`{token}`: lucy has no command {words[1]!r}")
        if len(words) >= 2 and words[0] == "make" and words[1] not in known.targets:
            found.append(f"`{token}`: the Makefile has no target {words[1]!r}")
        call = CALL.match(token)
        if call:
            name = call.group(1)
            if name.startswith("lucy_runtime.") or name.split(".")[0] in ("os", "sys", "sqlite3"):
                if not _resolves(name):
                    found.append(f"`{token}`: {name} does not exist")
            elif name.isupper():
                pass  # SQL: COUNT(*), MAX(...)
            elif name.split(".")[-1] not in known.functions and not _sqlite_method(name.split(".")[-1]):
                found.append(f"`{token}`: no function {name.split('.')[-1]!r} in lucy_runtime or source/")
            argument = re.match(r'^(?:check|grade|select_rows)\("([^"<]+)"', token)
            if argument:
                try:
                    select_rows(argument.group(1))
                except KeyError:
                    found.append(f"`{token}`: no row or topic {argument.group(1)!r}")
        elif token.startswith("lucy_runtime.") and " " not in token and not _resolves(token):
            found.append(f"`{token}` cannot be imported")
        elif PATHLIKE.match(token) and not token.startswith(MADE_AT_RUN_TIME) and token not in AWAITING_MERGE:
            if not (REPO / token).exists():
                found.append(f"`{token}`: no such file in the repository")
    for target in LINK.findall(code_free):
        if "://" in target:
            continue
        resolved = (folder / target).resolve()
        relative = resolved.relative_to(REPO) if resolved.is_relative_to(REPO) else resolved
        if not resolved.exists() and str(relative) not in AWAITING_MERGE:
            found.append(f"link ({target}): no such file")
    return found


@pytest.fixture(scope="module")
def known() -> Known:
    return Known()


@pytest.mark.parametrize("doc", BOOK, ids=lambda p: str(p.relative_to(REPO)))
def test_everything_the_book_names_exists(doc, known):
    assert problems_in(doc.read_text(encoding="utf-8"), doc.parent, known) == []


def unmentioned_rows(text: str) -> list[str]:
    return [row for row in ROWS if f"`{row}`" not in text]


def test_every_row_is_mentioned_in_the_book():
    missing = unmentioned_rows("\n".join(doc.read_text(encoding="utf-8") for doc in BOOK))
    assert missing == [], f"rows the book never mentions: {missing}"


def test_a_book_that_leaves_a_row_out_is_caught():
    text = "\n".join(doc.read_text(encoding="utf-8") for doc in BOOK).replace("`model-based`", "the model check")
    assert unmentioned_rows(text) == ["model-based"]


def test_a_book_that_names_what_does_not_exist_is_caught(known):
    bad = """
The row `finish-twice-atomic` holds. Call `finish_all(queue)` and `lucy_runtime.work.Outbox`.
Run `lucy publish-book`, then `make website`, then `check("no-such-topic")`.
See `chapters/ch07/appendix.md` and [the lab](../../source/ch07_lab/ch07_lab.ipynb). `os._quit(1)`.
"""
    found = "\n".join(problems_in(bad, REPO / "chapters" / "ch07", known))
    for name in ("finish-twice-atomic", "finish_all", "lucy_runtime.work.Outbox", "publish-book", "website",
                 "no-such-topic", "chapters/ch07/appendix.md", "ch07_lab", "os._quit"):
        assert name in found, name


def test_a_good_book_text_raises_nothing(known):
    good = ("The row `finish-atomic`, the case `noop-finish`, `finish(queue, assignment, result)`, "
            "`lucy checkpoint ch07 FOLDER`, `make book`, `check(\"delivery\")`, `lucy_runtime.store.Store`, "
            "`os._exit(77)`, `submitted/ada/ch07_unit_a/ch07_unit_a.ipynb`, [Unit A](../../source/ch07_unit_a/ch07_unit_a.ipynb)")
    assert problems_in(good, REPO / "chapters" / "ch07", known) == []
