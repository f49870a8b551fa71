"""Tamper cases: submissions that try to earn points the code beneath them does not.

Each rides on an honest submission (the blank release, or an educator case) and adds
a trick to one learner cell: rebinding ``grade``, an IPython hook that displays "ok",
a cell whose last value is a string, a ``finish`` that looks for the crash injector,
a ``finish`` that looks for its plan (in its memory, up its stack, in files an earlier run left),
one that keeps notes across runs (unwritable files, SysV shared memory, a message queue), one that
leaves a helper process to finish its work after the kill,
writes through a connection of its own (before, after or inside a commit it reports
itself), a claim that looks outside its transaction,
a Unit A that smuggles a cheat into Unit B; one that fetches the reference from a
service on the grading machine's loopback (``AnswerServer``: the network must be shut);
one for each resource limit, which takes the grading kernel's memory, processes,
output, temporary folder, working folder, socket folder, time or standard streams; and a written answer
and outputs that carry script for the educator's browser, Markdown that would split if parsed again,
markup dressed as formgrader's controls, and cell metadata that hides a cell. ``lucy verify-grader`` autogrades each
one next to its honest base: a tamper case must never score more than its base. The code each
trick adds is in ``tamper_code``; the answers that carry script, in ``hostile_answers``.
"""

from __future__ import annotations

import json
import threading
from dataclasses import dataclass, replace
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from ..errors import UnknownCase
from ..educator.cases import Case, Edit
from .hostile_answers import FAKE_CONTROLS, HIDDEN, HOSTILE_ANSWER, HOSTILE_OUTPUTS, SPLIT_AFTER_CLEANING
from .tamper_code import (CLOSE_STD, DISPLAY_OK, FAKE_GRADE, FETCH_THE_ANSWER, FILL_SOCKETS, FILL_TMP, FILL_WORK,
                          FINISH_UNLESS_STOPPED, FORGED_COMMIT, FORK, HELPER, INTERACTIVITY, LOOK_FOR_THE_PLAN,
                          MEMORY, NOTES, PRINT, PRIVATE_FINISH, PRIVATE_LOOK_CLAIM, REPORT_AFTER_COMMIT, SECOND_TX,
                          SLEEP, SNIFF, SPLIT_WITH_HELPER, STORE_REPORT)

ANSWER_URL = "ANSWER_URL"
"""Stands in a tamper's code for the address of the ``AnswerServer`` of this run."""


@dataclass(frozen=True)
class Append:
    """Add module-level code at the end of one learner cell."""

    cell: str
    code: str

    def apply(self, source: str) -> str:
        return source.rstrip() + "\n\n\n" + self.code.strip() + "\n"


@dataclass(frozen=True)
class Written:
    """Replace a written answer (a Markdown cell the learner writes) with ``text``."""

    cell: str
    text: str

    def apply(self, source: str) -> str:
        return self.text


@dataclass(frozen=True)
class Metadata:
    """Merge ``metadata`` into one learner cell's metadata (its source stays as it is)."""

    cell: str
    metadata: tuple[tuple[str, object], ...]

    def apply(self, source: str) -> str:
        return source

    def apply_cell(self, cell) -> None:
        cell.metadata.update(dict(self.metadata))


@dataclass(frozen=True)
class Planted:
    """A file of the hand-in that is not a file: ``kind`` "link" to ``target`` ("source": the course's
    source notebook of the unit; "gradebook": the gradebook), or "fifo". It goes through collect."""

    name: str
    kind: str
    target: str = ""


@dataclass(frozen=True)
class Tamper:
    name: str
    unit: str
    honest: str  # "blank-release", or the name of the educator case it rides on
    edits: tuple[Edit | Append | Written | Metadata, ...]  # applied after the honest base's own edits
    trick: str
    unit_a_edits: tuple[Edit | Append, ...] = ()  # for Unit B: tricks placed in the learner's Unit A
    planted: tuple[Planted, ...] = ()  # links and FIFOs in the hand-in folder, collected as collect does
    needs_sandbox: bool = False
    """Held by the grading sandbox alone (each run of a row from nothing, a kill that ends every process of
    the run): without bubblewrap, learner code is not isolated and such a trick may forge points."""

    def as_case(self, base: Case | None, answer_url: str = "http://127.0.0.1:9/") -> Case:
        """The honest base's edits followed by the trick's, as one case (for the checker and ``lucy check``).

        ``answer_url`` is where this run's ``AnswerServer`` listens (a closed port when there is none)."""
        trick = tuple(replace(e, code=e.code.replace(ANSWER_URL, answer_url)) if isinstance(e, Append) else e
                      for e in self.unit_a_edits + self.edits)
        edits = (base.edits if base else ()) + trick
        return Case(self.name, self.unit, edits, self.trick, (), "")  # type: ignore[arg-type]


TAMPERS: tuple[Tamper, ...] = (
    Tamper("rebind-grade", "ch07_unit_a", "blank-release", (Append("schema", FAKE_GRADE),),
           "A blank notebook whose first cell rebinds grade() and ready() to functions that never fail."),
    Tamper("rebind-grade-b", "ch07_unit_b", "blank-release", (Append("deliver_one", FAKE_GRADE),),
           "The same in Unit B."),
    Tamper("display-ok", "ch07_unit_a", "blank-release", (Append("schema", DISPLAY_OK),),
           "An IPython hook that displays 'ok' as the result of every cell that calls grade()."),
    Tamper("last-value-string", "ch07_unit_a", "blank-release", (Append("schema", INTERACTIVITY),),
           "Every expression's value is shown and ready() returns a string: nbgrader gives full credit to a "
           "cell whose result is not a number."),
    Tamper("sniff-the-injector", "ch07_unit_a", "finish-two-transactions",
           (Edit("finish", SECOND_TX, SNIFF + SECOND_TX),),
           "finish in two transactions that exits with the crash status whenever it finds a checker hook, so "
           "the crash between the two commits is never seen."),
    Tamper("look-for-the-plan", "ch07_unit_a", "finish-two-transactions",
           (Edit("finish", None, FINISH_UNLESS_STOPPED), Append("finish", LOOK_FOR_THE_PLAN)),
           "finish in two transactions, except in a run it believes will be stopped: it searches its own memory "
           "and stack for the checker's plan, and counts the runs of its request in files it leaves in its "
           "folder and the temporary folder (the counting run comes first)."),
    Tamper("notes-across-runs", "ch07_unit_a", "finish-two-transactions",
           (Edit("finish", None, FINISH_UNLESS_STOPPED), Append("finish", NOTES + STORE_REPORT)),
           "finish in two transactions, except in a run that finds notes an earlier run of its request left: "
           "a folder it made unwritable holding a file of mode 0 (in its folder, /tmp and /dev/shm), SysV shared "
           "memory, a POSIX message queue. Each run starts from nothing, so none finds one.", needs_sandbox=True),
    Tamper("helper-finishes-after-kill", "ch07_unit_a", "finish-two-transactions",
           (Edit("finish", None, SPLIT_WITH_HELPER), Append("finish", HELPER + STORE_REPORT)),
           "finish in two transactions that first leaves a helper process with a connection of its own, which "
           "commits the report if finish dies before it does. A kill stops every process of the run at once.",
           needs_sandbox=True),
    Tamper("private-connection-finish", "ch07_unit_a", "finish-two-transactions",
           (Edit("finish", None, PRIVATE_FINISH),),
           "finish checks through the store but writes through a connection of its own, where no crash point is."),
    Tamper("private-report-after-commit", "ch07_unit_a", "finish-two-transactions",
           (Edit("finish", None, REPORT_AFTER_COMMIT),),
           "finish commits the move to done through the store, then inserts the report through a connection of "
           "its own, after the last point the checker is told of."),
    Tamper("forged-commit-window", "ch07_unit_a", "finish-two-transactions",
           (Edit("finish", None, FORGED_COMMIT),),
           "finish reports a COMMIT to the checker itself, then commits the move to done and the report "
           "separately through a connection of its own inside that one window."),
    Tamper("private-look-claim", "ch07_unit_a", "claim-check-then-act",
           (Edit("claim", None, PRIVATE_LOOK_CLAIM),),
           "claim looks through a connection of its own before its transaction, so a rival pause at a later "
           "BEGIN would never see the race."),
    Tamper("cheat-carried-from-unit-a", "ch07_unit_b", "delivery-confirms-before-send", (),
           "A Unit A cell rebinds grade() and ready(); Unit B loads Unit A, hoping the cheat comes along.",
           unit_a_edits=(Append("schema", FAKE_GRADE),)),
    Tamper("fetch-the-answer", "ch07_unit_a", "blank-release", (Append("work_once", FETCH_THE_ANSWER),),
           "A blank notebook whose last cell fetches the reference's cells from a service on the grading "
           "machine's loopback and runs them: the network inside the sandbox must be shut."),
    Tamper("memory-without-end", "ch07_unit_a", "reference", (Append("schema", MEMORY),),
           "The reference, with a first cell that allocates memory until the kernel is stopped."),
    Tamper("fork-without-end", "ch07_unit_a", "reference", (Append("schema", FORK),),
           "The reference, with a first cell that forks until no process is left to start."),
    Tamper("print-without-end", "ch07_unit_a", "reference", (Append("schema", PRINT),),
           "The reference, with a first cell that prints until the output limit interrupts it."),
    Tamper("fill-the-temporary-folder", "ch07_unit_a", "reference", (Append("schema", FILL_TMP),),
           "The reference, with a first cell that writes files into /tmp until it is full."),
    Tamper("fill-the-working-folder", "ch07_unit_a", "reference", (Append("schema", FILL_WORK),),
           "The reference, with a first cell that writes files into the folder it runs in until it is full."),
    Tamper("fill-the-socket-folder", "ch07_unit_a", "reference", (Append("schema", FILL_SOCKETS),),
           "The reference, with a first cell that writes files into the folder of its kernel's Unix sockets "
           "(named in its connection file) until it is full."),
    Tamper("sleep-forever", "ch07_unit_a", "reference", (Append("schema", SLEEP),),
           "The reference, with a first cell that sleeps until the cell's time limit interrupts it."),
    Tamper("close-its-own-streams", "ch07_unit_a", "reference", (Append("schema", CLOSE_STD),),
           "The reference, with a first cell that closes the kernel's own stdout and stderr."),
    Tamper("linked-notebook", "ch07_unit_a", "blank-release", (),
           "The hand-in's notebook is a symbolic link to the course's source notebook, which holds the "
           "reference: a collect that follows links grades the reference as the learner's.",
           planted=(Planted("ch07_unit_a.ipynb", "link", "source"),)),
    Tamper("links-in-the-hand-in", "ch07_unit_a", "blank-release", (),
           "A blank notebook handed in beside links to the reference notebook and the gradebook and a FIFO, "
           "for learner code or a later grading step to read.",
           planted=(Planted("reference.ipynb", "link", "source"), Planted("gradebook.db", "link", "gradebook"),
                    Planted("pipe", "fifo"))),
    Tamper("script-in-written-answer", "ch07_unit_a", "blank-release",
           (Written("explain_worker_crash", HOSTILE_ANSWER), Append("schema", HOSTILE_OUTPUTS)),
           "A blank notebook whose written answer and outputs carry script (<script>, onerror, SVG, iframe, "
           "javascript: links, a JavaScript output) that would give it full marks through formgrader's API "
           "when the educator opens it."),
    Tamper("markdown-split-after-cleaning", "ch07_unit_a", "blank-release",
           (Written("explain_worker_crash", SPLIT_AFTER_CLEANING),),
           "A blank notebook whose written answer would split when cleaned HTML is parsed as Markdown again: "
           "an image from any address and a javascript: link that saves full marks."),
    Tamper("fake-formgrader-controls", "ch07_unit_a", "blank-release",
           (Written("explain_worker_crash", FAKE_CONTROLS),),
           "A blank notebook whose written answer uses class, id and style to lay a fake formgrader bar, a "
           "'full credit saved' banner and a fake Next over the real controls."),
    Tamper("hidden-cell", "ch07_unit_a", "blank-release",
           (Append("schema", FAKE_GRADE), Metadata("schema", HIDDEN)),
           "A blank notebook whose cell that rebinds grade() carries metadata that hides it from a page "
           "(transient remove_source, jupyter.source_hidden, remove_cell tags)."),
)


class AnswerServer:
    """A service on this machine's loopback that hands out the reference's learner cells as JSON:
    what learner code with the network in reach could fetch. ``url`` is where it listens."""

    def __init__(self, cells: list[tuple[str, str]]):
        body = json.dumps([list(c) for c in cells]).encode()

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:  # noqa: N802 - http.server's name
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, format: str, *args: object) -> None:  # noqa: A002 - http.server's name
                fetched.append(self.path)

        fetched: list[str] = []
        self.fetched = fetched
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self._server.server_address[1]}/cells"
        self._thread = threading.Thread(target=self._server.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True)

    def __enter__(self) -> "AnswerServer":
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()


def tamper_by_name(name: str) -> Tamper:
    for tamper in TAMPERS:
        if tamper.name == name:
            return tamper
    raise UnknownCase(f"no tamper case named {name!r}")
