"""A deterministic scripted model, standing in for Chapter 3's ``model.Model`` protocol, and its invocation log.

The scripted model writes one line to an *invocation log* per call. The log is an
append-only file owned by whoever created it (the checker, in grading); a fresh
process can count the lines, and nothing on the model or on the learner's objects
can reset it.
"""

from __future__ import annotations

import hashlib
import os
import re

from ..errors import InvalidField, ModelUnavailable
from ..fields import require_int, require_str


class InvocationLog:
    """An append-only record of model calls: one line per call."""

    def __init__(self, path: str | os.PathLike[str]):
        self._path = os.fspath(path)

    @property
    def path(self) -> str:
        return self._path

    def record(self, prompt: str) -> None:
        digest = hashlib.sha256(prompt.encode("utf-8", "surrogatepass")).hexdigest()[:16]
        # O_APPEND: concurrent writers (forked workers) never overwrite each other's lines.
        fd = os.open(self._path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        try:
            os.write(fd, f"{os.getpid()} {digest}\n".encode())
        finally:
            os.close(fd)

    def count(self) -> int:
        try:
            with open(self._path, "rb") as fh:
                return sum(1 for _ in fh)
        except FileNotFoundError:
            return 0


_FACT = re.compile(r"(\w+)=(\S+)")


class ScriptedModel:
    """Answers a stock-brief prompt from its FACTS line, the same way every time.

    ``failures`` makes it a model with an outage: its first ``failures`` calls raise
    ``ModelUnavailable`` (as a provider's 429 or a timeout would), and ``None`` makes every
    call fail. A failed call is still a call: it is written to the invocation log.
    """

    def __init__(self, invocations: InvocationLog, failures: int | None = 0):
        if not isinstance(invocations, InvocationLog):
            raise InvalidField("invocations", f"expected an InvocationLog, got {type(invocations).__name__}")
        if failures is not None:
            require_int("failures", failures, minimum=0)
        self.__log = invocations  # name-mangled: a learner's object holds no handle to reset it
        self.__failures = failures
        self.__calls = 0

    @property
    def invocations(self) -> int:
        return self.__log.count()

    def complete(self, prompt: str) -> str:
        require_str("prompt", prompt)
        self.__log.record(prompt)
        self.__calls += 1
        if self.__failures is None or self.__calls <= self.__failures:
            raise ModelUnavailable("the model provider answered 429: too many requests", retry_after=None)
        facts_line = next((line for line in prompt.splitlines() if line.startswith("FACTS ")), None)
        if facts_line is None:
            return "I can only write stock briefs, and this request names no stock I know."
        facts = dict(_FACT.findall(facts_line))
        change = float(facts["change"])
        direction = "up" if change > 0 else "down" if change < 0 else "flat"
        return (
            f"{facts['ticker']} closed at {facts['last']} on {facts['as_of']}, {direction} "
            f"{abs(change):.2f}% over {facts['days']} trading days. "
            f"It ranged from {facts['low']} to {facts['high']} in that window."
        )
