"""The README's educator section, run as it stands in a fresh clone with nothing extra on PATH.

Its first block releases Unit A, has three learners fetch and hand in (ada: the reference;
bea: the reference with `finish` a bare `pass`; cal: the notebook as fetched), collects,
autogrades, generates and releases feedback and exports, and the learners fetch their
feedback. The written answers are then
scored in formgrader in a real browser, as the README's steps say, and its last block
regenerates feedback and exports again. Export, gradebook and feedback must agree.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

from lucy_runtime.checker.rows import ROWS
from lucy_runtime.notebooks.cells import row_of
from lucy_runtime.educator.cases import by_name

from .conftest import REPO
from .formgrader import browser_page, formgrader_lab, score_written_answer

pytestmark = [pytest.mark.nbgrader, pytest.mark.slow, pytest.mark.browser]

UNIT = "ch07_unit_a"
WRITTEN = "explain_worker_crash"
STUDENTS = ("ada", "bea", "cal")  # the reference, finish-bare-pass, the notebook as fetched
# Plain-text comments: feedback renders a comment as Markdown.
WRITTEN_SCORES = {"ada": (3, "All three points: state, no replay, lease and fence."),
                  "bea": (1, "The stuck running state is right; say why it is not replayed.")}


def educator_blocks() -> list[str]:
    text = (REPO / "README.md").read_text(encoding="utf-8")
    section = text[text.index("## For educators"):text.index("## For contributors")]
    return re.findall(r"```sh\n(.*?)```", section, re.S)


def test_the_readme_names_only_nbgrader_commands_and_the_course_id_of_the_config():
    cycle, formgrader, again = educator_blocks()[:3]
    assert cycle.startswith("make course")
    assert "--course=lucy-ch07" in cycle
    assert 'course_id = "lucy-ch07"' in (REPO / "nbgrader_config.py").read_text()
    for verb in ("generate_assignment", "release_assignment", "fetch_assignment", "submit", "collect", "autograde",
                 "generate_feedback", "release_feedback", "export", "fetch_feedback"):
        assert re.search(rf"nbgrader {verb}\b", cycle), verb
    for student in STUDENTS:
        assert re.search(rf"\b{student}\b", cycle), student
    assert "--case finish-bare-pass" in cycle
    assert formgrader.startswith("make formgrader")
    assert "generate_feedback ch07_unit_a --force" in again and "nbgrader export" in again


@dataclass(frozen=True)
class Clone:
    root: Path
    scratch: Path
    env: dict

    def run(self, block: str) -> None:
        done = subprocess.run(["bash", "-euo", "pipefail", "-c", block], cwd=self.root, env=self.env,
                              capture_output=True, text=True, timeout=1800)
        assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]

    def grades(self):
        import pandas as pd

        grades = pd.read_csv(self.root / "grades.csv")
        assert sorted(grades.student_id) == sorted(STUDENTS) and set(grades.assignment) == {UNIT}
        return grades.set_index("student_id")

    def gradebook(self) -> dict[str, dict]:
        """Per student: the total, and each cell's (score, max, kind, needs a manual grade, comment)."""
        from nbgrader.api import Gradebook

        seen = {}
        with Gradebook(f"sqlite:///{self.root / 'gradebook.db'}") as gb:
            for student in STUDENTS:
                nb = gb.find_submission_notebook(UNIT, UNIT, student)
                comments = {c.name: c.manual_comment for c in nb.comments}
                seen[student] = {"id": nb.id, "score": nb.score, "cells": {
                    g.name: (g.score, g.max_score, g.cell.cell_type, g.needs_manual_grade, comments.get(g.name))
                    for g in nb.grades}}
        return seen

    def feedback(self, student: str) -> bytes:
        return (self.root / "feedback" / student / UNIT / f"{UNIT}.html").read_bytes()


@pytest.fixture(scope="module")
def clone(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("readme")
    root, scratch = tmp / "course", tmp / "tmp"
    scratch.mkdir()
    subprocess.run(["git", "clone", "-q", str(REPO), str(root)], check=True)
    assert not (root / ".venv").exists()
    # No .venv/: the block's `make course` makes it, as on an educator's fresh clone. PYTHON is
    # the interpreter an educator would name (the one these tests run on, not whatever /usr/bin has).
    # LUCY_EXCHANGE: the block's exchange in this test's folder, not the machine's /srv (other tests' hub).
    env = {"PATH": "/usr/bin:/bin", "HOME": os.environ.get("HOME", str(tmp)), "TMPDIR": str(scratch),
           "PYTHON": sys._base_executable, "LUCY_EXCHANGE": str(scratch / "lucy-exchange")}
    course = Clone(root, scratch, env)
    course.run(educator_blocks()[0])
    return course


def test_running_the_educator_block_leaves_the_checkout_as_it_was(clone):
    """nbgrader writes the release with its source cells' ids: what it writes is what is tracked."""
    status = subprocess.run(["git", "status", "--porcelain"], cwd=clone.root, capture_output=True, text=True, check=True)
    assert status.stdout == ""


def code_rows(cells: dict) -> dict[str, tuple[float, float]]:
    return {row_of(name): (score, top) for name, (score, top, kind, *_) in cells.items() if kind == "code"}


def test_after_autograde_ada_has_every_point_bea_loses_the_finish_rows_and_cal_none(clone):
    graded, grades = clone.gradebook(), clone.grades()
    top = sum(t for _, t in code_rows(graded["ada"]["cells"]).values())
    assert all(s == t for s, t in code_rows(graded["ada"]["cells"]).values())

    bea = code_rows(graded["bea"]["cells"])
    lost = {row for row, (s, t) in bea.items() if s < t}
    finish_rows = {row for row in bea if row.startswith("finish")}
    assert "finish-misuse" in finish_rows and finish_rows <= lost, "a bare pass loses every finish row"
    assert lost == set(by_name("finish-bare-pass").expected)
    assert {ROWS[row].topic for row in lost} <= {"finish", "durable"}, "and only rows that need a working finish"
    assert all(s == 0 for row, (s, _) in bea.items() if row in lost)

    assert all(s == 0 for s, _ in code_rows(graded["cal"]["cells"]).values())
    # Written answers: ada's and bea's wait for a person; cal's is the stub, 0 and done.
    assert graded["ada"]["cells"][WRITTEN][3] and graded["bea"]["cells"][WRITTEN][3]
    assert graded["cal"]["cells"][WRITTEN][:2] == (0, 3) and not graded["cal"]["cells"][WRITTEN][3]
    assert grades.raw_score.to_dict() == {"ada": top, "bea": top - sum(bea[r][1] for r in lost), "cal": 0.0}


def test_each_learner_fetches_the_feedback_released_and_bea_reads_why_each_lost_row_failed(clone):
    """Before the written answers are scored (the ``scored`` fixture regenerates the feedback)."""
    lost = {row_of(name) for name, (score, top, kind, *_) in clone.gradebook()["bea"]["cells"].items()
            if kind == "code" and score < top}
    for student in STUDENTS:
        fetched = list((clone.scratch / "lucy-learners" / student / UNIT / "feedback").glob(f"*/{UNIT}.html"))
        assert len(fetched) == 1, f"{student} fetched {fetched}"
        assert fetched[0].read_bytes() == clone.feedback(student)
        html = fetched[0].read_text()
        assert "BEGIN HIDDEN TESTS" not in html and "grade(&quot;" not in html and 'grade("' not in html
        assert "ready(" in html or ">ready<" in html, "the visible part of each test cell stays"
        failing = {row for row in ROWS if f"Row {row} does not hold" in html}
        assert failing == {"ada": set(), "bea": lost}.get(student, failing), student
    bea = (clone.scratch / "lucy-learners" / "bea" / UNIT / "feedback").glob(f"*/{UNIT}.html")
    assert next(bea).read_text().count("Hint: ") >= len(lost) > 0


@pytest.fixture(scope="module")
def scored(clone):
    """The README's formgrader steps in a browser, then its block that regenerates feedback and exports."""
    ids = {s: g["id"] for s, g in clone.gradebook().items()}
    with formgrader_lab(clone.root, clone.scratch / "lab") as lab, browser_page() as page:
        for student, (points, comment) in WRITTEN_SCORES.items():
            score_written_answer(page, lab, assignment=UNIT, notebook=UNIT, submission_id=ids[student],
                                 grade_id=WRITTEN, points=points, max_points=3, comment=comment,
                                 screenshot=f"readme-formgrader-{student}.png")
    again = educator_blocks()[2]
    clone.run(again)  # as in a second terminal: the block sets what it needs
    return clone


def test_export_gradebook_and_feedback_agree_after_formgrader(scored):
    graded, grades = scored.gradebook(), scored.grades()
    for student in STUDENTS:
        cells = graded[student]["cells"]
        code = sum(s for s, _ in code_rows(cells).values())
        written = WRITTEN_SCORES.get(student, (0, None))
        assert cells[WRITTEN][0] == written[0] and not cells[WRITTEN][3] and cells[WRITTEN][4] == written[1]
        assert grades.raw_score[student] == grades.score[student] == graded[student]["score"] == code + written[0]

        html = scored.feedback(student).decode()
        total, top = graded[student]["score"], sum(t for _, t, *_ in cells.values())
        assert f"{UNIT} (Score: {round(float(total), 2)} / {round(float(top), 2)})" in html, student
        for name, (score, most, *_rest) in cells.items():
            assert re.search(rf'href="#{name}">[^<]+</a> \(Score: {round(float(score), 2)} / '
                             rf'{round(float(most), 2)}\)', html), (student, name)
        if written[1]:
            assert written[1] in html
        assert "BEGIN HIDDEN TESTS" not in html
        assert str(scored.root) not in html and str(scored.scratch) not in html, "no path of the grading machine"

    for student in STUDENTS:  # each learner fetched the regenerated page, with the written score and comment
        fetched = list((scored.scratch / "lucy-learners" / student / UNIT / "feedback").glob(f"*/{UNIT}.html"))
        assert [p.read_bytes() for p in fetched] == [scored.feedback(student)], student
    exchange = scored.scratch / "lucy-exchange" / "lucy-ch07" / "feedback"
    released = sorted(p.read_bytes() for p in exchange.glob("*.html"))
    assert released == sorted(scored.feedback(s) for s in STUDENTS), "learners get the feedback checked here"
