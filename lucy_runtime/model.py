"""Chapter 3's model boundary and a deterministic scripted model.

The scripted model writes one line to an *invocation log* per call. The log is an
append-only file owned by whoever created it (the checker, in grading); a fresh
process can count the lines, and nothing on the model or on the learner's objects
can reset it.
"""

from __future__ import annotations

import hashlib
import os
import re
from typing import Protocol

from .errors import InvalidField
from .fields import require_str


class Model(Protocol):
    def complete(self, prompt: str) -> str: ...


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
    """Answers a stock-brief prompt from its FACTS line, the same way every time."""

    def __init__(self, invocations: InvocationLog):
        if not isinstance(invocations, InvocationLog):
            raise InvalidField("invocations", f"expected an InvocationLog, got {type(invocations).__name__}")
        self.__log = invocations  # name-mangled: a learner's object holds no handle to reset it

    @property
    def invocations(self) -> int:
        return self.__log.count()

    def complete(self, prompt: str) -> str:
        require_str("prompt", prompt)
        self.__log.record(prompt)
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
