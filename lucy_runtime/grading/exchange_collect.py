"""nbgrader's collect made private: it takes a hand-in only from its learner's own folder, only when
the folder and the hand-in belong to the learner it names (nbgrader's owner check, which only warns,
refuses here), and copies it with ``handin.copy_regular_files``: no link is followed, what is not a
plain file is refused by name, size and file count are capped, and what was refused is kept beside the
hand-in (``lucy-refused.json``) and named at the top of its notebooks.
"""

from __future__ import annotations

import json
import os
import pwd
import shutil
import stat
from pathlib import Path

import nbformat
from nbgrader.api import Gradebook, MissingEntry
from nbgrader.exchange.default import ExchangeCollect

from lucy_runtime.grading.exchange_layout import GRADERS, ONE_ACCOUNT, REFUSED
from lucy_runtime.grading.exchange_steps import _handin_limits, _handin_name, _Private
from lucy_runtime.grading.handin import HandinLimits, Refusal, copy_regular_files


class PrivateCollect(_Private, ExchangeCollect):
    """Collect from each learner's own folder; refuse what is not theirs; follow nothing."""

    def init_src(self) -> None:
        if self.coursedir.course_id == "":
            self.fail("No course id specified. Re-run with --course flag.")
        self.course_path = os.path.join(self.root, self.coursedir.course_id)
        self.inbound_path = os.path.join(self.course_path, "inbound")
        if not os.path.isdir(self.inbound_path):
            self.fail(f"Course not found: {self.inbound_path}")
        wanted = self.coursedir.student_id if self.coursedir.student_id else "*"
        self.candidates: dict[str, list[dict]] = {}
        for learner in sorted(os.listdir(self.inbound_path)):
            if wanted != "*" and learner != wanted:
                continue
            folder = os.path.join(self.inbound_path, learner)
            if not stat.S_ISDIR(os.lstat(folder).st_mode):
                self.log.warning(f"REFUSED: inbound/{learner} is not a folder of the course; nothing collected from it")
                continue
            try:
                names = sorted(os.listdir(folder))
            except PermissionError:
                self.log.warning(f"REFUSED: {learner}: inbound/{learner} cannot be read by the collecting account "
                                 f"(is it in the group {GRADERS}?); nothing collected from it")
                continue
            for name in names:
                parsed = _handin_name(name)
                if parsed is None or parsed[1] != self.coursedir.assignment_id:
                    continue
                if parsed[0] != learner:
                    self.log.warning(f"REFUSED: {learner}: inbound/{learner}/{name} is named for {parsed[0]}; "
                                     "not collected")
                    continue
                record = self._path_to_record(os.path.join(folder, name))
                record["folder"] = folder
                self.candidates.setdefault(learner, []).append(record)
        with Gradebook(self.coursedir.db_url, self.coursedir.course_id) as gb:
            try:
                self.duedate = gb.find_assignment(self.coursedir.assignment_id).duedate
            except MissingEntry:
                self.duedate = None
        for records in self.candidates.values():
            records.sort(key=lambda r: r["timestamp"], reverse=True)
            if self.before_duedate and self.duedate is not None:  # nbgrader's --before-duedate: on time first
                records.sort(key=lambda r: r["timestamp"] > self.duedate)
        self.src_records = [records[0] for records in self.candidates.values()]

    def _acceptable(self, student: str) -> dict | None:
        """The newest of a learner's hand-ins that is theirs; each newer one refused in one line."""
        for rec in self.candidates[student]:
            why = self._owner_refusal(rec)
            if not why:
                return rec
            self.log.warning(f"REFUSED: {student}: {why}")
        return None

    def _owner_refusal(self, rec: dict) -> str:
        """Why a hand-in is not its learner's own ('' when it is)."""
        folder, learner = rec["folder"], rec["username"]
        path = os.path.join(folder, rec["filename"])
        st_folder, st = os.lstat(folder), os.lstat(path)
        if not stat.S_ISDIR(st.st_mode):
            return f"inbound/{learner}/{rec['filename']} is not a folder; not collected"
        if st.st_uid != st_folder.st_uid:
            return (f"inbound/{learner}/{rec['filename']} claims to be handed in by {learner} but is owned by "
                    f"{_name(st.st_uid)}; not collected")
        if not self.check_owner or os.path.exists(os.path.join(self.course_path, ONE_ACCOUNT)):
            return ""
        try:
            account = pwd.getpwnam(learner).pw_uid
        except KeyError:
            account = None
        if st_folder.st_uid == account:
            return ""
        return (f"inbound/{learner} belongs to {_name(st_folder.st_uid)}, not to {learner}; not collected "
                f"(`lucy exchange add {learner}` gives the folder to its learner)")

    def copy_files(self) -> None:
        if not self.src_records:
            self.log.warning(f"No submissions of '{self.coursedir.assignment_id}' for course "
                             f"'{self.coursedir.course_id}' to collect")
        limits = _handin_limits(self)
        for first in self.src_records:
            student = first["username"]
            rec = self._acceptable(student)
            if rec is None:
                continue
            src = os.path.join(rec["folder"], rec["filename"])
            dest = self.coursedir.format_path(self.coursedir.submitted_directory, student, self.coursedir.assignment_id)
            if os.path.isdir(dest):
                existing = self.coursedir.get_existing_timestamp(dest)
                if not (self.update and (existing is None or rec["timestamp"] > existing)) and not (
                        self.before_duedate and existing != rec["timestamp"]):
                    self.log.info(("No newer submission to collect: " if self.update else
                                   "Submission already exists, use --update to update: ")
                                  + f"{student} {self.coursedir.assignment_id}")
                    continue
            os.makedirs(os.path.dirname(dest), exist_ok=True)
            staging = f"{dest}.collecting-{os.getpid()}"
            shutil.rmtree(staging, ignore_errors=True)
            self.log.info(f"Collecting submission: {student} {self.coursedir.assignment_id}")
            for refusal in collect_handin(src, staging, limits, self._released()):
                self.log.warning(f"REFUSED: {student}: {refusal.line()}")
            if os.path.isdir(dest):
                shutil.rmtree(dest)
            os.rename(staging, dest)

    def _released(self) -> Path:
        return Path(self.coursedir.format_path(self.coursedir.release_directory, ".", self.coursedir.assignment_id))


def _name(uid: int) -> str:
    try:
        return pwd.getpwuid(uid).pw_name
    except KeyError:
        return f"uid {uid}"


def collect_handin(src: str | os.PathLike, dest: str | os.PathLike, limits: HandinLimits,
                   released: Path) -> list[Refusal]:
    """Copy one hand-in into the new folder ``dest`` as collect does: plain files only, what was
    refused named in its notebooks and in ``lucy-refused.json``, a refused notebook replaced by the
    released one (``released``: the assignment's folder in ``release/``)."""
    refused = copy_regular_files(src, dest, limits)
    _record_refusals(Path(dest), refused, released)
    return refused


def _record_refusals(folder: Path, refused: list[Refusal], released: Path) -> None:
    """Keep what collect refused beside the hand-in, and put it where the learner's feedback shows it.

    A refused notebook is replaced by the released one (it scores as not written); every
    notebook then opens with a Markdown cell naming each refused file.
    """
    if not refused:
        return
    (folder / REFUSED).write_text(json.dumps([r.line() for r in refused], indent=1) + "\n", encoding="utf-8")
    for notebook in sorted(released.glob("*.ipynb")):
        mine = folder / notebook.name
        if not mine.exists():
            shutil.copyfile(notebook, mine)
    lines = "\n".join(f"* `{r.path}`: {r.why}" for r in refused)
    note = ("**Not collected.** These files of your hand-in were refused when it was collected, and graded as "
            "if absent (hand in plain files only: no links, pipes or devices):\n\n" + lines)
    for mine in sorted(folder.glob("*.ipynb")):
        try:
            nb = nbformat.read(str(mine), as_version=4)
        except Exception:  # noqa: BLE001 - an unreadable notebook is autograde's to report
            continue
        cell = nbformat.v4.new_markdown_cell(note)
        cell.metadata["lucy"] = {"refused": [r.line() for r in refused]}
        nb.cells.insert(0, cell)
        nbformat.write(nb, str(mine))


def refusals_of(submission: str | os.PathLike) -> list[str]:
    """What collect refused of this collected hand-in (``submitted/<student>/<assignment>``)."""
    path = Path(submission) / REFUSED
    try:
        return [str(line) for line in json.loads(path.read_text(encoding="utf-8"))] if path.is_file() else []
    except (OSError, ValueError):
        return []
