"""How the work and report tables stop growing: finished requests are deleted once they are old enough.

A request may be deleted, with its reports, when nothing can happen to it any more:

* the work is final (``done`` or ``failed``): no worker will claim it, nobody owes it
  a model call;
* every report of it is final (``confirmed`` or ``failed``): none is waiting to be
  sent, none may have arrived without a receipt (``sending``, ``unknown``), none waits
  for a person (``needs_person``);
* it was admitted longer ago than the retention window (7 days by default).

The window has a floor. Deleting a request forgets its ``source_id``, and an update
delivered again after that is admitted as new: the customer is answered twice. The
Bot API says of updates: "Incoming updates are stored on the server until the bot
receives them either way, but they will not be kept longer than 24 hours"
(https://core.telegram.org/bots/api#getting-updates). An update reaches Lucy after it
was made, so a request admitted more than 24 hours ago can no longer come back, and a
window under 24 hours is refused with ``RetentionTooShort``.

``prune`` deletes the oldest eligible requests first, at most ``batch`` of them per
transaction, so the other processes wait for the write lock a short time only, and a
run stopped half-way has deleted the oldest. The tables are found by their columns, as
the observer finds them, so a learner's renamed tables are pruned too; the work table
needs the ``admitted_at`` column (seconds since the epoch, the clock's time). A row of
some other table that still refers to a request stops its batch: nothing of that batch
is deleted, and ``StoreMisuse`` says which table holds the reference.
"""

from __future__ import annotations

import sqlite3
from contextlib import closing
from dataclasses import dataclass
from typing import Callable

from .errors import InvalidField, RetentionTooShort, StoreMisuse, TablesNotFound
from .fields import require_int, require_number
from .observer import REPORT_COLUMNS, WORK_COLUMNS, find_table
from .store import Store, read_only

TELEGRAM_KEEPS_UPDATES = 24 * 3600.0
"""Seconds Telegram keeps an update it has not handed over (and so may deliver it again): the window's floor."""

DEFAULT_WINDOW = 7 * 24 * 3600.0
"""Seconds a finished request is kept: a week, for the operator's questions about it."""

FINAL_WORK = ("done", "failed")
FINAL_DELIVERY = ("confirmed", "failed")


@dataclass(frozen=True)
class Pruned:
    """What one ``prune`` deleted: requests admitted before ``cutoff``, in ``batches`` transactions."""

    cutoff: float
    work: int
    reports: int
    batches: int


def prune(store: Store, clock: Callable[[], float], *, window: float = DEFAULT_WINDOW, batch: int = 500) -> Pruned:
    """Delete finished requests, and their reports, admitted more than ``window`` seconds before ``clock()``."""
    if not isinstance(store, Store):
        raise InvalidField("store", f"expected a Store, got {type(store).__name__}")
    if not callable(clock):
        raise InvalidField("clock", "expected a function that returns the time in seconds")
    if require_number("window", window) < TELEGRAM_KEEPS_UPDATES:
        raise RetentionTooShort(
            f"window: {window:g} s is shorter than the {TELEGRAM_KEEPS_UPDATES:g} s Telegram keeps an update; "
            "a request deleted sooner forgets its source_id, and an update delivered again is admitted twice")
    if not 1 <= require_int("batch", batch, minimum=1) <= 900:  # SQLite's older builds take 999 parameters
        raise InvalidField("batch", f"must be at most 900 requests, got {batch}")
    work_table, report_table = _tables(store)
    cutoff = float(clock()) - window
    work = reports = batches = 0
    while True:
        deleted_work, deleted_reports = _one_batch(store, work_table, report_table, cutoff, batch)
        batches += 1
        work, reports = work + deleted_work, reports + deleted_reports
        if deleted_work < batch:
            return Pruned(cutoff, work, reports, batches)


def _one_batch(store: Store, work: str, report: str, cutoff: float, batch: int) -> tuple[int, int]:
    try:
        with store.transaction() as tx:
            ids = [row[0] for row in tx.execute(
                f'SELECT w.work_id FROM "{work}" AS w WHERE w.state IN {FINAL_WORK} AND w.admitted_at < ? '
                f'AND NOT EXISTS (SELECT 1 FROM "{report}" AS r '
                f"WHERE r.work_id = w.work_id AND r.delivery NOT IN {FINAL_DELIVERY}) "
                "ORDER BY w.admitted_at, w.work_id LIMIT ?", (cutoff, batch))]
            if not ids:
                return 0, 0
            marks = ", ".join("?" for _ in ids)
            reports = tx.execute(f'DELETE FROM "{report}" WHERE work_id IN ({marks})', ids).rowcount
            deleted = tx.execute(f'DELETE FROM "{work}" WHERE work_id IN ({marks}) AND state IN {FINAL_WORK}',
                                 ids).rowcount
            if deleted != len(ids):  # nothing else writes inside BEGIN IMMEDIATE; a trigger might
                raise StoreMisuse(f"retention deleted {deleted} of the {len(ids)} finished requests it chose; "
                                  "nothing of this batch was deleted")
            return deleted, reports
    except sqlite3.IntegrityError as exc:
        if "FOREIGN KEY" not in str(exc).upper():
            raise
        held_by = ", ".join(_referrers(store, work, report)) or "another table"
        raise StoreMisuse(f"retention cannot delete finished requests that rows of {held_by} still refer to; "
                          "nothing of this batch was deleted. Delete those rows first, or keep the requests") from exc


def _tables(store: Store) -> tuple[str, str]:
    problems: list[str] = []
    with closing(read_only(store.path)) as conn:
        work, work_columns = find_table(conn, WORK_COLUMNS, "work", problems, [])
        report, _ = find_table(conn, REPORT_COLUMNS, "report", problems, [])
    if problems:
        raise TablesNotFound("retention needs the work and report tables: " + "; ".join(problems))
    if "admitted_at" not in work_columns:
        raise TablesNotFound(f"the work table {work!r} has no admitted_at column: retention needs the time each "
                             "request was admitted")
    return work, report


def _referrers(store: Store, work: str, report: str) -> list[str]:
    """The tables whose foreign keys point at the work or the report table (the report table's own key aside)."""
    found = set()
    for (name,) in store.query("SELECT name FROM sqlite_master WHERE type = 'table'"):
        for key in store.query(f'PRAGMA foreign_key_list("{name}")'):
            if key["table"] in (work, report) and (name, key["table"]) != (report, work):
                found.add(name)
    return sorted(found)
