"""Argument types the ``lucy`` subcommands share."""

from __future__ import annotations

import argparse


def positive(text: str) -> int:
    if not text.isdigit() or int(text) < 1:
        raise argparse.ArgumentTypeError(f"expected a whole number of at least 1, got {text!r}")
    return int(text)
