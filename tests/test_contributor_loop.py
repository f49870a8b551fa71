"""The loop a contributor lives in: `make test-fast` needs only the Python environment, and
`make test-changed` picks the test modules a change touches (tests/changed.py)."""

from __future__ import annotations

import re
from pathlib import Path

from .changed import touched_tests
from .conftest import REPO


def prerequisites(target: str) -> list[str]:
    found = re.search(rf"^{re.escape(target)}:([^\n]*)$", (REPO / "Makefile").read_text(encoding="utf-8"), re.M)
    assert found, f"no {target} target in the Makefile"
    return found.group(1).split()


def test_make_test_fast_installs_nothing_beyond_the_python_environment():
    """The known-bad: test-fast depended on $(MERMAID), an npm install none of its tests used."""
    assert set(prerequisites("test-fast")) <= {"$(STAMP)", "bytecode"}
    assert set(prerequisites("test-changed")) <= {"$(STAMP)", "bytecode"}


def _planted(root: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text, encoding="utf-8")
    return root


def test_a_change_reaches_the_tests_through_deferred_imports_and_module_names_in_strings(tmp_path):
    repo = _planted(tmp_path, {
        "lucy_runtime/__init__.py": "", "tests/__init__.py": "",
        "lucy_runtime/low.py": "X = 1\n",
        "lucy_runtime/middle.py": "def later():\n    from . import low\n",  # deferred
        "lucy_runtime/runner.py": "COMMAND = ('python', '-m', 'lucy_runtime.low')\n",  # named, not imported
        "tests/test_uses_middle.py": "from lucy_runtime.middle import later\n",
        "tests/test_uses_runner.py": "from lucy_runtime import runner\n",
        "tests/test_reads_the_readme.py": "TEXT = open('README.md').read()\n",
        "tests/test_unrelated.py": "def test(): pass\n",
    })
    assert touched_tests(["lucy_runtime/low.py"], repo) == ["tests/test_uses_middle.py", "tests/test_uses_runner.py"]
    assert touched_tests(["README.md"], repo) == ["tests/test_reads_the_readme.py"]
    assert touched_tests(["tests/test_unrelated.py"], repo) == ["tests/test_unrelated.py"]
    assert len(touched_tests(["pyproject.toml"], repo)) == 4


def test_on_this_repository_a_change_to_the_patches_selects_their_test_and_not_the_clock_s():
    selected = touched_tests(["lucy_runtime/grading/patches.py"])
    assert "tests/test_patches.py" in selected and "tests/test_clock.py" not in selected
    assert "tests/test_course_streaming.py" in touched_tests(["lucy_runtime/grading/nbgrader_main.py"])
