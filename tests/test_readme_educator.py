"""The README's educator commands, run as they stand in a fresh clone with nothing extra on PATH."""

from __future__ import annotations

import os
import re
import subprocess

import pytest

from .conftest import REPO

pytestmark = pytest.mark.nbgrader


def educator_block() -> str:
    text = (REPO / "README.md").read_text(encoding="utf-8")
    section = text[text.index("## For educators"):text.index("## For contributors")]
    return re.search(r"```sh\n(.*?)```", section, re.S).group(1)


def test_the_readme_names_only_nbgrader_commands_and_the_course_id_of_the_config():
    block = educator_block()
    assert "--course=lucy-ch07" in block
    assert 'course_id = "lucy-ch07"' in (REPO / "nbgrader_config.py").read_text()
    for verb in ("generate_assignment", "release_assignment", "fetch_assignment", "submit", "collect", "autograde",
                 "generate_feedback", "release_feedback", "export"):
        assert re.search(rf"nbgrader {verb}\b", block), verb


def test_the_readme_educator_cycle_runs_verbatim_in_a_fresh_clone(tmp_path):
    clone, scratch = tmp_path / "course", tmp_path / "tmp"
    scratch.mkdir()
    subprocess.run(["git", "clone", "-q", str(REPO), str(clone)], check=True)
    (clone / ".venv").symlink_to(REPO / ".venv")  # the clone's own `make` would build the same environment
    env = {"PATH": "/usr/bin:/bin", "HOME": os.environ.get("HOME", str(tmp_path)), "TMPDIR": str(scratch)}
    done = subprocess.run(["bash", "-euo", "pipefail", "-c", educator_block()], cwd=clone, env=env,
                          capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    import pandas as pd

    grades = pd.read_csv(clone / "grades.csv")
    assert list(grades.assignment) == ["ch07_unit_a"] and grades.raw_score.tolist() == [0.0]
    feedback = list((scratch / "lucy-exchange" / "lucy-ch07" / "feedback").glob("*.html"))
    assert len(feedback) == 1 and "BEGIN HIDDEN TESTS" not in feedback[0].read_text()
