"""How the engine's children are confined before learner code runs in them.

A process that forks children for learner code (the rows' orchestrator, in the grading
sandbox or not) sets this module's state once; every child then calls ``enter_child``
first (``child.py``): it closes the files it inherited and, in the sandbox, takes the
limits and drops to the grader user. ``reap_leftovers`` ends what a sandboxed run left.
Forked from a kernel or a test, nothing is set and both do nothing.

In the sealed sandbox (``_fresh_runs``), every run is forked by ``fork_run`` into namespaces of
its own: its own pid namespace (the parent's kill ends the namespace's first process, and with
it, at once, every process the run started: none can fork away or finish the work afterwards,
and the wait returns only once all are gone), its own IPC namespace (no SysV shared memory,
semaphore or POSIX message queue of one run reaches the next) and its own mount namespace with
an empty ``/tmp`` and ``/dev/shm`` (no file of an earlier run, whatever its mode).
"""

from __future__ import annotations

import ctypes
import os
import signal
import struct
import time
from typing import Callable, NoReturn

from ..errors import NamespaceFailed, SandboxUnavailable
from . import limits as _limits

_drop_to: tuple[int, int] | None = None
"""Set by the rows' orchestrator: the (uid, gid) its children run learner code as."""
_close_inherited = False
"""Set by the rows' orchestrator, sandboxed or not: its children keep none of its files, so no
learner code can write to the pipe its answers leave by."""


_sandboxed = False
"""Set by the rows' orchestrator when it runs inside the sandbox (its own pid namespace)."""

_fresh_runs: int = 0
"""Set by the rows' orchestrator in the sealed sandbox, where it may make namespaces: the size in
bytes of each run's own ``/tmp`` (and ``/dev/shm``); 0: runs are plain forks."""

CLONE_NEWNS, CLONE_NEWIPC, CLONE_NEWPID = 0x00020000, 0x08000000, 0x20000000
MS_NOSUID, MS_NODEV, MS_NOEXEC, MS_BIND, MS_REC, MS_PRIVATE = 2, 4, 8, 1 << 12, 1 << 14, 1 << 18
RUN_FAILED = 70
"""The exit status of a run whose namespaces could not be made (it ran no learner code)."""


def libc_call(name: str, *args: object) -> None:
    """Call the C library's ``name`` (unshare, mount, umount2); ``NamespaceFailed`` (an OSError) when it fails."""
    libc = ctypes.CDLL(None, use_errno=True)
    if getattr(libc, name)(*args) != 0:
        error = ctypes.get_errno()
        raise NamespaceFailed(error, f"{name}: {os.strerror(error)}")


def _mount_tmpfs(target: str, size: int) -> None:
    """An empty tmpfs over ``target``; what was mounted below ``target`` (a folder bound into the sandbox
    there) is bound again at the same place."""
    below = sorted(_mounts_below(target))
    old = os.open(target, os.O_RDONLY | os.O_DIRECTORY)
    try:
        libc_call("mount", b"tmpfs", target.encode(), b"tmpfs", MS_NOSUID | MS_NODEV,
                  f"size={size},mode=1777".encode())
        for path in below:
            if any(path.startswith(other + "/") for other in below):
                continue  # carried along by its parent's recursive bind
            inside = os.path.relpath(path, target)
            os.makedirs(path, mode=0o755, exist_ok=True)
            libc_call("mount", f"/proc/self/fd/{old}/{inside}".encode(), path.encode(), None, MS_BIND | MS_REC, None)
    finally:
        os.close(old)


def _mounts_below(target: str) -> set[str]:
    found = set()
    with open("/proc/self/mountinfo") as mounts:
        for line in mounts:
            point = line.split()[4].encode().decode("unicode_escape")
            if point.startswith(target.rstrip("/") + "/"):
                found.add(point)
    return found


def fork_run(main: Callable[[], object], close: tuple[int, ...] = ()) -> tuple[int, int]:
    """Fork one run that calls ``main`` (which never returns); (the pid to kill, the pid to wait for).

    Plain fork unless ``_fresh_runs``: then the run's first process (the pid to kill) is the
    init of a new pid namespace, made by a process (the pid to wait for) that waits for it and
    leaves as it left. That init mounts the run's own /proc, forks ``main`` and waits for it;
    when ``main``'s process ends, or the init is killed, the kernel kills whatever else the run
    left, before the wait of the parent returns. ``close``: descriptors of the caller's that the
    run's processes close first.
    """
    if not _fresh_runs:
        pid = os.fork()
        if pid == 0:
            for fd in close:
                os.close(fd)
            main()
            os._exit(RUN_FAILED)  # main never returns
        return pid, pid
    told, tell = os.pipe()
    outer = os.fork()
    if outer == 0:
        os.close(told)
        try:
            for fd in close:
                os.close(fd)
            libc_call("unshare", CLONE_NEWPID | CLONE_NEWIPC | CLONE_NEWNS)
            libc_call("mount", b"none", b"/", None, MS_REC | MS_PRIVATE, None)
            _mount_tmpfs("/tmp", _fresh_runs)
            if os.path.isdir("/dev/shm"):
                _mount_tmpfs("/dev/shm", _fresh_runs)
            os.chdir("/tmp")  # the folder it was in is the orchestrator's, seen by every run
            heard, say = os.pipe()  # the init tells how main's process ended
            init = os.fork()
        except BaseException:
            os._exit(RUN_FAILED)
        if init == 0:
            os.close(tell)
            os.close(heard)
            _init_of_run(main, say)
        os.close(say)
        os.write(tell, _PID.pack(init))
        os.close(tell)
        status = os.waitpid(init, 0)[1]
        told_status = os.read(heard, _PID.size)
        _leave_as(_PID.unpack(told_status)[0] if len(told_status) == _PID.size else status)
    os.close(tell)
    data = os.read(told, _PID.size)
    os.close(told)
    return (_PID.unpack(data)[0] if len(data) == _PID.size else outer), outer


_PID = struct.Struct(">i")


def fresh_runs() -> bool:
    """True when each run is forked into namespaces of its own (nothing a run leaves reaches the next)."""
    return bool(_fresh_runs)


def start_fresh_runs(size: int) -> bool:
    """From now on, fork every run into namespaces of its own with a ``/tmp`` of ``size`` bytes,
    if a trial run shows this process may make them (root with CAP_SYS_ADMIN); False, and plain
    forks, otherwise."""
    global _fresh_runs
    _fresh_runs = size
    try:
        kill, waited = fork_run(lambda: os._exit(0))
        status = os.waitpid(waited, 0)[1]
    except OSError:
        status = -1
    if status != 0:
        _fresh_runs = 0
    return bool(_fresh_runs)


def _init_of_run(main: Callable[[], object], say: int) -> NoReturn:
    """Process 1 of a run's pid namespace: its own /proc, then ``main`` in a child; when that child has
    ended, writes its wait status to ``say`` and leaves (and the kernel ends the rest of the run)."""
    try:
        libc_call("mount", b"proc", b"/proc", b"proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, None)
        child = os.fork()
    except BaseException:
        os._exit(RUN_FAILED)
    if child == 0:
        os.close(say)
        main()
        os._exit(RUN_FAILED)  # main never returns
    while True:  # an init reaps every orphan of its namespace; it leaves when main's process has
        try:
            pid, status = os.wait()
        except ChildProcessError:
            os._exit(RUN_FAILED)
        if pid == child:
            os.write(say, _PID.pack(status))
            os._exit(0)


def _leave_as(status: int) -> NoReturn:
    """End this process as main's process ended: with its exit code, or of the signal it died of."""
    if os.WIFSIGNALED(status):
        sig = os.WTERMSIG(status)
        try:
            signal.signal(sig, signal.SIG_DFL)
            os.kill(os.getpid(), sig)
        except (OSError, ValueError):
            pass
        os._exit(128 + sig)
    os._exit(os.waitstatus_to_exitcode(status) if os.WIFEXITED(status) else RUN_FAILED)


def reap_leftovers() -> None:
    """Inside the sandbox, after a run's children have ended: kill every process of the grader user
    they left behind (a learner's fork that sleeps, or one that holds the process limit), so the
    next run starts with the whole limit. This pid namespace's /proc holds only the sandbox; the
    orchestrator and its fork servers are not the grader user and stay. Outside the sandbox, or
    where learner code runs as the orchestrator's own user, it does nothing."""
    if not _sandboxed or _drop_to is None:
        return
    uid = _drop_to[0]
    for _ in range(20):
        left = []
        for name in os.listdir("/proc"):
            if not name.isdigit():
                continue
            try:
                with open(f"/proc/{name}/status") as status:
                    owner = next(line for line in status if line.startswith("Uid:")).split()[1]
            except (OSError, StopIteration):
                continue
            if int(owner) == uid:
                left.append(int(name))
        if not left:
            return
        for pid in left:
            try:
                os.kill(pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass
        time.sleep(0.01)


def dropping_to() -> tuple[int, int] | None:
    """The (uid, gid) this process's children run learner code as; None when they keep ours."""
    return _drop_to


def enter_child(*keep: int) -> None:
    """First thing in a forked child, before learner code: when the rows' orchestrator forked it,
    close every inherited file descriptor but ``keep`` (and 0-2); in the sandbox, also drop to
    the grader user. Never returns on failure: the child ends instead of running learner code privileged."""
    if _drop_to is None and not _close_inherited:
        # Forked from a kernel (a learner's own check(), an experiment): the kernel's
        # open SQLite files must stay open, or SQLite in the child loses track of its locks.
        return
    try:
        low = 3
        for fd in sorted(k for k in keep if k >= 3):
            os.closerange(low, fd)
            low = fd + 1
        os.closerange(low, max(1 << 16, os.sysconf("SC_OPEN_MAX")))
        if _drop_to is not None:
            uid, gid = _drop_to
            _limits.active().set_in_this_process()
            try:
                with open("/proc/self/oom_score_adj", "w") as adj:  # under memory pressure, learner code goes first
                    adj.write("1000")
            except OSError:
                pass
            os.umask(0)  # the orchestrator and its observer (another user) read and write these files
            os.setgroups([])
            os.setgid(gid)
            os.setuid(uid)
            if os.getuid() != uid or os.geteuid() != uid:
                raise SandboxUnavailable("still privileged")
    except BaseException:
        os._exit(70)
