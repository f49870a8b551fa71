"""Every row, registered: the kit (``checker/kit.py``) plus the topic modules, and the
checkpoint's rows (``checkpoint_rows.py``) in a registry of their own.

Import ``ROWS`` from here when you need the rows themselves; a topic module imports
only the kit, so nothing here is imported back.
"""

from __future__ import annotations

from ..errors import CheckerFault
from . import checkpoint_rows, topics  # noqa: F401  (importing them registers their rows)
from .kit import CHECKPOINT_ROWS, ROWS, TOPICS, Fail, Row, ok, seen

_undeclared = sorted({r.topic for r in ROWS.values()} - set(TOPICS))
if _undeclared:
    raise CheckerFault(f"rows name topics no module declares with topic(): {_undeclared}")

__all__ = ["CHECKPOINT_ROWS", "Fail", "ROWS", "Row", "TOPICS", "ok", "seen"]
