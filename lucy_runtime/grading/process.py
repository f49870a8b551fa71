"""Rows run in a checker process of their own, its scenario children forked from it.

A fork copies the page tables of the process that forks, so a child costs more the
bigger its parent: about 3 ms from a fresh interpreter of 23 MB, about 17 ms from one
of 230 MB (a test worker, a JupyterLab server, the ``lucy`` command after it read the
notebooks). The rows fork hundreds of children. So a caller with learner *cells* in
hand (not a live kernel) can hand them to a small process that imports only the
checker: ``python -m lucy_runtime.grading.orchestrator rows --serve``, the sealed re-check's
orchestrator without the sandbox. It runs no learner code itself; its children close
every file they inherit, so none can answer in its place. One process serves request
after request, each in a fresh ``Harness``.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from typing import Iterable

from ..errors import AnswerUnreadable, CheckerProcessGone
from ..checker.harness import SourceLearner
from ..checker.results import CheckReport, RowResult
from ..checker.rows import Row

ORCHESTRATOR = (sys.executable, "-m", "lucy_runtime.grading.orchestrator", "rows")
"""The rows' orchestrator: one request on stdin, one answer; in the sandbox, the sealed re-check."""
COMMAND = (*ORCHESTRATOR, "--serve")


def request_line(cells: list[tuple[str, str]] | list[list[str]], row_ids: list[str], *, timeout: float,
                 seed: int | None = None, drop_to: list[int | None] | None = None,
                 limits: dict[str, int] | None = None, sandboxed: bool = False) -> str:
    """What the orchestrator reads: the cells, the row ids, the timeout, a seed, the user to drop to
    and the limits its children run under (``limits.Limits``); ``sandboxed`` when it runs in the sandbox."""
    return json.dumps({"cells": [list(cell) for cell in cells], "rows": list(row_ids), "timeout": timeout,
                       "seed": seed, "drop_to": drop_to, "limits": limits,
                       "sandboxed": sandboxed}) + "\n"


def read_answer(text: str, row_ids: list[str]) -> tuple[RowResult, ...]:
    """The orchestrator's answer, checked: ValueError when it is not the results of ``row_ids``, in order."""
    try:
        results = tuple(RowResult(**result) for result in json.loads(text))
    except (ValueError, TypeError) as error:
        raise AnswerUnreadable(f"nonsense ({error})") from None
    if [r.row_id for r in results] != list(row_ids):
        raise AnswerUnreadable("results for other rows than it was asked")
    return results


class CheckerProcess:
    """A small process that runs rows for learner cells, one request at a time.

    ``run_rows`` takes and returns what ``checker.run_rows`` does, for a SourceLearner.
    """

    def __init__(self) -> None:
        self._process: subprocess.Popen[str] | None = subprocess.Popen(
            COMMAND, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, cwd="/", env=dict(os.environ))

    def run_rows(self, learner: SourceLearner, rows: Iterable[Row], *, seed: int | None = None,
                 timeout: float = 5.0, title: str = "Self-check") -> CheckReport:
        process = self._process
        if process is None or process.stdin is None or process.stdout is None:
            raise CheckerProcessGone("this checker process was closed")
        ids = [row.id for row in rows]
        try:
            process.stdin.write(request_line(learner.cells, ids, timeout=timeout, seed=seed))
            process.stdin.flush()
            line = process.stdout.readline()
        except BrokenPipeError:
            line = ""
        if not line:
            raise CheckerProcessGone(f"the checker process ended (exit {process.poll()}) before it answered")
        try:
            return CheckReport(read_answer(line, ids), title)
        except ValueError as error:
            raise CheckerProcessGone(f"the checker process answered {error}") from None

    def close(self) -> None:
        process, self._process = self._process, None
        if process is None:
            return
        if process.stdin is not None:
            process.stdin.close()
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
        if process.stdout is not None:
            process.stdout.close()

    def __enter__(self) -> "CheckerProcess":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


__all__ = ["CheckerProcess"]
