"""The whole educator cycle with nbgrader's own commands and a course-local exchange folder.

release_assignment → fetch_assignment (as the learner) → submit → collect → autograde →
generate_feedback → release_feedback → fetch_feedback, then export to CSV. The learner's
evidence file travels with the submission.
"""

from __future__ import annotations

import getpass
import json
import shutil

import nbformat
import pandas as pd
import pytest

from lucy_runtime.course import nbgrader
from lucy_runtime.educator.verify import filled

from .conftest import REPO

pytestmark = pytest.mark.nbgrader
UNIT = "ch07_unit_a"


def test_release_fetch_submit_collect_autograde_feedback_and_export(tmp_path):
    course, exchange, learner = tmp_path / "course", tmp_path / "exchange", tmp_path / "learner"
    for folder in (course, exchange, learner):
        folder.mkdir()
    exchange.chmod(0o777)
    shutil.copy(REPO / "nbgrader_config.py", course)
    shutil.copytree(REPO / "source" / UNIT, course / "source" / UNIT, ignore=shutil.ignore_patterns("*.md"))
    on_exchange = [f"--Exchange.root={exchange}"]
    as_learner = ["--course=lucy-ch07", *on_exchange]

    nbgrader(["generate_assignment", UNIT, "--force"], cwd=course)
    nbgrader(["release_assignment", UNIT, "--force", *on_exchange], cwd=course)
    nbgrader(["fetch_assignment", UNIT, *as_learner], cwd=learner)
    fetched = next(learner.rglob(f"{UNIT}.ipynb"))

    # The learner completes the notebook and saves evidence beside it.
    source = nbformat.read(str(course / "source" / UNIT / f"{UNIT}.ipynb"), as_version=4)
    nbformat.write(filled(nbformat.read(str(fetched), as_version=4), source), str(fetched))
    evidence = {"unit": UNIT, "blocks": {"0-10 restart": {"prediction": "none survive"}}}
    (fetched.parent / f"{UNIT}_evidence.json").write_text(json.dumps(evidence))

    nbgrader(["submit", str(fetched.parent), *as_learner], cwd=learner)
    nbgrader(["collect", UNIT, *on_exchange], cwd=course)
    student = getpass.getuser()
    submitted = course / "submitted" / student / UNIT
    assert json.loads((submitted / f"{UNIT}_evidence.json").read_text()) == evidence

    nbgrader(["autograde", UNIT], cwd=course)
    nbgrader(["generate_feedback", UNIT], cwd=course)
    nbgrader(["release_feedback", UNIT, *on_exchange], cwd=course)
    nbgrader(["fetch_feedback", UNIT, *as_learner], cwd=learner)
    feedback = list(learner.rglob(f"feedback/*/{UNIT}.html"))
    assert feedback, "the learner received no feedback"
    html = feedback[0].read_text()
    assert "Row " not in html or "does not hold" not in html  # the reference fails no row
    assert "BEGIN HIDDEN TESTS" not in html and "grade(&quot;" not in html and 'grade("' not in html
    assert ">ready<" in html or "ready(" in html  # the visible part of each test cell stays (highlighted)

    nbgrader(["export", f"--to={tmp_path / 'grades.csv'}"], cwd=course)
    grades = pd.read_csv(tmp_path / "grades.csv")
    mine = grades[(grades["student_id"] == student) & (grades["assignment"] == UNIT)]
    assert len(mine) == 1
    autograded_points = sum(float(c.metadata["nbgrader"]["points"]) for c in source.cells
                            if c.metadata.get("nbgrader", {}).get("grade") and c.cell_type == "code")
    assert mine["raw_score"].iloc[0] == autograded_points  # full marks; the written answer awaits a person
    assert mine["max_score"].iloc[0] > autograded_points
