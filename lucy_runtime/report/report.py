"""What the class did: one report an educator reads before the next session.

``class_report(course, assignments)`` reads what grading left behind and nothing else:
the gradebook (``grades.py``: nbgrader's API, SQLite or PostgreSQL), the sealed verdicts
in the autograded notebooks (each failing row's observation and hint), the evidence
files handed in beside the notebooks, and the checkpoint records. It runs no learner
code. Each failing submission's set of failing rows is matched against the educator
cases' signatures (``signatures.py``: measured once, cached). ``history.py`` keeps each
learner's score per grading run, so a report after a resubmission shows how the class
moved. ``report_html.py`` draws it and writes the files.
"""

from __future__ import annotations

import csv
import io
import json
import re
import time
from collections import Counter, defaultdict
from dataclasses import dataclass
from pathlib import Path

from ..notebooks.cells import row_of
from ..course.course import REPO
from ..errors import NothingToGrade
from ..grading.gradebook import course_db_url, course_id
from ..educator.cases import CASES, Case
from ..course.history import Movement, Run, record_run
from ..educator.practice_cases import PRACTICE_CASES
from ..educator.predictions import KEYS, EvidenceFile, PromptResult, judge, prompts, read_evidence
from ..proof.signatures import Signatures, load, unit_rows
from .grades import SubmissionGrades, read_gradebook

GUIDE = REPO / "chapters" / "ch07" / "educator-guide.md"
MISCONCEPTION_OF = {
    "admit-check-then-act": "Check, then act",
    "delivery-resends-unknown": "A timeout means it failed",
    "refusal-stored-as-unknown": "A timeout means it failed",
    "reconcile-by-resending": "A timeout means it failed",
    "reconcile-resends-after-retention": "No receipt means it never arrived",
    "practice-timeout-is-failure": "A timeout means it failed",
    "fresh-idempotency-key": "A new key for each retry is safer",
    "per-attempt-key": "A new key for each retry is safer",
    "practice-per-attempt-key": "A new key for each retry is safer",
    "practice-publish-per-attempt-key": "A new key for each retry is safer",
    "delivery-confirms-before-send": "An outbox gives exactly-once delivery",
    "message-not-authorized": "Deduplication proves who sent it",
    "requeue-keeps-generation": "Requeue is a retry",
    "work-stuck-after-model-error": "Catching the model's error is handling it",
    "later-report-overtakes": "A 429 is about the report",
    "chat-held-by-due-time": "A 429 is about the report",
}
"""An educator case → the educator guide's *Common misconceptions* entry behind it (where one clearly is)."""

OBSERVATION_GROUPS = 3  # observations shown per failing row
FAILING_ROWS_DETAILED = 5  # the most failed rows get their observations


@dataclass(frozen=True)
class Verdict:
    """A row's sealed verdict, as the autograded notebook holds it."""

    row: str
    passed: bool
    observation: str
    hint: str


@dataclass(frozen=True)
class ObservationGroup:
    observation: str
    learners: int
    hint: str


@dataclass(frozen=True)
class RowShare:
    row: str
    passed: int
    graded: int
    observations: tuple[ObservationGroup, ...]

    @property
    def share(self) -> float:
        return self.passed / self.graded if self.graded else 0.0


@dataclass(frozen=True)
class Learner:
    student: str
    assignment: str
    score: float
    max_score: float
    auto_score: float
    auto_max: float
    to_grade: int  # written answers still waiting for a manual score
    failing: tuple[str, ...]
    matched: str  # the group the learner's failing rows fall in (see Group.label)
    evidence: str  # "ok", "missing", "malformed: …"
    checkpoint: str  # "ready", "not ready" or "" (no record)
    late_penalty: float = 0.0  # points the late policy took (nbgrader's late_submission_penalty); score is before it


@dataclass(frozen=True)
class Group:
    """Learners whose failing rows fall together: one case (or cases with equal signatures), no known case, …"""

    kind: str  # "case", "none" (matches no known case), "all" (fails every row), "pass" (fails none)
    cases: tuple[str, ...]
    students: tuple[str, ...]
    description: str = ""
    teaching: str = ""
    guide_note: str = ""
    closest: tuple[tuple[str, str, str], ...] = ()  # kind "none": (student, case, how it differs) when clearly close

    @property
    def label(self) -> str:
        if self.kind == "case":
            return " or ".join(self.cases)
        return {"none": "matches no known case", "all": "fails every row", "pass": "passes every row"}[self.kind]


@dataclass(frozen=True)
class Part:
    """The report on one assignment."""

    assignment: str
    rows: tuple[RowShare, ...]  # sorted: the least passed first
    groups: tuple[Group, ...]
    predictions: tuple[PromptResult, ...]
    evidence_problems: tuple[tuple[str, str], ...]  # (student, "missing" / "malformed: …")
    learners: tuple[Learner, ...]
    not_handed_in: tuple[str, ...]
    runs: tuple[Run, ...]
    movement: Movement | None
    problems: tuple[str, ...]


@dataclass(frozen=True)
class ClassReport:
    course: str
    parts: tuple[Part, ...]
    roster: tuple[str, ...]  # every id, name and email the gradebook holds: what the anonymized edition scrubs
    signatures_stale: bool
    seconds: float = 0.0
    late_policy: str = ""

    def csv(self) -> str:
        out = io.StringIO()
        writer = csv.writer(out, lineterminator="\n")
        writer.writerow(["student", "assignment", "score", "max_score", "autograded_score", "autograded_max",
                         "written_answers_to_grade", "failing_rows", "matched_case", "evidence", "checkpoint",
                         "late_penalty"])
        for part in self.parts:
            for x in part.learners:
                writer.writerow([x.student, x.assignment, f"{x.score:g}", f"{x.max_score:g}", f"{x.auto_score:g}",
                                 f"{x.auto_max:g}", x.to_grade, " ".join(x.failing), x.matched, x.evidence,
                                 x.checkpoint, f"{x.late_penalty:g}"])
        return out.getvalue()


def read_verdicts(notebook: Path) -> dict[str, Verdict]:
    """row → the sealed verdict an autograded notebook holds (empty when the file is missing or unreadable)."""
    try:
        cells = json.loads(notebook.read_text(encoding="utf-8")).get("cells", [])
    except (OSError, ValueError, AttributeError):
        return {}
    verdicts = {}
    for cell in cells:
        name = cell.get("metadata", {}).get("nbgrader", {}).get("grade_id", "")
        if not name.startswith("row_") or cell.get("cell_type") != "code":
            continue
        row = row_of(name)
        for out in cell.get("outputs", []):
            if out.get("output_type") == "stream" and "".join(out.get("text", "")).startswith("✔"):
                verdicts[row] = Verdict(row, True, "", "")
            elif out.get("output_type") == "error":
                observation = str(out.get("evalue", "")).removeprefix(f"{row}: ")
                hints = [line.strip().removeprefix("Hint: ") for line in out.get("traceback", [])
                         if line.strip().startswith("Hint: ")]
                verdicts[row] = Verdict(row, False, observation, hints[0] if hints else "")
    return verdicts


def group_observation(text: str) -> str:
    """An observation as it is grouped: generated ids and long numbers made alike."""
    text = re.sub(r"\b[0-9a-f]{8}-[0-9a-f-]{27}\b", "…", text)
    text = re.sub(r"\b(?=\w*\d)[0-9a-f]{8,}\b", "…", text)
    return re.sub(r"\d{4,}", "…", text)


def checkpoint_status(records: Path, students: list[str]) -> dict[str, str]:
    """student → "ready" / "not ready" from the newest checkpoint record whose notebook folder names them."""
    status: dict[str, str] = {}
    wanted = set(students)
    for path in sorted(records.glob("ch07-*.json")):  # names sort by time: the newest wins
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
            parts = set(Path(str(data["notebooks"])).parts)
            ready = bool(data["ready"])
        except (OSError, ValueError, KeyError, TypeError):
            continue
        for student in parts & wanted:
            status[student] = "ready" if ready else "not ready"
    return status


def guide_notes(guide: Path = GUIDE) -> dict[str, str]:
    """The educator guide's *Common misconceptions*: title → its note."""
    try:
        text = guide.read_text(encoding="utf-8")
    except OSError:
        return {}
    section = text.split("## Common misconceptions", 1)[-1].split("\n## ", 1)[0]
    notes = {}
    for item in re.split(r"\n\* ", "\n" + section.strip()):
        found = re.match(r'\*\*"(.+?)\.?"\*\*\s*(.*)', item.strip(), re.S)
        if found:
            notes[found.group(1).rstrip(".")] = " ".join(found.group(2).split())
    return notes


def _closeness(failing: frozenset[str], signature: frozenset[str]) -> str | None:
    """How ``failing`` differs from a case's signature, when it is clearly close (else None)."""
    extra, missing = sorted(failing - signature), sorted(signature - failing)
    union = failing | signature
    if not union or len(extra) + len(missing) > max(1, len(union) // 5):
        return None
    said = ([f"also fails {', '.join(extra)}"] if extra else []) + ([f"passes {', '.join(missing)}"] if missing else [])
    return "; ".join(said)


def is_trick(case: Case) -> bool:
    """A case that tampers with the grader rather than gets the work wrong."""
    return case.name.startswith("tamper-")


def _code_lines(notebook: Path) -> set[str]:
    """Every stripped line of the code cells of a notebook file (nothing when it cannot be read)."""
    try:
        cells = json.loads(notebook.read_text(encoding="utf-8")).get("cells", [])
        sources = ["".join(c.get("source", "")) if isinstance(c.get("source"), list) else str(c.get("source", ""))
                   for c in cells if isinstance(c, dict) and c.get("cell_type") == "code"]
    except (OSError, ValueError, AttributeError):
        return set()
    return {line.strip() for text in sources for line in text.splitlines() if line.strip()}


def shows_trick(submitted: Path, case: Case, reference: Path) -> bool:
    """The submission holds every line the trick case adds to the reference: only then is the trick named."""
    added = {line.strip() for e in case.edits for line in e.new.splitlines() if line.strip()} - _code_lines(reference)
    return bool(added) and added <= _code_lines(submitted)


def tricks_shown(course: Path, assignment: str, failing: dict[str, tuple[str, ...]], signatures: Signatures,
                 cases: tuple[Case, ...] = CASES + PRACTICE_CASES) -> dict[str, tuple[str, ...]]:
    """student → the trick cases whose rows they fail and whose code their submission holds."""
    reference = course / "source" / assignment / f"{assignment}.ipynb"
    reference = reference if reference.exists() else REPO / "source" / assignment / f"{assignment}.ipynb"
    tricks = [c for c in cases if is_trick(c) and c.unit == assignment and signatures.failing.get(c.name)]
    found = {}
    for student, rows in failing.items():
        submitted = course / "submitted" / student / assignment / f"{assignment}.ipynb"
        named = tuple(c.name for c in tricks if signatures.failing[c.name] == frozenset(rows)
                      and shows_trick(submitted, c, reference))
        if named:
            found[student] = named
    return found


def _honest_cases_by_signature(unit: str, signatures: Signatures,
                               cases: tuple[Case, ...]) -> dict[frozenset[str], list[Case]]:
    """The unit's cases that fail some row, tricks left out, by the set of rows they fail."""
    by_signature: dict[frozenset[str], list[Case]] = defaultdict(list)
    for case in cases:
        if is_trick(case):
            continue
        if case.unit == unit and case.name in signatures.failing and signatures.failing[case.name]:
            by_signature[signatures.failing[case.name]].append(case)
    return by_signature


def _group_key(rows: frozenset[str], every_row: frozenset[str],
               by_signature: dict[frozenset[str], list[Case]]) -> tuple[str, frozenset[str]]:
    """The kind of group a learner failing ``rows`` falls in, and the failing rows that tell its groups apart."""
    if not rows:
        return ("pass", rows)
    if every_row and rows >= every_row:  # before the cases: a case that fails every row says nothing more
        return ("all", frozenset())
    if rows in by_signature:
        return ("case", rows)
    return ("none", frozenset())


def _closest_case(rows: frozenset[str], by_signature: dict[frozenset[str], list[Case]]) -> tuple[str, str] | None:
    """The case whose failing rows are nearest ``rows`` and how they differ, when one is clearly close."""
    near = [(len(rows ^ sig), cs[0].name, _closeness(rows, sig)) for sig, cs in by_signature.items()]
    near = [n for n in near if n[2] is not None]
    if not near:
        return None
    _, name, how = min(near)
    return name, how or ""


def _case_group(matched: list[Case], students: tuple[str, ...], notes: dict[str, str]) -> Group:
    """The group of learners who fail exactly like ``matched``, with the guide's note on its misconception."""
    note = next((f"{MISCONCEPTION_OF[c.name]}: {notes[MISCONCEPTION_OF[c.name]]}" for c in matched
                 if MISCONCEPTION_OF.get(c.name) in notes), "")
    return Group("case", tuple(c.name for c in matched), students,
                 " / ".join(c.breaks for c in matched), " / ".join(c.teaching for c in matched), note)


def attribute(learners: dict[str, tuple[str, ...]], unit: str, signatures: Signatures,
              cases: tuple[Case, ...] = CASES + PRACTICE_CASES) -> tuple[Group, ...]:
    """Group learners by the educator case their failing rows match exactly, largest group first.

    Failing rows alone cannot tell a trick from the honest mistake it rides on (a tamper that
    rebinds ``grade`` fails exactly like a no-op ``finish``), so a tampering case is never named
    here: the learner is said to fail like the honest case."""
    every_row = frozenset(unit_rows(unit))
    by_signature = _honest_cases_by_signature(unit, signatures, cases)
    notes = guide_notes()
    members: dict[tuple[str, frozenset[str]], list[str]] = defaultdict(list)
    closest = []
    for student, failing in sorted(learners.items()):
        rows = frozenset(failing)
        key = _group_key(rows, every_row, by_signature)
        members[key].append(student)
        near = _closest_case(rows, by_signature) if key[0] == "none" else None
        if near:
            closest.append((student, *near))
    groups = []
    for (kind, rows), students in members.items():
        if kind == "case":
            groups.append(_case_group(by_signature[rows], tuple(students), notes))
            continue
        alike = tuple(c.name for sig, cs in by_signature.items() if sig >= every_row for c in cs) if kind == "all" else ()
        groups.append(Group(kind, alike, tuple(students), closest=tuple(closest) if kind == "none" else ()))
    order = {"case": 0, "none": 1, "all": 2, "pass": 3}
    return tuple(sorted(groups, key=lambda g: (order[g.kind], -len(g.students), g.label)))


def row_shares(grades: dict[str, SubmissionGrades], verdicts: dict[str, dict[str, Verdict]]) -> tuple[RowShare, ...]:
    rows = list(dict.fromkeys(r for g in grades.values() for r in g.rows))
    shares: list[tuple[str, int, int, list[str]]] = []
    for row in rows:
        graded = [s for s, g in grades.items() if row in g.rows]
        failing = [s for s in graded if row in grades[s].failing]
        shares.append((row, len(graded) - len(failing), len(graded), failing))
    shares.sort(key=lambda r: (r[1] / max(r[2], 1), r[0]))
    out = []
    for index, (row, passed, total, failing) in enumerate(shares):
        groups: tuple[ObservationGroup, ...] = ()
        if failing and index < FAILING_ROWS_DETAILED:
            said: Counter[str] = Counter()
            hints: dict[str, Counter[str]] = defaultdict(Counter)
            for student in failing:
                verdict = verdicts.get(student, {}).get(row)
                text = group_observation(verdict.observation) if verdict else "(no sealed verdict in the notebook)"
                said[text] += 1
                if verdict:
                    hints[text][verdict.hint] += 1
            groups = tuple(ObservationGroup(text, n, hints[text].most_common(1)[0][0] if hints[text] else "")
                           for text, n in said.most_common(OBSERVATION_GROUPS))
        out.append(RowShare(row, passed, total, groups))
    return tuple(out)


def assignment_part(course: Path, assignment: str, grades: dict[str, SubmissionGrades], students: list[str],
                    signatures: Signatures, history: Path, checkpoints: dict[str, str]) -> Part:
    problems = []
    verdicts = {}
    for student in grades:
        notebook = course / "autograded" / student / assignment / f"{assignment}.ipynb"
        verdicts[student] = read_verdicts(notebook)
        if not verdicts[student]:
            problems.append(f"{student}: no sealed verdicts in {notebook.relative_to(course)} (observations unknown)")
    shares = row_shares(grades, verdicts)
    groups = attribute({s: g.failing for s, g in grades.items()}, assignment, signatures)
    label = {s: g.label for g in groups for s in g.students}
    for student, names in tricks_shown(course, assignment, {s: g.failing for s, g in grades.items()},
                                       signatures).items():
        label[student] += f"; the submission holds the trick of {' and '.join(names)}"
    files: list[EvidenceFile] = [read_evidence(s, course / "submitted" / s / assignment / f"{assignment}_evidence.json")
                                 for s in sorted(grades)]
    status = {f.student: f.status for f in files}
    release = course / "release" / assignment / f"{assignment}.ipynb"
    asked = prompts(release if release.exists() else REPO / "source" / assignment / f"{assignment}.ipynb")
    predictions = tuple(judge(p, files, KEYS.get(p.block)) for p in asked)
    learners = tuple(Learner(s, assignment, g.score, g.max_score, g.auto_score, g.auto_max, g.to_grade, g.failing,
                             label.get(s, ""), status[s], checkpoints.get(s, ""), g.late_penalty)
                     for s, g in sorted(grades.items()))
    runs, movement = record_run(history, assignment, {s: (g.score, g.stamp) for s, g in grades.items()},
                                {r.row: (r.passed, r.graded) for r in shares})
    return Part(assignment, shares, groups, predictions,
                tuple((f.student, f.status) for f in files if not f.ok), learners,
                tuple(s for s in students if s not in grades), runs, movement, tuple(problems))


def class_report(course: Path, assignments: tuple[str, ...] | None = None, *, signatures: Signatures | None = None,
                 history: Path | None = None, records: Path | None = None) -> ClassReport:
    """The report on ``assignments`` (every assignment with a graded submission when None)."""
    started = time.monotonic()
    course = Path(course).resolve()
    grades, students, roster = read_gradebook(course_db_url(course), assignments)
    if assignments is not None:
        missing = [a for a in assignments if a not in grades]
        if missing:
            raise NothingToGrade(f"the gradebook of {course} holds no graded submission of {', '.join(missing)}: "
                                 "autograde it first (`lucy autograde ASSIGNMENT`)")
    if not grades:
        raise NothingToGrade(f"the gradebook of {course} holds no graded submission yet")
    signatures = signatures or load() or Signatures({}, "")
    history = history or course / "reports" / "history.json"
    checkpoints = checkpoint_status(records or course / "checkpoints" / "records", students)
    parts = tuple(assignment_part(course, a, grades[a], students, signatures, history, checkpoints) for a in grades)
    from ..grading.late_work import policy  # noqa: PLC0415 - deferred: it loads nbgrader, as read_gradebook does

    return ClassReport(course_id(course), parts, roster, signatures.stale, round(time.monotonic() - started, 2),
                       policy(course))
