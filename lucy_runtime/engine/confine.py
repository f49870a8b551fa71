"""How the engine's children are confined before learner code runs in them.

A process that forks children for learner code (the rows' orchestrator, in the grading
sandbox or not) sets this module's state once; every child then calls ``enter_child``
first (``child.py``): it closes the files it inherited and, in the sandbox, takes the
limits and drops to the grader user. ``reap_leftovers`` ends what a sandboxed run left.
Forked from a kernel or a test, nothing is set and both do nothing.
"""

from __future__ import annotations

import os
import signal
import time

from ..errors import SandboxUnavailable
from . import limits as _limits

_drop_to: tuple[int, int] | None = None
"""Set by the rows' orchestrator: the (uid, gid) its children run learner code as."""
_close_inherited = False
"""Set by the rows' orchestrator, sandboxed or not: its children keep none of its files, so no
learner code can write to the pipe its answers leave by."""


_sandboxed = False
"""Set by the rows' orchestrator when it runs inside the sandbox (its own pid namespace)."""


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
