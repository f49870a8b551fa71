"""The learner's evidence file travels with the submission through nbgrader's exchange.

A unit notebook saves ``<unit>_evidence.json`` beside itself as the learner works;
``nbgrader submit`` hands in the folder and ``collect`` brings it to the course. The
rest of the cycle (autograde, feedback, fetch_feedback, export) runs in
test_readme_educator.py, from the README's own block.
"""

from __future__ import annotations

import getpass
import json
import shutil

import nbformat
import pytest

from lucy_runtime.course.course import nbgrader
from lucy_runtime.proof.verify import filled
from lucy_runtime.grading.exchange import add as add_learners
from lucy_runtime.grading.exchange import create as make_exchange

from .conftest import REPO

pytestmark = pytest.mark.nbgrader
UNIT = "ch07_unit_a"


def test_the_evidence_a_learner_saves_beside_the_notebook_is_collected_with_it(tmp_path):
    course, exchange, learner = tmp_path / "course", tmp_path / "exchange", tmp_path / "learner"
    for folder in (course, exchange, learner):
        folder.mkdir()
    # The course's exchange, made as `lucy exchange create --one-account` and `add` make it.
    make_exchange(exchange, "lucy-ch07", one_account=True)
    add_learners(exchange, "lucy-ch07", [getpass.getuser()])
    shutil.copy(REPO / "nbgrader_config.py", course)
    shutil.copytree(REPO / "source" / UNIT, course / "source" / UNIT, ignore=shutil.ignore_patterns("*.md"))
    on_exchange = [f"--Exchange.root={exchange}"]
    as_learner = ["--course=lucy-ch07", *on_exchange]

    nbgrader(["generate_assignment", UNIT, "--force"], cwd=course)
    nbgrader(["release_assignment", UNIT, "--force", *on_exchange], cwd=course)
    nbgrader(["fetch_assignment", UNIT, *as_learner], cwd=learner)
    fetched = next(learner.rglob(f"{UNIT}.ipynb"))

    source = nbformat.read(str(course / "source" / UNIT / f"{UNIT}.ipynb"), as_version=4)
    nbformat.write(filled(nbformat.read(str(fetched), as_version=4), source), str(fetched))
    evidence = {"unit": UNIT, "blocks": {"0-5 restart": {"prediction": "none survive"}}}
    (fetched.parent / f"{UNIT}_evidence.json").write_text(json.dumps(evidence))

    nbgrader(["submit", str(fetched.parent), *as_learner], cwd=learner)
    nbgrader(["collect", UNIT, *on_exchange], cwd=course)
    submitted = course / "submitted" / getpass.getuser() / UNIT
    assert json.loads((submitted / f"{UNIT}_evidence.json").read_text()) == evidence
    assert nbformat.read(str(submitted / f"{UNIT}.ipynb"), as_version=4).cells == \
        nbformat.read(str(fetched), as_version=4).cells
