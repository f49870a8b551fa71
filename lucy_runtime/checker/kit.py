"""The row kit: what every acceptance row is made of.

A row is a small experiment judged from what is on disk. A row function gets a
``Harness`` and returns a one-line observation when the row holds, or raises ``Fail``
with what was seen instead. Row ids are stable: the notebooks' hidden cells, the
educator cases and the checkpoint name rows by id.

The rows themselves live in ``checker/topics/``, one module per topic; importing
``checker.rows`` registers them all.
"""

from __future__ import annotations

import re

import sqlite3
from contextlib import closing
from dataclasses import dataclass
from typing import Any, Callable

from ..errors import CheckerFault, Fail, SetupRefused
from ..engine.limits import LIMIT_HINT, explain_error, explain_signal
from ..work import REPORT_COLUMNS, WORK_COLUMNS
from .attempts import SWALLOWED_HINT, Attempt, Ending
from ..engine.result import ChildResult
from ..engine.faults import POINT_KINDS, CopyAt, Count, KillAt, PauseForRival, Rival
from .harness import ContractBroken, Ctx, Harness, ReturnedNothing
from .series import Kept, Series
from .observe import Snapshot, find_table
from .stub import is_stub_error


@dataclass(frozen=True)
class Row:
    id: str
    unit: str
    topic: str
    covers: str
    hint: str
    run: Callable[[Harness], str]
    runs_unit_a: tuple[str, ...] = ()  # a Unit B row whose point is the integration with these Unit A functions

    def failure_hint(self, hint: str) -> str:
        if not self.runs_unit_a or hint == SETUP_HINT:  # a refused setup move is no mistake in Unit A either
            return hint
        return (f"{hint} (This row also runs your Unit A {', '.join(self.runs_unit_a)}: a mistake there "
                "shows here too.)")


ROWS: dict[str, Row] = {}

CHECKPOINT_ROWS: dict[str, Row] = {}
"""The checkpoint's rows (``checkpoint_rows.py``): the same ``Row`` and runner as the acceptance
rows, kept apart so that ``check("all")`` and the notebooks never run them."""

TOPICS: dict[str, str] = {}
"""Topic name -> the unit block it belongs to; each topic module declares its own."""


def topic(name: str, block: str) -> None:
    """Declare a topic: ``check("<name>")`` runs its rows; ``block`` says where in the unit it is taught."""
    TOPICS.setdefault(name, block)


def row(id: str, *, unit: str, topic: str, covers: str, hint: str, runs_unit_a: tuple[str, ...] = (),
        registry: dict[str, Row] = ROWS):
    """Register a row in ``registry`` (the acceptance rows unless told otherwise; the
    checkpoint's rows go to ``CHECKPOINT_ROWS``). ``runs_unit_a`` names the Unit A functions a Unit B row runs
    on purpose: every other Unit B row starts from rows written straight into the learner's
    tables, so a Unit A slip costs its points once."""
    def register(fn: Callable[[Harness], str]) -> Callable[[Harness], str]:
        if id in registry:
            raise CheckerFault(f"row id {id!r} registered twice")
        registry[id] = Row(id, unit, topic, covers, hint, fn, runs_unit_a)
        return fn

    return register


# --- helpers -----------------------------------------------------------------


SETUP_HINT = ("This is not a mistake in your SQL: the row plants its scenario by moving one of your rows itself, "
              "only along an arrow the chapter's state diagrams draw, and your schema (a CHECK or a trigger) refused "
              "that arrow. Let your schema allow every move the diagrams draw, then check again.")
"""The hint for ``SetupRefused``: it names the checker's setup, never the learner's code, as the cause."""

CONTRACT_BREAKS = {
    ContractBroken.__name__: "Return the value the docstring names, on every path.",
    ReturnedNothing.__name__: "Return the value the docstring names, on every path. A function that ends without "
                             "`return`, or an `except` that returns instead of re-raising, gives the caller None and "
                             "hides what happened.",
    SetupRefused.__name__: SETUP_HINT,
}
"""Hints for the harness's ``ContractBroken`` and ``ReturnedNothing``, and for the checker's own setup move
refused by the learner's schema (``SetupRefused``), by type name: none of them is a mistake the learner's code
raised."""


SQL_MISTAKE = re.compile(r"syntax error|no such (table|column)|incomplete input|unrecognized token|has no column")
"""SQLite's words for a statement it could not run: the mistake is in the SQL, not in what the row checks."""


def sql_hint(error) -> str:
    where = f" ({error.where})" if error.where else ""
    return (f"SQLite could not run one of your statements{where}: {error.message}. That is a mistake in the SQL "
            "itself (a typo, or a table or column your schema does not have), not in what this row checks: "
            "fix the statement, run the cell, then check again.")


def ok(result: ChildResult, what: str, *, expect: str = "returned", harness: Harness | None = None) -> Any:
    """The child's answer, or a Fail that says in plain words how it ended instead."""
    if expect == "crashed" and harness is not None:
        harness.crash_points += 1
    if result.bypass:
        raise Fail(f"{what}: {result.bypass}",
                   "Every write must go through `with queue.store.transaction() as tx:`. A connection of your own "
                   "(sqlite3.connect) commits behind the checker's back, so its crash points are never tried.")
    if result.status == expect:
        return result.value
    if result.status == "raised":
        error = result.error
        if error is None:  # the child sends every raised result with its error
            raise CheckerFault(f"{what}: raised, but the child sent no error")
        if is_stub_error(error.type_name, error.message):
            raise Fail(f"{what}: your code is not written yet ({error.describe()})",
                       "Fill in the cell where it says `raise NotImplementedError`, run it, then check again.")
        if error.type_name in CONTRACT_BREAKS:  # the harness's own error, never one the learner's code raised
            raise Fail(f"{what}: {error.message}", CONTRACT_BREAKS[error.type_name])
        if error.type_name == "MissingFunction":
            raise Fail(f"{what}: {error.message}", "Run every cell above this one (Run ▸ Run All Above), then check again.")
        limit = explain_error(error.type_name, error.message)
        if limit:
            raise Fail(f"{what}: your code raised {error.describe()}: it reached {limit}",
                       LIMIT_HINT)
        if error.type_name == "OperationalError" and SQL_MISTAKE.search(error.message):
            raise Fail(f"{what}: your code raised {error.describe()}", sql_hint(error))
        raise Fail(f"{what}: your code raised {error.describe()}")
    if result.status == "timeout":
        raise Fail(f"{what}: it did not finish in time and was stopped",
                   "Look for a loop that never ends, or code that waits for something that never comes.")
    if result.status == "crashed":
        raise Fail(f"{what}: the process stopped at a crash point, but none was expected here")
    if result.status == "returned" and expect == "crashed":
        never_reached(what)
    limit = explain_signal(result.value)
    if limit:
        raise Fail(f"{what}: {limit}",
                   LIMIT_HINT)
    raise Fail(f"{what}: the process ended on its own before the checker stopped it ({result.value})",
               "Only the checker ends the process in an experiment. Code that calls os._exit, sys.exit or kills "
               "its own process cannot be checked.")


def never_reached(what: str) -> None:
    """Fail: the point a row meant to stop the process at never came."""
    raise Fail(f"{what}: the crash point was never reached, so the experiment could not run",
               "The checker stops the process at a SQL statement sent through queue.store. "
               "Write through `with queue.store.transaction() as tx:` rather than a connection of your own.")


def expect(condition: object, observation: str, hint: str | None = None) -> None:
    if not condition:
        raise Fail(observation, hint)


def claimed(value: dict | None, observation: str, hint: str | None = None) -> dict:
    """``value``, or a Fail when it is None: ``expect(value is not None, ...)`` that mypy can follow."""
    if value is None:
        raise Fail(observation, hint)
    return value


def seen(snapshot: Snapshot) -> Snapshot:
    """Stop early when the observer could not find the learner's tables at all."""
    if snapshot.problems:
        found = "the observer, reading the database file from a fresh process, found " + "; ".join(snapshot.problems)
        if snapshot.ambiguous:
            raise Fail(found, "The observer finds your tables by the columns it reads. Name the table your code "
                              f"writes {' and '.join(repr(t) for t in snapshot.ambiguous)} as in the schema cell, or "
                              "give the other tables other column names; views over your tables are fine.")
        raise Fail(found, "Keep the columns the observer reads (see the schema cell) and write through queue.store: "
                          "a connection or file of your own is invisible to everyone else.")
    return snapshot


def same_id(a: Any, b: Any) -> bool:
    return a == b or str(a) == str(b)


def whole_number(value: Any) -> int | None:
    """A stored count or generation as a whole number, whatever column type holds it ('2', 2.0, 2), else None."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, str) and value.strip().isdecimal():
        return int(value)
    return None


def admit_and_claim(c: Ctx, source: str, session: str, text: str, worker: str) -> dict:
    q = c.queue()
    admission = c.admit(q, source, session, text)
    if admission["outcome"] != "accepted":
        raise CheckerFault(f"a fresh request was not accepted: {admission}")
    assignment = c.claim(q, worker)
    if assignment is None:
        raise CheckerFault("claim returned None although one request was pending")
    return assignment


def preparation(h: Harness, name: str, setup: Callable[[Ctx], Any]) -> tuple:
    """The points that preparing a scenario passes (schema included), from a run of the preparation alone.

    Every run reports every point, so the plans count from the start of the run and
    skip these.
    """
    counted = h.scenario(f"{name}-preparation").run(setup, plan=Count())
    ok(counted, f"preparing {name}")
    return counted.points


@dataclass(frozen=True)
class CrashState:
    """What stopping a call before its ``n``-th crash point left, in a folder the observer can read.

    ``crashed`` is the kill run (None for the copy the counting run left at that point);
    ``restarted`` the run of ``after`` in that folder, when there is one.
    """

    n: int
    crashed: ChildResult | None
    restarted: ChildResult | None
    kept: Kept


def crash_states(h: Harness, name: str, setup: Callable[[Ctx], Any], call: Callable[[Ctx, Any], Any], *,
                 after: Callable[[Ctx], Any] | None = None,
                 kinds: tuple[str, ...] = POINT_KINDS) -> tuple[list[str], list[CrashState]]:
    """Run ``call`` once to count its points (of ``kinds``), then once stopped before each; what each stop left.

    Every run is a child of one ``Series``: the same memory, the same folder at the same path,
    empty at the start. The kill runs come in an order the parent draws afterwards (``Series.order``),
    so a child that counts its runs learns nothing from its place; the counting run, always first,
    is judged at every point as well, from the copies ``CopyAt`` took while it waited there, so a
    child that knows it runs first gains nothing from that either.
    Returns the points, in order, as "kind: statement", and the states by point, each kill run's
    before the counting run's copy at the same point.
    """
    def script(c: Ctx):  # the same code in every run: only the parent's plan differs
        call(c, setup(c))

    before = preparation(h, name, setup)
    skip = sum(1 for p in before if p.kind in kinds)
    with Series(h, name, script, after) as series:
        counting = CopyAt(Count(), skip, series.copy, kinds)
        counted = series.run(counting)
        series.discard(series.keep())
        ok(counted, f"{name} without a crash")
        # Kinds, not statements: a send names the learner's report id, which may be new each run (a UUID).
        expect([p.kind for p in counted.points[:len(before)]] == [p.kind for p in before],
               f"preparing {name} did not pass the same points twice in a row, so its crash points cannot be found")
        points = [p.describe() for p in counted.points[len(before):] if p.kind in kinds]
        kills: dict[int, CrashState] = {}
        for n in series.order(len(points)):
            stopping = CopyAt(KillAt(skip + n, kinds), skip, series.copy, kinds)
            crashed = series.run(stopping)
            for copy in stopping.copies:
                series.discard(copy)
            restarted = series.after() if after is not None else None
            kills[n] = CrashState(n, crashed, restarted, series.keep())
        copies = []
        for n, copy in enumerate(counting.copies[:len(points)], start=1):
            series.restore(copy)
            restarted = series.after() if after is not None else None
            copies.append(CrashState(n, None, restarted, series.keep()))
    states = [state for n in range(1, len(points) + 1) for state in (kills[n], *copies[n - 1:n])]
    return points, states


def sweep(h: Harness, name: str, setup: Callable[[Ctx], Any], call: Callable[[Ctx, Any], Any],
          judge: Callable[[Snapshot, str], None], *, after: Callable[[Ctx], Any] | None = None) -> list[str]:
    """Crash ``call`` before each of its points in turn; reopen; judge what a fresh process sees.

    ``setup`` prepares the scenario (committed before the call); ``call(ctx, state)``
    is the call under test; ``after`` runs
    in a new process once the crashed one is gone (a restart, a redelivery).
    Returns the points, in order, as "kind: statement".
    """
    points, states = crash_states(h, name, setup, call, after=after)
    expect(any(p.startswith("write") for p in points),
           f"{name} sent no write through queue.store, so nothing it does can be committed")
    for state in states:
        point = points[state.n - 1]
        if state.crashed is not None:
            ok(state.crashed, f"{name} stopped before {point}", expect="crashed", harness=h)
        if state.restarted is not None:
            ok(state.restarted, f"a new process after {name} was stopped before {point}")
    for state, snap in zip(states, h.observe([s.kept for s in states])):
        judge(seen(snap), f"stopping {name} before {points[state.n - 1]!r}")
    return points


def race(h: Harness, name: str, setup: Callable[[Ctx], Any] | None, first: Callable[[Ctx], Any],
         rival: Callable[[Ctx], Any], names: tuple[str, str]) -> list[tuple[Any, Any, Snapshot]]:
    """Run ``first`` and ``rival`` at the same moment, in two rounds, each on a fresh scenario.

    ``first`` is held until ``rival`` has finished: in round one at its very first BEGIN
    (a check made outside any transaction is stale by then), in round two at its first
    BEGIN after other statements (a check-then-act split over two transactions).
    Both rounds are children of one ``Series``, in an order the parent draws: no racer can
    tell where it will be held. Returns, per round, both answers and what a fresh process saw afterwards.
    """
    rounds: dict[int, tuple[ChildResult, list[ChildResult], Kept]] = {}
    with Series(h, name, setup or (lambda c: None), others={"first": first, "rival": rival}) as series:
        for n in series.order(2):
            prepared = series.run(Count())
            results = series.race(["first", "rival"], [PauseForRival(1, at_first_begin=n == 1), Rival(0)]) \
                if prepared.ok else [prepared, prepared]
            rounds[n] = (prepared, results, series.keep())
    answers = []
    for n in (1, 2):
        prepared, results, kept = rounds[n]
        if setup is not None:
            ok(prepared, f"{name}: preparing the race")
        a, b = (ok(r, what) for r, what in zip(results, names))
        answers.append((a, b, seen(kept.observe())))
    return answers


def expect_raised(answer: Attempt, call: str, consequence: str = "") -> None:
    """Fail unless the learner's own error left the call; a swallowed one gets the hint that says so."""
    expect(answer.raised, answer.told(call) + (f": {consequence}" if consequence else ""),
           SWALLOWED_HINT if answer.ending is Ending.SWALLOWED else None)


# --- a finished request, written straight into the learner's tables ---------


def seeded(c: Ctx, source: str, session: str, text: str, marker: str) -> dict:
    """A finished request and its pending report, written straight into the learner's own tables.

    Rows that grade a Unit B function (delivery, reconcile) start from what a correct
    ``finish`` would have left, so a slip in Unit A costs its points once, in Unit A.
    When the learner's schema will not take a plain insert, or has tables of its own
    that go with work or reports, the learner's own Unit A path makes the report instead.
    """
    problems: list[str] = []
    with closing(sqlite3.connect(c.store.path)) as look:  # reading only: nothing bypasses the store
        work, work_columns = find_table(look, WORK_COLUMNS, "work", problems, [])
        report, report_columns = find_table(look, REPORT_COLUMNS, "report", problems, [])
        columns = look.execute(f'PRAGMA table_info("{work}")').fetchall() if work else []
        # A table of the learner's own that goes with work or reports (a schedule, claims) may need a row
        # for every report: only the learner's own finish knows what to write there.
        own = companions(look, (work, report)) if work and report else []
    info = {name: (declared or "").upper() for _, name, declared, *_ in columns}
    # An INTEGER PRIMARY KEY is the rowid: SQLite makes the id. Otherwise the row needs one.
    auto = any(name == "work_id" and pk == 1 and info[name] == "INTEGER" for _, name, _, _, _, pk in columns)
    if problems or own:
        return finished(c, source, session, text, marker)
    values: dict[str, str | int] = {"source_id": source, "session_id": session, "text": text, "state": "done"}
    if "generation" in work_columns:
        values["generation"] = 1
    if "worker_id" in work_columns:
        values["worker_id"] = "w1"
    if not auto:
        values["work_id"] = c.scenario.harness.rng.randint(1000, 999_999) if "INT" in info.get("work_id", "") \
            else f"w-{c.scenario.harness.token(8)}"
    try:
        with c.store.transaction() as tx:
            tx.execute(f'INSERT INTO "{work}" ({", ".join(values)}) VALUES ({", ".join("?" * len(values))})',
                       tuple(values.values()))
            work_id = tx.execute(f'SELECT work_id FROM "{work}" WHERE source_id = ?', (source,)).fetchone()[0]
            stored = {"report_id": f"r-{work_id}-1", "work_id": work_id, "generation": 1, "session_id": session,
                      "body": f"brief for {session} [{marker}]", "delivery": "pending"}
            tx.execute(f'INSERT INTO "{report}" ({", ".join(stored)}) VALUES ({", ".join("?" * len(stored))})',
                       tuple(stored.values()))
    except sqlite3.Error:
        return finished(c, source, session, text, marker)
    return {k: v for k, v in stored.items() if k != "delivery"}


def companions(conn: sqlite3.Connection, tables: tuple[str, str]) -> list[str]:
    """The learner's other tables that go with its work or reports: a work_id or report_id column, or a
    foreign key into either table."""
    found = []
    for (name,) in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table' "
                                "AND name NOT LIKE 'sqlite_%' AND name NOT LIKE 'lucy_%' ORDER BY name"):
        if name in tables:
            continue
        columns = {r[1] for r in conn.execute(f'PRAGMA table_info("{name}")')}
        targets = {r[2] for r in conn.execute(f'PRAGMA foreign_key_list("{name}")')}
        if columns & {"work_id", "report_id"} or targets & set(tables):
            found.append(name)
    return found


def finished(c: Ctx, source: str, session: str, text: str, marker: str) -> dict:
    q = c.queue()
    c.admit(q, source, session, text)
    report = c.work_once(q, c.loop(marker), "w1")
    if report is None:
        raise CheckerFault("work_once returned None although a request was pending")
    return report
