"""nbgrader's log, read in one place: each line grading reads is quoted from the code that prints it.

nbgrader gives no machine-readable account of a run: which submission it is on, which it could
not grade and why, and whether its config was lost are in its log alone. ``READS`` lists every
line read here with the module that prints it, a piece of that module's source, and, for
nbgrader, the version it was read from; ``tests/test_nbgrader_log.py`` fails when another
nbgrader is installed or a quoted piece is gone from its module, as ``patches.py``'s pins do,
so an upgrade is read here before it can lose a grade. The line that says what stopped a
submission is this course's own (``kernel.py``, ``orchestrator.py``).
"""

from __future__ import annotations

import re
from dataclasses import dataclass


@dataclass(frozen=True)
class Read:
    module: str
    """The module whose code prints the line."""
    quoted: str
    """A piece of that module's source: the line as it is printed."""
    use: str
    """What grading learns from it."""
    package: str
    pinned: str | None = None
    """The version read (nbgrader's, pinned in pyproject.toml); None: the quote alone is checked."""


NBGRADER = "0.9.6"

READS = (
    Read("nbgrader.coursedir", 'os.path.join("{nbgrader_step}", "{student_id}", "{assignment_id}")',
         "every line naming a submission's folder names its student", "nbgrader", NBGRADER),
    Read("nbgrader.converters.autograde", 'self.log.info("Sanitizing %s", notebook_filename)',
         "the student an autograde starts on (lucy autograde's progress bar)", "nbgrader", NBGRADER),
    Read("nbgrader.converters.base", "\"There was an error processing assignment '{}' for student '{}'\"",
         "the students a run could not grade", "nbgrader", NBGRADER),
    Read("nbgrader.validator", 'self.stream.write("Success! Your notebook passes all the tests.\\n")',
         "a source notebook passes its own tests", "nbgrader", NBGRADER),
    Read("nbgrader.validator", 'self.stream.write("Success! The notebook does not pass any tests.\\n")',
         "a blank release passes none", "nbgrader", NBGRADER),
    Read("traitlets.config.application", '"Exception while loading config file %s"',
         "the course's nbgrader_config.py was not loaded: every setting in it lost", "traitlets"),
    Read("nbclient.client", 'raise DeadKernelError("Kernel died")', "a submission's kernel died", "nbclient"),
)

VALIDATE_PASSES = "Success! Your notebook passes all the tests."
VALIDATE_INVERTED_PASSES = "Success! The notebook does not pass any tests."
CONFIG_LOST = "Exception while loading config file"
STOPPED = "Submission stopped: "
"""This course's line (``kernel.STOPPED_LOG``): what stopped a submission's kernel or re-check."""


def config_lost(output: str) -> bool:
    """traitlets logged that the config file failed to load, and nbgrader carried on without it."""
    return CONFIG_LOST in output


def student_started(line: str) -> str | None:
    """The student whose submission an autograde starts on, from its "Sanitizing" line."""
    found = re.search(r"Sanitizing .*/submitted/([^/]+)/", line)
    return found.group(1) if found else None


def student_of(line: str, assignment: str) -> str | None:
    """The student a line of an autograde's log is about, when it names a submission folder."""
    found = re.search(rf"/(?:submitted|autograded)/([^/\s]+)/{re.escape(assignment)}\b", line)
    return found.group(1) if found else None


def failed_students(output: str, assignment: str) -> set[str]:
    """nbgrader ends a run that met errors with one line per student it could not grade."""
    return set(re.findall(rf"There was an error processing assignment '{re.escape(assignment)}' "
                          r"for student '([^']+)'", output))


def kernel_died(log: str) -> bool:
    return "DeadKernelError" in log or "Kernel died" in log


def stopped(log: str) -> str:
    """What stopped a submission, from its stretch of the log ("; " between several)."""
    return "; ".join(dict.fromkeys(m.strip() for m in re.findall(rf"{re.escape(STOPPED)}(.+)", log)))
