"""Kill hooks for the practice notebook: stop a process at a moment you choose.

``stop_here()`` ends the process it runs in, with nothing flushed or closed, the way
a power cut or ``kill -9`` would. It works only inside a process started by
``run_until_killed``, which supervises it (``lucy_runtime.engine``, which supervises the
checker's children too), so a hook can never take the notebook's own kernel down.
"""

from __future__ import annotations

from typing import Any, Callable

# The engine is imported where it is used: the practice fakes load without it, in the observer too.
from ..errors import ExperimentFailed, NotInAnExperiment


def stop_here() -> None:
    from ..engine import child as _child  # noqa: PLC0415 - deferred, see the note at the imports

    if not _child.supervised():
        raise NotInAnExperiment("stop_here() only stops a process started by run_until_killed(...); "
                                "calling it here would end your notebook's kernel")
    _child.request_stop()


def run_until_killed(work: Callable[[], Any], *, timeout: float = 10.0) -> bool:
    """Run ``work()`` in a new process. True when a ``stop_here()`` ended it, False when it returned."""
    from ..engine.faults import Stop  # noqa: PLC0415 - deferred, see the note at the imports
    from ..engine.result import Status  # noqa: PLC0415
    from ..engine.supervisor import run_in_child  # noqa: PLC0415

    result = run_in_child(work, plan=Stop(), timeout=timeout)
    if result.status is Status.RAISED:
        described = result.error.describe() if result.error else "no error was reported"
        raise ExperimentFailed(f"the process failed before anything stopped it: {described}")
    if result.status not in (Status.CRASHED, Status.RETURNED):
        raise ExperimentFailed(f"the process ended as {result.status.value}: {result.value}")
    return result.status is Status.CRASHED


def from_fresh_process(look: Callable[[], Any], *, timeout: float = 10.0) -> Any:
    """Run ``look()`` in a new process that shares nothing with the one before it; return its answer."""
    from ..engine.result import Status  # noqa: PLC0415 - deferred, see the note at the imports
    from ..engine.supervisor import run_in_child  # noqa: PLC0415

    result = run_in_child(look, timeout=timeout)
    if result.status is not Status.RETURNED:
        detail = result.error.describe() if result.error else result.status.value
        raise ExperimentFailed(f"the process that looked failed: {detail}")
    return result.value
