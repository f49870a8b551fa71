"""`lucy report`: a small class graded by real nbgrader, then reported on.

The class holds the reference, three educator cases, two cases at once (a mistake no
case describes) and the blank release, with evidence files that are good, missing and
malformed. The report must name each learner's case, count and name the broken
evidence, give the gradebook's numbers in its CSV and in the page a browser shows
(offline), keep every student id out of its anonymized edition, show how the class
moved after a resubmission, and read a PostgreSQL gradebook as well.
"""

from __future__ import annotations

import csv
import io
import json
import shutil
from dataclasses import dataclass, replace
from pathlib import Path

import pytest

from lucy_runtime.cli.main import main
from lucy_runtime.course.course import ScratchCourse, nbgrader
from lucy_runtime.educator.cases import by_name
from lucy_runtime.report.report import ClassReport, class_report
from lucy_runtime.report.report_html import write_report
from lucy_runtime.proof.verify import filled, with_written_answers
from lucy_runtime.errors import NothingToGrade
from lucy_runtime.grading.gradebook import course_db_url

from .lab import CHROMIUM, FLAGS, need_chromium
from .pg import postgres

pytestmark = pytest.mark.nbgrader

UNIT = "ch07_unit_a"
TWO_AT_ONCE = replace(by_name("noop-finish"), name="two-at-once",
                      edits=by_name("noop-finish").edits + by_name("admit-no-duplicate-check").edits)
CLASS = {"ada_k": None, "bea_m": "noop-finish", "cal_n": "finish-two-transactions",
         "dan_o": "admit-no-duplicate-check", "eve_p": "two-at-once", "fay_q": "blank"}
RESTART = {"admitted": 3, "survived": 0}


def evidence(prediction: str, **more: dict) -> str:
    blocks = {"0-5 restart": {"prediction": prediction, "observations": RESTART}, **more}
    return json.dumps({"unit": UNIT, "blocks": blocks})


EVIDENCE = {  # cal_n hands in none
    "ada_k": evidence("None of them: the list lived in the memory of the process that died.",
                      **{"30-55 limits and claim": {"prediction": "Ada thinks the third claim gets nothing."}}),
    "bea_m": '{"unit": "ch07_unit_a", "blocks": {',  # cut off mid-file
    "dan_o": json.dumps({"unit": UNIT, "blocks": ["0-5 restart"]}),
    "eve_p": evidence("All three are still there, eve_p thinks."),
    "fay_q": evidence("All three are still there, eve_p thinks."),
}


@dataclass(frozen=True)
class Graded:
    course: ScratchCourse
    report: ClassReport
    html: Path
    anonymized: Path
    csv: Path


def hand_in(course: ScratchCourse, students: dict[str, str | None]) -> None:
    release, source = course.release(UNIT), course.source(UNIT)
    for student, case in students.items():
        nb = release if case == "blank" else with_written_answers(
            filled(release, source, TWO_AT_ONCE if case == "two-at-once" else by_name(case) if case else None), source)
        extra = {f"{UNIT}_evidence.json": EVIDENCE[student]} if student in EVIDENCE else None
        course.submit(student, UNIT, nb, extra)


@pytest.fixture(scope="module")
def graded(tmp_path_factory) -> Graded:
    course = ScratchCourse(tmp_path_factory.mktemp("report") / "course", units=(UNIT,))
    hand_in(course, CLASS)
    course.autograde(UNIT)
    assert main(["report", UNIT, "--course", str(course.root)]) == 0
    report = class_report(course.root, (UNIT,))
    reports = course.root / "reports"
    return Graded(course, report, reports / f"{UNIT}.html", reports / f"{UNIT}-anonymized.html", reports / f"{UNIT}.csv")


def gradebook_scores(root: Path, students) -> dict[str, float]:
    from nbgrader.api import Gradebook

    with Gradebook(course_db_url(root)) as gb:
        return {s: gb.find_submission(UNIT, s).score for s in students}


def matched(report: ClassReport) -> dict[str, str]:
    return {x.student: x.matched for x in report.parts[0].learners}


def test_each_planted_case_is_named_and_the_rest_fall_in_honest_groups(graded):
    groups = {g.label: g for g in graded.report.parts[0].groups}
    named = matched(graded.report)
    # noop-finish fails exactly the rows finish-bare-pass fails: the group names both (and never the tamper case that fails them too).
    assert "noop-finish" in named["bea_m"].split(" or ") and "finish-bare-pass" in named["bea_m"].split(" or ")
    assert "tamper" not in named["bea_m"]
    assert named["cal_n"] == "finish-two-transactions"
    assert named["dan_o"] == "admit-no-duplicate-check"
    assert named["eve_p"] == "matches no known case"
    assert named["ada_k"] == "passes every row" and named["fay_q"] == "fails every row"
    case = groups["finish-two-transactions"]
    assert case.description == by_name("finish-two-transactions").breaks and case.teaching


def test_a_mistake_no_case_describes_is_not_forced_into_one(graded):
    unmatched = next(g for g in graded.report.parts[0].groups if g.kind == "none")
    assert unmatched.students == ("eve_p",)
    assert all(student == "eve_p" for student, _, _ in unmatched.closest)


def test_missing_and_malformed_evidence_is_counted_and_named(graded):
    problems = dict(graded.report.parts[0].evidence_problems)
    assert set(problems) == {"bea_m", "cal_n", "dan_o"}
    assert problems["cal_n"] == "missing"
    assert problems["bea_m"].startswith("malformed: not JSON") and problems["dan_o"].startswith("malformed:")
    html = graded.html.read_text()
    assert "3 evidence files missing or unreadable" in html and "cal_n" in html


def test_predictions_are_judged_against_what_the_learners_experiment_showed(graded):
    restart = next(r for r in graded.report.parts[0].predictions if r.prompt.block == "0-5 restart")
    assert (restart.right, restart.wrong, restart.shown) == (1, 2, "none survive")
    assert restart.wrong_groups[0].label == "all survive" and restart.wrong_groups[0].learners == 2
    assert restart.prompt.question.startswith("A process admits all three requests")
    unkeyed = [r for r in graded.report.parts[0].predictions if not r.keyed]
    claims = next(r for r in unkeyed if r.prompt.block == "30-55 limits and claim")
    assert claims.predicted == 1 and claims.quotes[0].learners == 1 and claims.no_prediction == 2


def test_the_csv_numbers_are_the_gradebooks(graded):
    rows = list(csv.DictReader(io.StringIO(graded.csv.read_text())))
    scores = gradebook_scores(graded.course.root, CLASS)
    assert {r["student"]: float(r["score"]) for r in rows} == scores
    assert scores["ada_k"] > scores["bea_m"] > 0 and scores["fay_q"] == 0
    by_student = {r["student"]: r for r in rows}
    assert by_student["cal_n"]["failing_rows"] == "finish-atomic"
    assert by_student["ada_k"]["written_answers_to_grade"] == "1" and by_student["fay_q"]["written_answers_to_grade"] == "0"
    assert by_student["cal_n"]["evidence"] == "missing" and by_student["ada_k"]["checkpoint"] == ""


def test_the_anonymized_edition_names_no_learner_and_quotes_only_what_two_wrote(graded):
    text = graded.anonymized.read_text()
    for student in CLASS:
        assert student not in text, student
    assert "All three are still there, [a learner] thinks." in text  # two wrote it: quoted, the name scrubbed
    assert "third claim gets nothing" not in text  # one wrote it: not quoted
    assert "Ada thinks the third claim gets nothing." in graded.html.read_text()


def test_the_report_opens_offline_and_its_plots_and_numbers_are_the_gradebooks(graded):
    from playwright.sync_api import sync_playwright

    need_chromium()
    scores = gradebook_scores(graded.course.root, CLASS)
    requested = []
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=FLAGS)
        try:
            context = browser.new_context(offline=True)
            context.route("**/*", lambda route: (requested.append(route.request.url), route.continue_()
                                                 if route.request.url.startswith("file:") else route.abort()))
            page = context.new_page()
            page.goto(graded.html.as_uri())
            plots = page.evaluate("""() => [...document.querySelectorAll('svg.plot')].map(s => {
                const box = s.getBoundingClientRect(); return [box.width, box.height, s.querySelectorAll('rect').length]; })""")
            shown = page.evaluate("""() => Object.fromEntries([...document.querySelectorAll('tr[data-student]')].map(
                tr => [tr.dataset.student, tr.children[1].textContent]))""")
            said = page.locator(".say li").all_inner_texts()
        finally:
            browser.close()
    assert [url for url in requested if not url.startswith("file:")] == []
    assert len(plots) >= 2 and all(w > 100 and h > 50 and rects > 0 for w, h, rects in plots), plots
    assert {s: float(text.split(" / ")[0]) for s, text in shown.items()} == scores
    assert len(said) == 3 and "fail like" in said[1] and "finish-atomic" in said[0], said


def test_a_second_grading_run_shows_how_the_class_moved(graded, tmp_path):
    course = graded.course.copy(tmp_path / "again")
    before = class_report(course.root, (UNIT,)).parts[0]
    assert len(before.runs) == 1 and before.movement is None, "an unchanged gradebook adds no run"
    hand_in(course, {"bea_m": None})  # bea fixes finish and hands in again
    course.autograde(UNIT, "bea_m")
    after = class_report(course.root, (UNIT,)).parts[0]
    assert len(after.runs) == 2 and after.movement is not None
    assert (after.movement.up, after.movement.down, after.movement.same) == (1, 0, len(CLASS) - 1)
    assert matched(class_report(course.root, (UNIT,)))["bea_m"] == "passes every row"
    written = write_report(class_report(course.root, (UNIT,)), tmp_path / "out", "again")
    assert "1 up" in written.html.read_text()


def test_report_all_covers_every_graded_assignment_in_one_page(graded, tmp_path):
    assert main(["report", "--all", "--course", str(graded.course.root), "--out", str(tmp_path)]) == 0
    rows = list(csv.DictReader(io.StringIO((tmp_path / "all.csv").read_text())))
    assert {(r["student"], r["assignment"]) for r in rows} == {(s, UNIT) for s in CLASS}
    assert (tmp_path / "all.html").read_text().count(f'id="{UNIT}"') == 1


def test_a_report_on_an_assignment_nobody_handed_in_says_so(graded):
    with pytest.raises(NothingToGrade, match="ch07_unit_b"):
        class_report(graded.course.root, ("ch07_unit_b",))


def test_a_postgresql_gradebook_gives_the_same_report(graded, tmp_path):
    course = ScratchCourse.__new__(ScratchCourse)
    course.root, course.units = tmp_path / "pg-course", (UNIT,)
    shutil.copytree(graded.course.root, course.root,
                    ignore=shutil.ignore_patterns("gradebook.db", "autograded", "submitted", "reports", "feedback"))
    with postgres() as url:
        with (course.root / "nbgrader_config.py").open("a") as config:
            config.write(f"\nc.CourseDirectory.db_url = {url!r}\n")
        nbgrader(["generate_assignment", UNIT, "--force"], cwd=course.root)
        hand_in(course, {"ada_k": None, "cal_n": "finish-two-transactions"})
        course.autograde(UNIT)
        report = class_report(course.root, (UNIT,))
        scores = gradebook_scores(course.root, ("ada_k", "cal_n"))
    assert matched(report) == {"ada_k": "passes every row", "cal_n": "finish-two-transactions"}
    assert {x.student: x.score for x in report.parts[0].learners} == scores
    assert not (course.root / "gradebook.db").exists()
