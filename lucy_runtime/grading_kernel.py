"""nbgrader's Execute step with the notebook's kernel inside the grading sandbox (``sandbox.py``).

nbgrader's ``Execute`` passes ``kernel_manager_class=AsyncKernelManager`` to nbclient as
a keyword, which wins over ``c.Execute.kernel_manager_class`` in the config; so the
course configures ``SandboxedExecute`` in place of ``Execute``.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path

from jupyter_client.manager import AsyncKernelManager
from nbgrader.preprocessors import Execute

from . import sandbox
from .checker import SEALED_ENV


class SandboxedKernelManager(AsyncKernelManager):
    """Starts the kernel inside the grading sandbox; everything it started dies with it."""

    _lucy_scratch = None

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
        argv, self._lucy_scratch = sandbox.kernel_launch(box, kernel_cmd, cwd=kw.get("cwd"),
                                                         connection_file=self.connection_file)
        # bwrap does not pass SIGINT on to the kernel: interrupt through the control channel instead.
        if self.kernel_spec is not None:
            self.kernel_spec.interrupt_mode = "message"
        kw.update(cwd="/", env={"PATH": "/usr/bin:/bin"})
        self.log.debug("Sandboxed kernel: %s", argv)
        await super()._async_launch_kernel(argv, **kw)

    async def _async_cleanup_resources(self, restart: bool = False) -> None:
        await super()._async_cleanup_resources(restart=restart)
        if not restart:
            self._drop_scratch()

    def _drop_scratch(self) -> None:
        if self._lucy_scratch is not None:
            shutil.rmtree(self._lucy_scratch, ignore_errors=True)
            self._lucy_scratch = None


class SandboxedExecute(Execute):
    """nbgrader's Execute, its kernel in the grading sandbox."""

    def __init__(self, *args, **kwargs):
        kwargs.setdefault("kernel_manager_class", SandboxedKernelManager)
        super().__init__(*args, **kwargs)
