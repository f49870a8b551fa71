"""The checker's own hand: moves that plant a scenario's state in the learner's tables.

A row sometimes needs a state that none of the learner functions it grades reaches: a report an
operator's ``reconcile`` moved, work a bug held, a claim made stale by a release. The checker moves
the row itself, from a connection of its own, and only along an arrow Unit B's state diagrams draw
(``REPORT_MOVES``, ``WORK_MOVES``), so a schema that enforces the diagrams (a CHECK, a trigger) takes
the move. When the schema refuses one anyway, ``SetupRefused`` says so: the row could not set up its
scenario, which is not a verdict on the learner's SQL.
"""

from __future__ import annotations

import sqlite3
from contextlib import closing

from ..errors import CheckerFault, SetupRefused
from ..store import Store
from ..work import REPORT_COLUMNS, WORK_COLUMNS
from .harness import Ctx
from .observe import find_table

REPORT_MOVES = {
    ("unknown", "needs_person"): "reconcile finds no receipt, and the key has expired",
    ("unknown", "pending"): "reconcile finds no receipt",
    ("sending", "pending"): "reconcile, after a crash",
}
"""The report moves the checker makes itself, each an arrow of Unit B's report diagram, by its label there."""

WORK_MOVES = {
    ("running", "needs_person"): "a bug, recorded on the row",
    ("running", "pending"): "release, next generation",
}
"""The work moves the checker makes itself, each an arrow of Unit B's work diagrams, by its label there."""

HELD_ERROR = "KeyError: 'ticker' (the checker held this work as a bug would)"


def learner_table(c: Ctx, columns: tuple[str, ...], what: str) -> str:
    """The name of the learner's ``what`` table, found by its columns as the observer finds it."""
    with closing(sqlite3.connect(c.store.path)) as look:  # reading only: the writes go through the store
        table, _ = find_table(look, columns, what, [], [])
    return table


def move_report(c: Ctx, report_id: str, to: str, leaving: tuple[str, ...]) -> bool:
    """Move a report as reconcile would, from one of ``leaving`` to ``to``. False when it was in none of them."""
    return _move(c, "report", report_id, to, leaving, {})


def hold_work(c: Ctx, work_id) -> bool:
    """Hold running work for a person as a bug would: ``needs_person``, no worker, and the error with its time
    when the table keeps them. False when the work was not running."""
    return _move(c, "work", work_id, "needs_person", ("running",),
                 {"worker_id": None, "error": HELD_ERROR, "error_at": c.policy.now()})


def release_work(c: Ctx, work_id) -> bool:
    """Release running work as an operator would: ``pending``, no worker, the next generation, so every
    Assignment handed out before is stale. False when the work was not running."""
    return _move(c, "work", work_id, "pending", ("running",), {"worker_id": None}, next_generation=True)


def _move(c: Ctx, what: str, key, to: str, leaving: tuple[str, ...], values: dict, *,
          next_generation: bool = False) -> bool:
    columns, state, id_column, drawn = ((REPORT_COLUMNS, "delivery", "report_id", REPORT_MOVES) if what == "report"
                                        else (WORK_COLUMNS, "state", "work_id", WORK_MOVES))
    undrawn = [start for start in leaving if (start, to) not in drawn]
    if undrawn:
        raise CheckerFault(f"the checker's setup would move a {what} from {undrawn} to {to!r}: no diagram draws it")
    table = learner_table(c, columns, what)
    start: str | None = None
    try:
        with Store(c.store.path) as store, store.transaction() as tx:
            found = tx.execute(f'SELECT "{state}" FROM "{table}" WHERE "{id_column}" = ?', (key,)).fetchone()
            if found is None or found[0] not in leaving:
                return False
            start = found[0]
            kept = {r[1] for r in tx.execute(f'PRAGMA table_info("{table}")')}
            sets = {state: to, **{name: value for name, value in values.items() if name in kept}}
            assignments = ", ".join(f'"{name}" = ?' for name in sets)
            if next_generation:
                assignments += ', "generation" = "generation" + 1'
            tx.execute(f'UPDATE "{table}" SET {assignments} WHERE "{id_column}" = ? AND "{state}" = ?',
                       (*sets.values(), key, start))
    except sqlite3.Error as refusal:
        move, arrow = (f"from {start!r} to {to!r}", drawn[(start, to)]) if start else (f"to {to!r}", "a drawn arrow")
        raise SetupRefused(f"{what} {key}", move, arrow, f"{type(refusal).__name__}: {refusal}") from refusal
    return True
