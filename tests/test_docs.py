"""Docs are code: every Python block in chapters/ runs, in order, per file, and a ```text
block right after a Python block is what that block prints."""

from __future__ import annotations

import contextlib
import io
import re

import pytest

from .conftest import REPO, temporary_folder_at

DOCS = sorted((REPO / "chapters").rglob("*.md"))
BLOCK = re.compile(r"^```python\n(.*?)^```", re.S | re.M)
FENCE = re.compile(r"^```(\w*)\n(.*?)^```", re.S | re.M)


def blocks_with_output(text: str) -> list[tuple[str, str | None]]:
    """Each Python block, with the ```text block that follows it as the next fenced block (or None)."""
    fences = [(m.group(1), m.group(2)) for m in FENCE.finditer(text)]
    return [(body, fences[i + 1][1] if i + 1 < len(fences) and fences[i + 1][0] == "text" else None)
            for i, (language, body) in enumerate(fences) if language == "python"]


def run_doc(name: str, text: str) -> list[str]:
    """Run every block; the problems found (a block that raised, an output unlike its printed text)."""
    namespace: dict = {"__name__": "__doc__"}
    problems = []
    for number, (block, shown) in enumerate(blocks_with_output(text), start=1):
        printed = io.StringIO()
        try:
            with contextlib.redirect_stdout(printed):
                exec(compile(block, f"{name} block {number}", "exec"), namespace)
        except Exception as exc:  # pragma: no cover - the message is the point
            problems.append(f"{name}, block {number} raised {type(exc).__name__}: {exc}")
            break
        print(printed.getvalue(), end="")
        if shown is not None and printed.getvalue().strip() != shown.strip():
            problems.append(f"{name}, block {number} printed\n{printed.getvalue()}\nbut the text below it shows\n{shown}")
    return problems


def test_there_are_docs_with_code():
    assert any(BLOCK.search(p.read_text()) for p in DOCS)


@pytest.mark.parametrize("doc", DOCS, ids=lambda p: str(p.relative_to(REPO)))
def test_every_python_block_runs_and_prints_what_the_doc_shows(doc, monkeypatch, tmp_path):
    monkeypatch.chdir(REPO)
    temporary_folder_at(monkeypatch, tmp_path)  # the blocks' tempfile.mkdtemp() folders go with the test's
    problems = run_doc(doc.name, doc.read_text())
    if problems:
        pytest.fail("\n".join(problems))


def test_a_doc_whose_shown_output_is_not_what_its_code_prints_is_caught():
    doc = "```python\nprint(1 + 1)\n```\n\nIt prints:\n\n```text\n3\n```\n"
    assert run_doc("bad.md", doc) and not run_doc("good.md", doc.replace("3\n", "2\n"))
