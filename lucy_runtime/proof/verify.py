"""Proof that the grader fails every known-bad implementation, through real nbgrader.

For each unit: the reference (release + reference cells) must get full marks, the
blank release zero on every autograded row, every correct alternative full marks,
and every educator case must lose the points of at least the rows expected to
catch it.
"""

from __future__ import annotations

import copy
import json
import os
import shutil
import tempfile
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from enum import StrEnum
from pathlib import Path
from typing import Any

import pandas as pd

from ..notebooks.cells import grade_id, is_learner_owned, is_solution, is_written_answer, row_of, strip_markers
from ..checker.rows import ROWS
from ..errors import EditDoesNotApply, EducatorError, UnknownCase
from ..course.course import REPO, GradedSubmission, ScratchCourse
from ..notebooks.notebook import learner_implementation
from .progress import Progress
from .tables import text_table
from ..notebooks.units import UNITS
from ..educator.alternatives import ALTERNATIVES
from ..educator.cases import CASES, Case
from ..educator.practice_cases import PRACTICE_ALTERNATIVES, PRACTICE_CASES
from .tampers import TAMPERS, AnswerServer, Planted, Tamper


def apply_edits(case: Case | None, grade_id: str, source: str) -> str:
    for edit in case.edits if case else ():  # Edit or tampers.Append
        if edit.cell == grade_id:
            source = edit.apply(source)
    return source


def apply_cell_edits(edits, cell) -> None:
    """Edits that change a cell beyond its source (tampers.Metadata)."""
    for edit in edits:
        if edit.cell == grade_id(cell) and hasattr(edit, "apply_cell"):
            edit.apply_cell(cell)


def filled(release_nb, source_nb, case: Case | None = None):
    """The release as a learner who wrote the reference would hand it in, with ``case`` applied."""
    nb, touched = _filled(release_nb, source_nb, case)
    missing = edited_cells(case) - touched
    if missing and case is not None:
        raise EditDoesNotApply(f"case {case.name!r} edits cells the notebook does not have: {sorted(missing)}")
    return nb


def _filled(release_nb, source_nb, case: Case | None):
    reference = {grade_id(c): c.source for c in source_nb.cells if is_learner_owned(c)}
    nb = copy.deepcopy(release_nb)
    touched = set()
    for cell in nb.cells:
        name = grade_id(cell)
        if is_learner_owned(cell) and name in reference:
            cell.source = strip_markers(apply_edits(case, name, reference[name]))
            apply_cell_edits(case.edits if case else (), cell)
            touched.add(name)
    return nb, touched


def with_written_answers(nb, source_nb):
    """``nb`` with the reference's written answers (markdown solution cells) in place of the stubs."""
    written = {grade_id(c): c.source for c in source_nb.cells if c.cell_type == "markdown" and is_solution(c)}
    for cell in nb.cells:
        if cell.cell_type == "markdown" and grade_id(cell) in written:
            cell.source = written[grade_id(cell)]
    return nb


def edited_cells(case: Case | None) -> set[str]:
    return {e.cell for e in (case.edits if case else ())}


def blank_with(release_nb, edits) -> tuple:
    """The blank release with tamper edits applied to its learner cells and written answers (the stubs
    stay as they are)."""
    nb, touched = copy.deepcopy(release_nb), set()
    for cell in nb.cells:
        for edit in edits:
            if (is_learner_owned(cell) or is_written_answer(cell)) and edit.cell == grade_id(cell):
                cell.source = edit.apply(cell.source)
                apply_cell_edits((edit,), cell)
                touched.add(grade_id(cell))
    return nb, touched


class Kind(StrEnum):
    """What a graded submission is, and so what it must score."""

    REFERENCE = "reference"  # the release filled with the reference: full marks
    BLANK = "blank"  # the release as handed out: zero on every autograded row
    ALTERNATIVE = "alternative"  # a correct arrangement other than the reference: full marks
    CASE = "case"  # a known-bad implementation: loses the points of its expected rows
    TAMPER = "tamper"  # a trick aimed at the grader: never more than the honest submission beneath it


@dataclass
class Entry:
    name: str
    kind: Kind
    unit: str
    expected: tuple[str, ...] = ()
    graded: GradedSubmission | None = None
    honest: str = ""  # for a tamper: the submission it must not outscore

    def __post_init__(self) -> None:
        self.kind = Kind(self.kind)

    @property
    def student(self) -> str:
        """The nbgrader student id this submission is handed in under."""
        return self.name.replace("-", "_")

    @property
    def scored(self) -> GradedSubmission:
        """What nbgrader gave this submission; asking before it was graded is a bug."""
        if self.graded is None:
            raise EducatorError(f"{self.name} ({self.unit}) has not been graded")
        return self.graded

    @property
    def failing_rows(self) -> list[str]:
        return [row_of(g) for g in self.graded.failing] if self.graded else []


@dataclass(frozen=True)
class Handback:
    """What the learners get back and what the educator exports, after autograding."""

    feedback_files: int
    grades_csv: Path
    exported_rows: int


@dataclass
class VerifyReport:
    entries: list[Entry]
    problems: list[str] = field(default_factory=list)
    seconds: float = 0.0
    handback: Handback | None = None
    root: Path | None = None  # the scratch courses, kept for a look at what nbgrader wrote
    answers_fetched: int = 0  # requests the AnswerServer on this machine's loopback got from learner code

    @property
    def ok(self) -> bool:
        return not self.problems

    def grade_table(self) -> str:
        table = pd.DataFrame([{"submission": e.name, "kind": str(e.kind), "unit": e.unit,
                               "score": f"{e.scored.score:g}/{e.scored.max_score:g}", "s": e.scored.seconds,
                               "failing rows": ", ".join(e.failing_rows) or "-"} for e in self.entries])
        return text_table(table, left=("submission", "failing rows"), float_format="{:.1f}".format)

    def kill_matrix(self) -> str:
        """Rows (down) against educator cases (across, numbered), as ``pd.crosstab`` lays them out."""
        cases = [e for e in self.entries if e.kind is Kind.CASE]
        if not cases:
            return "(no educator cases)"
        rows = sorted({r for e in cases for r in e.failing_rows + list(e.expected)})
        marks = pd.DataFrame([{"row": r, "case": number, "mark": _mark(r in e.failing_rows, r in e.expected)}
                              for number, e in enumerate(cases, 1) for r in rows])
        matrix = pd.crosstab(marks["row"], marks["case"], values=marks["mark"], aggfunc="first")
        matrix.index.name, matrix.columns.name = None, None
        legend = [f"{number:>2} {e.name}" for number, e in enumerate(cases, 1)]
        legend.append("X caught by an expected row   + also caught by this row   ! expected to catch, did not")
        return matrix.to_string() + "\n\n" + "\n".join(legend)

    def tampering(self) -> list[tuple[Entry, Entry | None]]:
        """Each tamper entry with the honest entry beneath it (None when that was not graded)."""
        found = {(e.name, e.unit): e for e in self.entries if e.kind is not Kind.TAMPER}
        return [(e, found.get((e.honest, e.unit))) for e in self.entries if e.kind is Kind.TAMPER]

    def tamper_table(self) -> str:
        pairs = self.tampering()
        if not pairs:
            return "(no tamper cases)"
        table = pd.DataFrame([{
            "tamper case": t.name, "unit": t.unit, "score": f"{t.scored.score:g}/{t.scored.max_score:g}",
            "honest base": t.honest,
            "base score": f"{base.scored.score:g}/{base.scored.max_score:g}" if base else "(not graded)",
            "verdict": "held" if base is not None and t.scored.score <= base.scored.score else "FORGED",
        } for t, base in pairs])
        return text_table(table, left=("tamper case", "honest base"))

    def to_json(self) -> str:
        handback = self.handback and {"feedback_files": self.handback.feedback_files,
                                      "grades_csv": str(self.handback.grades_csv),
                                      "exported_rows": self.handback.exported_rows}
        return json.dumps({
            "ok": self.ok, "problems": self.problems, "seconds": self.seconds, "handback": handback,
            "submissions": [{"name": e.name, "kind": e.kind, "unit": e.unit, "score": e.scored.score,
                             "max_score": e.scored.max_score, "failing_rows": e.failing_rows,
                             "expected_rows": list(e.expected), "seconds": e.scored.seconds,
                             **({"honest": e.honest} if e.kind is Kind.TAMPER else {})} for e in self.entries],
        }, indent=2)


def _mark(caught: bool, wanted: bool) -> str:
    return "X" if caught and wanted else "+" if caught else "!" if wanted else "."


def judge(entries: list[Entry]) -> list[str]:
    problems = []
    for e in entries:
        g = e.scored
        if e.kind in (Kind.REFERENCE, Kind.ALTERNATIVE) and not g.full_marks:
            problems.append(f"{e.name} ({e.unit}) should get full marks but got {g.score:g}/{g.max_score:g}: "
                            f"failing {', '.join(e.failing_rows)}")
        if e.kind is Kind.BLANK and g.score != 0:
            problems.append(f"the blank release of {e.unit} earned {g.score:g} points; every autograded row should fail")
        if e.kind is Kind.CASE:
            if not e.failing_rows:
                problems.append(f"case {e.name} SURVIVES: it got full marks")
            missed = [r for r in e.expected if r not in e.failing_rows]
            if missed and e.failing_rows:
                problems.append(f"case {e.name} was caught, but not by the rows expected to catch it: {', '.join(missed)} "
                                f"(caught by {', '.join(e.failing_rows)})")
            elif missed:
                problems.append(f"case {e.name} was not caught by its expected rows {', '.join(missed)}")
    graded = {(e.name, e.unit): e for e in entries if e.kind is not Kind.TAMPER}
    for e in entries:
        if e.kind is not Kind.TAMPER:
            continue
        base = graded.get((e.honest, e.unit))
        if base is None:
            problems.append(f"tamper case {e.name} rides on {e.honest}, which was not graded in this run")
        elif e.scored.score > base.scored.score:
            problems.append(f"tamper case {e.name} FORGED points: {e.scored.score:g} against {base.scored.score:g} "
                            f"for the honest {e.honest} beneath it")
    return problems


def hidden_marks() -> tuple[str, ...]:
    """What a leaked hidden test looks like in feedback HTML: its markers, or a call of a row by id.

    A learner cell may mention ``grade(`` in its own code (a tamper case does); only a
    call that names a row is the hidden part of a test cell.
    """
    calls = [form.format(row) for row in ROWS for form in ('grade("{}")', "grade(&quot;{}&quot;)", "grade(&#34;{}&#34;)")]
    return ("BEGIN HIDDEN TESTS", "END HIDDEN TESTS", *calls)


def hand_back(courses: list[ScratchCourse], entries: list[Entry], root: Path) -> tuple[Handback, list[str]]:
    """``nbgrader generate_feedback`` and ``nbgrader export`` on every scratch course, checked against the grades."""
    graded_units = {e.unit for e in entries if e.graded is not None}

    def one(course: ScratchCourse):
        # A Unit B run carries Unit A into the course without grading it: nbgrader has no feedback to make there.
        graded = [unit for unit in course.units if unit in graded_units]
        html = [path for unit in graded for path in course.feedback(unit)]
        return html, course.export(course.root / "grades.csv")

    with ThreadPoolExecutor(len(courses)) as pool:
        done = list(pool.map(one, courses))
    html = [path for files, _ in done for path in files]
    grades = pd.concat([table for _, table in done], ignore_index=True)
    csv = root / "grades.csv"
    grades.to_csv(csv, index=False)
    problems = [f"the feedback {path.relative_to(root)} shows a hidden test" for path in html
                if any(mark in path.read_text(encoding="utf-8") for mark in hidden_marks())]
    if len(html) != len(entries):
        problems.append(f"generate_feedback wrote {len(html)} feedback files for {len(entries)} submissions")
    exported = {(row.student_id, row.assignment): float(row.raw_score) for row in grades.itertuples()}
    for e in entries:
        if exported.get((e.student, e.unit)) != e.scored.score:
            problems.append(f"the exported grades give {e.name} ({e.unit}) {exported.get((e.student, e.unit))}, "
                            f"the gradebook {e.scored.score:g}")
    return Handback(len(html), csv, len(grades)), problems


def select_for_verify(names: list[str], units: list[str]) -> dict[str, Any]:
    """``verify``'s keyword arguments for ``lucy verify-grader --case NAME --unit UNIT``: the named
    cases, alternatives and tamper cases (with the honest cases the tampers ride on), in the named
    units; everything when nothing is named. UnknownCase for a name nobody knows."""
    every = {c.name: c for c in (*CASES, *PRACTICE_CASES, *ALTERNATIVES, *PRACTICE_ALTERNATIVES)}
    tampers = {t.name: t for t in TAMPERS}
    unknown = [n for n in names if n not in every and n not in tampers]
    if unknown:
        raise UnknownCase(f"no case, alternative or tamper case named {', '.join(map(repr, unknown))} "
                          "(`lucy cases` lists the cases)")
    wanted = set(names) | {tampers[n].honest for n in names if n in tampers}

    def chosen(name: str, unit: str) -> bool:
        return (not names or name in wanted) and (not units or unit in units)

    return {"cases": tuple(c for c in (*CASES, *PRACTICE_CASES) if chosen(c.name, c.unit)),
            "alternatives": tuple(c for c in (*ALTERNATIVES, *PRACTICE_ALTERNATIVES) if chosen(c.name, c.unit)),
            "tampers": tuple(t for t in TAMPERS if chosen(t.name, t.unit)),
            "units": tuple(units) if units else (tuple(sorted({every.get(n, tampers.get(n)).unit for n in names}))  # type: ignore[union-attr]
                                                 if names else None)}


def verify(*, cases: tuple[Case, ...] = CASES + PRACTICE_CASES,
           alternatives: tuple[Case, ...] = ALTERNATIVES + PRACTICE_ALTERNATIVES,
           tampers: tuple[Tamper, ...] = TAMPERS, workdir: Path | None = None, progress: Progress | None = None,
           workers: int = 2, feedback: bool = True, units: tuple[str, ...] | None = None,
           keep: bool = True) -> VerifyReport:
    """Autograde every submission through nbgrader, ``workers`` scratch courses at a time.

    With ``feedback``, also generate the learners' feedback and export the grades as CSV,
    and check both against the gradebook. ``units`` limits the run to some units (all by
    default); Unit B brings Unit A's assignment along, since its submissions carry one.
    Without ``keep``, the scratch courses in a temporary folder of verify's own go when it is
    done (the report's ``root`` is then None); a ``workdir`` of the caller's is always kept.
    """
    started = time.monotonic()
    root = Path(workdir or tempfile.mkdtemp(prefix="lucy-verify-"))
    try:
        report = _verify_in(root, cases, alternatives, tampers, progress, workers, feedback, units, started)
    finally:
        if workdir is None and not keep:
            shutil.rmtree(root, ignore_errors=True)
    if workdir is None and not keep:
        report.root = None
    return report


def _verify_in(root: Path, cases: tuple[Case, ...], alternatives: tuple[Case, ...], tampers: tuple[Tamper, ...],
               progress: Progress | None, workers: int, feedback: bool, units: tuple[str, ...] | None,
               started: float) -> VerifyReport:
    first = ScratchCourse(root / "course-0", repo=REPO, units=_with_carried(units))
    with (first.root / "nbgrader_config.py").open("a") as config:
        # The sleeping tamper case is stopped after 30 s instead of the course's 120: no honest cell comes near.
        config.write("\nc.Execute.timeout = 30\n")
    courses = [first] + [first.copy(root / f"course-{i}") for i in range(1, workers)]
    answers = AnswerServer(learner_implementation(REPO / "source" / "ch07_unit_a"))
    with answers:
        entries, problems = _grade_all(courses, cases, alternatives, tampers, units, progress, workers, answers.url)
    if answers.fetched:
        problems.append(f"learner code reached the network: the answer server on this machine's loopback "
                        f"answered {len(answers.fetched)} request(s) (tamper case fetch-the-answer)")
    handback = None
    if feedback:
        if progress:
            progress.say("generating feedback and exporting grades")
        handback, more = hand_back(courses, entries, root)
        problems += more
    return VerifyReport(entries, problems, round(time.monotonic() - started, 1), handback, root, len(answers.fetched))


def _grade_all(courses: list[ScratchCourse], cases: tuple[Case, ...], alternatives: tuple[Case, ...],
               tampers: tuple[Tamper, ...], units: tuple[str, ...] | None, progress: Progress | None, workers: int,
               answer_url: str) -> tuple[list[Entry], list[str]]:
    """Every entry graded through nbgrader in ``courses``, and what ``judge`` finds wrong."""
    first = courses[0]
    by_name = {c.name: c for c in (*cases, *alternatives)}
    every_case = {c.name: c for c in CASES}
    for t in tampers:
        by_name[t.name] = t.as_case(every_case.get(t.honest), answer_url)
    graded_units = [u for u in first.units if units is None or u in units]
    # Each course takes every workers-th entry of each unit and grades its units in order,
    # never waiting for the other courses: Unit B's entries are handed in after that course's
    # Unit A is graded, so the Unit A each of them carries is not graded as a submission too.
    entries: list[Entry] = []
    placed: list[dict[str, list[Entry]]] = [{unit: [] for unit in graded_units} for _ in courses]
    for unit in graded_units:
        unit_entries = [Entry("reference", Kind.REFERENCE, unit), Entry("blank-release", Kind.BLANK, unit)]
        unit_entries += [Entry(c.name, Kind.ALTERNATIVE, unit) for c in alternatives if c.unit == unit]
        unit_entries += [Entry(c.name, Kind.CASE, unit, c.expected) for c in cases if c.unit == unit]
        unit_entries += [Entry(t.name, Kind.TAMPER, unit, honest=t.honest) for t in tampers if t.unit == unit]
        for index, entry in enumerate(unit_entries):
            placed[index % workers][unit].append(entry)
        entries += unit_entries
    lock, done = threading.Lock(), [0]

    def grade_in(i: int) -> None:
        course = courses[i]
        for unit, mine in placed[i].items():
            if not mine:
                continue
            students = {entry.student: entry for entry in mine}
            for entry in mine:
                _submit(course, entry.student, entry, by_name.get(entry.name))
            began: dict[str, float] = {}
            current: list[str | None] = [None]

            def tick(student: str) -> None:
                now = time.monotonic()
                with lock:
                    if current[0] is not None:
                        began[current[0]] = now - began[current[0]]
                    current[0], began[student] = student, now
                    done[0] += 1
                    if progress and student in students:
                        progress.update(done[0], len(entries), f"{unit}: {students[student].name}")

            course.autograde(unit, on_student=tick)
            if current[0] is not None:
                began[current[0]] = time.monotonic() - began[current[0]]
            for student, entry in students.items():
                entry.graded = course.graded(unit, student, name=entry.name, seconds=round(began.get(student, 0.0), 1))

    with ThreadPoolExecutor(workers) as graders:
        list(graders.map(grade_in, range(workers)))
    return entries, judge(entries)


def _with_carried(units: tuple[str, ...] | None) -> tuple[str, ...]:
    """The assignments a scratch course needs for ``units``: Unit B's submissions carry a Unit A."""
    if units is None:
        return UNITS
    return tuple(u for u in UNITS if u in units or (u == "ch07_unit_a" and "ch07_unit_b" in units))


def handed_in(entry: Entry, case: Case | None, release: Callable[[str], Any], source: Callable[[str], Any]) -> dict[str, Any]:
    """unit → the notebook ``entry`` hands in, given each unit's release and source notebook.

    Unit B comes with the learner's own Unit A (Unit B runs it), written as the same learner wrote it."""
    units = ("ch07_unit_a", entry.unit) if entry.unit == "ch07_unit_b" else (entry.unit,)
    if entry.kind is Kind.BLANK:
        return {unit: release(unit) for unit in units}
    if entry.kind is Kind.TAMPER and entry.honest == "blank-release":
        return {unit: blank_with(release(unit), case.edits if case else ())[0] for unit in units}
    notebooks, touched = {}, set()
    for unit in units:
        notebooks[unit], cells = _filled(release(unit), source(unit), case)
        touched |= cells
    missing = edited_cells(case) - touched
    if missing:
        raise EditDoesNotApply(f"case {entry.name!r} edits cells no notebook has: {sorted(missing)}")
    return notebooks


def _submit(course: ScratchCourse, student: str, entry: Entry, case: Case | None) -> None:
    """Hand in ``entry``'s notebooks under ``student`` in ``course``; a tamper case's planted links
    and FIFOs go through collect's copy (``grading/exchange.py``), as from the exchange."""
    planted = next((t.planted for t in TAMPERS if t.name == entry.name), ()) if entry.kind is Kind.TAMPER else ()
    for unit, nb in handed_in(entry, case, course.release, course.source).items():
        folder = course.submit(student, unit, nb)
        if planted and unit == entry.unit:
            _through_collect(course, folder, unit, planted)


def _through_collect(course: ScratchCourse, folder: Path, unit: str, planted: tuple[Planted, ...]) -> None:
    from ..grading.exchange import collect_handin  # noqa: PLC0415 - nbgrader's exchange loads its gradebook
    from ..grading.handin import HandinLimits  # noqa: PLC0415 - beside it

    inbound = folder.with_name(f"{unit}.inbound")
    folder.rename(inbound)
    targets = {"source": course.root / "source" / unit / f"{unit}.ipynb", "gradebook": course.root / "gradebook.db"}
    for p in planted:
        (inbound / p.name).unlink(missing_ok=True)
        if p.kind == "link":
            (inbound / p.name).symlink_to(targets[p.target])
        else:
            os.mkfifo(inbound / p.name)
    collect_handin(inbound, folder, HandinLimits(), course.root / "release" / unit)
    shutil.rmtree(inbound)
