"""The release stub: what nbgrader leaves in a learner cell before anything is written.

Only the unchanged stub is "not written yet". A learner may raise
``NotImplementedError`` on purpose (running work cannot be taken over before
Chapter 12); that is written code, and its error is the learner's own.
"""

from __future__ import annotations

from typing import Any

STUB_MESSAGE = "write this function, then run the cell"
"""The message of the stub in ``nbgrader_config.py`` (``ClearSolutions.code_stub``)."""


def is_release_stub(fn: Any) -> bool:
    """True when ``fn``'s body is the release stub alone: it names nothing but ``NotImplementedError``."""
    code = getattr(fn, "__code__", None)
    return code is not None and set(code.co_names) == {"NotImplementedError"} and STUB_MESSAGE in code.co_consts


def is_stub_error(type_name: str, message: str) -> bool:
    """True when an exception is the one the release stub raises."""
    return type_name == "NotImplementedError" and message == STUB_MESSAGE
