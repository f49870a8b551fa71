"""nbgrader's exchange steps made private between learners, all but collect (``exchange_collect``):
release an assignment, fetch it and its feedback, hand in into the learner's own folder only, list
hand-ins one folder deeper, and release feedback into a folder nobody lists, each page its learner's.
Each subclasses nbgrader's own step; ``exchange.configure`` installs them.
"""

from __future__ import annotations

import glob
import os
import pwd
import re
import secrets
import stat
from pathlib import Path
from typing import Any

from nbgrader.exchange.default import (
    Exchange, ExchangeFetchAssignment, ExchangeFetchFeedback, ExchangeList, ExchangeReleaseAssignment,
    ExchangeReleaseFeedback, ExchangeSubmit,
)
from nbgrader.utils import get_username, notebook_hash

from lucy_runtime.engine.limits import GradingLimits
from lucy_runtime.grading.exchange_layout import ENV, GRADERS, ONE_ACCOUNT, _group_id, learner_folder
from lucy_runtime.grading.handin import HandinLimits, copy_regular_files, safe_write


def _handin_name(name: str) -> tuple[str, str, str] | None:
    """(student, assignment, timestamp) of an nbgrader hand-in folder's name."""
    parts = name.rsplit("+", 3)
    return (parts[0], parts[1], parts[2]) if len(parts) >= 3 else None


def _earlier(folder: Path, student: str, assignment: str) -> list[str]:
    try:
        names = os.listdir(folder)
    except OSError:
        return []
    return sorted(t[2] for n in names if (t := _handin_name(n)) and t[:2] == (student, assignment))


class _Private:
    """What every step of the private exchange shares."""

    root: str

    def ensure_root(self) -> None:  # nbgrader's wants the root writable by everyone
        if not os.path.isdir(self.root):
            self.fail(f"The course's exchange {self.root} does not exist: create it as root with "  # type: ignore[attr-defined]
                      f"`lucy exchange create` (or point {ENV} at one)")


class PrivateExchange(_Private, Exchange):
    pass


class PrivateFetchAssignment(_Private, ExchangeFetchAssignment):
    pass


class PrivateFetchFeedback(_Private, ExchangeFetchFeedback):
    pass


class PrivateReleaseAssignment(_Private, ExchangeReleaseAssignment):
    def init_dest(self) -> None:
        if self.coursedir.course_id == "":
            self.fail("No course id specified. Re-run with --course flag.")
        course = Path(self.root) / self.coursedir.course_id
        self.course_path, self.outbound_path = str(course), str(course / "outbound")
        self.inbound_path = str(course / "inbound")
        self.dest_path = os.path.join(self.outbound_path, self.coursedir.assignment_id)
        if not (course / "inbound").is_dir():
            self.fail(f"The course {self.coursedir.course_id} has no folder in the exchange {self.root}: "
                      "create it as root with `lucy exchange create`")
        self.ensure_directory(self.outbound_path, 0o755)


class PrivateSubmit(_Private, ExchangeSubmit):
    """Hand in into the learner's own folder, and only there."""

    def init_dest(self) -> None:
        course_id, me = self.coursedir.course_id, get_username()
        if course_id == "":
            self.fail("No course id specified. Re-run with --course flag.")
        student = self.coursedir.student_id if self.coursedir.student_id not in ("", "*") else me
        if "*" in student or "+" in student or "/" in student:
            self.fail(f"The student ID should contain no '*', '+' nor '/'; got {student}")
        folder = learner_folder(self.root, course_id, student)
        try:
            st = os.lstat(folder)
        except FileNotFoundError:
            self.fail(f"{student} is not a learner of {course_id} on this exchange: ask your educator to add "
                      f"you (`lucy exchange add {student}`)")
        except PermissionError:
            self.fail(f"you ({me}) cannot hand in for {student}: hand in as yourself")
        if not stat.S_ISDIR(st.st_mode) or st.st_uid != os.geteuid():
            self.fail(f"you ({me}) cannot hand in for {student}: the folder {folder} is not yours; hand in as yourself")
        closed = Path(self.root) / course_id / "closed" / self.coursedir.assignment_id
        before = _earlier(folder, student, self.coursedir.assignment_id)
        kept = f"; your hand-in of {before[-1]} is kept" if before else ""
        if closed.exists():
            self.fail(f"Hand-ins of {self.coursedir.assignment_id} are closed{kept}. Ask your educator.")
        if before:
            self.log.warning(f"You handed in {self.coursedir.assignment_id} before ({before[-1]}): this hand-in is "
                             "kept beside it, and the newest is the one graded")
        self.inbound_path = str(folder)
        self.cache_path = os.path.join(self.cache, course_id)
        random = os.urandom(9).hex()
        self.assignment_filename = f"{student}+{self.coursedir.assignment_id}+{self.timestamp}+{random}"

    def do_copy(self, src: str, dest: str, log: Any = None) -> None:
        refused = copy_regular_files(src, dest, _handin_limits(self))
        if dest.startswith(self.inbound_path):  # said once, not again for the cache
            for refusal in refused:
                self.log.warning(f"Not handed in: {refusal.path}: {refusal.why}")

    def copy_files(self) -> None:
        """nbgrader's, with a hand-in only its learner and the graders can read (not 0777)."""
        self.init_release()
        secret = secrets.token_hex(64)
        dest = os.path.join(self.inbound_path, self.assignment_filename)
        cache = os.path.join(self.cache_path, self.assignment_filename.rsplit("+", 1)[0])
        self.log.info(f"Source: {self.src_path}")
        self.log.info(f"Destination: {dest}")
        self.check_filename_diff()
        os.makedirs(self.cache, mode=0o700, exist_ok=True)
        for folder in (dest, cache):
            os.makedirs(os.path.dirname(folder), mode=0o700, exist_ok=True)
            self.do_copy(self.src_path, folder)
            safe_write(folder, "timestamp.txt", self.timestamp.encode())
            safe_write(folder, "submission_secret.txt", secret.encode())
        self.set_perms(dest, fileperms=0o640, dirperms=0o2750)
        self.log.info(f"Submitted as: {self.coursedir.course_id} {self.coursedir.assignment_id} {self.timestamp}")


def _handin_limits(app: Any) -> HandinLimits:
    limits = GradingLimits(parent=app)
    return HandinLimits(max_bytes=int(limits.submission_mb) << 20, max_files=int(limits.submission_files))


class PrivateList(_Private, ExchangeList):
    """nbgrader's list, with hand-ins one folder deeper (``inbound/<learner>/``)."""

    def init_dest(self) -> None:
        if not self.inbound:
            super().init_dest()
            return
        course_id = self.coursedir.course_id or "*"
        assignment_id = self.coursedir.assignment_id or "*"
        student_id = self.coursedir.student_id or "*"
        pattern = os.path.join(self.root, course_id, "inbound", student_id, f"{student_id}+{assignment_id}+*")
        self.assignments = sorted(glob.glob(pattern))

    def parse_assignment(self, assignment: str) -> dict:
        if not self.inbound:
            return super().parse_assignment(assignment)
        m = re.match(r".*/(?P<course_id>[^/]*)/inbound/[^/]+/(?P<student_id>[^+/]*)\+(?P<assignment_id>[^+]*)"
                     r"\+(?P<timestamp>[^+]*)(?P<random_string>\+.*)?", assignment)
        if m is None:
            self.fail(f"Could not read the hand-in name {assignment}")  # raises nbgrader's ExchangeError
            return {}
        return m.groupdict()


class PrivateReleaseFeedback(_Private, ExchangeReleaseFeedback):
    """nbgrader's, into a feedback folder nobody but the course may list, each page its learner's.

    A page is named by a hash of its hand-in's secret, as in nbgrader; here it is also owned by
    its learner's account, group ``lucy-graders``, mode 0440, when the releasing user may give it
    (root): another learner cannot read it even by its name.
    """

    def init_dest(self) -> None:
        super().init_dest()
        if os.stat(self.outbound_feedback_path).st_mode & 0o077 != 0o011:
            os.chmod(self.outbound_feedback_path, 0o711)

    def copy_files(self) -> None:
        excluded = set(filter(None, (self.coursedir.student_id_exclude or "").split(",")))
        pattern = re.escape(os.path.sep).join([
            self.coursedir.format_path(self.coursedir.feedback_directory, "(?P<student_id>.*)",
                                       self.coursedir.assignment_id, escape=True),
            "(?P<notebook_id>.*).html"])
        one_account = os.path.exists(os.path.join(self.course_path, ONE_ACCOUNT))
        for html in sorted(glob.glob(os.path.join(self.src_path, "*.html"))):
            m = re.match(pattern, html)
            if m is None or m["student_id"] in excluded:
                continue
            student, notebook_id, folder = m["student_id"], m["notebook_id"], os.path.dirname(html)
            timestamp = Path(folder, "timestamp.txt").read_text()
            secret = Path(folder, "submission_secret.txt").read_text()
            name = f"{notebook_hash(secret=secret, notebook_id=notebook_id)}.html"
            owner, mode = (-1, -1), 0o644
            if os.geteuid() == 0 and not one_account:
                try:
                    owner, mode = (pwd.getpwnam(student).pw_uid, _group_id(GRADERS) or 0), 0o440
                except KeyError:
                    self.log.warning(f"REFUSED: {student} has no account here: feedback not released")
                    continue
            self.log.info(f"Releasing feedback for student '{student}' on assignment "
                          f"'{self.coursedir.course_id}/{self.coursedir.assignment_id}/{notebook_id}' ({timestamp})")
            safe_write(self.dest_path, name, Path(html).read_bytes(), mode=mode, owner=owner)
            self.log.info(f"Feedback released to: {os.path.join(self.dest_path, name)}")
