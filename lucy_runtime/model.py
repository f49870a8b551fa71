"""Chapter 3's model boundary: the ``Model`` protocol, one ``complete(prompt)`` call.

Its deterministic fake, the scripted model with its invocation log, is in ``fakes/model.py``.
"""

from __future__ import annotations

from typing import Protocol


class Model(Protocol):
    def complete(self, prompt: str) -> str: ...
