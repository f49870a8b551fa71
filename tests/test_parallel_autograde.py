"""`lucy autograde --jobs N` against plain sequential `nbgrader autograde`, on a small class.

One scratch course is built; a copy is graded sequentially by nbgrader, the other in
parallel through Dask. Both must hold the same gradebook entries and the same
autograded notebooks; a kernel that dies and a submission that hangs are recorded as
such. The same class is then graded in parallel into a PostgreSQL gradebook.
"""

from __future__ import annotations

import shutil
import time
from dataclasses import dataclass

import nbformat
import pytest

from lucy_runtime.course.course import ScratchCourse, nbgrader
from lucy_runtime.educator.cases import by_name
from lucy_runtime.course.parallel import MOST_PER_JOB, ClassGrading, Status, autograde_class, batches
from lucy_runtime.proof.verify import filled
from lucy_runtime.notebooks.cells import is_learner_owned

from .pg import postgres
from .conftest import temporary_folder_at

pytestmark = pytest.mark.nbgrader

UNIT = "ch07_unit_a"
CLASS = ("correct", "case", "blank")


def with_first_learner_cell_ending(nb, code: str):
    for cell in nb.cells:
        if is_learner_owned(cell):
            cell.source += "\n" + code + "\n"
            return nb
    raise AssertionError("the release has no learner cell")


@dataclass(frozen=True)
class Class:
    sequential: ScratchCourse  # graded by one plain `nbgrader autograde`
    parallel: ScratchCourse  # the same class, and a submission that kills its kernel, by autograde_class
    graded: ClassGrading
    release: object
    source: object


@pytest.fixture(scope="module")
def courses(tmp_path_factory):
    root = tmp_path_factory.mktemp("classscale")
    course = ScratchCourse(root / "sequential", units=(UNIT,))
    release, source = course.release(UNIT), course.source(UNIT)
    course.submit("correct", UNIT, filled(release, source))
    course.submit("case", UNIT, filled(release, source, by_name("noop-finish")))
    course.submit("blank", UNIT, release)
    parallel = course.copy(root / "parallel")
    parallel.submit("crash", UNIT, with_first_learner_cell_ending(filled(release, source), "import os\nos._exit(1)"))
    nbgrader(["autograde", UNIT, "--force"], cwd=course.root)
    graded = autograde_class(parallel.root, UNIT, jobs=2, timeout=600)
    return Class(course, parallel, graded, release, source)


def gradebook_entries(root, students) -> dict:
    from nbgrader.api import Gradebook

    from lucy_runtime.grading.gradebook import course_db_url

    with Gradebook(course_db_url(root)) as gb:
        return {(s, g.name): (g.auto_score, g.max_score, g.needs_manual_grade)
                for s in students for g in gb.find_submission_notebook(UNIT, UNIT, s).grades}


def outputs(cell) -> list:
    """Each output's kind; a stream printed in several pieces counts once (how it was split is timing)."""
    kinds = []
    for o in cell.get("outputs", []):
        kind = (o.get("output_type"), o.get("name"), o.get("ename"))
        if not (kinds and kind[0] == "stream" and kinds[-1] == kind):
            kinds.append(kind)
    return kinds


def cells(root, student) -> list:
    nb = nbformat.read(str(root / "autograded" / student / UNIT / f"{UNIT}.ipynb"), as_version=4)
    return [(c.cell_type, c.source, outputs(c)) for c in nb.cells]


def test_parallel_grading_writes_the_gradebook_entries_sequential_nbgrader_writes(courses):
    sequential, parallel, graded = courses.sequential.root, courses.parallel.root, courses.graded
    entries = gradebook_entries(parallel, CLASS)
    assert entries == gradebook_entries(sequential, CLASS)
    assert any(score for score, _, _ in entries.values()), "the correct submission earned nothing"
    assert {o.student: o.status for o in graded.outcomes if o.student in CLASS} == dict.fromkeys(CLASS, Status.GRADED)


def test_parallel_grading_writes_the_autograded_notebooks_sequential_nbgrader_writes(courses):
    sequential, parallel = courses.sequential.root, courses.parallel.root
    for student in CLASS:
        assert cells(parallel, student) == cells(sequential, student), student


def test_a_submission_that_kills_its_kernel_is_graded_by_the_sealed_verdict_and_says_so(courses):
    parallel, graded = courses.parallel.root, courses.graded
    crash = next(o for o in graded.outcomes if o.student == "crash")
    assert crash.status is Status.GRADED and crash.stopped == "its kernel died", crash
    notebook = parallel / "autograded" / "crash" / UNIT / f"{UNIT}.ipynb"
    assert "Stopped here: its kernel died" in notebook.read_text()
    assert graded.unfinished == () and {o.student for o in graded.outcomes if o.stopped} == {"crash"}


def test_the_parallel_gradebook_is_ready_for_feedback(courses):
    parallel = courses.parallel.root
    nbgrader(["generate_feedback", UNIT, "--force"], cwd=parallel)
    assert sorted(p.parent.parent.name for p in (parallel / "feedback").glob(f"*/{UNIT}/{UNIT}.html")) == sorted(CLASS + ("crash",))


def test_a_submission_that_hangs_is_stopped_at_its_time_limit_and_the_rest_of_its_batch_is_graded(courses, tmp_path,
                                                                                                 monkeypatch):
    parallel = courses.parallel
    temporary_folder_at(monkeypatch, tmp_path)
    hang = with_first_learner_cell_ending(filled(courses.release, courses.source), "import time\ntime.sleep(3600)")
    parallel.submit("hang", UNIT, hang)
    parallel.submit("late", UNIT, filled(courses.release, courses.source))  # after "hang" in nbgrader's order
    # 20 s: three times what a correct submission takes with nbgrader's start on a loaded machine.
    graded = autograde_class(parallel.root, UNIT, jobs=1, timeout=20, students=["hang", "late"])
    assert batches(["hang", "late"], 1) == [["hang", "late"]], "both must share one nbgrader command"
    hung, late = graded.outcomes
    assert hung.status is Status.TIMED_OUT and hung.seconds < 120
    assert not (parallel.root / "autograded" / "hang" / UNIT).exists()
    assert late.status is Status.GRADED, late.log_tail
    assert cells(parallel.root, "late") == cells(courses.sequential.root, "correct")
    # Dask keeps one scratch folder of its own in the temporary folder, the same for every run.
    left = sorted(p.name for p in tmp_path.iterdir() if p.name != "dask-scratch-space")
    assert left == [], "the killed command left its kernel's scratch folders behind"


def test_batches_are_even_a_multiple_of_the_jobs_and_never_above_the_most_per_job():
    for size in (1, 2, 7, 8, 17, 300):
        students = [f"s{i:03}" for i in range(size)]
        for jobs in (1, 2, 3):
            split = batches(students, jobs)
            assert sorted(s for batch in split for s in batch) == students
            assert max(map(len, split)) <= MOST_PER_JOB and max(map(len, split)) - min(map(len, split)) <= 1
            assert len(split) <= size and (len(split) % jobs == 0 or len(split) == size)
    assert batches([f"s{i}" for i in range(8)], 2) == [["s0", "s2", "s4", "s6"], ["s1", "s3", "s5", "s7"]]


def test_parallel_grading_into_a_postgresql_gradebook(courses, tmp_path):
    sequential = courses.sequential.root
    course = tmp_path / "pg-course"
    shutil.copytree(sequential, course, ignore=shutil.ignore_patterns("gradebook.db", "autograded", "feedback"))
    with postgres() as url:
        with (course / "nbgrader_config.py").open("a") as config:
            config.write(f"\nc.CourseDirectory.db_url = {url!r}\n")
        nbgrader(["generate_assignment", UNIT, "--force"], cwd=course)
        graded = autograde_class(course, UNIT, jobs=2, timeout=600)
        assert graded.ok, graded.to_json()
        assert gradebook_entries(course, CLASS) == gradebook_entries(sequential, CLASS)
    assert not (course / "gradebook.db").exists()


def test_without_force_only_new_or_changed_submissions_are_graded_and_each_outcome_has_its_score(courses):
    parallel = courses.parallel
    again = autograde_class(parallel.root, UNIT, jobs=2, force=False, students=list(CLASS))
    assert {o.student: o.status for o in again.outcomes} == dict.fromkeys(CLASS, Status.UNCHANGED)
    expected = gradebook_entries(parallel.root, CLASS)
    for o in again.outcomes:
        assert o.score == sum(score for (s, _), (score, _, _) in expected.items() if s == o.student), o
        assert o.waiting == sum(1 for (s, _), (_, _, manual) in expected.items() if s == o.student and manual), o
    assert again.speedup is None and "unchanged" in again.to_json()

    time.sleep(1.1)  # a file system that keeps whole seconds
    parallel.submit("blank", UNIT, courses.release)  # blank hands in again
    changed = autograde_class(parallel.root, UNIT, jobs=2, force=False, students=list(CLASS))
    statuses = {o.student: o.status for o in changed.outcomes}
    assert statuses == {"correct": Status.UNCHANGED, "case": Status.UNCHANGED, "blank": Status.GRADED}
    assert changed.speedup is not None and changed.speedup > 0
