"""Each run of a row starts from nothing, and a kill stops everything at once (issue 36, item 3).

In the sealed sandbox every run of a crash row has its own pid, IPC and mount namespaces
(``engine/confine.py: fork_run``): no note one run leaves (a folder made unwritable, SysV
shared memory, a POSIX message queue) reaches the next, and the parent's kill ends every
process of the run before the state is read. Each proof uses a ``finish`` that is right
unless the boundary leaks, so it fails the row where the boundary is missing (outside the
sandbox, with these tricks' leftovers cleaned up afterwards) and passes it in the sandbox.
The two tamper cases built on the same tricks score exactly what the plain two-transaction
``finish`` scores.
"""

from __future__ import annotations

import ctypes
import hashlib
import os
import select
import signal
import time

import pytest

from lucy_runtime.checker import run_rows
from lucy_runtime.checker.rows import ROWS
from lucy_runtime.engine import confine
from lucy_runtime.engine.forkserver import ForkServer, run_served
from lucy_runtime.engine.result import Status
from lucy_runtime.engine.faults import Count
from lucy_runtime.educator.cases import Case, by_name
from lucy_runtime.proof.tampers import Append, tamper_by_name
from lucy_runtime.grading import orchestrator, sandbox

from .conftest import learner_with, temporary_folder_at, with_case

ROW = "finish-atomic"


@pytest.fixture(scope="module")
def box():
    found = sandbox.detect()
    assert found.drops_user, f"these tests prove the sealed sandbox as root, and there is none: {found.reason or found.mode}"
    return found


def _sealed(cells, case, rows, box) -> dict[str, bool]:
    return {r.row_id: r.passed for r in orchestrator.run_sealed_rows(with_case(cells, case), rows, timeout=5.0, box=box).results}


def _outside(cells, case, rows) -> dict[str, bool]:
    return {r.row_id: r.passed for r in run_rows(learner_with(cells, case), [ROWS[r] for r in rows], seed=9).results}


def _wrong_when_a_note_is_found(channel: str, note: str, places: list[str] | None) -> Case:
    """The notes tamper turned round: one transaction (right) unless a note an earlier run left is found."""
    tamper = tamper_by_name("notes-across-runs")
    base = tamper.as_case(by_name(tamper.honest))
    code = (f"NOTE = {note!r}\nCHANNELS = ({channel!r},)\nPLACES = {places!r}\n_note_name = lambda queue, assignment: NOTE\n"
            "_will_be_stopped = lambda queue, assignment: not _notes_left(queue, assignment)\n")
    return Case("wrong-when-a-note-is-found", "ch07_unit_a", base.edits + (Append("finish", code),), "", (), "")


def _remove_ipc_notes(note: str) -> None:
    """What the run outside the sandbox left in this machine's IPC namespace."""
    libc = ctypes.CDLL(None, use_errno=True)
    segment = libc.shmget(int(hashlib.sha1(note.encode()).hexdigest()[:7], 16), 0, 0)
    if segment >= 0:
        libc.shmctl(segment, 0, None)  # IPC_RMID
    libc.mq_unlink(("/" + note).encode())


@pytest.mark.parametrize("channel", ["files", "shm", "mqueue"])
def test_no_run_of_a_crash_row_finds_a_note_an_earlier_run_left(reference_cells, tmp_path, monkeypatch, box, channel):
    note = f"lucy-note-{os.urandom(5).hex()}"
    sealed = _sealed(reference_cells, _wrong_when_a_note_is_found(channel, note, None), [ROW], box)
    assert sealed == {ROW: True}
    # Outside the sandbox the same notes are found: the finish splits its transaction and fails the row.
    temporary_folder_at(monkeypatch, tmp_path)
    try:
        outside = _outside(reference_cells, _wrong_when_a_note_is_found(channel, note, [str(tmp_path)]), [ROW])
    finally:
        _remove_ipc_notes(note)
        for root, dirs, _ in os.walk(tmp_path):
            for name in dirs:
                os.chmod(os.path.join(root, name), 0o700)
    assert outside == {ROW: False}
    if channel == "files":
        assert (tmp_path / f".{note}").is_dir()


_SPOILER = '''
import os as _os, sqlite3 as _sqlite3

_honest_finish = finish


def _leave_a_spoiler(queue, assignment):
    """A process of its own that marks the work done without a report if this one dies before finish returns."""
    own = _sqlite3.connect(queue.store.path, isolation_level=None, timeout=10)
    own.execute("SELECT count(*) FROM work").fetchone()
    told, tell = _os.pipe()
    if _os.fork() == 0:
        try:
            _os.setsid()
            _os.close(tell)
            if not _os.read(told, 1):
                own.execute("UPDATE work SET state = 'done' WHERE work_id = ?", (assignment.work_id,))
                with open(OUT, "a") as fh:
                    fh.write("x")
        finally:
            _os._exit(0)
    _os.close(told)
    return tell


def finish(queue, assignment, result):
    tell = _leave_a_spoiler(queue, assignment)
    try:
        return _honest_finish(queue, assignment, result)
    finally:  # returned or raised: only a kill leaves the helper untold
        _os.write(tell, b"x")
'''


def test_a_kill_ends_every_process_of_the_run_before_its_state_is_read(reference_cells, tmp_path, box):
    """The reference finish, with a helper that spoils the state if finish is killed: in the sandbox the
    helper dies with the run; outside it outlives the kill and spoils what the row then reads."""
    spoiled = tmp_path / "spoiled"

    def case(out: str) -> Case:
        return Case("spoiled-after-the-kill", "ch07_unit_a", (Append("finish", f"OUT = {out!r}\n" + _SPOILER),), "", (), "")

    assert _sealed(reference_cells, case("/dev/null"), [ROW], box) == {ROW: True}
    assert _outside(reference_cells, case(str(spoiled)), [ROW]) == {ROW: False}
    assert spoiled.read_text()  # the helpers did outlive the kills there


UNIT_A_ROWS = [r.id for r in ROWS.values() if r.unit == "A"]


@pytest.fixture(scope="module")
def plain_split(reference_cells, box) -> dict[str, bool]:
    """The rows the plain two-transaction finish passes in the sealed sandbox."""
    found = _sealed(reference_cells, by_name("finish-two-transactions"), UNIT_A_ROWS, box)
    assert found["finish-atomic"] is False and sum(found.values()) == len(UNIT_A_ROWS) - 1
    return found


@pytest.mark.parametrize("name", ["notes-across-runs", "helper-finishes-after-kill"])
def test_a_tamper_of_the_runs_scores_exactly_what_the_plain_split_finish_scores(reference_cells, box, plain_split, name):
    tamper = tamper_by_name(name)
    assert tamper.honest == "finish-two-transactions"
    assert _sealed(reference_cells, tamper.as_case(by_name(tamper.honest)), UNIT_A_ROWS, box) == plain_split


def _exits():
    os._exit(137)


def _out_of_cpu():
    os.kill(os.getpid(), signal.SIGXCPU)


def _leaves_a_daemon(write_end: int):
    def script():
        if os.fork() == 0:  # writes to the test a moment after its run has ended, if it is still alive
            time.sleep(0.3)
            os.write(write_end, b"x")
            os._exit(0)
        return "left one"
    return script


@pytest.mark.parametrize("fresh", [True, False], ids=["fresh runs", "plain forks"])
def test_a_fresh_run_ends_as_its_process_did_and_takes_every_process_it_started_with_it(monkeypatch, fresh):
    read_end, write_end = os.pipe()
    monkeypatch.setattr(confine, "_fresh_runs", 0)
    if fresh:
        assert confine.start_fresh_runs(1 << 20), "fresh runs need root (CAP_SYS_ADMIN), as the grading sandbox does"
    try:
        with ForkServer({"exits": _exits, "cpu": _out_of_cpu, "daemon": _leaves_a_daemon(write_end)}) as server:
            ended = [run_served(server, [name], plans=[Count()])[0] for name in ("exits", "cpu", "daemon")]
    finally:
        monkeypatch.setattr(confine, "_fresh_runs", 0)
    assert [(r.status, r.value) for r in ended] == [(Status.DIED, 137), (Status.DIED, -signal.SIGXCPU),
                                                    (Status.RETURNED, "left one")]
    heard = select.select([read_end], [], [], 1.0)[0]
    os.close(read_end)
    os.close(write_end)
    assert bool(heard) is not fresh  # the daemon outlived a plain fork's run, and not a fresh run
