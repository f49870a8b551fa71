"""Docs are code: every Python block in chapters/ runs, in order, per file."""

from __future__ import annotations

import re

import pytest

from .conftest import REPO

DOCS = sorted((REPO / "chapters").rglob("*.md"))
BLOCK = re.compile(r"^```python\n(.*?)^```", re.S | re.M)


def test_there_are_docs_with_code():
    assert any(BLOCK.search(p.read_text()) for p in DOCS)


@pytest.mark.parametrize("doc", DOCS, ids=lambda p: str(p.relative_to(REPO)))
def test_every_python_block_runs(doc, monkeypatch):
    monkeypatch.chdir(REPO)
    namespace: dict = {"__name__": "__doc__"}
    for number, block in enumerate(BLOCK.findall(doc.read_text()), start=1):
        try:
            exec(compile(block, f"{doc.name} block {number}", "exec"), namespace)
        except Exception as exc:  # pragma: no cover - the message is the point
            pytest.fail(f"{doc.name}, block {number} raised {type(exc).__name__}: {exc}")
