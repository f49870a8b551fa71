"""Long runs report progress through a small protocol; the command line draws it with rich."""

from __future__ import annotations

import io

from rich.console import Console

from lucy_runtime.proof.progress import RichProgress


def drawn() -> tuple[RichProgress, io.StringIO]:
    out = io.StringIO()
    return RichProgress(Console(file=out, force_terminal=False, width=100)), out


def test_a_finished_bar_shows_the_count_and_what_ran_last():
    progress, out = drawn()
    for done in range(1, 4):
        progress.update(done, 3, f"ch07_unit_a: case-{done}")
    text = out.getvalue()
    assert "3/3" in text and "ch07_unit_a: case-3" in text


def test_a_line_without_a_count_ends_the_bar_first():
    progress, out = drawn()
    progress.update(1, 4, "mutants")
    progress.say("generating feedback and exporting grades")
    text = out.getvalue()
    assert "1/4" in text and text.rstrip().endswith("generating feedback and exporting grades")
