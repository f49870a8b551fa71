"""Kill hooks for the practice notebook: stop a process at a moment you choose.

``stop_here()`` ends the process it runs in, with nothing flushed or closed, the way
a power cut or ``kill -9`` would. It works only inside a process started by
``run_until_killed``, which supervises it (the checker's children are supervised in
the same way), so a hook can never take the notebook's own kernel down.
"""

from __future__ import annotations

from typing import Any, Callable

# The checker is imported where it is used: the practice fakes load without it, in the observer too.
from ..errors import LucyError


class NotInAnExperiment(LucyError):
    """stop_here() was called outside a supervised process."""


def stop_here() -> None:
    from ..checker import child as _child

    if not _child.supervised():
        raise NotInAnExperiment("stop_here() only stops a process started by run_until_killed(...); "
                                "calling it here would end your notebook's kernel")
    _child.request_stop()


def run_until_killed(work: Callable[[], Any], *, timeout: float = 10.0) -> bool:
    """Run ``work()`` in a new process. True when a ``stop_here()`` ended it, False when it returned."""
    from ..checker import child as _child
    from ..checker.faults import Stop

    result = _child.run_in_child(work, plan=Stop(), timeout=timeout)
    if result.status == "raised":
        raise RuntimeError(f"the process failed before anything stopped it: {result.error.describe()}")
    if result.status not in ("crashed", "returned"):
        raise RuntimeError(f"the process ended as {result.status.value}: {result.value}")
    return result.status == "crashed"


def from_fresh_process(look: Callable[[], Any], *, timeout: float = 10.0) -> Any:
    """Run ``look()`` in a new process that shares nothing with the one before it; return its answer."""
    from ..checker import child as _child

    result = _child.run_in_child(look, timeout=timeout)
    if result.status != "returned":
        detail = result.error.describe() if result.error else result.status.value
        raise RuntimeError(f"the process that looked failed: {detail}")
    return result.value
