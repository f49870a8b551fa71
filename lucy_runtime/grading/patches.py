"""Every change this course makes inside a third party where it offers no public hook.

Each is pinned: ``PATCHES`` names what it replaces, where, and the version of that package
it was written against, and ``tests/test_patches.py`` fails loudly when an installed
version differs or a replaced name is gone, so an upgrade is read, not discovered in a
grade. The one that must live beside the code it serves says so in ``PATCHES``: the
model-based row's cap on Hypothesis's shrinking (``checker/model_based.py``, below
grading). The sandboxed kernel needs no patch: it starts through jupyter_client's public
kernel provisioner API (``provisioner.py``).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from .unchanged_on_failure import sqlite_files, unchanged_on_failure


@dataclass(frozen=True)
class Patch:
    package: str
    """The distribution patched, as ``importlib.metadata`` names it."""
    pinned: str
    """The version the patch was written against and tested with."""
    target: str
    """The module and attribute replaced (or overridden, for a private method)."""
    where: str
    """The function here, or the module of this package, that does it."""


PATCHES = (
    Patch("nbgrader", "0.9.6", "nbgrader.converters.GenerateAssignment.start", "patches.guard_generate_assignment"),
    Patch("hypothesis", "6.170.17", "hypothesis.internal.conjecture.engine.MAX_SHRINKS", "checker/model_based.py"),
    Patch("hypothesis", "6.170.17", "hypothesis.internal.conjecture.engine.MAX_SHRINKING_SECONDS", "checker/model_based.py"),
)


def guard_generate_assignment() -> None:
    """Wrap nbgrader's GenerateAssignment so a failed run changes neither release/ nor the gradebook.

    nbgrader picks the converter class itself (no option names it) and its pre-convert
    hook runs after the release folder is already deleted, so the wrapper goes around
    the converter's ``start``.
    """
    from nbgrader.converters import GenerateAssignment  # noqa: PLC0415 - deferred: nbgrader takes seconds to import

    if getattr(GenerateAssignment.start, "keeps_course_on_failure", False):
        return
    start = GenerateAssignment.start

    def guarded(self) -> None:
        root = Path(self.coursedir.root or os.getcwd())
        release = root / self.coursedir.release_directory
        with unchanged_on_failure([release, *sqlite_files(self.coursedir.db_url)]):
            start(self)

    setattr(guarded, "keeps_course_on_failure", True)  # a mark on the function; mypy knows no such attribute
    GenerateAssignment.start = guarded
