"""The lucy command's deterministic output, run in-process and compared with files in tests/golden/.

When a change to that output is meant, write the files again and read the diff:
``LUCY_UPDATE_GOLDEN=1 python -m pytest tests/test_cli_golden.py``.
"""

from __future__ import annotations

import os

import pytest

from lucy_runtime.cli.main import main

from .conftest import REPO

GOLDEN = REPO / "tests" / "golden"

COMMANDS = {
    "help": ["--help"],
    "rows": ["rows"],
    "cases": ["cases"],
    "check-help": ["check", "--help"],
    "mutation-score-help": ["mutation-score", "--help"],
    "checkpoint-help": ["checkpoint", "--help"],
}


def run(argv: list[str], capsys) -> tuple[int, str]:
    try:
        code = main(argv)
    except SystemExit as done:  # argparse ends --help this way
        code = done.code or 0
    return code, capsys.readouterr().out


@pytest.mark.parametrize("name", COMMANDS)
def test_the_output_matches_its_golden_file(name, capsys, monkeypatch):
    monkeypatch.setenv("COLUMNS", "100")  # argparse wraps help to the terminal's width
    monkeypatch.chdir(REPO)
    code, out = run(COMMANDS[name], capsys)
    golden = GOLDEN / f"{name}.txt"
    if os.environ.get("LUCY_UPDATE_GOLDEN") == "1":
        golden.write_text(out, encoding="utf-8")
    assert code == 0
    assert out == golden.read_text(encoding="utf-8"), f"lucy {' '.join(COMMANDS[name])} differs from {golden}"


def test_a_changed_output_does_not_match(capsys, monkeypatch):
    monkeypatch.chdir(REPO)
    _, out = run(["rows"], capsys)
    assert out.replace("finish-atomic", "finish-atomik") != (GOLDEN / "rows.txt").read_text(encoding="utf-8")
