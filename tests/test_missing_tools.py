"""A test that needs bubblewrap, chromium, PostgreSQL or root fails under CI when it is missing,
and only elsewhere is skipped: a CI machine without the tool cannot stay green."""

from __future__ import annotations

import ast

import pytest

from .conftest import REPO, need


def test_a_missing_tool_fails_the_test_under_ci(monkeypatch):
    monkeypatch.setenv("CI", "true")
    with pytest.raises(pytest.fail.Exception, match="chromium is missing: apt-get install -y chromium"):
        need("chromium", False, "apt-get install -y chromium")


@pytest.mark.parametrize("value", ["", "0", "false"])
def test_a_missing_tool_skips_the_test_outside_ci_and_says_what_installs_it(monkeypatch, value):
    monkeypatch.setenv("CI", value)
    with pytest.raises(pytest.skip.Exception, match="PostgreSQL is missing: `make test` installs it"):
        need("PostgreSQL", False, "`make test` installs it")


def test_a_present_tool_lets_the_test_go_on_under_ci_or_not(monkeypatch):
    for value in ("true", ""):
        monkeypatch.setenv("CI", value)
        assert need("bubblewrap's grading sandbox", True, "apt-get install -y bubblewrap") is None


def skips_outside_need() -> list[str]:
    """Every pytest.skip, skipif or importorskip in tests/ but need()'s own (and this module's checks of it)."""
    found = []
    for path in sorted((REPO / "tests").glob("*.py")):
        if path.name == "test_missing_tools.py":
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Attribute) and node.attr in ("skip", "skipif", "importorskip"):
                found.append(f"{path.name}:{node.lineno} {node.attr}")
    assert len([f for f in found if f.startswith("conftest.py:")]) == 1, found  # need()'s own
    return [f for f in found if not f.startswith("conftest.py:")]


def test_no_test_skips_for_a_missing_tool_except_through_need():
    """The known-bad this replaced: `if not box.isolated: pytest.skip(...)` stayed green on a CI without bubblewrap."""
    assert skips_outside_need() == []
