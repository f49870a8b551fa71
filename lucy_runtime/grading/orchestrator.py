"""The rows' orchestrator: the sealed re-check, and the small process that runs rows apart.

``python -m lucy_runtime.grading.orchestrator rows`` reads a JSON request (learner cells,
row ids, timeout, seed, the user to drop to, the limits) on stdin and answers with the
rows' results as JSON. It is trusted code: learner code runs only in its forked children,
which call ``confine.enter_child()`` first (close every inherited descriptor, take the
limits, drop to the grader user). In the grading sandbox it is the sealed re-check
(``run_sealed_rows``); outside, ``grading/process.py`` keeps one serving request after
request (``--serve``), so the rows' children fork from a small process.

It sets the engine's confinement for its children (``confine._drop_to`` and the rest):
the sandbox knows nothing of rows, and this module sits above both.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict
from pathlib import Path

from ..engine import confine, limits as _limits
from . import sandbox
from ..errors import SandboxUnavailable
from ..engine.limits import LIMIT_HINT, Limits
from ..checker import CheckReport, SourceLearner, run_row
from ..checker.harness import Harness
from .nbgrader_log import STOPPED
from .process import ORCHESTRATOR, CheckerProcess, read_answer, request_line
from ..checker.results import RowResult
from ..checker.rows import ROWS


def run_sealed_rows(cells: list[tuple[str, str]], row_ids: list[str], *, timeout: float, box: sandbox.Sandbox | None = None,
                    log=None, limits: Limits | None = None, folder: str | None = None):
    """The sealed re-check of ``row_ids`` against ``cells``, in the sandbox when there is one.

    Returns the same ``CheckReport`` as ``run_rows(..., title="sealed")``. In the sandbox the
    orchestrator and all its children run in a cgroup of their own where the machine gives one,
    each child under ``limits``' rlimits, all of it for at most ``limits.wall_seconds``.
    ``folder`` is the submission's folder, named in the cgroup's name.
    """
    box = box or sandbox.detect()
    limits = limits or Limits()
    if not box.isolated:
        sandbox._warn_once(box, log)
        # Still in a process of its own: its children fork from a small interpreter, not from nbgrader.
        with CheckerProcess() as checker:
            return checker.run_rows(SourceLearner(cells), [ROWS[r] for r in row_ids], timeout=timeout, title="sealed")
    group, limits = sandbox.tree_cgroup(limits, f"sealed-{_limits.group_label(folder)}", log)
    request = request_line(cells, row_ids, timeout=timeout, drop_to=[box.uid, box.gid] if box.drops_user else None,
                           limits=limits.as_json(), sandboxed=True)
    # CAP_SYS_ADMIN: each run of a row in namespaces of its own (engine/confine.py: fork_run); the children drop it.
    argv = box.command(list(ORCHESTRATOR), caps=("CAP_SETUID", "CAP_SETGID", "CAP_KILL", "CAP_SYS_ADMIN") if box.drops_user
                       else (), limits=limits, private=[(sandbox.CHECK_IN_BOX, limits.tmp_mb << 20)])
    if group is not None:
        argv = group.wrap(argv)
    try:
        # The orchestrator stops starting rows at the wall time limit; this is the backstop.
        done = subprocess.run(argv, input=request, capture_output=True, text=True, cwd="/", env={"PATH": "/usr/bin:/bin"},
                              timeout=min(limits.wall_seconds + 120, max(600.0, 60 * timeout * max(len(row_ids), 1))))
    except subprocess.TimeoutExpired as error:
        raise SandboxUnavailable(f"the sealed re-check did not finish in {error.timeout:.0f} s "
                                 f"(the wall time limit is {limits.wall_seconds} s)") from None
    finally:
        if group is not None:
            breaches = group.breaches(limits)
            group.close()
            if breaches and log is not None:
                log.warning(STOPPED + "the %s limit, in the sealed re-check",
                            " limit, the ".join(breaches))
    if done.returncode != 0:
        raise SandboxUnavailable(f"the sealed re-check failed (exit {done.returncode}):\n{done.stderr[-2000:]}")
    try:
        results = read_answer(done.stdout, row_ids)
    except ValueError as error:
        raise SandboxUnavailable(f"the sealed re-check answered {error}:\n{done.stderr[-2000:]}") from None
    return CheckReport(results, "sealed")


def _rows_main(serve: bool = False) -> int:
    """The rows' orchestrator (trusted); learner code only in its children.

    It reads one request (the cells, the row ids, the timeout and an optional seed) as JSON
    on stdin and answers with the rows' results. With ``serve`` it reads one request per
    line until stdin closes and answers each on a line of its own (grading/process.py).
    """

    answer = os.fdopen(os.dup(1), "w")  # the report goes here; nothing else may write to it
    os.dup2(2, 1)
    confine._close_inherited = True
    for line in (sys.stdin if serve else [sys.stdin.read()]):
        request = json.loads(line)
        if request.get("limits"):
            _limits.activate(Limits.from_json(request["limits"]))
        confine._sandboxed = bool(request.get("sandboxed"))
        if request.get("drop_to") and confine._drop_to is None:
            confine._drop_to = (int(request["drop_to"][0]), int(request["drop_to"][1]))
            # Scenario files are made here and written by the children (the grader user): in this
            # sandbox-only process, every new file is open to them. Folders get their mode where
            # they are made (Harness: the work folder 0711, each scenario's 0777).
            os.umask(0)
            # Each run of a row from nothing: its own pid, IPC and mount namespaces, its own /tmp.
            if not confine.start_fresh_runs(_limits.active().tmp_mb << 20):
                print("WARNING: the runs of a row share one /tmp, IPC namespace and pid namespace "
                      "(no namespaces could be made)", file=sys.stderr, flush=True)
        drop_to = confine._drop_to
        # Sandboxed, the scenario folders are in a folder of their own (each run gets a new /tmp).
        workdir = Path(tempfile.mkdtemp(prefix="lucy-check-", dir=sandbox.CHECK_IN_BOX)) if drop_to else None
        # Sandboxed, /tmp is this sandbox's own and every learner process runs as the grader user: between
        # the runs of one crash row nothing a run left (a file, a process) may reach the next.
        with Harness(SourceLearner([tuple(c) for c in request["cells"]]), timeout=request["timeout"],
                     seed=request.get("seed"), workdir=workdir, wipe_as=drop_to) as harness:
            deadline = time.monotonic() + _limits.active().wall_seconds
            results = [asdict(run_row(ROWS[r], harness) if time.monotonic() < deadline else _out_of_time(r))
                       for r in request["rows"]]
        answer.write(json.dumps(results) + "\n")
        answer.flush()
    answer.close()
    return 0


def _out_of_time(row_id: str) -> RowResult:
    limit = _limits.active().wall_seconds
    return RowResult(row_id, False, f"not checked: the rows before it used up the wall time limit ({limit} s)",
                     LIMIT_HINT, 0.0)


if __name__ == "__main__":
    # Run in the importable module: one registry of rows, and the sandbox state its children read.
    from lucy_runtime.grading import orchestrator as _module

    if sys.argv[1:2] == ["rows"] and sys.argv[2:] in ([], ["--serve"]):
        sys.exit(_module._rows_main(serve=sys.argv[2:] == ["--serve"]))
    print("usage: python -m lucy_runtime.grading.orchestrator rows [--serve]", file=sys.stderr)
    sys.exit(2)
