"""The grading limits (lucy_runtime/engine/limits.py): rlimits, cgroups, and what a hit limit says."""

from __future__ import annotations

import errno
import os
import signal
import subprocess
import sys

import pytest

from lucy_runtime.grading import orchestrator
from lucy_runtime.engine import limits
from lucy_runtime.engine.limits import Cgroup, GradingLimits, Limits, make_cgroup

from .conftest import need_sandbox


def test_the_defaults_can_be_changed_in_the_nbgrader_config():
    from traitlets.config import Config

    config = Config()
    config.GradingLimits.memory_mb = 1024
    config.GradingLimits.wall_seconds = 60
    made = GradingLimits(config=config).limits()
    assert made == Limits(memory_mb=1024, wall_seconds=60)
    assert Limits.from_json(made.as_json()) == made


def test_every_limit_is_in_the_documented_table_with_its_default():
    import dataclasses
    from pathlib import Path

    doc = (Path(__file__).resolve().parents[1] / "docs" / "grading-isolation.md").read_text()
    rows = {line.split("|")[1].strip(" `"): line.split("|")[2].strip() for line in doc.splitlines()
            if line.startswith("| `")}
    documented = {f.name: str(f.default) for f in dataclasses.fields(Limits) if f.name != "user_processes"}
    assert {name: rows.get(name) for name in documented} == documented
    assert set(documented) == {name for name in GradingLimits.class_trait_names(config=True)}


def test_a_limit_that_is_not_a_whole_number_is_left_at_its_default():
    assert Limits.from_json({"memory_mb": True, "processes": "12", "unknown": 3}) == Limits(processes=12)


def test_rlimits_apply_to_the_command_that_follows_prlimit():
    probe = ("import resource; print(*[resource.getrlimit(r)[0] for r in (resource.RLIMIT_AS, resource.RLIMIT_NOFILE, "
             "resource.RLIMIT_FSIZE, resource.RLIMIT_CPU, resource.RLIMIT_NPROC)])")
    small = Limits(address_space_mb=3000, open_files=77, file_size_mb=5, cpu_seconds=9, processes=50)
    done = subprocess.run([*small.prlimit_argv(), sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    assert done.stdout.split() == [str(3000 << 20), "77", str(5 << 20), "9", "50"]
    assert small.bounded_by_cgroup().prlimit_argv()[-2] == "--nproc=200"


def test_a_file_larger_than_the_file_size_limit_is_refused_and_named(tmp_path):
    # Python ignores SIGXFSZ, so the write fails with EFBIG instead of the process dying.
    code = f"open({str(tmp_path / 'big')!r}, 'wb').write(b'x' * (3 << 20))"
    done = subprocess.run([*Limits(file_size_mb=1).prlimit_argv(), sys.executable, "-c", code], capture_output=True, text=True)
    assert done.returncode == 1 and f"[Errno {errno.EFBIG}] File too large" in done.stderr
    assert (tmp_path / "big").stat().st_size == 1 << 20
    assert "file size limit" in limits.explain_error("OSError", f"[Errno {errno.EFBIG}] File too large")
    assert "file size limit (256 MB)" in limits.explain_signal(-signal.SIGXFSZ)


def test_a_limit_a_learner_exception_comes_from_is_named():
    assert "memory limit" in limits.explain_error("MemoryError", "")
    assert "process limit" in limits.explain_error("BlockingIOError", f"[Errno {errno.EAGAIN}] Resource temporarily unavailable")
    assert "temporary folder" in limits.explain_error("OSError", f"[Errno {errno.ENOSPC}] No space left on device")
    assert limits.explain_error("ValueError", "bad") == "" and limits.explain_signal(-signal.SIGTERM) == ""


# --- cgroups: a fake tree for the files written, the machine's own for what the kernel does ---------

def _fake_v1(root):
    for controller in ("memory", "pids"):
        (root / controller).mkdir(parents=True)
        (root / controller / "cgroup.procs").write_text("")
    return root


def test_a_v1_group_gets_its_memory_and_process_limits(tmp_path, monkeypatch):
    monkeypatch.setattr(os, "geteuid", lambda: 0)
    group, why = make_cgroup(Limits(memory_mb=300, processes=40), "kernel-ada.ch07_unit_a", root=_fake_v1(tmp_path))
    assert group is not None and why == "" and group.version == 1
    assert (group.folders["memory"] / "memory.limit_in_bytes").read_text() == str(300 << 20)
    assert (group.folders["pids"] / "pids.max").read_text() == "40"
    assert group.folders["memory"].name.startswith("kernel-ada.ch07_unit_a-")


def test_a_v2_group_enables_the_controllers_and_records_what_was_hit(tmp_path, monkeypatch):
    monkeypatch.setattr(os, "geteuid", lambda: 0)
    (tmp_path / "cgroup.controllers").write_text("cpu memory pids")
    (tmp_path / "cgroup.subtree_control").write_text("")
    (tmp_path / limits.GROUP_PREFIX).mkdir()
    (tmp_path / limits.GROUP_PREFIX / "cgroup.subtree_control").write_text("")
    group, _ = make_cgroup(Limits(memory_mb=100, processes=8), "sealed-x", root=tmp_path)
    assert group is not None and group.version == 2
    folder = group.folders["memory"]
    assert (folder / "memory.max").read_text() == str(100 << 20) and (folder / "pids.max").read_text() == "8"
    (folder / "memory.events").write_text("low 0\nhigh 0\nmax 5\noom 1\noom_kill 1\n")
    (folder / "pids.events").write_text("max 3\n")
    assert group.breaches(Limits(memory_mb=100, processes=8)) == ["memory (100 MB)", "processes (8)"]


def test_without_the_controllers_no_group_is_made_and_the_reason_is_given(tmp_path, monkeypatch):
    monkeypatch.setattr(os, "geteuid", lambda: 0)
    group, why = make_cgroup(Limits(), "kernel", root=tmp_path)
    assert group is None and "no cgroup memory or pids controller" in why
    monkeypatch.setattr(os, "geteuid", lambda: 1000)
    assert "not root" in make_cgroup(Limits(), "kernel", root=_fake_v1(tmp_path / "v1"))[1]


def _real_group(limits_: Limits) -> Cgroup:
    version, why = limits.cgroup_support()
    if not version:
        pytest.fail(f"make test runs as root on a machine with cgroups: {why}")
    group, why = make_cgroup(limits_, "test-limits")
    assert group is not None, why
    return group


def test_a_tree_that_allocates_past_its_memory_limit_is_killed_and_the_group_says_so():
    small = Limits(memory_mb=64)
    group = _real_group(small)
    try:
        done = subprocess.run(group.wrap([sys.executable, "-c", "x = [b'x' * (8 << 20) for _ in range(64)]"]),
                              capture_output=True, timeout=60)
        assert done.returncode == -signal.SIGKILL
        assert group.breaches(small) == ["memory (64 MB)"]
    finally:
        group.close()
    assert not group.folders["memory"].exists() and not group.folders["pids"].exists()


def test_a_tree_that_forks_past_its_process_limit_is_refused_and_the_group_says_so_and_nothing_is_left():
    small = Limits(processes=16)
    group = _real_group(small)
    code = ("import os, time\nn = 0\ntry:\n    while True:\n        if os.fork() == 0:\n            os.closerange(0, 3)\n"
            "            time.sleep(60)\n"
            "            os._exit(0)\n        n += 1\nexcept BlockingIOError:\n    print(n)\n")
    try:
        done = subprocess.run(group.wrap([sys.executable, "-c", code]), capture_output=True, text=True, timeout=60)
        assert 0 < int(done.stdout) < 16
        assert group.breaches(small) == ["processes (16)"]
        assert limits._members(group.folders["pids"]), "the sleeping children should still be there"
    finally:
        group.close()
    assert not group.folders["pids"].exists()


def test_the_sealed_recheck_stops_starting_rows_at_the_wall_time_limit_and_says_so():
    """Learner code that sleeps in every child: the rows left when the wall time is up fail with
    the limit named, and the re-check returns well within the limit plus one row."""
    import time

    from lucy_runtime.grading import sandbox
    from lucy_runtime.checker.rows import ROWS

    box = sandbox.detect()
    need_sandbox(box)
    rows = [r.id for r in ROWS.values() if r.unit == "A"]
    sleeper = [("ch07_unit_a:imports", "import time\ntime.sleep(60)\n")]
    started = time.monotonic()
    report = orchestrator.run_sealed_rows(sleeper, rows, timeout=1.0, box=box, limits=Limits(wall_seconds=4))
    took = time.monotonic() - started
    out_of_time = [r for r in report.results if "wall time limit (4 s)" in r.observation]
    assert len(report.results) == len(rows) and not report.passed
    assert out_of_time and len(out_of_time) < len(rows), [r.observation for r in report.results][:3]
    assert took < 4 + 20, took  # one row's children past the limit at most, and the sandbox's start
