"""Grade every collected submission again with the current grader, learner by learner, on the record.

``regrade(course, assignment, reason)`` is what a course team runs when a row was found
wrong mid-term (fixed in the grader, or waived with ``c.SealedVerdicts.waived_rows``):

1. It notes every learner's grades as they are (each cell's score, manual score and
   "needs manual grade" flag) and the score of any feedback already generated for them
   (``feedback/<student>/<assignment>/``: what the learner was shown).
2. It copies the course into a scratch course beside it (``.lucy/regrade/<assignment>``:
   configuration, source, release, the submissions, the gradebook) and grades every
   submission there with ``autograde_class``: real nbgrader, as ``lucy autograde``.
   Nothing in the course has changed yet; an interruption here leaves it as it was.
3. A learner whose score would fall below the score their feedback shows is not
   lowered silently: without a decision (:class:`Released`) the regrade stops here,
   names them and changes nothing. ``KEEP_HIGHER`` gives each of their lowered cells
   its former score as a manual score (as an educator's override in formgrader);
   ``LOWER_WITH_NOTE`` lowers it and writes the reason beside each lowered row, in the
   notebook their next feedback is generated from.
4. It swaps the new grades in one learner at a time: that learner's gradebook rows in
   one transaction, then their autograded folder by rename. A journal
   (``.lucy/regrade/<assignment>.json``) says who is done; a regrade interrupted while
   swapping finishes when it is run again, and one interrupted before starts again.
   A learner whose grades did not change is left untouched.
5. It appends what it did (when, why, the decision, every learner's score before and
   after and the cells whose score moved) as one JSON line to ``regrades.jsonl`` in the
   course folder.

Manual scores are never lost: nbgrader keeps them, and ``SaveAutoGradesKeepingManual``
keeps a written answer graded when its text did not change.
"""

from __future__ import annotations

import datetime as dt
import json
import os
import re
import shutil
import tempfile
from dataclasses import asdict, dataclass, field
from enum import Enum
from pathlib import Path
from typing import Callable

import nbformat

from ..errors import NothingToGrade
from ..grading.gradebook import course_db_url, migrate
from ..grading.late_work import apply_due_dates
from ..grading.manual_grades import ANSWERS
from ..notebooks.cells import row_of
from .history import record_run
from .parallel import Outcome, Status, autograde_class, submitted_students

LOG = "regrades.jsonl"
"""The record of every regrade, one JSON object a line, in the course folder."""

WORK = Path(".lucy") / "regrade"


class Released(Enum):
    """What to do with a learner whose regraded score is below the one their feedback already shows."""

    KEEP_HIGHER = "keep-higher"
    LOWER_WITH_NOTE = "lower-with-note"


@dataclass(frozen=True)
class Cell:
    """One grade of a submission, as the gradebook holds it."""

    score: float
    max_score: float
    auto: float | None
    manual: float | None
    needs_manual: bool


@dataclass(frozen=True)
class Grades:
    """One learner's submission in the gradebook: notebook → grade id → cell, and each notebook's extras."""

    cells: dict[str, dict[str, Cell]]
    comments: dict[str, dict[str, str | None]] = field(default_factory=dict)
    penalties: dict[str, float | None] = field(default_factory=dict)
    timestamp: str | None = None

    @property
    def score(self) -> float:
        """nbgrader's score of the submission (before any late penalty, as feedback shows it)."""
        return round(sum(c.score for nb in self.cells.values() for c in nb.values()), 6)

    @property
    def max_score(self) -> float:
        return sum(c.max_score for nb in self.cells.values() for c in nb.values())


@dataclass(frozen=True)
class Change:
    """A cell whose score moved."""

    notebook: str
    cell: str
    before: float
    after: float


@dataclass(frozen=True)
class LearnerRegrade:
    student: str
    before: float
    after: float
    max_score: float
    changes: tuple[Change, ...]
    released: float | None  # the score their generated feedback shows, when there is feedback
    decision: str = ""  # for a lowered released score: what was done about it

    @property
    def lowered_below_released(self) -> bool:
        return self.released is not None and self.after < self.released - 1e-9


@dataclass(frozen=True)
class Regrade:
    assignment: str
    reason: str
    learners: tuple[LearnerRegrade, ...]
    not_graded: tuple[Outcome, ...]
    never_graded: tuple[str, ...] = ()  # submissions never autograded: `lucy autograde` grades them first
    stopped: str = ""  # why nothing was changed (a released score would fall and no decision was given)
    resumed: bool = False
    log: Path | None = None

    @property
    def changed(self) -> tuple[LearnerRegrade, ...]:
        return tuple(x for x in self.learners if x.changes)


def read_grades(db_url: str, assignment: str, students: list[str]) -> dict[str, Grades]:
    """Each student's submission of ``assignment`` as the gradebook at ``db_url`` holds it (absent when none)."""
    from nbgrader.api import Gradebook, MissingEntry  # noqa: PLC0415 - deferred: nbgrader takes seconds to import

    found = {}
    with Gradebook(db_url) as gb:
        for student in students:
            try:
                sub = gb.find_submission(assignment, student)
            except MissingEntry:
                continue
            found[student] = Grades(
                {nb.name: {g.name: Cell(float(g.score or 0.0), float(g.max_score or 0.0), g.auto_score, g.manual_score,
                                        bool(g.needs_manual_grade)) for g in nb.grades} for nb in sub.notebooks},
                {nb.name: {c.name: c.auto_comment for c in nb.comments} for nb in sub.notebooks},
                {nb.name: nb.late_submission_penalty for nb in sub.notebooks},
                str(sub.timestamp))
    return found


def _grades_from_json(data: dict) -> Grades:
    return Grades({nb: {name: Cell(**cell) for name, cell in cells.items()} for nb, cells in data["cells"].items()},
                  data.get("comments", {}), data.get("penalties", {}), data.get("timestamp"))


FEEDBACK_SCORE = re.compile(r"\(Score: ([0-9.]+) / ([0-9.]+)\)")


def released_score(root: Path, assignment: str, student: str) -> float | None:
    """The score the learner's generated feedback shows: the first "(Score: X / Y)" of each notebook's page,
    which nbgrader's feedback template writes above any learner content. None when there is no feedback."""
    pages = sorted((root / "feedback" / student / assignment).glob("*.html"))
    scores = []
    for page in pages:
        found = FEEDBACK_SCORE.search(page.read_text(encoding="utf-8", errors="replace"))
        if found:
            scores.append(float(found.group(1)))
    return round(sum(scores), 6) if scores else None


def changes(before: Grades | None, after: Grades) -> tuple[Change, ...]:
    moved = []
    for notebook, cells in sorted(after.cells.items()):
        for name, cell in sorted(cells.items()):
            old = before.cells.get(notebook, {}).get(name) if before else None
            if old is None or abs(old.score - cell.score) > 1e-9:
                moved.append(Change(notebook, name, old.score if old else 0.0, cell.score))
    return tuple(moved)


def _same(before: Grades | None, after: Grades) -> bool:
    return before is not None and before.cells == after.cells and before.penalties == after.penalties


def _atomic_json(path: Path, data) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    handle, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}-")
    with os.fdopen(handle, "w", encoding="utf-8") as out:
        json.dump(data, out, indent=1)
        out.flush()
        os.fsync(out.fileno())
    os.replace(tmp, path)


def scratch_course(root: Path, assignment: str, students: list[str], scratch: Path) -> None:
    """A copy of the course at ``root`` in ``scratch`` with its own SQLite gradebook, filled from the course's."""
    shutil.rmtree(scratch, ignore_errors=True)
    scratch.mkdir(parents=True)
    for config in root.glob("*.py"):  # nbgrader_config.py and any module of the course's own it imports
        shutil.copy(config, scratch / config.name)
    gradebook = scratch / "gradebook.db"
    with (scratch / "nbgrader_config.py").open("a", encoding="utf-8") as out:
        out.write(f"\n# lucy regrade: this scratch course grades into its own copy of the gradebook\n"
                  f"c.CourseDirectory.root = {str(scratch)!r}\n"
                  f"c.CourseDirectory.db_url = {f'sqlite:///{gradebook}'!r}\n")
    for area in ("source", "release"):
        if (root / area / assignment).is_dir():
            shutil.copytree(root / area / assignment, scratch / area / assignment, symlinks=True)
    for student in students:
        shutil.copytree(root / "submitted" / student / assignment, scratch / "submitted" / student / assignment,
                        symlinks=True)
    if (root / ANSWERS / assignment).is_dir():
        shutil.copytree(root / ANSWERS / assignment, scratch / ANSWERS / assignment)
    migrate(course_db_url(root), f"sqlite:///{gradebook}")


def _apply_decision(scratch_url: str, scratch: Path, assignment: str, learner: LearnerRegrade, before: Grades,
                    decision: Released, reason: str) -> None:
    """In the scratch course: keep a released score (former scores as manual scores), or note why it fell."""
    from nbgrader.api import Gradebook  # noqa: PLC0415

    lowered = [c for c in learner.changes if c.after < c.before]
    if decision is Released.KEEP_HIGHER:
        with Gradebook(scratch_url) as gb:
            for change in lowered:
                grade = gb.find_grade(change.cell, change.notebook, assignment, learner.student)
                grade.manual_score = before.cells[change.notebook][change.cell].score
                grade.needs_manual_grade = False
            gb.db.commit()
        return
    today = dt.date.today().isoformat()
    for notebook in {c.notebook for c in lowered}:
        path = scratch / "autograded" / learner.student / assignment / f"{notebook}.ipynb"
        nb = nbformat.read(str(path), as_version=4)
        for cell in nb.cells:
            name = cell.get("metadata", {}).get("nbgrader", {}).get("grade_id")
            for change in lowered:
                if change.notebook == notebook and change.cell == name and cell.cell_type == "code":
                    cell.outputs.append(nbformat.v4.new_output(
                        "stream", name="stdout",
                        text=f"Regraded on {today}: {reason}\nThis cell's score went from {change.before:g} to "
                             f"{change.after:g} after your feedback was released.\n"))
        nbformat.write(nb, str(path))


def _swap_in(db_url: str, scratch: Path, root: Path, assignment: str, student: str, after: Grades,
             overrides: dict[str, dict[str, float]]) -> None:
    """One learner's new grades into the course: gradebook rows in one transaction, then files by rename."""
    from nbgrader.api import Grade, Gradebook, MissingEntry  # noqa: PLC0415

    with Gradebook(db_url) as gb:
        sub = gb.find_submission(assignment, student)
        for nb in sub.notebooks:
            for name, cell in after.cells.get(nb.name, {}).items():
                try:
                    grade = gb.find_grade(name, nb.name, assignment, student)
                except MissingEntry:  # a cell added to the assignment since this learner was graded
                    grade = Grade(cell=gb.find_grade_cell(name, nb.name, assignment), notebook=nb)
                    gb.db.add(grade)
                grade.auto_score = cell.auto
                grade.needs_manual_grade = cell.needs_manual
                if name in overrides.get(nb.name, {}):
                    grade.manual_score = overrides[nb.name][name]
            for name, text in after.comments.get(nb.name, {}).items():
                try:
                    gb.find_comment(name, nb.name, assignment, student).auto_comment = text
                except MissingEntry:
                    pass
            nb.late_submission_penalty = after.penalties.get(nb.name)
        gb.db.commit()
    for new, dest in ((scratch / "autograded" / student / assignment, root / "autograded" / student / assignment),
                      (scratch / ANSWERS / assignment / student, root / ANSWERS / assignment / student)):
        if not new.exists():
            continue  # moved in already, by a run that was stopped after this step
        dest.parent.mkdir(parents=True, exist_ok=True)
        old = dest.with_name(f".{dest.name}.before-regrade")
        shutil.rmtree(old, ignore_errors=True)
        if dest.exists():
            os.replace(dest, old)
        os.replace(new, dest)
        shutil.rmtree(old, ignore_errors=True)


def record_in_history(history: Path, assignment: str, grades: dict[str, Grades], why: str = "") -> None:
    """A grading run for the class report's history (``history.py``): scores, submission times, row pass counts."""
    rows: dict[str, list[int]] = {}
    for g in grades.values():
        for nb in g.cells.values():
            for name, c in nb.items():
                if name.startswith("row_") and c.auto is not None:
                    count = rows.setdefault(row_of(name), [0, 0])
                    count[0] += (c.auto or 0.0) >= c.max_score
                    count[1] += 1
    record_run(history, assignment, {s: (g.score, g.timestamp or "None") for s, g in grades.items()},
               {r: (p, n) for r, (p, n) in rows.items()}, why)


def _learner_json(x: LearnerRegrade) -> dict:
    return {**asdict(x), "changes": [asdict(c) for c in x.changes]}


def _learner_from_json(data: dict) -> LearnerRegrade:
    return LearnerRegrade(data["student"], data["before"], data["after"], data["max_score"],
                          tuple(Change(**c) for c in data["changes"]), data["released"], data.get("decision", ""))


def _read_journal(path: Path) -> dict | None:
    """The journal of a regrade stopped while swapping in; None when there is none or it cannot be read."""
    if not path.exists():
        return None
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except ValueError:
        return None


def _graded_before(root: Path, db_url: str, assignment: str) -> tuple[list[str], dict[str, Grades], list[str]]:
    """The learners to grade again and their grades as they are, and those whose submission was never graded."""
    students = submitted_students(root, assignment)
    if not students:
        raise NothingToGrade(f"no submission of {assignment!r} under {root / 'submitted'}")
    apply_due_dates(root)
    before = read_grades(db_url, assignment, students)
    never = [s for s in students if s not in before]
    students = [s for s in students if s in before]
    if not students:
        raise NothingToGrade(f"no submission of {assignment!r} was graded before: `lucy autograde {assignment}` "
                             "grades them the first time")
    return students, before, never


@dataclass
class _Regraded:
    """The class graded again in the scratch course, before anything in the course has changed."""

    scratch_url: str
    before: dict[str, Grades]
    after: dict[str, Grades]
    learners: list[LearnerRegrade]
    never: list[str]
    unfinished: tuple[Outcome, ...]


def _grade_in_scratch(root: Path, db_url: str, assignment: str, scratch: Path, *, jobs: int, timeout: float,
                      on_done: Callable[[Outcome, int, int], None] | None, scheduler: str | None) -> _Regraded:
    """Steps 1 and 2: every learner's grades now, and their grades from the current grader in a scratch course."""
    students, before, never = _graded_before(root, db_url, assignment)
    scratch_course(root, assignment, students, scratch)
    graded = autograde_class(scratch, assignment, jobs=jobs, timeout=timeout, on_done=on_done, force=True,
                             scheduler=scheduler)
    scratch_url = course_db_url(scratch)
    ok = [o.student for o in graded.outcomes if o.status is Status.GRADED]
    after = read_grades(scratch_url, assignment, ok)
    learners = [LearnerRegrade(s, before[s].score if s in before else 0.0, after[s].score, after[s].max_score,
                               changes(before.get(s), after[s]), released_score(root, assignment, s))
                for s in sorted(after)]
    return _Regraded(scratch_url, before, after, learners, never, graded.unfinished)


def _why_stopped(falling: list[LearnerRegrade]) -> str:
    return (f"{len(falling)} learner{'s' if len(falling) != 1 else ''} would score less than the feedback they "
            f"were given shows ({', '.join(x.student for x in falling)}): nothing was changed. Run again with "
            "--released keep-higher (their former scores stay, as manual scores) or --released lower-with-note "
            "(lowered, with the reason beside each lowered row in their next feedback).")


def _former_scores(learner: LearnerRegrade) -> dict[str, dict[str, float]]:
    """notebook → cell → the score before, for each of the learner's cells whose score fell."""
    kept: dict[str, dict[str, float]] = {}
    for change in learner.changes:
        if change.after < change.before:
            kept.setdefault(change.notebook, {})[change.cell] = change.before
    return kept


def _decide(regraded: _Regraded, scratch: Path, assignment: str, released: Released | None,
            reason: str) -> dict[str, dict[str, dict[str, float]]]:
    """Step 3: the decision applied, in the scratch course, to each learner whose released score would fall
    (their entry in ``regraded`` updated); the former scores kept as manual scores, student → notebook → cell."""
    overrides: dict[str, dict[str, dict[str, float]]] = {}
    for i, x in enumerate(regraded.learners):
        if x.lowered_below_released and released is not None:
            _apply_decision(regraded.scratch_url, scratch, assignment, x, regraded.before[x.student], released, reason)
            kept = _former_scores(x) if released is Released.KEEP_HIGHER else {}
            if kept:
                overrides[x.student] = kept
            new = read_grades(regraded.scratch_url, assignment, [x.student])[x.student]
            regraded.learners[i] = LearnerRegrade(x.student, x.before, new.score, x.max_score, x.changes, x.released,
                                                  "kept the higher score" if released is Released.KEEP_HIGHER
                                                  else "lowered, with a note in the feedback")
            regraded.after[x.student] = new
    return overrides


def _journal(regraded: _Regraded, reason: str, released: Released | None,
             overrides: dict[str, dict[str, dict[str, float]]]) -> dict:
    """What step 4 needs to finish after a stop: the new grades, who to swap in, who is done."""
    before, after = regraded.before, regraded.after
    return {"reason": reason, "released": released.value if released else None,
            "started": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"),
            "learners": [_learner_json(x) for x in regraded.learners],
            "after": {s: asdict(g) for s, g in after.items()},
            "before": {s: asdict(g) for s, g in before.items() if s in after},
            "overrides": overrides,
            "swap": [x.student for x in regraded.learners if not _same(before.get(x.student), after[x.student])],
            "done": [], "not_graded": [o.student for o in regraded.unfinished], "never_graded": regraded.never}


def _swap_in_remaining(journal: dict, journal_path: Path, db_url: str, scratch: Path, root: Path,
                       assignment: str) -> None:
    """Step 4: each learner the journal names and has not marked done swapped in, and marked done."""
    for student in journal["swap"]:
        if student in journal["done"]:
            continue
        _swap_in(db_url, scratch, root, assignment, student, _grades_from_json(journal["after"][student]),
                 journal["overrides"].get(student, {}))
        journal["done"].append(student)
        _atomic_json(journal_path, journal)


def _record_runs(history: Path, assignment: str, journal: dict, reason: str) -> None:
    """The class before and after, as two grading runs in the class report's history."""
    before_grades = {s: _grades_from_json(g) for s, g in journal["before"].items()}
    after_grades = {**before_grades, **{s: _grades_from_json(g) for s, g in journal["after"].items()}}
    record_in_history(history, assignment, before_grades)
    record_in_history(history, assignment, after_grades, f"regrade: {reason}")


def _append_to_log(log: Path, assignment: str, reason: str, journal: dict, resumed: bool,
                   learners: list[LearnerRegrade]) -> None:
    """Step 5: the regrade's line in ``regrades.jsonl``."""
    entry = {"at": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"), "assignment": assignment,
             "reason": reason, "released": journal["released"], "started": journal["started"], "resumed": resumed,
             "changed": [_learner_json(x) for x in learners if x.changes],
             "unchanged": [x.student for x in learners if not x.changes],
             "not_graded": journal["not_graded"]}
    with log.open("a", encoding="utf-8") as out:
        out.write(json.dumps(entry) + "\n")


def regrade(root: Path, assignment: str, reason: str, *, released: Released | None = None, jobs: int = 2,
            timeout: float = 900, on_done: Callable[[Outcome, int, int], None] | None = None,
            scheduler: str | None = None) -> Regrade:
    """Grade every submission of ``assignment`` again; see the module's docstring for the steps."""
    root = Path(root).resolve()
    db_url = course_db_url(root)
    work = root / WORK
    journal_path, scratch = work / f"{assignment}.json", work / assignment
    journal = _read_journal(journal_path)
    if journal is None:
        regraded = _grade_in_scratch(root, db_url, assignment, scratch, jobs=jobs, timeout=timeout, on_done=on_done,
                                     scheduler=scheduler)
        falling = [x for x in regraded.learners if x.lowered_below_released]
        if falling and released is None:
            shutil.rmtree(scratch, ignore_errors=True)
            return Regrade(assignment, reason, tuple(regraded.learners), regraded.unfinished,
                           never_graded=tuple(regraded.never), stopped=_why_stopped(falling))
        overrides = _decide(regraded, scratch, assignment, released, reason)
        journal = _journal(regraded, reason, released, overrides)
        _atomic_json(journal_path, journal)  # from here on, a stopped regrade is finished by running it again
        not_graded = regraded.unfinished
        resumed = False
    else:
        reason = journal["reason"]
        not_graded = tuple(Outcome(s, Status.FAILED, 0.0) for s in journal["not_graded"])
        resumed = True
    _swap_in_remaining(journal, journal_path, db_url, scratch, root, assignment)
    learners = [_learner_from_json(x) for x in journal["learners"]]
    _record_runs(root / "reports" / "history.json", assignment, journal, reason)
    log = root / LOG
    _append_to_log(log, assignment, reason, journal, resumed, learners)
    shutil.rmtree(scratch, ignore_errors=True)
    journal_path.unlink()
    return Regrade(assignment, reason, tuple(learners), tuple(not_graded), never_graded=tuple(journal["never_graded"]),
                   resumed=resumed, log=log)
