"""The plan stays with the parent (issue 27, item 5).

Learner code searches its own checker child for anything that differs between the runs of
one crash row, and a ``finish`` that uses two transactions except where it believes it will
be stopped fails the crash rows exactly as the plain two-transaction ``finish`` does.
"""

from __future__ import annotations

import json
import os
import signal
from pathlib import Path

import pytest

from lucy_runtime.grading import orchestrator
from lucy_runtime.grading import sandbox
from lucy_runtime.checker import Harness, SourceLearner, run_rows
from lucy_runtime.engine.result import Status
from lucy_runtime.engine.faults import Count
from lucy_runtime.grading.process import CheckerProcess
from lucy_runtime.checker.rows import ROWS
from lucy_runtime.checker.series import Series
from lucy_runtime.educator.cases import Case, by_name
from lucy_runtime.proof.tampers import Append, tamper_by_name

from .conftest import learner_with, need_sandbox, temporary_folder_at, with_case

_FINGERPRINT = '''
import gc as _gc, json as _json, os as _os, re as _re, sys as _sys, tempfile as _tempfile

_honest_finish = finish
_PLAIN = (str, bytes, int, bool, type(None))


def _plain(value):
    # Floats by type alone: those that differ are readings of this process's own clock (Hypothesis,
    # once imported, times every garbage collection), which no parent can make equal.
    return repr(value) if isinstance(value, _PLAIN) else type(value).__qualname__


def _contents(value):
    # Dicts (every instance's attributes among them) and sets whole; lists and tuples by length
    # only: gc also hands out tuples still being built, whose empty slots would crash a reader.
    if type(value) is dict:
        return sorted((repr(k), _plain(v)) for k, v in list(value.items()) if isinstance(k, _PLAIN))
    if type(value) in (set, frozenset):
        return sorted(_plain(v) for v in list(value))
    if type(value) in (list, tuple):
        return len(value)
    return []


def _fingerprint(queue):
    """Everything this process can see that an earlier run could have left, or the parent could have set."""
    folder = _os.path.dirname(_os.path.abspath(queue.store.path))
    runs = _os.path.join(folder, ".runs")  # a run counter kept in the work folder
    counted = _os.path.getsize(runs) if _os.path.exists(runs) else 0
    with open(runs, "a") as fh:
        fh.write("x")
    objects = sorted(repr((type(o).__module__, type(o).__qualname__, _contents(o))) for o in _gc.get_objects())
    stack, frame = [], _sys._getframe()
    while frame is not None:
        stack.append([frame.f_code.co_qualname, sorted((k, _plain(v)) for k, v in list(frame.f_locals.items()))])
        frame = frame.f_back
    fds = {}
    for fd in sorted(_os.listdir("/proc/self/fd"), key=int):
        try:
            fds[fd] = _re.sub(r"\\[\\d+\\]", "[]", _os.readlink(f"/proc/self/fd/{fd}"))
        except OSError:
            fds[fd] = "gone"
    return {"objects": objects, "stack": stack, "environ": dict(_os.environ), "argv": list(_sys.argv),
            "cwd": _os.getcwd(), "fds": fds, "folder": sorted(_os.listdir(folder)), "path": queue.store.path,
            "tmp": sorted(_os.listdir(_tempfile.gettempdir())), "runs before": counted}


def finish(queue, assignment, result):
    seen = _fingerprint(queue)
    with open(_os.path.join(OUT, f"{_os.getpid()}-{_os.urandom(4).hex()}.json"), "w") as fh:
        _json.dump(seen, fh)
    return _honest_finish(queue, assignment, result)
'''


def _fingerprints(out: Path) -> list[dict]:
    return [json.loads(path.read_text()) for path in sorted(out.glob("*.json"))]


def _differences(seen: list[dict]) -> dict[str, int]:
    """For each part of the fingerprint that is not the same in every run: how many versions of it there were."""
    return {key: len({json.dumps(fp[key], sort_keys=True) for fp in seen}) for key in seen[0]
            if len({json.dumps(fp[key], sort_keys=True) for fp in seen}) > 1}


@pytest.mark.parametrize("where", ["this process", "the checker process"])
def test_every_run_of_a_crash_row_shows_learner_code_the_same_process(reference_cells, tmp_path, monkeypatch, where):
    out, tmp = tmp_path / "fingerprints", temporary_folder_at(monkeypatch, tmp_path / "tmp")
    out.mkdir()
    tmp.mkdir()
    case = Case("fingerprint", "ch07_unit_a", (Append("finish", f"OUT = {str(out)!r}\n" + _FINGERPRINT),), "", (), "")
    learner = learner_with(reference_cells, case)
    if where == "this process":
        report = run_rows(learner, [ROWS["finish-atomic"]], seed=3, timeout=30)
    else:
        with CheckerProcess() as checker:  # started now, so it has the test's temporary folder
            report = checker.run_rows(learner, [ROWS["finish-atomic"]], seed=3, timeout=30)
    (result,) = report.results
    assert result.passed, result.observation
    seen = _fingerprints(out)
    # Read from outside, where no wipe between runs reaches: one fingerprint per run of finish,
    # the counting run and one run per crash point.
    assert len(seen) == 1 + int(result.observation.split()[0]) >= 3
    assert _differences(seen) == {}
    assert seen[0]["runs before"] == 0  # the work folder starts empty in every run


def _row(cells, case, row_id: str):
    (result,) = run_rows(learner_with(cells, case), [ROWS[row_id]], seed=9).results
    return result.passed, result.observation


@pytest.mark.parametrize("row_id, plain_case", [("finish-atomic", "finish-two-transactions"),
                                                ("crash-sweep", "split-finish-under-sweep")])
def test_a_finish_that_looks_for_its_plan_fails_the_crash_row_as_the_plain_split_finish_does(
        reference_cells, tmp_path, monkeypatch, row_id, plain_case):
    temporary_folder_at(monkeypatch, tmp_path)  # where it counts the runs of its request, out of every wipe's reach
    plain = by_name(plain_case)
    tamper = tamper_by_name("look-for-the-plan")
    looking = Case("look-for-the-plan", plain.unit, tamper.edits, "", (), "")  # in Unit B's finish cell too
    assert _row(reference_cells, looking, row_id) == _row(reference_cells, plain, row_id)
    assert not _row(reference_cells, plain, row_id)[0]
    assert list(tmp_path.glob(".runs-*"))  # it did count its runs, outside every folder the checker wipes


_WRONG_WHEN_SOMETHING_IS_LEFT = '''
import os as _os, socket as _socket, time as _time

_ADDRESS = "\\0" + KEY  # an abstract socket: a daemon that answers there is a process an earlier run left


def _something_left():
    """Leave a file in each of PLACES and a daemon behind; say whether an earlier run's were still there."""
    marks = [_os.path.join(place, "." + KEY) for place in PLACES]
    found = any(_os.path.exists(mark) for mark in marks)
    probe = _socket.socket(_socket.AF_UNIX, _socket.SOCK_STREAM)
    try:
        probe.connect(_ADDRESS)
        found = True
    except OSError:
        pass
    finally:
        probe.close()
    for mark in marks:
        try:
            open(mark, "a").close()
        except OSError:  # /dev/shm is not open to the grader user in the sandbox
            pass
    if not any(_os.path.exists(mark) for mark in marks):
        raise RuntimeError("this run could leave no file behind")
    if _os.fork() == 0:  # the daemon: none of the checker's pipes, and gone within half a minute
        try:
            _os.closerange(3, 1 << 16)
            _os.setsid()
            server = _socket.socket(_socket.AF_UNIX, _socket.SOCK_STREAM)
            server.bind(_ADDRESS)
            server.listen()
            server.settimeout(30)
            while True:
                server.accept()[0].close()
        finally:
            _os._exit(0)
    for _ in range(200):  # the daemon answers before this run goes on: it is really there for the next
        probe = _socket.socket(_socket.AF_UNIX, _socket.SOCK_STREAM)
        try:
            probe.connect(_ADDRESS)
            break
        except OSError:
            _time.sleep(0.005)
        finally:
            probe.close()
    else:
        raise RuntimeError("this run could leave no process behind")
    return found


def _will_be_stopped(queue, assignment):  # one transaction (right) unless an earlier run left something
    return not _something_left()
'''


def _wrong_when_something_is_left(places: list[str]) -> Case:
    tamper = tamper_by_name("look-for-the-plan")
    code = f"KEY = {('left-by-a-run-' + os.urandom(6).hex())!r}\nPLACES = {places!r}\n" + _WRONG_WHEN_SOMETHING_IS_LEFT
    base = tamper.as_case(by_name(tamper.honest))
    return Case("wrong-when-something-is-left", "ch07_unit_a", base.edits + (Append("finish", code),), "", (), "")


def test_in_the_sealed_sandbox_no_run_of_a_crash_row_finds_a_file_or_process_an_earlier_run_left(reference_cells, tmp_path):
    """A finish that is right in a run that finds nothing left by an earlier one, and splits its
    transaction otherwise, passes the crash row in the sealed sandbox (files in /tmp and /dev/shm
    and a daemon are gone before every run) and fails it outside, where nothing is wiped."""
    box = sandbox.detect()
    need_sandbox(box, drops_user=True)
    (sealed,) = orchestrator.run_sealed_rows(with_case(reference_cells, _wrong_when_something_is_left(["/tmp", "/dev/shm"])),
                                        ["finish-atomic"], timeout=5.0, box=box).results
    assert sealed.passed, sealed.observation
    (outside,) = run_rows(learner_with(reference_cells, _wrong_when_something_is_left([str(tmp_path)])),
                          [ROWS["finish-atomic"]], seed=9).results
    assert not outside.passed, outside.observation


def test_a_run_that_kills_the_process_that_forks_its_row_leaves_the_next_runs_dead_not_the_checker(tmp_path):
    with Harness(SourceLearner([]), schema=None, workdir=tmp_path) as h:
        with Series(h, "kills-its-parent", lambda c: os.kill(os.getppid(), signal.SIGKILL)) as series:
            first, second = series.run(Count()), series.run(Count())
    assert first.status == Status.RETURNED
    assert second.status == Status.DIED and "killed" in second.value


_SEES_A_PLAN = '''
import gc as _gc, os as _os, sys as _sys


def _a_plan_in_sight():
    """An object of one of the checker's plans, in this process's memory or up its stack."""
    plans = ("KillAt", "FailAt", "Stop", "CopyAt", "PauseForRival", "Rival")
    if any(type(o).__name__ in plans for o in _gc.get_objects()):
        return True
    frame = _sys._getframe()
    while frame is not None:
        if any(type(v).__name__ in plans for v in list(frame.f_locals.values())):
            return True
        frame = frame.f_back
    return False


with open(OUT, "a") as _out:  # in every child: its cells run when it starts
    _out.write("plan " if _a_plan_in_sight() else "none ")
'''

ONE_PLAN_ROWS = {("ch07_unit_a", "schema"): ["finish-durable", "running-crash-visible", "schema-columns", "restart-keeps-work"],
                 ("ch07_unit_b", "deliver_one"): ["model-based"],
                 ("ch07_practice", "grant_seat"): ["practice-kill-window", "practice-recover-from-receipt"]}
"""Rows whose runs each have one plan of their own (a stop, a kill at a fixed or a drawn point), not a series."""


@pytest.mark.parametrize("unit, cell", list(ONE_PLAN_ROWS), ids=[u for u, _ in ONE_PLAN_ROWS])
def test_no_child_of_a_row_with_a_plan_of_its_own_holds_that_plan(checker, reference_cells, tmp_path, unit, cell):
    out = tmp_path / "seen"
    case = Case("sees-a-plan", unit, (Append(cell, f"OUT = {str(out)!r}\n" + _SEES_A_PLAN),), "", (), "")
    report = checker.run_rows(learner_with(reference_cells, case), [ROWS[r] for r in ONE_PLAN_ROWS[unit, cell]], seed=4)
    assert report.passed, [r.observation for r in report.results if not r.passed]
    seen = out.read_text().split()
    assert seen and set(seen) == {"none"}, f"{seen.count('plan')} of {len(seen)} children held their plan"
