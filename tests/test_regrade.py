"""`lucy regrade` on a real nbgrader class whose grader changes between two gradings.

One class of two learners, each failing ``finish-atomic`` (a no-op finish, a finish in two
transactions), each with a written answer, is graded by nbgrader; the educator scores
one written answer by hand. The grader then changes through the course's configuration
(``c.SealedVerdicts.waived_rows``: the row earns its points unchecked), the way a
course team fixes a row mid-term without touching source/; later the change is undone.
The module's fixture plays the term once, in order, and keeps what each step left; the
tests read it.
"""

from __future__ import annotations

import contextlib
import csv
import html
import io
import json
import signal
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

from lucy_runtime.educator.cases import by_name
from lucy_runtime.cli.main import main
from lucy_runtime.course.course import ScratchCourse, nbgrader
from lucy_runtime.course.regrade import Regrade, Released, read_grades, regrade
from lucy_runtime.proof.verify import filled, with_written_answers
from lucy_runtime.grading.gradebook import course_db_url

pytestmark = pytest.mark.nbgrader

UNIT = "ch07_unit_a"
CLASS = {"bea": "noop-finish", "cal": "finish-two-transactions"}
ROW = "row_finish_atomic"
WRITTEN = "explain_worker_crash"
FIXED = "finish-atomic failed correct work on a slow disk"
UNDONE = "the waiver of finish-atomic was a mistake"


def waive(root: Path, rows: dict[str, str]) -> None:
    """The grader changes through the course's configuration (the last setting wins)."""
    with (root / "nbgrader_config.py").open("a") as config:
        config.write(f"\nc.SealedVerdicts.waived_rows = {rows!r}\n")


def grade_by_hand(root: Path, student: str, cell: str, score: float) -> None:
    """What formgrader does when the educator scores a written answer."""
    from nbgrader.api import Gradebook

    with Gradebook(course_db_url(root)) as gb:
        grade = gb.find_grade(cell, UNIT, UNIT, student)
        grade.manual_score, grade.needs_manual_grade = score, False
        gb.db.commit()


def snapshot(root: Path) -> dict:
    return {s: g for s, g in read_grades(course_db_url(root), UNIT, list(CLASS)).items()}


def notebook_text(root: Path, student: str) -> str:
    return (root / "autograded" / student / UNIT / f"{UNIT}.ipynb").read_text()


def said(argv: list[str]) -> tuple[int, str]:
    out = io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(out):
        code = main(argv)
    return code, out.getvalue()


@dataclass
class Term:
    course: ScratchCourse
    graded: dict
    half: dict
    half_notebooks: dict
    journal_after_stop: bool
    first: Regrade
    fixed: dict
    second: tuple[int, str]
    again: dict
    stopped: tuple[int, str]
    after_stop: dict
    log_lines_after_stop: int
    kept: Regrade
    kept_grades: dict
    lowered_course: ScratchCourse
    lowered: Regrade
    lowered_grades: dict
    lowered_feedback: str


DIES_AFTER_ONE_SWAP = """
import os, signal, sys
from pathlib import Path
from lucy_runtime.course import regrade as module

real_swap, calls = module._swap_in, []


def swap_then_die(*args, **kwargs):
    if calls:
        os.kill(os.getpid(), signal.SIGKILL)  # the machine goes down between one learner's swap and the next
    calls.append(args)
    real_swap(*args, **kwargs)


module._swap_in = swap_then_die
module.regrade(Path(sys.argv[1]), sys.argv[2], sys.argv[3])
"""


@pytest.fixture(scope="module")
def term(tmp_path_factory) -> Term:
    root = tmp_path_factory.mktemp("regrade")
    course = ScratchCourse(root / "course", units=(UNIT,))
    release, source = course.release(UNIT), course.source(UNIT)
    for student, case in CLASS.items():
        course.submit(student, UNIT, with_written_answers(filled(release, source, by_name(case)), source))
    course.autograde(UNIT)
    grade_by_hand(course.root, "cal", WRITTEN, 2.0)
    graded = snapshot(course.root)

    waive(course.root, {"finish-atomic": FIXED})
    died = subprocess.run([sys.executable, "-c", DIES_AFTER_ONE_SWAP, str(course.root), UNIT, FIXED], cwd=course.root,
                          capture_output=True, text=True, timeout=900)
    assert died.returncode == -signal.SIGKILL, died.stdout + died.stderr
    half = snapshot(course.root)
    half_notebooks = {s: notebook_text(course.root, s) for s in CLASS}
    journal = (course.root / ".lucy" / "regrade" / f"{UNIT}.json").exists()
    first = regrade(course.root, UNIT, "this reason is not the one recorded: the stopped run's is")
    fixed = snapshot(course.root)

    second = said(["regrade", UNIT, "--reason", "the same grader again", "--course", str(course.root)])
    again = snapshot(course.root)

    nbgrader(["generate_feedback", UNIT, "--force"], cwd=course.root)  # released: the learners saw the raised scores
    waive(course.root, {})
    stopped = said(["regrade", UNIT, "--reason", UNDONE, "--course", str(course.root)])
    after_stop = snapshot(course.root)
    log_lines = len((course.root / "regrades.jsonl").read_text().splitlines())

    lowered_course = course.copy(root / "lowered")
    kept = regrade(course.root, UNIT, UNDONE, released=Released.KEEP_HIGHER)
    kept_grades = snapshot(course.root)
    lowered = regrade(lowered_course.root, UNIT, UNDONE, released=Released.LOWER_WITH_NOTE)
    lowered_grades = snapshot(lowered_course.root)
    nbgrader(["generate_feedback", UNIT, "--force"], cwd=lowered_course.root)
    feedback = (lowered_course.root / "feedback" / "cal" / UNIT / f"{UNIT}.html").read_text()
    return Term(course, graded, half, half_notebooks, journal, first, fixed, second, again, stopped, after_stop,
                log_lines, kept, kept_grades, lowered_course, lowered, lowered_grades, feedback)


def cell(grades, student: str, name: str):
    return grades[student].cells[UNIT][name]


def test_a_fixed_row_raises_those_who_failed_it_and_each_learner_is_shown_before_after_and_the_row(term):
    for student in CLASS:
        assert term.fixed[student].score == term.graded[student].score + 2
        assert cell(term.fixed, student, ROW).score == 2 and cell(term.graded, student, ROW).score == 0
    moved = {x.student: [(c.cell, c.before, c.after) for c in x.changes] for x in term.first.learners}
    assert moved == {s: [(ROW, 0.0, 2.0)] for s in CLASS}
    assert {x.student: (x.before, x.after) for x in term.first.learners} == \
        {s: (term.graded[s].score, term.fixed[s].score) for s in CLASS}


def test_a_score_given_by_hand_and_its_graded_state_survive_every_regrade(term):
    for grades in (term.fixed, term.again, term.kept_grades, term.lowered_grades):
        written = cell(grades, "cal", WRITTEN)
        assert (written.manual, written.needs_manual) == (2.0, False)
    assert cell(term.fixed, "bea", WRITTEN).needs_manual, "an answer nobody graded still waits for a grade"


def test_a_second_regrade_with_the_same_grader_changes_nothing(term):
    code, out = term.second
    assert code == 0 and "0 of 2 learners' grades changed" in out, out
    assert term.again == term.fixed
    for student in CLASS:
        assert f"{student}: {term.fixed[student].score:g} -> {term.fixed[student].score:g} of 25, unchanged" in out


def test_a_regrade_stopped_between_learners_leaves_each_whole_and_running_it_again_finishes(term):
    first, second = sorted(CLASS)
    assert term.journal_after_stop
    assert term.half[first] == term.fixed[first] and "waived by your educator" in term.half_notebooks[first]
    assert term.half[second] == term.graded[second] and "waived by your educator" not in term.half_notebooks[second]
    assert term.first.resumed and term.first.reason == FIXED
    assert not (term.course.root / ".lucy" / "regrade" / UNIT).exists(), "the scratch course is gone once done"


def test_a_released_score_never_falls_silently_the_regrade_stops_and_names_the_learners(term):
    code, out = term.stopped
    assert code == 1 and "STOPPED" in out and "nothing was changed" in out, out
    assert "bea, cal" in out and "--released keep-higher" in out and "--released lower-with-note" in out
    assert term.after_stop == term.again
    assert term.log_lines_after_stop == 2, "a regrade that changed nothing done is not recorded as done"


def test_keep_higher_keeps_the_released_score_as_the_educators_override(term):
    for student in CLASS:
        assert term.kept_grades[student].score == term.again[student].score
        row = cell(term.kept_grades, student, ROW)
        assert (row.auto, row.manual, row.needs_manual) == (0.0, 2.0, False)
    assert all(x.decision == "kept the higher score" for x in term.kept.learners)


def test_lower_with_note_lowers_the_score_and_the_feedback_says_why(term):
    for student in CLASS:
        assert term.lowered_grades[student].score == term.graded[student].score
    assert "Regraded on" in term.lowered_feedback and UNDONE in term.lowered_feedback
    assert "went from 2 to 0 after your feedback was released" in term.lowered_feedback


def test_every_finished_regrade_is_recorded_with_its_reason_and_effect(term):
    entries = [json.loads(line) for line in (term.course.root / "regrades.jsonl").read_text().splitlines()]
    assert [(e["reason"], e["released"], e["resumed"]) for e in entries] == [
        (FIXED, None, True), ("the same grader again", None, False), (UNDONE, "keep-higher", False)]
    assert {c["student"]: c["changes"][0]["cell"] for c in entries[0]["changed"]} == {s: ROW for s in CLASS}
    assert entries[1]["changed"] == [] and sorted(entries[1]["unchanged"]) == sorted(CLASS)


def test_nbgrader_autograde_again_keeps_an_unchanged_graded_answer_graded_and_flags_a_changed_one(term, tmp_path):
    course = term.course.copy(tmp_path / "resubmitted")
    course.autograde(UNIT, "cal")  # plain `nbgrader autograde --force`, as a resubmission collected with --update
    kept = cell(snapshot(course.root), "cal", WRITTEN)
    nb = with_written_answers(filled(course.release(UNIT), course.source(UNIT), by_name("finish-two-transactions")),
                              course.source(UNIT))
    for c in nb.cells:
        if c.get("metadata", {}).get("nbgrader", {}).get("grade_id") == WRITTEN:
            c.source += "\n\nOn second thought: the worker's claim is lost too."
    course.submit("cal", UNIT, nb)
    course.autograde(UNIT, "cal")
    changed = cell(snapshot(course.root), "cal", WRITTEN)
    assert (kept.manual, kept.needs_manual) == (2.0, False)
    assert (changed.manual, changed.needs_manual) == (2.0, True), "a changed answer is graded again by hand"


def test_the_report_draws_who_and_which_rows_moved_between_the_last_two_gradings(term, tmp_path):
    from lucy_runtime.report.report import class_report
    from lucy_runtime.report.report_html import write_report

    report = class_report(term.lowered_course.root, (UNIT,))
    moved = report.parts[0].movement
    assert moved is not None and moved.why == f"regrade: {UNDONE}"
    assert (moved.up, moved.down, moved.same) == (0, 2, 0) and moved.went_down == tuple(sorted(CLASS))
    assert moved.rows_moved == (("finish-atomic", 2, 2, 0, 2),)
    page = write_report(report, tmp_path, "moved").html.read_text()
    section = page.split('id="moved-', 1)[1].split("</svg>", 1)[0]
    assert "Down:</b> bea, cal" in section and "2 of 2 → 0 of 2 passed" in section and "<b>passed</b>" in section
    kept = class_report(term.course.root, (UNIT,)).parts[0].movement
    assert kept is not None and (kept.up, kept.down, kept.same) == (0, 0, 2), "kept scores, yet the row now fails"
    assert kept.rows_moved == (("finish-atomic", 2, 2, 0, 2),)


@pytest.fixture(scope="module")
def exported(term, tmp_path_factory):
    """The class exported for each LMS, after the educator imported a roster that lacks bea."""
    course = term.course.copy(tmp_path_factory.mktemp("export") / "course")
    roster = course.root / "roster.csv"
    roster.write_text("id,first_name,last_name,email,lms_user_id\ncal,Cal,Nguyen,cal@example.org,4711\n")
    nbgrader(["db", "student", "import", str(roster)], cwd=course.root)
    said = {}
    for lms in ("Canvas", "Moodle"):
        said[lms] = nbgrader(["export", f"--exporter=lucy_runtime.grading.lms_export.{lms}Export",
                              f"--to={course.root / f'{lms}.csv'}"], cwd=course.root)
    rows = {lms: list(csv.reader(io.StringIO((course.root / f"{lms}.csv").read_text()))) for lms in said}
    return course, rows, said


def test_canvas_gets_its_gradebook_import_csv_with_the_written_answers_manual_scores(exported):
    course, rows, _ = exported
    canvas = rows["Canvas"]
    assert canvas[0] == ["Student", "ID", "SIS User ID", "SIS Login ID", "Section", UNIT]
    assert canvas[1] == ["Points Possible", "", "", "", "", "25"]
    score = snapshot(course.root)["cal"].score
    assert cell(snapshot(course.root), "cal", WRITTEN).manual == 2.0
    assert canvas[2:] == [["Nguyen, Cal", "4711", "", "cal", "", f"{score:g}"]]


def test_moodle_gets_its_grade_import_csv_keyed_by_email_and_id_number(exported):
    course, rows, _ = exported
    assert rows["Moodle"][0] == ["First name", "Last name", "ID number", "Email address", UNIT]
    assert rows["Moodle"][1:] == [["Cal", "Nguyen", "4711", "cal@example.org", f"{snapshot(course.root)['cal'].score:g}"]]


def test_a_learner_missing_from_the_roster_is_named_and_everyone_else_is_still_written(exported):
    _, rows, said = exported
    for lms in ("Canvas", "Moodle"):
        assert "Not on the roster, so left out" in said[lms] and "bea" in said[lms].split("left out")[1], said[lms]
        assert not any("bea" in cell for row in rows[lms] for cell in row)


@pytest.fixture(scope="module")
def late(term, tmp_path_factory):
    """The class with a due date in its configuration; cal's resubmission comes two and a half days after it."""
    from lucy_runtime.course.parallel import autograde_class

    course = term.course.copy(tmp_path_factory.mktemp("late") / "course")
    with (course.root / "nbgrader_config.py").open("a") as config:
        config.write(f"\nc.DueDates.dates = {{{UNIT!r}: '2026-01-01 00:00:00 UTC'}}\n")
    (course.root / "submitted" / "bea" / UNIT / "timestamp.txt").write_text("2025-12-31 23:00:00.000000 UTC")
    (course.root / "submitted" / "cal" / UNIT / "timestamp.txt").write_text("2026-01-03 12:00:00.000000 UTC")
    graded = autograde_class(course.root, UNIT, jobs=1)
    nbgrader(["generate_feedback", UNIT, "--force"], cwd=course.root)
    return course, graded


def penalties(root: Path) -> dict[str, float]:
    return {s: sum(p or 0.0 for p in g.penalties.values()) for s, g in snapshot(root).items()}


def test_a_late_submission_loses_the_stated_share_per_day_and_its_feedback_and_the_report_say_so(late):
    from lucy_runtime.report.report import class_report
    from lucy_runtime.report.report_html import render

    course, graded = late
    assert graded.ok
    grades = snapshot(course.root)
    assert penalties(course.root) == {"bea": 0.0, "cal": pytest.approx(0.3 * grades["cal"].score)}
    feedback = (course.root / "feedback" / "cal" / UNIT / f"{UNIT}.html").read_text()
    assert "Late submission penalty" in feedback
    assert "Late submission penalty" not in (course.root / "feedback" / "bea" / UNIT / f"{UNIT}.html").read_text()
    report = class_report(course.root, (UNIT,))
    assert {x.student: x.late_penalty for x in report.parts[0].learners} == penalties(course.root)
    page = html.unescape(render(report, anonymized=False))
    assert "10% of the score per day late" in page and "15 minutes' grace" in page


def test_a_resubmission_graded_again_keeps_the_written_answers_manual_score_and_graded_state(late):
    course, _ = late
    written = cell(snapshot(course.root), "cal", WRITTEN)
    assert (written.manual, written.needs_manual) == (2.0, False)


def test_a_regrade_without_a_reason_or_outside_a_course_says_so_in_one_line_and_changes_nothing(tmp_path):
    code, out = said(["regrade", UNIT, "--reason", "  ", "--course", str(tmp_path)])
    assert code == 2 and "say why, in one line, with --reason" in out
    code, out = said(["regrade", UNIT, "--reason", "a fix", "--course", str(tmp_path)])
    assert code == 2 and out.startswith("lucy regrade: ") and "no nbgrader_config.py" in out and len(out.splitlines()) == 1
    assert list(tmp_path.iterdir()) == []
