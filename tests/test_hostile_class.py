"""A hostile class: submissions that take the grading machine, beside honest ones.

Alongside three honest submissions (the reference, the educator case ``noop-finish`` and
the blank release), one submission each allocates memory without end, forks without end,
prints without end, fills its temporary folder, writes without end into its working folder
and into the folder of its kernel's sockets, sleeps for ever, and closes its own stdout and
stderr. The class is graded twice, by plain ``nbgrader autograde`` and by
``lucy autograde --jobs 2``, with small limits (``c.GradingLimits`` in the course's
``nbgrader_config.py``) so the run is short. The honest grades must equal those of the
same three graded alone; each hostile submission is stopped and told which limit; no
process or cgroup of the class is left; the machine's available memory is sampled the
whole time and never falls below a floor, and so is the host's free disk.
"""

from __future__ import annotations

import os
import shutil
import tempfile
import threading
import time
from pathlib import Path

import pytest

from lucy_runtime.grading import sandbox
from lucy_runtime.notebooks.cells import is_learner_owned
from lucy_runtime.course.course import ScratchCourse, nbgrader
from lucy_runtime.educator.cases import by_name
from lucy_runtime.course.parallel import Status, autograde_class
from lucy_runtime.proof.verify import filled
from lucy_runtime.engine.limits import CGROUP_ROOT, GROUP_PREFIX

from .conftest import need_sandbox

pytestmark = [pytest.mark.nbgrader, pytest.mark.slow]

UNIT = "ch07_unit_a"
LIMITS = {"memory_mb": 384, "processes": 96, "output_mb": 1, "tmp_mb": 32, "work_mb": 32, "sockets_mb": 1,
          "wall_seconds": 30}
CONFIG = "".join(f"c.GradingLimits.{k} = {v}\n" for k, v in LIMITS.items()) + "c.Execute.timeout = 8\n"

HOSTILE = {
    "memory": "_hog = []\nwhile True:\n    _hog.append(b'x' * (16 << 20))",
    "fork": ("import os as _os, time as _t\nwhile True:\n    if _os.fork() == 0:\n        _t.sleep(3600)\n"
             "        _os._exit(0)"),
    "print": "while True:\n    print('x' * 4000)",
    "fill-tmp": ("_n = 0\nwhile True:\n    with open(f'/tmp/fill-{_n}', 'wb') as _f:\n        _f.write(b'x' * (4 << 20))\n"
                 "    _n += 1"),
    # Into the folder it runs in (the kernel's working copy of the submission; a run's /tmp in the re-check).
    "fill-work": ("_n = 0\nwhile True:\n    with open(f'fill-{_n}', 'wb') as _f:\n        _f.write(b'x' * (4 << 20))\n"
                  "    _n += 1"),
    # Into the folder of the kernel's Unix sockets, named in its connection file (the kernel only has one).
    "fill-sockets": ("import json as _json, os as _os\ntry:\n    _dir = _os.path.dirname(_json.load(open('/run/lucy/kernel.json'))['ip'])\n"
                     "except OSError:\n    _dir = None\n_n = 0\nwhile _dir:\n"
                     "    with open(_os.path.join(_dir, f'fill-{_n}'), 'wb') as _f:\n        _f.write(b'x' * (4 << 20))\n"
                     "    _n += 1"),
    # In the kernel only: the sealed re-check's wall time is proved on its own in tests/test_limits.py.
    "sleep": "import time as _t\nif __name__ == '__main__':\n    _t.sleep(10 ** 6)",
    "close-std": "import os as _os\n_os.close(1)\n_os.close(2)",
}
"""Each is appended to the first learner cell of the reference: it runs in the kernel and in
every child of the sealed re-check (the sleep in the kernel only: every child would sleep to
its own time limit, and the re-check's wall time is proved in tests/test_limits.py)."""

HONEST = ("honest-correct", "honest-case", "honest-blank")
STUDENTS = HONEST + tuple(f"hostile-{name}" for name in HOSTILE)
NAMED = {"memory": "memory", "fork": "process", "print": "output", "fill-tmp": "temporary folder",
         "fill-work": "working folder", "fill-sockets": f"socket folder {LIMITS['sockets_mb']} MB",
         "sleep": "CellTimeoutError"}
"""The limit each hostile submission's feedback or log must name."""


def _available() -> int:
    with open("/proc/meminfo") as fh:
        for line in fh:
            if line.startswith("MemAvailable:"):
                return int(line.split()[1]) * 1024
    raise AssertionError("no MemAvailable in /proc/meminfo")


def _free_disk(folders: tuple[Path, ...]) -> int:
    """The free bytes of the file system of each folder, summed once per file system."""
    return sum({os.stat(f).st_dev: shutil.disk_usage(f).free for f in folders}.values())


class MemoryWatch:
    """Samples MemAvailable, and the free disk of ``disks``' file systems, every 0.2 s while the class is graded."""

    def __init__(self, disks: tuple[Path, ...] = ()) -> None:
        self.disks = disks
        self.lowest = self.start = _available()
        self.lowest_disk = self.start_disk = _free_disk(disks)
        self.end_disk = self.start_disk
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        while not self._stop.wait(0.2):
            self.lowest = min(self.lowest, _available())
            self.lowest_disk = min(self.lowest_disk, _free_disk(self.disks))

    def __enter__(self) -> "MemoryWatch":
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()
        self.end_disk = _free_disk(self.disks)


def _left_behind(root: Path) -> tuple[list[str], list[str]]:
    """The grader user's processes working under ``root``, and the cgroups of this class's
    submissions, once they had a few seconds to go (a process killed a moment ago may not be reaped)."""
    box = sandbox.detect()
    for _ in range(50):
        processes = []
        for pid in filter(str.isdigit, os.listdir("/proc")):
            try:
                status = Path(f"/proc/{pid}/status").read_text()
                cwd = os.readlink(f"/proc/{pid}/cwd")
            except OSError:
                continue
            uid = int(next(line for line in status.splitlines() if line.startswith("Uid:")).split()[1])
            if (not box.drops_user or uid == box.uid) and cwd.startswith(str(root)):
                processes.append(f"{pid}: {cwd}")
        groups = [str(p) for p in CGROUP_ROOT.glob(f"*/{GROUP_PREFIX}/*") if p.is_dir()
                  and any(f"-{student}." in p.name for student in STUDENTS)]
        if not processes and not groups:
            break
        time.sleep(0.2)
    return processes, groups


def _with_trick(nb, code: str):
    cell = next(c for c in nb.cells if is_learner_owned(c))
    cell.source = cell.source + "\n\n" + code + "\n"
    return nb


def _scores(course: ScratchCourse, students) -> dict[str, float]:
    return {s: course.graded(UNIT, s).score for s in students}


@pytest.fixture(scope="module")
def hostile(tmp_path_factory):
    box = sandbox.detect()
    need_sandbox(box)
    root = tmp_path_factory.mktemp("hostile")
    alone = ScratchCourse(root / "alone", units=(UNIT,))
    with (alone.root / "nbgrader_config.py").open("a") as config:
        config.write("\n" + CONFIG)
    release, source = alone.release(UNIT), alone.source(UNIT)
    alone.submit("honest-correct", UNIT, filled(release, source))
    alone.submit("honest-case", UNIT, filled(release, source, by_name("noop-finish")))
    alone.submit("honest-blank", UNIT, release)
    sequential = alone.copy(root / "sequential")
    for name, code in HOSTILE.items():
        sequential.submit(f"hostile-{name}", UNIT, _with_trick(filled(release, source), code))
    parallel = sequential.copy(root / "parallel")

    nbgrader(["autograde", UNIT, "--force"], cwd=alone.root)
    began = time.monotonic()
    # The host's disks the grading writes to: the courses' and the temporary folder's (kernels' scratch and sockets).
    with MemoryWatch((root, Path(tempfile.gettempdir()))) as memory:
        log = nbgrader(["autograde", UNIT, "--force"], cwd=sequential.root)
        after_sequential = _left_behind(root)
        graded = autograde_class(parallel.root, UNIT, jobs=2, timeout=600)
    return {"alone": _scores(alone, HONEST), "sequential": sequential, "parallel": parallel, "log": log,
            "graded": graded, "memory": memory, "after_sequential": after_sequential,
            "after": _left_behind(root), "seconds": time.monotonic() - began}


def test_honest_grades_are_those_the_same_submissions_get_graded_alone(hostile):
    assert hostile["alone"]["honest-correct"] > 0 and hostile["alone"]["honest-blank"] == 0
    assert _scores(hostile["sequential"], HONEST) == hostile["alone"]
    assert _scores(hostile["parallel"], HONEST) == hostile["alone"]


def test_every_hostile_submission_is_graded_and_earns_less_than_the_reference(hostile):
    full = hostile["alone"]["honest-correct"]
    for course in (hostile["sequential"], hostile["parallel"]):
        for name in HOSTILE:
            graded = course.graded(UNIT, f"hostile-{name}")
            assert graded.score <= full, name
    outcomes = {o.student: o for o in hostile["graded"].outcomes}
    assert {s: o.status for s, o in outcomes.items()} == dict.fromkeys(outcomes, Status.GRADED)


def test_each_hostile_submission_is_told_which_limit_stopped_it(hostile):
    outcomes = {o.student: o for o in hostile["graded"].outcomes}
    for name, limit in NAMED.items():
        autograded = hostile["parallel"].root / "autograded" / f"hostile-{name}" / UNIT / f"{UNIT}.ipynb"
        text = autograded.read_text()
        assert limit in outcomes[f"hostile-{name}"].stopped or limit in text, (name, outcomes[f"hostile-{name}"])
    assert [s for s, o in outcomes.items() if o.stopped and s in HONEST] == []


def test_the_class_ends_within_its_limits_and_leaves_no_process_and_no_cgroup(hostile):
    assert hostile["after_sequential"] == ([], [])
    assert hostile["after"] == ([], [])
    # Two runs of the class; each hostile submission is bounded by the wall time limit and the cell timeout.
    assert hostile["seconds"] < 2 * len(STUDENTS) * (LIMITS["wall_seconds"] + 2 * 8)


def test_the_machines_available_memory_never_fell_below_a_safe_floor(hostile):
    memory = hostile["memory"]
    # Two submissions at a time, each at most its memory limit for the kernel and for the re-check.
    floor = memory.start - 4 * LIMITS["memory_mb"] * (1 << 20) - (1 << 30)
    assert memory.lowest > floor, (memory.start >> 20, memory.lowest >> 20)


def test_the_hosts_free_disk_never_fell_by_more_than_the_class_hands_in(hostile):
    """Writing without end into the working folder or the socket folder takes RAM within their sizes, not
    the host's disk: the free disk, before, at its lowest, and after, moved by less than the courses' own files."""
    memory = hostile["memory"]
    allowance = 256 << 20  # two copies of a class of eleven small submissions, their feedback and logs
    assert memory.lowest_disk > memory.start_disk - allowance, (memory.start_disk >> 20, memory.lowest_disk >> 20)
    assert memory.end_disk > memory.start_disk - allowance, (memory.start_disk >> 20, memory.end_disk >> 20)
