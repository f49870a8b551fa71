"""Checks for values that cross a boundary: clear errors that name the field.

A bool is not accepted where an int is expected, and None is not a string.
"""

from __future__ import annotations

from .errors import InvalidField

MAX_TEXT_BYTES = 64 * 1024
"""Largest text (UTF-8 bytes) the runtime stores or sends. 64 KiB fits; one byte more is refused."""

MAX_ID_CHARS = 200


def _type_name(value: object) -> str:
    return "None" if value is None else type(value).__name__


def require_str(field: str, value: object, *, max_bytes: int = MAX_TEXT_BYTES, allow_empty: bool = False) -> str:
    if not isinstance(value, str):
        raise InvalidField(field, f"expected a str, got {_type_name(value)}")
    if not allow_empty and value == "":
        raise InvalidField(field, "must not be empty")
    size = len(value.encode("utf-8", "surrogatepass"))
    if size > max_bytes:
        raise InvalidField(field, f"is {size} bytes; the limit is {max_bytes} bytes")
    return value


def require_id(field: str, value: object) -> str:
    """An identity: a non-empty str of at most MAX_ID_CHARS characters, without control characters."""
    text = require_str(field, value, max_bytes=4 * MAX_ID_CHARS)
    if len(text) > MAX_ID_CHARS:
        raise InvalidField(field, f"is {len(text)} characters; the limit is {MAX_ID_CHARS}")
    if any(ord(ch) < 32 for ch in text):
        raise InvalidField(field, "must not contain control characters")
    return text


def require_int(field: str, value: object, *, minimum: int | None = None) -> int:
    # bool is a subclass of int in Python; True is not a count.
    if isinstance(value, bool) or not isinstance(value, int):
        raise InvalidField(field, f"expected an int, got {_type_name(value)}")
    if minimum is not None and value < minimum:
        raise InvalidField(field, f"must be at least {minimum}, got {value}")
    return value


def require_number(field: str, value: object) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise InvalidField(field, f"expected a number, got {_type_name(value)}")
    return float(value)
