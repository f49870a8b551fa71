"""Where the course's private exchange lives and the names in it: its root (``$LUCY_EXCHANGE`` or the
system path), each learner's folder of ``inbound/``, the group whose members read every hand-in, the
marker of a one-account exchange and the file that keeps what collect refused. The steps of the
exchange (``exchange_steps``, ``exchange_collect``) and the commands that make it (``exchange``) share them.
"""

from __future__ import annotations

import os
from pathlib import Path

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


def learner_folder(root: str | os.PathLike, course_id: str, student: str) -> Path:
    return Path(root) / course_id / "inbound" / student


def _group_id(name: str) -> int | None:
    import grp  # noqa: PLC0415 - POSIX only

    try:
        return grp.getgrnam(name).gr_gid
    except KeyError:
        return None
