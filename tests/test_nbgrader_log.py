"""nbgrader's log is read in one module, each line quoted from the code that prints it and pinned
to nbgrader's version: an upgrade that rewords a line fails here, not in a grade."""

from __future__ import annotations

import importlib.metadata
import importlib.util
from pathlib import Path

import pytest

from lucy_runtime.grading import nbgrader_log
from lucy_runtime.grading.nbgrader_log import READS, Read


def source_of(module: str) -> str:
    """A module's source, read without importing it."""
    spec = importlib.util.find_spec(module)
    assert spec and spec.origin, f"{module} is not installed"
    return Path(spec.origin).read_text(encoding="utf-8")


def check(read: Read) -> None:
    installed = importlib.metadata.version(read.package)
    assert read.pinned in (None, installed), (
        f"{read.package} is {installed}, but lucy_runtime/grading/nbgrader_log.py reads its log as {read.pinned} "
        f"prints it. Read {read.module} in the new version, adapt the reading, then pin {installed} there")
    assert read.quoted in source_of(read.module), (
        f"{read.module} no longer prints {read.quoted!r}: grading would miss that {read.use}")


@pytest.mark.parametrize("read", READS, ids=lambda r: f"{r.module}:{r.quoted[:40]}")
def test_each_line_read_is_printed_by_the_installed_version_it_was_read_from(read):
    check(read)


def test_another_version_or_a_reworded_line_fails():
    with pytest.raises(AssertionError, match="then pin"):
        check(Read("nbgrader.converters.base", "There was an error", "x", "nbgrader", "0.0.1"))
    with pytest.raises(AssertionError, match="no longer prints"):
        check(Read("nbgrader.converters.base", "There was a mistake processing", "x", "nbgrader", nbgrader_log.NBGRADER))


def test_the_pinned_nbgrader_is_the_one_the_project_requires():
    pyproject = (Path(__file__).resolve().parent.parent / "pyproject.toml").read_text(encoding="utf-8")
    assert f'"nbgrader=={nbgrader_log.NBGRADER}"' in pyproject


def test_the_lines_are_read_as_nbgrader_prints_them():
    failed = "There was an error processing assignment '{}' for student '{}'".format("ch07_unit_a", "ada")
    log = (f"[AutogradeApp | INFO] Sanitizing /course/submitted/bo/ch07_unit_a/ch07_unit_a.ipynb\n"
           f"[AutogradeApp | ERROR] {failed}\n[AutogradeApp | ERROR] There was an error processing assignment "
           "'ch07_unit_b' for student 'cy'\n")
    assert nbgrader_log.failed_students(log, "ch07_unit_a") == {"ada"}
    assert nbgrader_log.student_started(log.splitlines()[0]) == "bo"
    assert nbgrader_log.student_of("Writing /course/autograded/bo/ch07_unit_a/x.ipynb", "ch07_unit_a") == "bo"
    assert nbgrader_log.student_of("Writing /course/autograded/bo/ch07_unit_ab/x.ipynb", "ch07_unit_a") is None
    assert nbgrader_log.kernel_died('nbclient.exceptions.DeadKernelError: Kernel died') and not nbgrader_log.kernel_died(log)
    assert nbgrader_log.config_lost("[NbGrader | ERROR] Exception while loading config file nbgrader_config.py")
    stopped = "\n".join(["[x] " + nbgrader_log.STOPPED + "the memory limit"] * 2 + ["[x] " + nbgrader_log.STOPPED + "its kernel died"])
    assert nbgrader_log.stopped(stopped) == "the memory limit; its kernel died"
