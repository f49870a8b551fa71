"""The course's exchange: nbgrader's file-system exchange, made private between learners.

nbgrader's own exchange gives every learner one ``inbound/`` folder writable by everyone and
copies a hand-in with ``shutil.copytree``, which follows links as whoever collects. This one
keeps nbgrader's layout and file names (so formgrader, the Assignments tab and every command
work unchanged) and changes who may do what, through nbgrader's pluggable exchange API
(``c.ExchangeFactory.*``)::

    ROOT/                                   the course user, 0755
    ROOT/<course>/outbound/<assignment>/    the course user, 0755: what learners fetch
    ROOT/<course>/inbound/                  the course user, group lucy-graders, 0751:
                                            learners pass through it, cannot list it
    ROOT/<course>/inbound/<learner>/        the learner, group lucy-graders, 2750: only that
                                            learner writes, graders read, nobody else enters
    ROOT/<course>/feedback/                 the course user, 0711: nobody lists it; a page is
                                            named by a hash of its hand-in's secret
    ROOT/<course>/closed/<assignment>       present: hand-ins of it are closed

``lucy exchange create`` makes the first levels and ``lucy exchange add LEARNER...`` each
learner's folder (``exchange_admin.py``). A learner hands in only into a folder of their own
(so never in another's name); ``collect`` takes a hand-in only when its folder and its owner
are the learner it names (nbgrader's owner check, which only warns, refuses here) and
copies it with ``handin.copy_regular_files``: no link is followed, links, FIFOs, sockets and
devices are refused by name, and the hand-in's size and file count are capped
(``c.GradingLimits.submission_mb``, ``submission_files``).

``configure(c, root)`` is the one place that sets it up, for the course's
``nbgrader_config.py`` and for the learners' own configuration alike.
"""

from __future__ import annotations

import glob
import json
import os
import pwd
import re
import secrets
import shutil
import stat
import sys
from pathlib import Path
from typing import Any

import nbformat
from nbgrader.api import Gradebook, MissingEntry
from nbgrader.exchange.default import (
    Exchange, ExchangeCollect, ExchangeFetchAssignment, ExchangeFetchFeedback, ExchangeList,
    ExchangeReleaseAssignment, ExchangeReleaseFeedback, ExchangeSubmit,
)
from nbgrader.utils import get_username, notebook_hash

from lucy_runtime.engine.limits import GradingLimits
from lucy_runtime.errors import ExchangeSetupFailed
from lucy_runtime.grading.handin import HandinLimits, Refusal, copy_regular_files, safe_write

DEFAULT_ROOT = "/srv/nbgrader/exchange"
"""Where the course's exchange lives unless ``LUCY_EXCHANGE`` names another folder."""
ENV = "LUCY_EXCHANGE"
GRADERS = "lucy-graders"
"""The group whose members may read every hand-in (the accounts that collect)."""
ONE_ACCOUNT = "one-account"
"""In the course's folder: every learner is a folder of the course user's own account (a try-out)."""
REFUSED = "lucy-refused.json"
"""Beside a collected hand-in in ``submitted/``: what collect refused, for autograde and feedback."""


def exchange_root() -> str:
    """The exchange this process uses: ``$LUCY_EXCHANGE``, or the system path."""
    return os.environ.get(ENV) or DEFAULT_ROOT


def configure(c: Any, root: str | os.PathLike | None = None) -> None:
    """Point an nbgrader configuration ``c`` at the course's private exchange.

    The course's ``nbgrader_config.py`` calls it, and so does a learner's (system-wide)
    nbgrader configuration: every command, formgrader and the Assignments tab then use the
    same exchange, with nothing on the command line. ``root`` defaults to ``exchange_root()``.
    """
    c.Exchange.root = str(root or exchange_root())
    c.ExchangeFactory.exchange = PrivateExchange
    c.ExchangeFactory.release_assignment = PrivateReleaseAssignment
    c.ExchangeFactory.fetch_assignment = PrivateFetchAssignment
    c.ExchangeFactory.submit = PrivateSubmit
    c.ExchangeFactory.collect = PrivateCollect
    c.ExchangeFactory.list = PrivateList
    c.ExchangeFactory.release_feedback = PrivateReleaseFeedback
    c.ExchangeFactory.fetch_feedback = PrivateFetchFeedback


def learner_folder(root: str | os.PathLike, course_id: str, student: str) -> Path:
    return Path(root) / course_id / "inbound" / student


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



# --- making the exchange (as root, or as one educator trying it alone) ------------------------

def _group_id(name: str) -> int | None:
    import grp  # noqa: PLC0415 - POSIX only

    try:
        return grp.getgrnam(name).gr_gid
    except KeyError:
        return None


def _run(argv: list[str]) -> None:
    import subprocess  # noqa: PLC0415

    subprocess.run(argv, check=True, capture_output=True, text=True)


def _folder(path: Path, mode: int, uid: int = -1, gid: int = -1) -> None:
    """``path`` a real folder (never a link) with this owner and mode."""
    if path.is_symlink() or (path.exists() and not path.is_dir()):
        path.unlink()
    path.mkdir(mode=mode, exist_ok=True)
    os.chown(path, uid, gid, follow_symlinks=False)
    os.chmod(path, mode, follow_symlinks=False)


def create(root: str | os.PathLike, course_id: str, *, grader: str | None = None, reset: bool = False,
           one_account: bool = False) -> Path:
    """Make (or repair) the course's folders in the exchange at ``root``; ``reset`` empties them first.

    As root, the group ``lucy-graders`` is made (and ``grader`` put in it and given the course's
    folders). ``one_account``: every learner will be a folder of this account (a try-out on one
    machine, or an educator who is not root); a hand-in must still be made by its folder's owner.
    """
    root, course = Path(root), Path(root) / course_id
    if reset and course.is_dir() and not course.is_symlink():
        shutil.rmtree(course)
    root.mkdir(parents=True, exist_ok=True)
    os.chmod(root, 0o755)
    uid, gid = -1, -1
    if os.geteuid() == 0:
        if _group_id(GRADERS) is None:
            _run(["groupadd", "--system", "--force", GRADERS])  # --force: made meanwhile by another is fine
        gid = _group_id(GRADERS) or -1
        if grader:
            _run(["usermod", "-a", "-G", GRADERS, grader])
            uid = pwd.getpwnam(grader).pw_uid
    _folder(course, 0o755, uid)
    _folder(course / "outbound", 0o755, uid)
    _folder(course / "closed", 0o755, uid)
    _folder(course / "inbound", 0o751, uid, gid)
    _folder(course / "feedback", 0o711, uid)
    marker = course / ONE_ACCOUNT
    if one_account or os.geteuid() != 0:
        marker.write_text("every learner is a folder of the account that made this exchange\n")
    elif marker.exists():
        marker.unlink()
    return course


def add(root: str | os.PathLike, course_id: str, learners: list[str], *, accounts: bool = False) -> list[Path]:
    """Give each learner a folder of their own in the course's ``inbound/`` (and, with ``accounts``,
    a system account with a home, made if missing). In a one-account exchange the folders are yours."""
    inbound = Path(root) / course_id / "inbound"
    one_account = (Path(root) / course_id / ONE_ACCOUNT).exists()
    if not inbound.is_dir():
        raise ExchangeSetupFailed(f"the course {course_id} has no folder in the exchange {root}: "
                                "run `lucy exchange create` first")
    made = []
    for learner in learners:
        if not re.fullmatch(r"[a-z_][a-z0-9_-]{0,31}", learner):
            raise ExchangeSetupFailed(f"{learner!r} is not a login name (lower-case letters, digits, '-' and '_')")
        uid, gid = -1, -1
        if os.geteuid() == 0 and not one_account:
            try:
                pwd.getpwnam(learner)
            except KeyError:
                if not accounts:
                    raise ExchangeSetupFailed(f"no account {learner}: make it, or add --accounts") from None
                # a home only its learner enters: nbgrader's cache there holds each hand-in and its secret
                _run(["useradd", "--create-home", "--user-group", "--shell", "/bin/bash", "-K", "HOME_MODE=0700",
                      learner])
            uid, gid = pwd.getpwnam(learner).pw_uid, _group_id(GRADERS) or -1
        _folder(inbound / learner, 0o2750, uid, gid)
        made.append(inbound / learner)
    return made


ENVIRONMENT_CONFIG = """\
# Written by `lucy exchange create`: every nbgrader of this environment (a learner's fetch and
# submit, the Assignments tab) uses the course's exchange, $LUCY_EXCHANGE or the system path.
from lucy_runtime.grading.exchange import configure

configure(get_config())  # noqa: F821
"""


def write_environment_config(prefix: str | os.PathLike = sys.prefix) -> Path:
    """The nbgrader configuration of the Python environment at ``prefix`` (``etc/jupyter``), which
    every nbgrader command of that environment reads, learners' included."""
    folder = Path(prefix) / "etc" / "jupyter"
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "nbgrader_config.py"
    if not path.is_file() or path.read_text(encoding="utf-8") != ENVIRONMENT_CONFIG:
        safe_write(folder, path.name, ENVIRONMENT_CONFIG.encode())  # whole or not at all: others may be reading it
    return path


def close(root: str | os.PathLike, course_id: str, assignment: str, *, closed: bool = True) -> Path:
    """Close (or open again) hand-ins of ``assignment``; what was handed in stays."""
    marker = Path(root) / course_id / "closed" / assignment
    if closed:
        marker.write_text("closed\n")
    else:
        marker.unlink(missing_ok=True)
    return marker
