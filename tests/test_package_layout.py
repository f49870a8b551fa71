"""Every package of lucy_runtime says what it is, in one sentence, and the README's contributor table says the same."""

from __future__ import annotations

import ast
import re

import pytest

from .conftest import REPO

PACKAGES = sorted(p.parent.name for p in (REPO / "lucy_runtime").glob("*/__init__.py"))


def first_sentence(package: str) -> str:
    doc = ast.get_docstring(ast.parse((REPO / "lucy_runtime" / package / "__init__.py").read_text(encoding="utf-8")))
    assert doc, f"lucy_runtime/{package}/__init__.py has no docstring"
    paragraph = " ".join(doc.split("\n\n")[0].split()).replace("``", "`")
    return re.split(r"(?<=\.)\s", paragraph)[0]


def contributor_section() -> str:
    text = (REPO / "README.md").read_text(encoding="utf-8")
    return " ".join(text[text.index("## For contributors"):].split())


def test_the_packages_are_the_layers():
    assert PACKAGES == ["bench", "books", "checker", "cli", "course", "educator", "engine", "explore", "fakes", "grading", "hub",
                        "notebooks", "practice", "proof", "report"]


@pytest.mark.parametrize("package", PACKAGES)
def test_the_readme_says_what_each_package_is_as_its_docstring_does(package):
    sentence = first_sentence(package)
    assert f"| `lucy_runtime/{package}/` | {sentence}" in contributor_section(), sentence
