"""The course's exchange with learners who are accounts of their own: what one hands in is data,
and no learner reaches another's hand-in or feedback.

Three system accounts (made here with ``lucy exchange add --accounts``, removed at the end) act
as learners would, each as itself (``setpriv``): ``lucyt-ada`` plants a hand-in of her own
making in her folder (a blank notebook beside links to the reference notebook, the gradebook
and a root-only file, a hard link and a FIFO), ``lucyt-bea`` one whose notebook is a link to the
reference and a newer "hand-in" that is a link to the course's source folder, and ``lucyt-cal``
tries every way into the others' work. The course collects, autogrades, generates and releases
feedback as root; the learners fetch it as themselves. One nbgrader course for the module.
"""

from __future__ import annotations

import html
import os
import pwd
import shutil
import stat
import subprocess
import sys
import tempfile
from pathlib import Path

import nbformat
import pytest

from lucy_runtime.course.course import NBGRADER, _env
from lucy_runtime.grading import exchange
from lucy_runtime.grading.exchange import REFUSED
from lucy_runtime.hub.accounts import closed_ancestor

from .conftest import REPO, need

pytestmark = pytest.mark.nbgrader


@pytest.fixture(autouse=True)
def _as_root():
    need("root", os.geteuid() == 0, "learner accounts of their own need root (useradd); CI runs as root")

UNIT = "ch07_unit_a"
COURSE_ID = "lucy-ch07"
ADA, BEA, CAL = "lucyt-ada", "lucyt-bea", "lucyt-cal"
GRADER = "lucyt-grader"  # an account in the graders' group, as formgrader's on a hub
SECRET = b"root-only-4f1c9e-" + os.urandom(8).hex().encode()


def _hidden_ancestor(path: Path) -> Path | None:
    """The highest folder above ``path`` that other accounts cannot pass through (e.g. /root)."""
    hidden = None
    for parent in reversed(path.parents):
        if parent != Path("/") and not parent.stat().st_mode & stat.S_IXOTH:
            return parent
    return hidden


def as_account(user: str, argv: list[str], *, cwd: Path | str | None = None, env: dict | None = None,
               check: bool = True) -> subprocess.CompletedProcess:
    """Run ``argv`` as the account ``user`` (its uid, gid and groups; nothing of root's).

    Where this interpreter lives under a folder other accounts cannot enter (pyenv under /root),
    the account gets a view in which that folder is an empty tmpfs holding the interpreter only:
    nothing the account could read before becomes readable.
    """
    pw = pwd.getpwnam(user)
    drop = ["setpriv", f"--reuid={pw.pw_uid}", f"--regid={pw.pw_gid}", "--init-groups", "--"]
    prefix = Path(sys.base_prefix).resolve()
    top = _hidden_ancestor(prefix)
    view: list[str] = []
    if top is not None:
        view = ["bwrap", "--dev-bind", "/", "/", "--perms", "0755", "--tmpfs", str(top)]
        for folder in reversed(prefix.parents):
            if folder != top and top in folder.parents:
                view += ["--perms", "0755", "--dir", str(folder)]
        view += ["--ro-bind", str(prefix), str(prefix), "--"]
    environment = {"PATH": f"{Path(sys.executable).parent}:/usr/bin:/bin", "HOME": pw.pw_dir, "USER": user,
                   "LOGNAME": user, "LUCY_EXCHANGE": os.environ["LUCY_EXCHANGE"], **(env or {})}
    done = subprocess.run([*view, *drop, *argv], cwd=cwd or pw.pw_dir, env=environment, capture_output=True,
                          text=True, timeout=300)
    if check:
        assert done.returncode == 0, (argv, done.stdout[-2000:], done.stderr[-2000:])
    return done


def learner_nbgrader(user: str, *args: str, check: bool = True) -> subprocess.CompletedProcess:
    cache = f"--Exchange.cache={pwd.getpwnam(user).pw_dir}/.nbgrader-cache"
    return as_account(user, [str(Path(sys.executable).parent / "nbgrader"), *args, f"--course={COURSE_ID}", cache],
                      check=check)


def cached(user: str, stamp: str, secret: str) -> str:
    """Shell lines that record a planted hand-in in the learner's own cache, as submit would."""
    return f"""
        c=~/.nbgrader-cache/{COURSE_ID}/'{user}+{UNIT}+{stamp}'
        mkdir -p "$c" && cp ~/{UNIT}/{UNIT}.ipynb "$c"/ && echo -n {secret} > "$c"/submission_secret.txt
        echo -n "{stamp}" > "$c"/timestamp.txt
    """


def course_nbgrader(course: Path, *args: str) -> str:
    done = subprocess.run([*NBGRADER, *args], cwd=course, capture_output=True, text=True, timeout=900, env=_env())
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    return done.stdout + done.stderr


def plant(user: str, script: str) -> None:
    """Shell commands as ``user`` (no Python: ln, mkfifo, cp, as a learner would type them)."""
    as_account(user, ["bash", "-euc", script])


class Class:
    def __init__(self, work: Path, course: Path, root: Path, secret: Path):
        self.work, self.course, self.root, self.secret = work, course, root, secret
        self.collect_log = ""
        self.submit_log = ""

    def inbound(self, user: str) -> Path:
        return self.root / COURSE_ID / "inbound" / user

    def home(self, user: str) -> Path:
        return Path(pwd.getpwnam(user).pw_dir)


@pytest.fixture(scope="module")
def cls():
    closed = closed_ancestor(REPO / ".venv")
    if closed is not None:  # the learners run nbgrader from this checkout's .venv, as they would on a class's server
        pytest.fail(f"learner accounts cannot reach this checkout's .venv: {closed} is closed to other accounts "
                    "(clone the project where they can pass through, e.g. chmod o+x on it)", pytrace=False)
    made = [u for u in (ADA, BEA, CAL, GRADER) if not _account_exists(u)]
    work = Path(tempfile.mkdtemp(prefix="lucy-exchange-test-", dir="/tmp"))
    work.chmod(0o755)  # learners reach the exchange inside it, never the course
    course, root, secret = work / "course", work / "exchange", work / "root-only.txt"
    course.mkdir(mode=0o700)
    secret.write_bytes(SECRET)
    secret.chmod(0o600)
    shutil.copy(REPO / "nbgrader_config.py", course)
    shutil.copytree(REPO / "source" / UNIT, course / "source" / UNIT, ignore=shutil.ignore_patterns("*.md"))
    saved = os.environ.get("LUCY_EXCHANGE")
    os.environ["LUCY_EXCHANGE"] = str(root)
    try:
        exchange.write_environment_config()
        exchange.create(root, COURSE_ID)
        exchange.add(root, COURSE_ID, [ADA, BEA, CAL], accounts=True)
        if GRADER in made:
            subprocess.run(["useradd", "--no-create-home", "--groups", exchange.GRADERS, GRADER], check=True)
        for user in (ADA, BEA, CAL):
            for leftover in (UNIT, ".nbgrader-cache"):
                shutil.rmtree(Path(pwd.getpwnam(user).pw_dir) / leftover, ignore_errors=True)
        course_nbgrader(course, "generate_assignment", UNIT, "--force")
        course_nbgrader(course, "release_assignment", UNIT, "--force")
        yield Class(work, course, root, secret)
    finally:
        if saved is None:
            os.environ.pop("LUCY_EXCHANGE", None)
        else:
            os.environ["LUCY_EXCHANGE"] = saved
        for user in made:
            subprocess.run(["userdel", "--remove", user], capture_output=True)
        shutil.rmtree(work, ignore_errors=True)


def _account_exists(user: str) -> bool:
    try:
        pwd.getpwnam(user)
    except KeyError:
        return False
    return True


@pytest.fixture(scope="module")
def handed_in(cls):
    """Each learner fetches as themselves; ada and bea plant hostile hand-ins; the course collects."""
    for user in (ADA, BEA, CAL):
        learner_nbgrader(user, "fetch_assignment", UNIT)
    source_nb = cls.course / "source" / UNIT / f"{UNIT}.ipynb"
    # ada first hands in through nbgrader, with a link beside the notebook: submit leaves it out.
    plant(ADA, f"cd ~/{UNIT} && ln -s {source_nb} reference.ipynb")
    cls.submit_log = learner_nbgrader(ADA, "submit", UNIT).stderr
    # then plants, in her own folder, a newer hand-in that nbgrader's submit would never make
    stamp = "2099-01-01 00:00:00.000000 UTC"
    plant(ADA, f"""
        d={cls.inbound(ADA)}/'{ADA}+{UNIT}+{stamp}+x1'
        mkdir "$d" && cp ~/{UNIT}/{UNIT}.ipynb "$d"/
        ln -s {source_nb} "$d"/reference.ipynb
        ln -s {cls.course}/gradebook.db "$d"/gradebook.db
        ln -s {cls.secret} "$d"/secret.txt
        mkdir "$d"/data && ln -s {cls.course}/source "$d"/data/source
        echo notes > "$d"/notes.txt && ln "$d"/notes.txt "$d"/notes-again.txt
        mkfifo "$d"/pipe
        echo -n "{stamp}" > "$d"/timestamp.txt && echo -n abc123 > "$d"/submission_secret.txt
    """ + cached(ADA, stamp, "abc123"))
    # bea: a hand-in whose notebook is a link to the reference, then a newer one that is a link itself
    plant(BEA, f"""
        d={cls.inbound(BEA)}/'{BEA}+{UNIT}+2099-01-01 00:00:00.000000 UTC+b1'
        mkdir "$d" && ln -s {source_nb} "$d"/{UNIT}.ipynb
        echo -n "2099-01-01 00:00:00.000000 UTC" > "$d"/timestamp.txt && echo -n def456 > "$d"/submission_secret.txt
        ln -s {cls.course}/source/{UNIT} {cls.inbound(BEA)}/'{BEA}+{UNIT}+2099-02-01 00:00:00.000000 UTC+b2'
    """ + cached(BEA, "2099-01-01 00:00:00.000000 UTC", "def456"))
    # cal: a hand-in in cal's own folder that claims to be ada's, holding the reference
    plant(CAL, f"""
        d={cls.inbound(CAL)}/'{ADA}+{UNIT}+2099-03-01 00:00:00.000000 UTC+c1'
        mkdir "$d" && cp ~/{UNIT}/{UNIT}.ipynb "$d"/
    """)
    cls.collect_log = course_nbgrader(cls.course, "collect", UNIT)
    return cls


def test_submit_hands_in_plain_files_and_names_each_link_it_leaves_out(handed_in):
    assert "Not handed in: reference.ipynb: a symbolic link" in handed_in.submit_log


def test_collect_refuses_each_link_fifo_and_hard_link_in_one_line_and_copies_nothing_of_them(handed_in):
    log = handed_in.collect_log
    for line in (f"REFUSED: {ADA}: reference.ipynb: a symbolic link; not collected",
                 f"REFUSED: {ADA}: gradebook.db: a symbolic link; not collected",
                 f"REFUSED: {ADA}: secret.txt: a symbolic link; not collected",
                 f"REFUSED: {ADA}: data/source: a symbolic link; not collected",
                 f"REFUSED: {ADA}: pipe: a FIFO (named pipe); not collected",
                 f"REFUSED: {ADA}: notes.txt: a hard link (one of 2 names of the same file); not collected",
                 f"REFUSED: {BEA}: {UNIT}.ipynb: a symbolic link; not collected"):
        assert line in log, line
    submitted = handed_in.course / "submitted"
    for path in submitted.rglob("*"):
        assert path.is_dir() and not path.is_symlink() or stat.S_ISREG(path.lstat().st_mode), path
    ada = submitted / ADA / UNIT
    assert sorted(p.name for p in ada.iterdir()) == sorted([f"{UNIT}.ipynb", "data", "timestamp.txt",
                                                            "submission_secret.txt", REFUSED])


def test_a_newer_hand_in_that_is_a_link_is_refused_and_the_learners_earlier_one_is_still_collected(handed_in):
    assert f"REFUSED: {BEA}: inbound/{BEA}/{BEA}+{UNIT}+2099-02-01 00:00:00.000000 UTC+b2 is not a folder" \
        in handed_in.collect_log
    assert (handed_in.course / "submitted" / BEA / UNIT / f"{UNIT}.ipynb").is_file()


def test_a_hand_in_named_for_another_learner_is_not_collected_for_either(handed_in):
    assert f"REFUSED: {CAL}: inbound/{CAL}/{ADA}+{UNIT}+2099-03-01" in handed_in.collect_log
    assert not (handed_in.course / "submitted" / CAL).exists()
    stamp = (handed_in.course / "submitted" / ADA / UNIT / "timestamp.txt").read_text()
    assert stamp.startswith("2099-01-01"), "ada's own hand-in, not the one cal named for her"


def test_another_learner_cannot_list_read_change_or_remove_a_hand_in(handed_in):
    ada = handed_in.inbound(ADA)
    theirs = next(p for p in ada.iterdir() if "x1" in p.name)
    for attempt in (f"ls {handed_in.root}/{COURSE_ID}/inbound",
                    f"ls {ada}",
                    f"cat '{theirs}/{UNIT}.ipynb'",
                    f"cat '{theirs}/submission_secret.txt'",
                    f"echo x >> '{theirs}/{UNIT}.ipynb'",
                    f"rm -rf '{theirs}'",
                    f"mkdir {ada}/'{ADA}+{UNIT}+2099-04-01 00:00:00.000000 UTC+c2'",
                    f"ls {handed_in.root}/{COURSE_ID}/feedback",
                    f"ls {handed_in.home(ADA)}/.nbgrader-cache"):  # the cache: each hand-in and its secret
        done = as_account(CAL, ["bash", "-c", attempt], check=False)
        assert done.returncode != 0 and "Permission denied" in done.stderr, (attempt, done.stdout, done.stderr)
    assert (theirs / f"{UNIT}.ipynb").is_file()


def test_a_learner_cannot_hand_in_in_another_learners_name(handed_in):
    done = learner_nbgrader(CAL, "submit", UNIT, f"--student={ADA}", check=False)
    assert done.returncode != 0
    assert f"you ({CAL}) cannot hand in for {ADA}" in done.stderr


def test_someone_not_in_the_course_is_told_so_in_one_line(handed_in):
    os.rename(handed_in.inbound(CAL), handed_in.inbound(CAL).with_name("away"))
    try:
        done = learner_nbgrader(CAL, "submit", UNIT, check=False)
    finally:
        os.rename(handed_in.inbound(CAL).with_name("away"), handed_in.inbound(CAL))
    assert done.returncode != 0
    assert f"{CAL} is not a learner of {COURSE_ID} on this exchange: ask your educator" in done.stderr


def test_a_second_hand_in_is_kept_beside_the_first_and_a_closed_assignment_takes_none(handed_in):
    before = sorted(p.name for p in handed_in.inbound(CAL).iterdir())
    learner_nbgrader(CAL, "submit", UNIT)
    second = learner_nbgrader(CAL, "submit", UNIT)
    assert "You handed in ch07_unit_a before" in second.stderr
    kept = sorted(p.name for p in handed_in.inbound(CAL).iterdir())
    assert set(before) < set(kept) and len(kept) == len(before) + 2
    exchange.close(handed_in.root, COURSE_ID, UNIT)
    try:
        closed = learner_nbgrader(CAL, "submit", UNIT, check=False)
    finally:
        exchange.close(handed_in.root, COURSE_ID, UNIT, closed=False)
    assert closed.returncode != 0 and "Hand-ins of ch07_unit_a are closed; your hand-in of" in closed.stderr
    assert sorted(p.name for p in handed_in.inbound(CAL).iterdir()) == kept


@pytest.fixture(scope="module")
def graded(handed_in):
    course = handed_in.course
    shutil.rmtree(course / "submitted" / CAL, ignore_errors=True)  # only the planted hand-ins are graded
    course_nbgrader(course, "autograde", UNIT)
    course_nbgrader(course, "generate_feedback", UNIT)
    course_nbgrader(course, "release_feedback", UNIT)
    for user in (ADA, BEA):
        learner_nbgrader(user, "fetch_feedback", UNIT)
    return handed_in


def _solution_lines() -> set[str]:
    source = nbformat.read(str(REPO / "source" / UNIT / f"{UNIT}.ipynb"), as_version=4)
    release = "\n".join(c.source for c in nbformat.read(str(REPO / "release" / UNIT / f"{UNIT}.ipynb"),
                                                    as_version=4).cells)
    return {line.strip() for cell in source.cells for line in cell.source.splitlines()
            if len(line.strip()) > 30 and line.strip() not in release}


def test_the_blank_scores_0_and_no_byte_of_any_target_reaches_autograded_feedback_or_the_learner(graded):
    from nbgrader.api import Gradebook

    with Gradebook(f"sqlite:///{graded.course / 'gradebook.db'}") as gb:
        for user in (ADA, BEA):
            assert gb.find_submission(UNIT, user).score == 0, user
    solution = _solution_lines()
    assert solution, "the reference has lines the release does not"
    fetched = [p for user in (ADA, BEA) for p in (graded.home(user) / UNIT / "feedback").rglob("*.html")]
    assert len(fetched) == 2
    reached = [*(graded.course / "autograded").rglob("*"), *(graded.course / "feedback").rglob("*"),
               *(graded.root / COURSE_ID / "feedback").rglob("*"), *fetched]
    for path in (p for p in reached if p.is_file()):
        data = path.read_bytes()
        assert SECRET not in data and b"SQLite format 3" not in data, path
        text = html.unescape(data.decode(errors="replace"))
        assert not [line for line in solution if line in text], path


def test_each_learners_feedback_names_what_was_refused(graded):
    ada = next((graded.home(ADA) / UNIT / "feedback").rglob("*.html")).read_text()
    for name in ("reference.ipynb", "gradebook.db", "secret.txt", "pipe", "notes.txt"):
        assert f"<code>{name}</code>" in ada, name
    assert "Not collected." in ada
    bea = next((graded.home(BEA) / UNIT / "feedback").rglob("*.html")).read_text()
    assert f"<code>{UNIT}.ipynb</code>: a symbolic link" in bea


def test_a_feedback_page_is_readable_by_its_learner_only(graded):
    pages = sorted((graded.root / COURSE_ID / "feedback").glob("*.html"))
    owners = {pwd.getpwuid(p.stat().st_uid).pw_name: p for p in pages}
    assert set(owners) == {ADA, BEA}
    assert all(stat.S_IMODE(p.stat().st_mode) == 0o440 for p in pages)
    done = as_account(CAL, ["cat", str(owners[ADA])], check=False)
    assert done.returncode != 0 and "Permission denied" in done.stderr
    assert as_account(ADA, ["cat", str(owners[ADA])]).stdout


def test_formgrader_and_a_learners_list_find_the_exchange_with_nothing_typed(handed_in):
    """formgrader's API marks the exchange missing when its root is not writable by everyone
    (nbgrader's own check); the course's exchange is found from the configuration alone."""
    code = ("from traitlets.config.loader import PyFileConfigLoader\n"
            "from nbgrader.apps import NbGraderAPI\nfrom nbgrader.coursedir import CourseDirectory\n"
            "cfg = PyFileConfigLoader('nbgrader_config.py', path='.').load_config()\n"
            "api = NbGraderAPI(CourseDirectory(config=cfg), config=cfg)\n"
            "print(api.exchange_missing, api.exchange_root, sorted(api.get_released_assignments()))\n")
    done = subprocess.run([sys.executable, "-c", code], cwd=handed_in.course, capture_output=True, text=True,
                          env=_env(), timeout=120)
    assert done.stdout.split("\n")[0] == f"False {handed_in.root} ['{UNIT}']", done.stdout + done.stderr
    listed = as_account(CAL, [str(Path(sys.executable).parent / "nbgrader"), "list"])
    assert f"{COURSE_ID} {UNIT}" in listed.stdout + listed.stderr
    assert "Unwritable directory" not in listed.stdout + listed.stderr


def test_an_account_of_the_graders_group_lists_and_reads_every_hand_in_and_changes_none(handed_in):
    ada = handed_in.inbound(ADA)
    theirs = next(p for p in ada.iterdir() if "x1" in p.name)
    listed = as_account(GRADER, ["ls", str(handed_in.root / COURSE_ID / "inbound"), str(ada)], cwd="/")
    assert ADA in listed.stdout and theirs.name in listed.stdout
    assert as_account(GRADER, ["cat", str(theirs / f"{UNIT}.ipynb")], cwd="/").stdout.startswith("{")
    done = as_account(GRADER, ["bash", "-c", f"echo x >> '{theirs}/{UNIT}.ipynb'"], cwd="/", check=False)
    assert done.returncode != 0 and "Permission denied" in done.stderr
