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

import json
import os
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

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
    Patch("nbgrader", "0.9.6", "nbgrader.nbgraderformat.common.jsonschema", "patches.check_metadata_schema_once"),
    Patch("nbgrader", "0.9.6", "nbgrader.converters.GenerateAssignment.start", "patches.guard_generate_assignment"),
    Patch("hypothesis", "6.170.17", "hypothesis.internal.conjecture.engine.MAX_SHRINKS", "checker/model_based.py"),
    Patch("hypothesis", "6.170.17", "hypothesis.internal.conjecture.engine.MAX_SHRINKING_SECONDS", "checker/model_based.py"),
    Patch("python", "3.11", "tempfile.mkdtemp", "patches.share_new_temp_folders"),
)


class SchemaCheckedOnce:
    """The ``jsonschema`` module as nbgrader's metadata check sees it: ``validate`` builds one
    validator per schema, checks that schema once, and raises what ``jsonschema.validate`` raises."""

    def __init__(self, jsonschema) -> None:
        self._jsonschema = jsonschema
        self._validators: dict[str, Any] = {}  # a jsonschema Validator per schema

    def __getattr__(self, name: str):
        return getattr(self._jsonschema, name)

    def validate(self, instance, schema, cls=None, *args, **kwargs) -> None:
        if cls is not None or args or kwargs:
            self._jsonschema.validate(instance, schema, cls, *args, **kwargs)
            return
        key = json.dumps(schema, sort_keys=True)  # by content: nbgrader loads the schema anew per validator
        validator = self._validators.get(key)
        if validator is None:
            kind = self._jsonschema.validators.validator_for(schema)
            kind.check_schema(schema)  # a broken schema raises SchemaError here, as validate would
            validator = self._validators[key] = kind(schema)
        error = self._jsonschema.exceptions.best_match(validator.iter_errors(instance))
        if error is not None:
            raise error


def check_metadata_schema_once() -> None:
    """Give nbgrader's cell-metadata check (``nbgrader.nbgraderformat.common``) a SchemaCheckedOnce."""
    from nbgrader.nbgraderformat import common  # noqa: PLC0415 - only where nbgrader runs

    if not isinstance(common.jsonschema, SchemaCheckedOnce):
        common.jsonschema = SchemaCheckedOnce(common.jsonschema)


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


def share_new_temp_folders() -> None:
    """In the sandboxed orchestrator alone: every folder ``tempfile.mkdtemp`` makes from now on is
    open to the grader user, who writes the scenario folders this process makes."""
    make_temp = tempfile.mkdtemp

    def shared_mkdtemp(*args, **kwargs):
        path = make_temp(*args, **kwargs)
        os.chmod(path, 0o777)
        return path

    tempfile.mkdtemp = shared_mkdtemp
