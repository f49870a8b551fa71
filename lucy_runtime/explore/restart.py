"""The restart experiment: what one process committed, seen by the next."""

from __future__ import annotations

from typing import Any, Callable

from ..engine import child as _child
from ..engine.result import Status
from ..engine.supervisor import run_in_child
from ..engine.faults import Stop
from ..errors import ExperimentFailed


def after_restart(work: Callable[[], Any], look: Callable[[], Any], *, timeout: float = 10.0) -> Any:
    """Run ``work`` in a process that then dies, and ``look`` in a new process; return what ``look`` saw.

    Both processes start as copies of this one. What ``work`` changed in memory dies
    with it; only what it committed to a file can be seen by ``look``.
    """

    def doomed() -> None:
        work()
        _child.request_stop()

    first = run_in_child(doomed, timeout=timeout, plan=Stop())
    if first.status is Status.RAISED and first.error is not None:
        raise ExperimentFailed(f"the first process failed before it died: {first.error.describe()}")
    second = run_in_child(look, timeout=timeout)
    if second.status is not Status.RETURNED:
        detail = second.error.describe() if second.error else second.status.value
        raise ExperimentFailed(f"the process that looked after the restart failed: {detail}")
    return second.value

