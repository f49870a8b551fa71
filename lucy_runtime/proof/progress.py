"""Progress of the long runs (autograding every submission, running every mutant), drawn by rich.

A run reports through the small ``Progress`` protocol and never draws anything itself:
the command line passes a ``RichProgress`` (a bar on stderr), a test passes a fake.
"""

from __future__ import annotations

from typing import Protocol

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, TaskID, TextColumn, TimeElapsedColumn
from rich.progress import Progress as _Bar


class Progress(Protocol):
    def update(self, done: int, total: int, note: str) -> None:
        """``done`` of ``total`` finished; ``note`` says what is running now."""

    def say(self, line: str) -> None:
        """One line about a step that has no count."""


class RichProgress:
    """One bar at a time on stderr; a bar ends when ``done`` reaches ``total``."""

    def __init__(self, console: Console | None = None):
        self.console = console or Console(stderr=True)
        self._live: tuple[_Bar, TaskID] | None = None

    def update(self, done: int, total: int, note: str) -> None:
        if self._live is None:
            bar = _Bar(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                       console=self.console)
            bar.start()
            self._live = bar, bar.add_task(note, total=total)
        bar, task = self._live
        bar.update(task, completed=done, total=total, description=note)
        if done >= total:
            self.close()

    def say(self, line: str) -> None:
        self.close()
        self.console.print(line)

    def close(self) -> None:
        if self._live is not None:
            self._live[0].stop()
            self._live = None
