"""Every package of lucy_runtime says what it is, in one sentence, and the README's contributor table says the same;
every fake (a class named Fake… or Scripted…) is defined in `lucy_runtime/fakes/`, beside no real code."""

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


FAKE_NAME = re.compile(r"^(Fake|Scripted)[A-Z]")


def fakes_outside_the_fakes_package(root) -> list[str]:
    """Every class named Fake… or Scripted… defined in lucy_runtime outside ``lucy_runtime/fakes/``."""
    found = []
    for path in sorted((root / "lucy_runtime").rglob("*.py")):
        if path.parent.name == "fakes" and path.parent.parent.name == "lucy_runtime":
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ClassDef) and FAKE_NAME.match(node.name):
                found.append(f"{path.relative_to(root)}: {node.name}")
    return found


def test_every_fake_is_in_the_fakes_package():
    assert fakes_outside_the_fakes_package(REPO) == []


def test_a_fake_planted_beside_the_real_code_is_found(tmp_path):
    (tmp_path / "lucy_runtime" / "fakes").mkdir(parents=True)
    (tmp_path / "lucy_runtime" / "fakes" / "service.py").write_text("class FakeService:\n    pass\n", encoding="utf-8")
    (tmp_path / "lucy_runtime" / "model.py").write_text("def build():\n    class ScriptedModel:\n        pass\n",
                                                       encoding="utf-8")
    assert fakes_outside_the_fakes_package(tmp_path) == ["lucy_runtime/model.py: ScriptedModel"]
