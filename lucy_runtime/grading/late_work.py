"""Due dates in the course's configuration, and a late policy through nbgrader's late-submission plugin API.

nbgrader keeps each assignment's due date in its gradebook (``nbgrader db assignment add
NAME --duedate=...``, or formgrader) and, at autograde, hands each late submission's
seconds late to ``c.AssignLatePenalties.plugin_class``; the penalty it returns is stored
per notebook, subtracted in ``nbgrader export`` and shown in the learner's feedback
("Late submission penalty"). Here the due dates live in ``nbgrader_config.py`` beside the
rest of the course's settings::

    c.DueDates.dates = {"ch07_unit_a": "2026-10-12 23:59:00 Europe/Berlin"}
    c.AssignLatePenalties.plugin_class = PercentPerDayLate
    c.PercentPerDayLate.percent_per_day = 10

:func:`apply_due_dates` writes them into the gradebook; ``lucy autograde`` and ``lucy
regrade`` call it before they grade, so a changed due date counts from the next grading.
A submission's time is the one nbgrader's ``collect`` records (``timestamp.txt``).
"""

from __future__ import annotations

import math
from pathlib import Path

from nbgrader.plugins import LateSubmissionPlugin
from traitlets import Dict, Float
from traitlets.config import Configurable

from .gradebook import course_config, course_db_url


class DueDates(Configurable):
    dates = Dict({}, help="assignment -> its due date, as nbgrader reads one ('2026-10-12 23:59:00 Europe/Berlin'; "
                          "without a zone: UTC)").tag(config=True)


class PercentPerDayLate(LateSubmissionPlugin):
    """A share of the score per day late (a part of a day counts as a day), after a grace period."""

    percent_per_day = Float(10.0, help="percent of the notebook's score taken per day late").tag(config=True)
    grace_minutes = Float(0.0, help="minutes after the due date that are not late yet").tag(config=True)

    def late_submission_penalty(self, student_id: str, score: float, total_seconds_late: float) -> float | None:
        late = total_seconds_late - 60 * self.grace_minutes
        if late <= 0:
            return None
        days = math.ceil(late / 86400)
        return round(score * min(100.0, self.percent_per_day * days) / 100, 6)


def policy(root: Path) -> str:
    """The course's late policy, in words (for the report and the guide)."""
    config = course_config(root)
    plugin = config.AssignLatePenalties.get("plugin_class") if "AssignLatePenalties" in config else None
    if plugin is PercentPerDayLate or getattr(plugin, "__name__", "") == "PercentPerDayLate":
        late = PercentPerDayLate(config=config)
        grace = f", after {late.grace_minutes:g} minutes' grace" if late.grace_minutes else ""
        return f"{late.percent_per_day:g}% of the score per day late (a part of a day counts as a day){grace}"
    if plugin is None:
        return "none: late work is marked late and keeps its score (nbgrader's default)"
    return f"nbgrader's {getattr(plugin, '__name__', plugin)}"


def due_dates(root: Path) -> dict[str, str]:
    return {str(k): str(v) for k, v in DueDates(config=course_config(root)).dates.items()}


def apply_due_dates(root: Path) -> dict[str, str]:
    """Write the due dates of the course's configuration into its gradebook; the ones written."""
    from nbgrader.api import Gradebook  # noqa: PLC0415 - deferred: nbgrader's api loads SQLAlchemy models
    from nbgrader.utils import parse_utc  # noqa: PLC0415

    dates = due_dates(root)
    if dates:
        with Gradebook(course_db_url(root)) as gb:
            for name, when in dates.items():
                gb.update_or_create_assignment(name, duedate=parse_utc(when))
    return dates
