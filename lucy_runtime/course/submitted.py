"""What a course's collected hand-ins hold before a step reads them: what collect refused of each, and
anything in ``submitted/`` or ``autograded/`` that only collect (or autograde) should have written there
and that no step may read (a link, a FIFO, ... put there around collect). ``lucy autograde`` moves such a
hand-in aside before grading; ``lucy report`` refuses to read such an autograded folder."""

from __future__ import annotations

import os
from pathlib import Path

from ..grading.exchange import refusals_of
from ..grading.handin import scan


def refused_at_hand_in(course: Path, assignment: str) -> tuple[list[tuple[str, str]], list[tuple[str, str]]]:
    """What collect refused of each hand-in; and what is in submitted/ now that no step may read,
    which is moved aside before grading."""
    refused, unsafe = [], []
    for folder in sorted((course / "submitted").glob(f"*/{assignment}")):
        student = folder.parent.name
        refused += [(student, line) for line in refusals_of(folder)]
        found = scan(folder)
        if found:
            unsafe += [(student, r.line()) for r in found]
            folder.rename(folder.with_name(f"{assignment}.unsafe-{os.getpid()}"))
    return refused, unsafe


def unsafe_in_autograded(course: Path, assignment: str | None) -> list[str]:
    """What autograded/ holds that no step may read, for one assignment or (None) all of them."""
    return [f"{folder.parent.name}/{folder.name}: {r.line('not read')}"
            for folder in sorted((course / "autograded").glob(f"*/{assignment or '*'}"))
            for r in scan(folder)]
