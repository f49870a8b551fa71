"""The graded kernel's process, started in the grading sandbox through jupyter_client's kernel provisioner API.

jupyter_client asks a provisioner to start, signal, wait for and clean up after a
kernel's process. ``SandboxProvisioner`` is its ``LocalProvisioner`` with four changes:
the kernel talks over Unix sockets in a folder of its own (it has no network), its
command runs inside bubblewrap (``sandbox.py``) and in a cgroup with the submission's
limits (``limits.py``), what it writes to its stdout and stderr goes to ``kernel.log`` in
its scratch folder, and clean-up removes the scratch folder, the socket folder and the
cgroup, counting the limits the cgroup saw reached. Without a sandbox the kernel runs as
the grader, with the sealed verdict marked and a temporary folder of its own.

It is registered under ``lucy-sandbox`` in the ``jupyter_client.kernel_provisioners``
entry points (pyproject.toml); ``kernel.SandboxedKernelManager`` selects it.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from pathlib import Path
from typing import Any

from jupyter_client.connect import KernelConnectionInfo
from jupyter_client.provisioning import LocalProvisioner

from ..checker import SEALED_ENV
from ..engine import limits as _limits
from ..errors import SandboxUnavailable
from . import sandbox

PROVISIONER_NAME = "lucy-sandbox"
"""The name of ``SandboxProvisioner`` in the ``jupyter_client.kernel_provisioners`` entry points."""


class SandboxProvisioner(LocalProvisioner):
    """Starts the kernel inside the grading sandbox; everything it started dies with it."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.limits = _limits.GradingLimits(parent=self).limits()
        self.breaches: list[str] = []
        """The limits the kernel's cgroup saw reached, over every start of this kernel."""
        self.scratch: Path | None = None
        """The kernel's own temporary folder (its kernel.log, sandboxed); gone with the kernel."""
        self._group: _limits.Cgroup | None = None
        self._sockets: Path | None = None

    async def pre_launch(self, **kwargs: Any) -> dict[str, Any]:
        """Before the connection file is written: Unix sockets in a new folder, when sandboxed."""
        box = sandbox.detect()
        manager = self.parent
        if box.isolated and manager is not None and self._sockets is None:
            self._sockets = sandbox.socket_folder(box, self.limits, self.log)
            manager.transport = "ipc"
            manager.ip = str(self._sockets / "kernel")
        return await super().pre_launch(**kwargs)

    async def launch_kernel(self, cmd: list[str], **kwargs: Any) -> KernelConnectionInfo:
        self._drop_scratch()  # a restart: the kernel that used it is gone
        box = sandbox.detect()
        if not box.isolated:
            sandbox._warn_once(box, self.log)
            # Even unsandboxed, the sealed verdict decides: the kernel's grade() need not run the rows too.
            # The notebook's workspace goes in a temporary folder of its own, deleted with the kernel
            # (sandboxed, /tmp is a tmpfs that goes with it).
            self.scratch = Path(tempfile.mkdtemp(prefix="lucy-kernel-"))
            kwargs["env"] = {**(kwargs.get("env") or os.environ), SEALED_ENV: "sealed", "TMPDIR": str(self.scratch)}
            return await super().launch_kernel(cmd, **kwargs)
        manager = self.parent
        if manager is None:
            raise SandboxUnavailable("the sandboxed kernel needs its kernel manager's connection file; "
                                     "this provisioner was made without one")
        self._group, limits = sandbox.tree_cgroup(self.limits, f"kernel-{_limits.group_label(kwargs.get('cwd'))}", self.log)
        argv, self.scratch = sandbox.kernel_launch(box, cmd, cwd=kwargs.get("cwd"),
                                                   connection_file=manager.connection_file,
                                                   sockets=self._sockets, limits=limits)
        if self._group is not None:
            argv = self._group.wrap(argv)
        # bwrap does not pass SIGINT on to the kernel: interrupt through the control channel instead.
        if self.kernel_spec is not None:
            self.kernel_spec.interrupt_mode = "message"
        # What the kernel process writes to its own stdout and stderr goes to a file of the kernel's,
        # bounded by the file size limit, never into nbgrader's log.
        log = open(self.scratch / "kernel.log", "wb")
        kwargs.update(cwd="/", env={"PATH": "/usr/bin:/bin"}, stdout=log, stderr=subprocess.STDOUT)
        self.log.debug("Sandboxed kernel: %s", argv)
        try:
            return await super().launch_kernel(argv, **kwargs)
        finally:
            log.close()

    async def cleanup(self, restart: bool = False) -> None:
        await super().cleanup(restart=restart)
        self.close_group()
        if not restart:
            self._drop_scratch()
            if self._sockets is not None:
                sandbox.remove_socket_folder(self._sockets)
                self._sockets = None

    def close_group(self) -> None:
        """Read what limits the kernel's cgroup reached into ``breaches``, then remove the cgroup."""
        if self._group is not None:
            self.breaches += self._group.breaches(self.limits)
            self._group.close()
            self._group = None

    def _drop_scratch(self) -> None:
        if self.scratch is not None:
            shutil.rmtree(self.scratch, ignore_errors=True)
            self.scratch = None
