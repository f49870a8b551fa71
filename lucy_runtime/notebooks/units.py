"""The chapter's notebooks, and which of them a row's unit letter grades.

Kept apart from ``notebook.py`` so that the checker, a learner's kernel and the sealed
re-check can name a unit without importing nbformat (whose jsonschema import takes
seconds).
"""

from __future__ import annotations

UNITS = ("ch07_unit_a", "ch07_unit_b", "ch07_practice")
UNIT_NOTEBOOKS = {"A": "ch07_unit_a", "B": "ch07_unit_b", "P": "ch07_practice"}
"""A row's unit letter -> the notebook whose cells it grades."""
