"""What one submission may take of the grading machine, and how the limits are applied.

A class is graded on one machine: a submission that allocates without end, forks
without end, prints or writes without end, or sleeps for ever must be stopped
without touching the grades of the others. Three mechanisms, each where it works:

* **rlimits** (``prlimit``, ``setrlimit``), on every platform, per process: address
  space, open files, file size, CPU seconds; processes per grader user.
* **a cgroup** for the whole process tree of one kernel or one sealed re-check, where the
  machine gives one to root (v1 ``memory`` and ``pids`` controllers, or v2): memory and
  processes for the tree, and a record of which limit was hit.
* **the grader's own counters** in the nbgrader process: output bytes kept in the
  notebook, and wall-clock seconds for the whole notebook.

The sandbox's ``/tmp`` is a tmpfs of ``tmp_mb``. ``GradingLimits`` reads the limits
from ``nbgrader_config.py`` (``c.GradingLimits.memory_mb = 2048``, ...).
"""

from __future__ import annotations

import dataclasses
import errno
import os
import re
import signal
import time
from dataclasses import dataclass
from pathlib import Path

from traitlets import Integer
from traitlets.config import Configurable

MB = 1 << 20
PRLIMIT = "/usr/bin/prlimit"
CGROUP_ROOT = Path("/sys/fs/cgroup")
GROUP_PREFIX = "lucy"


@dataclass(frozen=True)
class Limits:
    """The limits of one submission's grading (megabytes and seconds)."""

    memory_mb: int = 2048
    address_space_mb: int = 4096
    processes: int = 256
    open_files: int = 1024
    file_size_mb: int = 256
    cpu_seconds: int = 600
    wall_seconds: int = 900
    output_mb: int = 16
    tmp_mb: int = 512
    user_processes: int = 0
    """RLIMIT_NPROC, which counts every process of the grader user on the machine: ``processes``
    when nothing else bounds a tree; four times that when a cgroup does, so that one submission
    at its cgroup's limit leaves room for the others graded beside it."""
    submission_mb: int = 64
    submission_files: int = 1000

    @property
    def nproc(self) -> int:
        return self.user_processes or self.processes

    def bounded_by_cgroup(self) -> "Limits":
        return dataclasses.replace(self, user_processes=4 * self.processes)

    def prlimit_argv(self) -> list[str]:
        """``prlimit`` options that set each rlimit (soft and hard) for the command that follows."""
        return [PRLIMIT, f"--as={self.address_space_mb * MB}", f"--nofile={self.open_files}",
                f"--fsize={self.file_size_mb * MB}", f"--cpu={self.cpu_seconds}", f"--nproc={self.nproc}", "--"]

    def set_in_this_process(self, *, processes: bool = True) -> None:
        """The same rlimits, set with ``setrlimit`` (a checker child, before it drops to the grader user)."""
        import resource  # noqa: PLC0415 - POSIX only, and only a checker child needs it

        pairs = [(resource.RLIMIT_AS, self.address_space_mb * MB), (resource.RLIMIT_NOFILE, self.open_files),
                 (resource.RLIMIT_FSIZE, self.file_size_mb * MB), (resource.RLIMIT_CPU, self.cpu_seconds)]
        if processes:
            pairs.append((resource.RLIMIT_NPROC, self.nproc))
        for which, value in pairs:
            soft, hard = resource.getrlimit(which)
            value = value if hard == resource.RLIM_INFINITY else min(value, hard)
            resource.setrlimit(which, (value, value))

    def as_json(self) -> dict[str, int]:
        return dataclasses.asdict(self)

    @classmethod
    def from_json(cls, data: dict | None) -> "Limits":
        names = {f.name for f in dataclasses.fields(cls)}
        return cls(**{k: int(v) for k, v in (data or {}).items() if k in names and not isinstance(v, bool)})


class GradingLimits(Configurable):
    """The limits as ``nbgrader_config.py`` sets them: ``c.GradingLimits.memory_mb = 1024``."""

    memory_mb = Integer(Limits.memory_mb, help="Memory of one submission's process tree, in MB (cgroup).").tag(config=True)
    address_space_mb = Integer(Limits.address_space_mb, help="Address space of each process, in MB.").tag(config=True)
    processes = Integer(Limits.processes, help="Processes and threads of one submission.").tag(config=True)
    open_files = Integer(Limits.open_files, help="Open files of each process.").tag(config=True)
    file_size_mb = Integer(Limits.file_size_mb, help="Largest file a process may write, in MB.").tag(config=True)
    cpu_seconds = Integer(Limits.cpu_seconds, help="CPU seconds of each process.").tag(config=True)
    wall_seconds = Integer(Limits.wall_seconds, help="Wall-clock seconds for one notebook's execution.").tag(config=True)
    output_mb = Integer(Limits.output_mb, help="Outputs one notebook may keep, in MB.").tag(config=True)
    tmp_mb = Integer(Limits.tmp_mb, help="Size of the sandbox's /tmp, in MB.").tag(config=True)
    submission_mb = Integer(Limits.submission_mb, help="Bytes one hand-in may hold, in MB (collect).").tag(config=True)
    submission_files = Integer(Limits.submission_files, help="Files and folders one hand-in may hold (collect).").tag(
        config=True)

    def limits(self) -> Limits:
        return Limits(**{f.name: int(getattr(self, f.name)) for f in dataclasses.fields(Limits) if f.name != "user_processes"})


# --- what a limit looks like when it is hit ---------------------------------------------------

LIMIT_HINT = ("Graded code runs within limits on memory, processes, files and time: look for code that allocates, "
              "forks, writes, waits or loops without end, even at the top of a cell.")
"""The hint of every row (and checkpoint) that a limit stopped."""

_active = Limits()


def activate(limits: Limits) -> None:
    """The limits this process's children run under (the rows' orchestrator sets them)."""
    global _active
    _active = limits


def active() -> Limits:
    return _active


def explain_signal(code: object) -> str:
    """Why a process ended by ``-signal`` when nobody in the checker killed it; '' when not a limit's."""
    if code == -signal.SIGXCPU:
        return f"it went over the CPU time limit ({_active.cpu_seconds} s) and was stopped"
    if code == -signal.SIGXFSZ:
        return f"it wrote a file larger than the file size limit ({_active.file_size_mb} MB) and was stopped"
    if code == -signal.SIGKILL:
        return (f"it was killed from outside the checker: most likely it went over the memory limit "
                f"({_active.memory_mb} MB)")
    return ""


def explain_error(type_name: str, message: str) -> str:
    """The limit behind a learner exception, when one is; '' otherwise."""
    if type_name == "MemoryError":
        return f"the memory limit of the grading sandbox ({_active.memory_mb} MB, {_active.address_space_mb} MB per process)"
    if type_name in ("BlockingIOError", "OSError") and f"[Errno {errno.EAGAIN}]" in message:
        return f"the process limit of the grading sandbox ({_active.processes})"
    if type_name == "OSError" and f"[Errno {errno.ENOSPC}]" in message:
        return f"the size of the sandbox's temporary folder ({_active.tmp_mb} MB)"
    if type_name == "OSError" and f"[Errno {errno.EFBIG}]" in message:
        return f"the file size limit of the grading sandbox ({_active.file_size_mb} MB)"
    if type_name == "OSError" and f"[Errno {errno.EMFILE}]" in message:
        return f"the open-files limit of the grading sandbox ({_active.open_files})"
    return ""


# --- cgroups ------------------------------------------------------------------------------------


@dataclass
class Cgroup:
    """One submission's process tree in a cgroup: memory and process limits, and what was hit.

    ``folders`` maps a controller ("memory", "pids") to its folder; on cgroup v2 both are
    the same folder.
    """

    folders: dict[str, Path]
    version: int

    def wrap(self, argv: list[str]) -> list[str]:
        """``argv`` started inside the group: a shell joins it, then becomes ``argv``."""
        joins = " && ".join(f"echo $$ > '{folder}/cgroup.procs'" for folder in dict.fromkeys(self.folders.values()))
        return ["/bin/sh", "-c", f'{joins} && exec "$@"', "lucy-limits", *argv]

    def breaches(self, limits: Limits) -> list[str]:
        """The limits this group hit, in words (empty when none)."""
        found = []
        memory, pids = self.folders.get("memory"), self.folders.get("pids")
        if memory is not None:
            events = _counters(memory / ("memory.events" if self.version == 2 else "memory.oom_control"))
            if events.get("oom_kill", 0) > 0:
                found.append(f"memory ({limits.memory_mb} MB)")
        if pids is not None and _counters(pids / "pids.events").get("max", 0) > 0:
            found.append(f"processes ({limits.processes})")
        return found

    def close(self) -> None:
        """Kill whatever is left in the group, then remove it."""
        for folder in dict.fromkeys(self.folders.values()):
            for _ in range(50):
                pids = _members(folder)
                if not pids:
                    break
                for pid in pids:
                    try:
                        os.kill(pid, signal.SIGKILL)
                    except ProcessLookupError:
                        pass
                time.sleep(0.02)
            try:
                folder.rmdir()
            except OSError:
                pass


def _members(folder: Path) -> list[int]:
    try:
        return [int(p) for p in (folder / "cgroup.procs").read_text().split()]
    except (OSError, ValueError):
        return []


def _counters(path: Path) -> dict[str, int]:
    try:
        lines = path.read_text().splitlines()
    except OSError:
        return {}
    found = {}
    for line in lines:
        parts = line.split()
        if len(parts) == 2 and parts[1].isdigit():
            found[parts[0]] = int(parts[1])
    return found


def cgroup_support(root: Path = CGROUP_ROOT) -> tuple[int, str]:
    """(cgroup version usable here, or 0; why not)."""
    if os.geteuid() != 0:
        return 0, "not root: no cgroup for the submission's process tree"
    if (root / "cgroup.controllers").is_file():
        controllers = (root / "cgroup.controllers").read_text().split()
        missing = [c for c in ("memory", "pids") if c not in controllers]
        return (0, f"cgroup v2 without the {' and '.join(missing)} controller") if missing else (2, "")
    missing = [c for c in ("memory", "pids") if not (root / c / "cgroup.procs").is_file()]
    if missing:
        return 0, f"no cgroup {' or '.join(missing)} controller is mounted"
    return 1, ""


_made = 0


def group_label(folder: str | os.PathLike | None) -> str:
    """A submission folder ``.../<student>/<assignment>`` as part of a group's name: ``student.assignment``."""
    if not folder:
        return "notebook"
    parts = Path(folder).parts[-2:]
    return re.sub(r"[^A-Za-z0-9_.-]", "_", ".".join(parts))[:80] or "notebook"


def make_cgroup(limits: Limits, kind: str, root: Path = CGROUP_ROOT) -> tuple[Cgroup | None, str]:
    """A new group for one process tree with ``limits``, or (None, why not). ``kind`` starts its
    name (``kernel-ada.ch07_unit_a-...``), so an operator can tell whose tree a group holds."""
    global _made
    version, why = cgroup_support(root)
    if not version:
        return None, why
    _made += 1
    name = f"{kind}-{os.getpid()}-{_made}"
    try:
        if version == 2:
            parent = root / GROUP_PREFIX
            parent.mkdir(exist_ok=True)
            for holder in (root, parent):
                enabled = (holder / "cgroup.subtree_control").read_text().split()
                wanted = [f"+{c}" for c in ("memory", "pids") if c not in enabled]
                if wanted:
                    (holder / "cgroup.subtree_control").write_text(" ".join(wanted))
            folder = parent / name
            folder.mkdir()
            (folder / "memory.max").write_text(str(limits.memory_mb * MB))
            _write_if_there(folder / "memory.swap.max", "0")
            (folder / "pids.max").write_text(str(limits.processes))
            return Cgroup({"memory": folder, "pids": folder}, 2), ""
        folders = {}
        for controller in ("memory", "pids"):
            parent = root / controller / GROUP_PREFIX
            parent.mkdir(exist_ok=True)
            folders[controller] = parent / name
            folders[controller].mkdir()
        (folders["memory"] / "memory.limit_in_bytes").write_text(str(limits.memory_mb * MB))
        _write_if_there(folders["memory"] / "memory.memsw.limit_in_bytes", str(limits.memory_mb * MB))
        (folders["pids"] / "pids.max").write_text(str(limits.processes))
        return Cgroup(folders, 1), ""
    except OSError as error:
        return None, f"a cgroup could not be made ({error})"


def _write_if_there(path: Path, value: str) -> None:
    if path.exists():
        try:
            path.write_text(value)
        except OSError:
            pass
