"""lucy checkpoint ch07: the learner's own code, through Telegram and the clock."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import nbformat
import pytest

from lucy_runtime.educator.cases import Case, Edit, by_name
from lucy_runtime.proof.verify import _filled
from lucy_runtime.notebooks.notebook import UNITS

from .conftest import REPO, need_sandbox

NOOP_ADMIT = Case("noop-admit", "ch07_unit_a", (Edit("admit", None, "return Admission(Outcome.ACCEPTED, 1)"),),
                  "admit answers ACCEPTED and stores nothing", ("restart-keeps-work",), "")


def learner_folder(tmp_path, case=None):
    for unit in UNITS:
        source = nbformat.read(str(REPO / "source" / unit / f"{unit}.ipynb"), as_version=4)
        release = nbformat.read(str(REPO / "release" / unit / f"{unit}.ipynb"), as_version=4)
        (tmp_path / unit).mkdir()
        nbformat.write(_filled(release, source, case)[0], str(tmp_path / unit / f"{unit}.ipynb"))
    return tmp_path


def checkpoint(folder, *extra, tmp=None):
    env = {**os.environ, "TMPDIR": str(tmp)} if tmp else None
    return subprocess.run([sys.executable, "-m", "lucy_runtime.cli", "checkpoint", "ch07", str(folder),
                           "--records", str(folder / "records"), "--json", str(folder / "record.json"), *extra],
                          cwd=REPO, capture_output=True, text=True, timeout=900, env=env)


@pytest.mark.slow
def test_a_completed_learner_is_ready_a_record_is_saved_and_no_workspace_is_left_behind(tmp_path):
    scratch = tmp_path / "tmp"
    scratch.mkdir()
    done = checkpoint(learner_folder(tmp_path), tmp=scratch)
    assert done.returncode == 0, done.stdout[-3000:]
    assert sorted(p.name for p in scratch.iterdir()) == [], "the notebooks' workspaces outlived the checkpoint"
    record = json.loads((tmp_path / "record.json").read_text())
    assert record["ready"] is True
    ids = [r["row_id"] for r in record["rows"]]
    assert ids[0] == "notebooks-run"
    assert {"telegram-intake", "telegram-refusal", "telegram-delivery", "clock-producer", "clock-refusal"} <= set(ids)
    assert list((tmp_path / "records").glob("ch07-*.json"))


@pytest.mark.parametrize("case", [NOOP_ADMIT, by_name("noop-finish")], ids=lambda c: c.name)
def test_the_checkpoint_fails_a_noop_admit_and_a_noop_finish(tmp_path, case):
    done = checkpoint(learner_folder(tmp_path, case), "--no-execute")
    assert done.returncode == 1
    record = json.loads((tmp_path / "record.json").read_text())
    failing = {r["row_id"] for r in record["rows"] if not r["passed"]}
    assert "NOT READY" in done.stdout
    assert failing & {"telegram-intake", "telegram-delivery", "clock-producer"}


def test_the_checkpoint_says_when_a_unit_is_missing(tmp_path):
    """Its first row says so before any notebook runs (the command prints failing rows as the noop tests show)."""
    import shutil

    from lucy_runtime.grading.checkpoint import NOT_REQUIRED, execute_notebooks

    folder = learner_folder(tmp_path)
    shutil.rmtree(folder / "ch07_unit_b")
    result = execute_notebooks(folder)
    assert result.row_id == "notebooks-run" and not result.passed and result.row_id not in NOT_REQUIRED
    assert "all of ch07_unit_a, ch07_unit_b, ch07_practice are needed" in result.observation


CHECKPOINT_TRICK = '''
import json as _j, os as _o, socket as _s
def _lucy_report(**data):
    flag = f"/tmp/.lucy-checkpoint-trick-{__name__}"
    if _o.path.exists(flag):
        return
    open(flag, "w").close()
    try:
        with _s.create_connection(("127.0.0.1", HOST_PORT), timeout=3):
            reached = "connected"
    except OSError as error:
        reached = type(error).__name__
    data.update(where=__name__, uid=_o.getuid(), reached=reached, sees_repo=_o.path.exists(REPO + "/source"))
    with _s.socket(_s.AF_UNIX) as c:
        c.settimeout(5)
        c.connect(CHANNEL)
        c.sendall(_j.dumps(data).encode())
_lucy_report()
'''


@pytest.mark.slow
def test_the_checkpoint_runs_learner_code_in_the_grading_sandbox(tmp_path):
    """Kernel and row children alike: no course in sight, no service on the machine's loopback, the grader user."""
    import socket

    from lucy_runtime.grading import sandbox
    from lucy_runtime.notebooks.cells import is_learner_owned

    from .test_grading_isolation import Listener

    box = sandbox.detect()
    need_sandbox(box)
    listener = Listener(tmp_path / "channel")
    host = socket.create_server(("127.0.0.1", 0))
    host.settimeout(0.5)
    (tmp_path / "learner").mkdir()
    folder = learner_folder(tmp_path / "learner")
    path = folder / "ch07_unit_a" / "ch07_unit_a.ipynb"
    nb = nbformat.read(str(path), as_version=4)
    cell = next(c for c in nb.cells if is_learner_owned(c))
    cell.source = (f"CHANNEL = {listener.path!r}\nHOST_PORT = {host.getsockname()[1]}\nREPO = {str(REPO)!r}\n"
                   + CHECKPOINT_TRICK + cell.source)
    nbformat.write(nb, str(path))
    (folder / "ch07_unit_a" / "answers.ipynb").symlink_to(REPO / "source" / "ch07_unit_a" / "ch07_unit_a.ipynb")
    with listener.open_to_the_sandbox():
        done = checkpoint(folder, tmp=tmp_path)
    # the learner's folder is copied as data (grading/handin.py): a link is left out, and said so
    assert "ch07_unit_a/answers.ipynb: a symbolic link; left out of the checkpoint" in done.stderr, done.stderr[-2000:]
    reached = 0
    try:
        while True:
            host.accept()[0].close()
            reached += 1
    except OSError:
        host.close()
    seen = [r for _, r in listener.reports]
    assert {r["where"] for r in seen} == {"__main__", "learner"}, (seen, done.stdout[-2000:])
    assert all(r["reached"] != "connected" and not r["sees_repo"] for r in seen), seen
    if box.drops_user:
        assert {r["uid"] for r in seen} == {box.uid}
    assert reached == 0
    assert done.returncode == 0, done.stdout[-2000:]  # the trick hurts nothing the checkpoint checks


def test_unit_b_optional_part_is_shown_but_not_required():
    """The optional part's rows and cells are what the notebook's optional heading says, and only they are spared."""
    import nbformat

    from lucy_runtime.notebooks.cells import row_of
    from lucy_runtime.checker.results import RowResult
    from lucy_runtime.grading.checkpoint import OPTIONAL_ROWS, CheckpointReport, required_cells, table
    from lucy_runtime.course.course import graded_test_cells

    nb = nbformat.read(str(REPO / "source" / "ch07_unit_b" / "ch07_unit_b.ipynb"), as_version=4)
    kept = required_cells(nb.cells)
    assert 0 < len(kept) < len(nb.cells)
    after = {c.metadata.get("nbgrader", {}).get("grade_id") for c in nb.cells[len(kept):]}
    assert {row_of(g) for g in graded_test_cells(nb) if g in after} == OPTIONAL_ROWS
    optional_fails = CheckpointReport((RowResult("claim-one", True, "ok", "", 0.0),
                                       RowResult("model-based", False, "no", "hint", 0.0),
                                       RowResult("telegram-model-outage", False, "no", "hint", 0.0)), 1.0)
    assert optional_fails.ready and "Not required" in table(optional_fails)
    core_fails = CheckpointReport((RowResult("claim-one", False, "no", "hint", 0.0),
                                   RowResult("model-based", True, "ok", "", 0.0)), 1.0)
    assert not core_fails.ready
