"""The checker's own setup moves rows only along arrows Unit B's state diagrams draw, and a schema that
refuses every other move (the state-machine-triggers alternative) allows exactly those arrows."""

from __future__ import annotations

import re
from pathlib import Path

from lucy_runtime.checker.setup_moves import REPORT_MOVES, WORK_MOVES
from lucy_runtime.educator import alternatives

UNIT_B = Path(__file__).resolve().parent.parent / "source" / "ch07_unit_b" / "ch07_unit_b.md"
DIAGRAM = re.compile(r"```mermaid\nstateDiagram-v2\n(.*?)```", re.S)
ARROW = re.compile(r"^\s*(\w+) --> (\w+)", re.M)
PAIR = re.compile(r"\('(\w+)', '(\w+)'\)")


def drawn() -> tuple[set, set]:
    """The arrows of Unit B's report diagram and of its work diagrams (a report diagram has 'sending')."""
    report, work = set(), set()
    for body in DIAGRAM.findall(UNIT_B.read_text()):
        (report if "sending" in body else work).update(ARROW.findall(body))
    return report, work


def test_every_setup_move_of_the_checker_is_an_arrow_unit_b_draws():
    report, work = drawn()
    assert set(REPORT_MOVES) <= report, set(REPORT_MOVES) - report
    assert set(WORK_MOVES) <= work, set(WORK_MOVES) - work


def test_the_state_machine_triggers_allow_exactly_the_arrows_unit_b_draws():
    work_trigger, report_trigger = alternatives._STATE_MACHINE_TRIGGERS.split("CREATE TRIGGER")[1:]
    report, work = drawn()
    assert set(PAIR.findall(work_trigger)) == work
    assert set(PAIR.findall(report_trigger)) == report
