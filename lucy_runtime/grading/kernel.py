"""nbgrader's Execute step with the notebook's kernel inside the grading sandbox (``sandbox.py``).

nbgrader's ``Execute`` passes ``kernel_manager_class=AsyncKernelManager`` to nbclient as
a keyword, which wins over ``c.Execute.kernel_manager_class`` in the config; so the
course configures ``SandboxedExecute`` in place of ``Execute``. Its kernel manager,
``SandboxedKernelManager``, has every kernel it starts launched by the course's kernel
provisioner (``provisioner.py``), jupyter_client's public hook for a kernel's process.

The kernel runs with no network (its own namespace), so it talks to nbgrader over Unix
sockets (jupyter_client's ``ipc`` transport) in a folder bound into the sandbox. It runs
under the limits of ``limits.py``: rlimits and a cgroup for its process tree, and two the
grader counts itself: the bytes of output the notebook keeps, and the wall-clock
seconds of the whole notebook. A limit that stops the kernel is named in the notebook and
in nbgrader's log (``Limit reached: ...``); the sealed verdict then grades as always.
"""

from __future__ import annotations

import asyncio
import errno
import time
from importlib.metadata import entry_points

from jupyter_client.manager import AsyncKernelManager
from jupyter_client.provisioning import KernelProvisionerFactory
from nbclient.exceptions import DeadKernelError
from nbformat.v4 import new_output
from nbgrader.preprocessors import Execute

from ..engine import limits as _limits
from ..errors import SandboxUnavailable
from .nbgrader_log import STOPPED
from .provisioner import PROVISIONER_NAME, SandboxProvisioner

STOPPED_LOG = STOPPED + "%s"
"""How nbgrader's log names what stopped a submission's kernel (``lucy autograde`` reports these lines)."""
KERNEL_DIED = "its kernel died"


class SandboxedKernelManager(AsyncKernelManager):
    """jupyter_client's kernel manager, its kernel started by the grading sandbox's provisioner
    (``provisioner.SandboxProvisioner``) whatever the kernel spec names."""

    async def start_kernel(self, **kw) -> None:  # type: ignore[override]  # jupyter_client types it as sync
        spec = self.kernel_spec
        if spec is not None and self.provisioner is None:
            if not entry_points(group=KernelProvisionerFactory.GROUP_NAME, name=PROVISIONER_NAME):
                raise SandboxUnavailable(
                    f"the grading kernel's provisioner {PROVISIONER_NAME!r} is not registered in this Python "
                    f"environment ({KernelProvisionerFactory.GROUP_NAME} entry points): install the course "
                    f"package into it (pip install -e .)")
            spec.metadata["kernel_provisioner"] = {"provisioner_name": PROVISIONER_NAME, "config": {}}
        await super().start_kernel(**kw)

    @property
    def sandbox_provisioner(self) -> SandboxProvisioner | None:
        """The provisioner that started this manager's kernel, once it has started one."""
        return self.provisioner if isinstance(self.provisioner, SandboxProvisioner) else None


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
        self._lucy_disk_full = False
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
        if self._lucy_disk_full:
            hit.append(f"the disk limit (its working folder {limits.work_mb} MB, /tmp {limits.tmp_mb} MB, "
                       f"its socket folder {limits.sockets_mb} MB)")
        for manager in self._lucy_managers:
            provisioner = manager.sandbox_provisioner
            if provisioner is not None:
                provisioner.close_group()
                hit += [f"the {breach} limit" for breach in provisioner.breaches]
        if hit:
            said = ", ".join(dict.fromkeys(hit))
            self.log.warning(STOPPED_LOG, said)
            if self._lucy_cell is not None:
                self._lucy_cell.outputs.append(self._note(f"Stopped here: {said}"))
        return nb, resources

    def preprocess_cell(self, cell, resources, index):
        self._lucy_cell = cell
        try:
            return super().preprocess_cell(cell, resources, index)
        finally:  # a folder of the kernel's is full: its size is a limit too (a tmpfs of its own)
            self._lucy_disk_full = self._lucy_disk_full or any(
                out.get("output_type") == "error" and f"[Errno {errno.ENOSPC}]" in str(out.get("evalue", ""))
                for out in cell.get("outputs", []))

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
