"""Every acceptance row, registered: the kit (``checker/kit.py``) plus the topic modules.

Import ``ROWS`` from here when you need the rows themselves; a topic module imports
only the kit, so nothing here is imported back.
"""

from __future__ import annotations

from ..errors import CheckerFault
from . import topics  # noqa: F401  (importing the topics registers their rows)
from .kit import ROWS, TOPICS, Fail, Row, ok, seen

_undeclared = sorted({r.topic for r in ROWS.values()} - set(TOPICS))
if _undeclared:
    raise CheckerFault(f"rows name topics no module declares with topic(): {_undeclared}")

__all__ = ["Fail", "ROWS", "Row", "TOPICS", "ok", "seen"]
