"""nbgrader's Execute step with the notebook's kernel inside the grading sandbox (``sandbox.py``).

nbgrader's ``Execute`` passes ``kernel_manager_class=AsyncKernelManager`` to nbclient as
a keyword, which wins over ``c.Execute.kernel_manager_class`` in the config; so the
course configures ``SandboxedExecute`` in place of ``Execute``.

The kernel runs with no network (its own namespace), so it talks to nbgrader over Unix
sockets (jupyter_client's ``ipc`` transport) in a folder bound into the sandbox. It runs
under the limits of ``limits.py``: rlimits and a cgroup for its process tree, and two the
grader counts itself: the bytes of output the notebook keeps, and the wall-clock
seconds of the whole notebook. A limit that stops the kernel is named in the notebook and
in nbgrader's log (``Limit reached: ...``); the sealed verdict then grades as always.
"""

from __future__ import annotations

import asyncio
import os
import shutil
import subprocess
import tempfile
import time
from pathlib import Path

from jupyter_client.manager import AsyncKernelManager
from nbclient.exceptions import DeadKernelError
from nbformat.v4 import new_output
from nbgrader.preprocessors import Execute

from ..engine import limits as _limits
from . import sandbox
from ..checker import SEALED_ENV

STOPPED_LOG = "Submission stopped: %s"
"""How nbgrader's log names what stopped a submission's kernel (``lucy autograde`` reports these lines)."""
KERNEL_DIED = "its kernel died"


class SandboxedKernelManager(AsyncKernelManager):
    """Starts the kernel inside the grading sandbox; everything it started dies with it."""

    _lucy_scratch = None
    _lucy_group = None

    def __init__(self, **kwargs) -> None:
        super().__init__(**kwargs)
        self.lucy_limits = _limits.GradingLimits(parent=self).limits()
        self.lucy_breaches: list[str] = []
        self._lucy_sockets: Path | None = None
        box = sandbox.detect()
        if box.isolated:
            self._lucy_sockets = sandbox.socket_folder(box)
            self.transport = "ipc"
            self.ip = str(self._lucy_sockets / "kernel")

    async def _async_launch_kernel(self, kernel_cmd: list[str], **kw) -> None:
        self._drop_scratch()  # a restart: the kernel that used it is gone
        box = sandbox.detect()
        if not box.isolated:
            sandbox._warn_once(box, self.log)
            # Even unsandboxed, the sealed verdict decides: the kernel's grade() need not run the rows too.
            # The notebook's workspace goes in a temporary folder of its own, deleted with the kernel
            # (sandboxed, /tmp is a tmpfs that goes with it).
            self._lucy_scratch = Path(tempfile.mkdtemp(prefix="lucy-kernel-"))
            kw["env"] = {**(kw.get("env") or os.environ), SEALED_ENV: "sealed", "TMPDIR": str(self._lucy_scratch)}
            return await super()._async_launch_kernel(kernel_cmd, **kw)
        self._lucy_group, limits = sandbox.tree_cgroup(self.lucy_limits, f"kernel-{_limits.group_label(kw.get('cwd'))}",
                                                       self.log)
        argv, self._lucy_scratch = sandbox.kernel_launch(box, kernel_cmd, cwd=kw.get("cwd"),
                                                         connection_file=self.connection_file,
                                                         sockets=self._lucy_sockets, limits=limits)
        if self._lucy_group is not None:
            argv = self._lucy_group.wrap(argv)
        # bwrap does not pass SIGINT on to the kernel: interrupt through the control channel instead.
        if self.kernel_spec is not None:
            self.kernel_spec.interrupt_mode = "message"
        # What the kernel process writes to its own stdout and stderr goes to a file of the kernel's,
        # bounded by the file size limit, never into nbgrader's log.
        log = open(self._lucy_scratch / "kernel.log", "wb")
        kw.update(cwd="/", env={"PATH": "/usr/bin:/bin"}, stdout=log, stderr=subprocess.STDOUT)
        self.log.debug("Sandboxed kernel: %s", argv)
        try:
            await super()._async_launch_kernel(argv, **kw)
        finally:
            log.close()

    async def _async_cleanup_resources(self, restart: bool = False) -> None:
        await super()._async_cleanup_resources(restart=restart)
        self._close_group()
        if not restart:
            self._drop_scratch()
            if self._lucy_sockets is not None:
                shutil.rmtree(self._lucy_sockets, ignore_errors=True)

    def _close_group(self) -> None:
        if self._lucy_group is not None:
            self.lucy_breaches += self._lucy_group.breaches(self.lucy_limits)
            self._lucy_group.close()
            self._lucy_group = None

    def _drop_scratch(self) -> None:
        if self._lucy_scratch is not None:
            shutil.rmtree(self._lucy_scratch, ignore_errors=True)
            self._lucy_scratch = None


class SandboxedExecute(Execute):
    """nbgrader's Execute, its kernel in the grading sandbox, within the submission's limits."""

    def __init__(self, *args, **kwargs) -> None:
        kwargs.setdefault("kernel_manager_class", SandboxedKernelManager)
        super().__init__(*args, **kwargs)
        self._lucy_managers: list[SandboxedKernelManager] = []

    def create_kernel_manager(self):
        km = super().create_kernel_manager()
        if isinstance(km, SandboxedKernelManager):
            self._lucy_managers.append(km)
        return km

    def preprocess(self, nb, resources=None, km=None):
        limits = _limits.GradingLimits(parent=self).limits()
        self._lucy_output_left = limits.output_mb << 20
        self._lucy_output_stopped = False
        self._lucy_limits = limits
        self._lucy_cell = None
        self._lucy_managers = []
        deadline = time.monotonic() + limits.wall_seconds
        per_cell = self.timeout_func

        def timeout_for(cell) -> int | None:
            usual = per_cell(cell) if per_cell is not None else self.timeout
            left = max(1, int(deadline - time.monotonic()))
            return left if usual is None or usual <= 0 else min(usual, left)

        self.timeout_func = timeout_for
        hit: list[str] = []
        try:
            nb, resources = super().preprocess(nb, resources, km)
        except DeadKernelError:
            # Graded all the same: the sealed verdict re-runs the learner's cells on its own.
            hit.append(KERNEL_DIED)
        finally:
            self.timeout_func = per_cell
        if time.monotonic() > deadline:
            hit.append(f"the wall time limit ({limits.wall_seconds} s)")
        if self._lucy_output_stopped:
            hit.append(f"the output limit ({limits.output_mb} MB)")
        for manager in self._lucy_managers:
            manager._close_group()
            hit += [f"the {breach} limit" for breach in manager.lucy_breaches]
        if hit:
            said = ", ".join(dict.fromkeys(hit))
            self.log.warning(STOPPED_LOG, said)
            if self._lucy_cell is not None:
                self._lucy_cell.outputs.append(self._note(f"Stopped here: {said}"))
        return nb, resources

    def preprocess_cell(self, cell, resources, index):
        self._lucy_cell = cell
        return super().preprocess_cell(cell, resources, index)

    def output(self, outs, msg, display_id, cell_index):
        """Keep at most the output limit; past it, keep one note and interrupt the kernel once."""
        content = msg.get("content", {})
        size = len(str(content.get("text", ""))) + sum(len(str(v)) for v in content.get("data", {}).values())
        if self._lucy_output_stopped:
            return None
        self._lucy_output_left -= size
        if self._lucy_output_left >= 0:
            return super().output(outs, msg, display_id, cell_index)
        self._lucy_output_stopped = True
        outs.append(self._note(f"Output stopped: this notebook printed more than the output limit "
                               f"({self._lucy_limits.output_mb} MB)"))
        if self.km is not None:
            try:
                asyncio.get_running_loop().create_task(self.km.interrupt_kernel())
            except RuntimeError:  # no loop running: the cell's timeout stops it instead
                pass
        return None

    @staticmethod
    def _note(text: str):
        return new_output("stream", name="stderr", text=f"{text} (the grading sandbox's limits: see the README).\n")
