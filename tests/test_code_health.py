"""ruff and mypy pass on lucy_runtime, with the settings in pyproject.toml."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from .conftest import REPO


def tool(name: str) -> str:
    beside = Path(sys.executable).with_name(name)
    found = str(beside) if beside.exists() else shutil.which(name)
    if found is None:
        pytest.fail(f"{name} is not installed: pip install -e '.[dev]'")
    return found


def run(*argv: str) -> subprocess.CompletedProcess:
    return subprocess.run(argv, cwd=REPO, capture_output=True, text=True, timeout=600)


def test_ruff_finds_nothing():
    done = run(tool("ruff"), "check", "--no-cache", ".")
    assert done.returncode == 0, done.stdout + done.stderr


def test_ruff_flags_an_import_inside_a_function(tmp_path):
    sample = tmp_path / "sample.py"
    sample.write_text("def f():\n    import json\n\n    return json\n")
    done = run(tool("ruff"), "check", "--no-cache", "--config", str(REPO / "pyproject.toml"), str(sample))
    assert done.returncode == 1 and "PLC0415" in done.stdout


def test_mypy_finds_nothing():
    # mypy's own incremental cache, kept in this checkout's virtualenv: a fresh clone checks every
    # module (about 38 s), a second run only what changed since (about 1 s).
    venv = REPO / ".venv"
    cache = ["--cache-dir", str(venv / "mypy-cache")] if venv.is_dir() else ["--no-incremental", "--cache-dir", "/dev/null"]
    done = run(tool("mypy"), *cache)
    assert done.returncode == 0, done.stdout + done.stderr


def test_the_longest_first_schedule_names_only_test_modules_that_exist():
    from .conftest import LONGEST_FIRST

    missing = [name for name in LONGEST_FIRST if not (REPO / "tests" / f"{name}.py").exists()]
    assert missing == [] and len(set(LONGEST_FIRST)) == len(LONGEST_FIRST)
    assert "--no-loadscope-reorder" in (REPO / "Makefile").read_text()  # else xdist reorders by test count
