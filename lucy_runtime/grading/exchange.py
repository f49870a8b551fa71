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
learner's folder (below). A learner hands in only into a folder of their own
(so never in another's name); ``collect`` takes a hand-in only when its folder and its owner
are the learner it names (nbgrader's owner check, which only warns, refuses here) and
copies it with ``handin.copy_regular_files``: no link is followed, links, FIFOs, sockets and
devices are refused by name, and the hand-in's size and file count are capped
(``c.GradingLimits.submission_mb``, ``submission_files``).

``configure(c, root)`` is the one place that sets it up, for the course's
``nbgrader_config.py`` and for the learners' own configuration alike. Where things are: the
layout's names in ``exchange_layout.py``, nbgrader's steps in ``exchange_steps.py`` and collect
in ``exchange_collect.py``.
"""

from __future__ import annotations

import os
import pwd
import re
import shutil
import sys
from pathlib import Path
from typing import Any

from lucy_runtime.errors import ExchangeSetupFailed
from lucy_runtime.grading.exchange_collect import PrivateCollect, collect_handin, refusals_of
from lucy_runtime.grading.exchange_layout import GRADERS, ONE_ACCOUNT, REFUSED, _group_id, exchange_root
from lucy_runtime.grading.exchange_steps import (
    PrivateExchange, PrivateFetchAssignment, PrivateFetchFeedback, PrivateList, PrivateReleaseAssignment,
    PrivateReleaseFeedback, PrivateSubmit,
)
from lucy_runtime.grading.handin import safe_write

__all__ = ["GRADERS", "REFUSED", "add", "close", "collect_handin", "configure", "create", "exchange_root", "refusals_of",
           "write_environment_config"]


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


# --- making the exchange (as root, or as one educator trying it alone) ------------------------

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
