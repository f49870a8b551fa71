"""The acceptance rows: each a small experiment judged from what is on disk.

A row function gets a ``Harness`` and returns a one-line observation when the row
holds, or raises ``Fail`` with what was seen instead. Row ids are stable: the
notebooks' hidden cells, the educator cases and the checkpoint name rows by id.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

from ..loop import LoopResult
from .attempts import SWALLOWED_HINT, Attempt, Ending, attempt
from .child import ChildResult
from .faults import Count, KillAt, FailAt, PauseForRival, Rival, Stop, crash_points
from .harness import ContractBroken, Ctx, Harness, ReturnedNothing
from .observe import Snapshot, observe_many
from .stub import is_stub_error


class Fail(Exception):
    """The row does not hold: ``observation`` says what was seen."""

    def __init__(self, observation: str, hint: str | None = None):
        super().__init__(observation)
        self.observation = observation
        self.hint = hint


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
        if not self.runs_unit_a:
            return hint
        return (f"{hint} (This row also runs your Unit A {', '.join(self.runs_unit_a)}: a mistake there "
                "shows here too.)")


UNIT_A_INTEGRATION = {
    "finish-rollback": ("finish",),
    "second-generation": ("finish", "work_once"),
    "transfer-intake": ("admit", "work_once"),
    "deliberate-break-caught": ("admit", "claim", "work_once"),
    "crash-sweep": ("admit", "claim", "finish"),
    "model-based": ("admit", "claim", "finish", "work_once"),
}
"""Unit B rows that grade the whole chapter together. Every other Unit B row starts from rows
written straight into the learner's tables, so a Unit A slip costs its points once."""


ROWS: dict[str, Row] = {}

TOPICS = {
    "schema": "10–25: the work schema and one persisted request",
    "admission": "25–40: accepted, duplicate, conflict",
    "claim": "40–55: bounded admission and a single-worker claim",
    "finish": "55–75: the loop, the result and the report",
    "durable": "75–85: what a reopened store shows",
    "crash": "85–90: a worker that dies while running",
}


def row(id: str, *, unit: str, topic: str, covers: str, hint: str):
    def register(fn: Callable[[Harness], str]) -> Callable[[Harness], str]:
        if id in ROWS:
            raise ValueError(f"row id {id!r} registered twice")
        ROWS[id] = Row(id, unit, topic, covers, hint, fn, UNIT_A_INTEGRATION.get(id, ()))
        return fn

    return register


# --- helpers -----------------------------------------------------------------


CONTRACT_BREAKS = {
    ContractBroken.__name__: "Return the value the docstring names, on every path.",
    ReturnedNothing.__name__: "Return the value the docstring names, on every path. A function that ends without "
                             "`return`, or an `except` that returns instead of re-raising, gives the caller None and "
                             "hides what happened.",
}
"""Hints for the harness's ``ContractBroken`` and ``ReturnedNothing``, by type name."""


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
        if is_stub_error(error.type_name, error.message):
            raise Fail(f"{what}: your code is not written yet ({error.describe()})",
                       "Fill in the cell where it says `raise NotImplementedError`, run it, then check again.")
        if error.type_name in CONTRACT_BREAKS:  # the harness's own error: the learner returned, and raised nothing
            raise Fail(f"{what}: {error.message}", CONTRACT_BREAKS[error.type_name])
        if error.type_name == "MissingFunction":
            raise Fail(f"{what}: {error.message}", "Run every cell above this one (Run ▸ Run All Above), then check again.")
        raise Fail(f"{what}: your code raised {error.describe()}")
    if result.status == "timeout":
        raise Fail(f"{what}: it did not finish in time and was stopped",
                   "Look for a loop that never ends, or code that waits for something that never comes.")
    if result.status == "crashed":
        raise Fail(f"{what}: the process stopped at a crash point, but none was expected here")
    if result.status == "returned" and expect == "crashed":
        raise Fail(f"{what}: the crash point was never reached, so the experiment could not run",
                   "The checker stops the process at a SQL statement sent through queue.store. "
                   "Write through `with queue.store.transaction() as tx:` rather than a connection of your own.")
    raise Fail(f"{what}: the process ended on its own before the checker stopped it ({result.value})",
               "Only the checker ends the process in an experiment. Code that calls os._exit, sys.exit or kills "
               "its own process cannot be checked.")


def expect(condition: bool, observation: str, hint: str | None = None) -> None:
    if not condition:
        raise Fail(observation, hint)


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


def admit_and_claim(c: Ctx, source: str, session: str, text: str, worker: str) -> dict:
    q = c.queue()
    admission = c.admit(q, source, session, text)
    if admission["outcome"] != "accepted":
        raise AssertionError(f"a fresh request was not accepted: {admission}")
    assignment = c.claim(q, worker)
    if assignment is None:
        raise AssertionError("claim returned None although one request was pending")
    return assignment


def preparation(h: Harness, name: str, setup: Callable[[Ctx], Any]) -> tuple:
    """The points that preparing a scenario passes (schema included), from a run of the preparation alone.

    Every run reports every point, so the plans count from the start of the run and
    skip these.
    """
    counted = h.scenario(f"{name}-preparation").run(setup, plan=Count())
    ok(counted, f"preparing {name}")
    return counted.points


def sweep(h: Harness, name: str, setup: Callable[[Ctx], Any], call: Callable[[Ctx, Any], Any],
          judge: Callable[[Snapshot, str], None], *, after: Callable[[Ctx], Any] | None = None) -> list[str]:
    """Crash ``call`` before each of its points in turn; reopen; judge what a fresh process sees.

    ``setup`` prepares the scenario (committed before the call); ``call(ctx, state)``
    is the call under test; ``after`` runs
    in a new process once the crashed one is gone (a restart, a redelivery).
    Returns the points, in order, as "kind: statement".
    """
    def script(c: Ctx):  # the same code in every run: only the parent's plan differs
        call(c, setup(c))

    before = preparation(h, name, setup)
    dry = h.scenario(name)
    counted = dry.run(script, plan=Count())
    ok(counted, f"{name} without a crash")
    expect(counted.points[:len(before)] == before,
           f"preparing {name} did not send the same statements twice in a row, so its crash points cannot be found")
    skip = len(crash_points(before))
    points = crash_points(counted.points[len(before):])
    expect(any(p.startswith("write") for p in points),
           f"{name} sent no write through queue.store, so nothing it does can be committed")
    scenarios = []
    for n in range(1, len(points) + 1):
        s = h.scenario(f"{name}-crash")
        ok(s.run(script, plan=KillAt(skip + n)), f"{name} stopped before {points[n - 1]}", expect="crashed",
           harness=h)
        if after is not None:
            ok(s.run(after), f"a new process after {name} was stopped before {points[n - 1]}")
        scenarios.append(s)
    for n, snap in enumerate(observe_many([s.target() for s in scenarios]), start=1):
        judge(seen(snap), f"stopping {name} before {points[n - 1]!r}")
    return points


def race(h: Harness, name: str, setup: Callable[[Ctx], Any] | None, first: Callable[[Ctx], Any],
         rival: Callable[[Ctx], Any], names: tuple[str, str]) -> list[tuple[Any, Any, Snapshot]]:
    """Run ``first`` and ``rival`` at the same moment, in two rounds, each on a fresh scenario.

    ``first`` is held until ``rival`` has finished: in round one at its very first BEGIN
    (a check made outside any transaction is stale by then), in round two at its first
    BEGIN after other statements (a check-then-act split over two transactions).
    Returns, per round, both answers and what a fresh process saw afterwards.
    """

    rounds = []
    for at_first_begin in (True, False):
        s = h.scenario(name)
        if setup is not None:
            ok(s.run(setup), f"{name}: preparing the race")
        results = s.race([first, rival], [PauseForRival(1, at_first_begin=at_first_begin), Rival(0)])
        a, b = (ok(r, n) for r, n in zip(results, names))
        rounds.append((a, b, seen(s.observe())))
    return rounds


# --- schema and admission ------------------------------------------------------


@row("schema-columns", unit="A", topic="schema",
     covers="Step 2: the work schema persists identity, session, payload and state where a fresh process finds them",
     hint="create_schema must commit tables with the columns the observer reads: work(work_id, source_id, session_id, "
          "text, state) and report(report_id, work_id, generation, session_id, body, delivery).")
def schema_columns(h: Harness) -> str:
    s = h.scenario("schema")
    ok(s.run(lambda c: c.stop(), plan=Stop()), "create_schema, then the process dies", expect="crashed", harness=h)
    snap = seen(s.observe())
    return (f"a fresh process found the tables {snap.tables['work']!r} and {snap.tables['report']!r} "
            "with every column it reads")


@row("restart-keeps-work", unit="A", topic="admission",
     covers="Step 1–2: a request admitted into a list is lost when the process restarts",
     hint="Store the request in a table through queue.store inside a transaction, and let the block end so it commits.")
def restart_keeps_work(h: Harness) -> str:
    s = h.scenario("restart")
    source, session, text = h.source_id(), h.session_id(), h.text()
    ok(s.run(lambda c: [c.admit(c.queue(), source, session, text), c.stop()], plan=Stop()),
       "admit, then the process dies", expect="crashed", harness=h)
    snap = seen(s.observe())
    rows = snap.work_for(source)
    expect(len(rows) == 1, f"after the restart the store holds {len(rows)} work rows for {source}, not 1")
    got = rows[0]
    expect(got["session_id"] == session and got["text"] == text,
           f"the stored request changed: session {got['session_id']!r}, text {got['text']!r}; "
           f"admitted session {session!r}, text {text!r}", "Store source, session and text exactly as given.")
    expect(got["state"] == "pending", f"a new request is stored as {got['state']!r}, not 'pending'")
    return "the admitted request was found, verbatim and pending, by a fresh process after the first one died"


@row("duplicate-identical", unit="A", topic="admission",
     covers="Admit source s1 twice with identical session and text → one work record and a duplicate disposition",
     hint="Look the source_id up before inserting (or let a UNIQUE constraint say it exists) and answer DUPLICATE with the first work_id.")
def duplicate_identical(h: Harness) -> str:
    s = h.scenario("duplicate")
    source, session, text = h.source_id(), h.session_id(), h.text()

    def script(c: Ctx):
        q = c.queue()
        return [c.admit(q, source, session, text), c.admit(q, source, session, text)]

    first, second = ok(s.run(script), "admitting the same request twice")
    expect(first["outcome"] == "accepted", f"the first admission was {first['outcome']!r}, not accepted")
    expect(second["outcome"] == "duplicate", f"the repeated admission was {second['outcome']!r}, not duplicate")
    expect(same_id(first["work_id"], second["work_id"]),
           f"the duplicate named work {second['work_id']!r}, but the request is work {first['work_id']!r}")
    rows = seen(s.observe()).work_for(source)
    expect(len(rows) == 1, f"the store holds {len(rows)} work rows for one occurrence, not 1")
    return "one work row; the repeat answered DUPLICATE with the first work_id"


@row("duplicate-conflict", unit="A", topic="admission",
     covers="Reuse s1 with different text → conflict; original text and state unchanged",
     hint="When the source_id exists, compare session and text: equal is DUPLICATE, different is CONFLICT. Never update the stored row.")
def duplicate_conflict(h: Harness) -> str:
    s = h.scenario("conflict")
    source = h.source_id()
    # The stored request sits between the conflicting ones in sort order, so "different" cannot pass as
    # "not smaller" or "not larger".
    low_session, session, high_session = h.distinct(h.session_id)
    low_text, text, high_text = h.distinct(h.text)
    reuses = [(session, low_text), (session, high_text), (low_session, text), (high_session, text)]

    def script(c: Ctx):
        q = c.queue()
        first = c.admit(q, source, session, text)
        return [first] + [c.admit(q, source, other_session, other_text) for other_session, other_text in reuses]

    first, *answers = ok(s.run(script), "admitting a known source id with new content")
    outcomes = [a["outcome"] for a in answers]
    expect(outcomes == ["conflict"] * len(reuses), f"reusing a source id with other text (twice), then from other "
           f"sessions (twice), gave {outcomes}, not conflict every time")
    expect(all(same_id(a["work_id"], first["work_id"]) for a in answers),
           "a conflict should name the work that already holds the source id")
    rows = seen(s.observe()).work_for(source)
    expect(len(rows) == 1, f"{len(rows)} rows for {source} after the conflicts, not 1")
    expect(rows[0]["text"] == text and rows[0]["session_id"] == session,
           f"a conflicting admission changed the stored request to {rows[0]['text']!r} / {rows[0]['session_id']!r}")
    expect(rows[0]["state"] == "pending", f"a conflicting admission moved the request to {rows[0]['state']!r}")
    return "different text or session under a known source id is CONFLICT; the stored request is unchanged"


@row("distinct-occurrences", unit="A", topic="admission",
     covers="Admit s2 with the same text as s1 → two work records because occurrence identities differ",
     hint="Identify an occurrence by source_id only: two messages with the same words are still two requests.")
def distinct_occurrences(h: Harness) -> str:
    s = h.scenario("distinct")
    first, second, session, text = h.source_id(), h.source_id(), h.session_id(), h.text()

    def script(c: Ctx):
        q = c.queue()
        return [c.admit(q, first, session, text), c.admit(q, second, session, text)]

    a, b = ok(s.run(script), "admitting two sources with the same text")
    expect(a["outcome"] == b["outcome"] == "accepted", f"two occurrences gave {a['outcome']!r} and {b['outcome']!r}")
    expect(not same_id(a["work_id"], b["work_id"]), f"both occurrences were given work id {a['work_id']!r}")
    snap = seen(s.observe())
    expect(len(snap.work_for(first)) == 1 and len(snap.work_for(second)) == 1,
           f"expected one row for each source, found {len(snap.work_for(first))} and {len(snap.work_for(second))}")
    return "same text, two source ids: two work rows"


@row("admit-concurrent", unit="A", topic="admission",
     covers="Step 2: two intake processes admit one occurrence at the same moment → still one work item",
     hint="Look up and insert in one transaction (or rely on a UNIQUE constraint on source_id with ON CONFLICT), "
          "so no other process can slip in between the look and the write.")
def admit_concurrent(h: Harness) -> str:
    source, session, text = h.source_id(), h.session_id(), h.text()

    def admit(c: Ctx):
        return c.admit(c.queue(), source, session, text)

    for a, b, snap in race(h, "admit-race", None, admit, admit, ("the first admitting process", "the second")):
        outcomes = sorted([a["outcome"], b["outcome"]])
        rows = snap.work_for(source)
        expect(len(rows) == 1, f"two processes admitting one occurrence together left {len(rows)} work rows")
        expect(outcomes == ["accepted", "duplicate"], f"the two admissions answered {outcomes}, not accepted and duplicate")
    return "two racing admissions of one occurrence, in both orders of pause: one row, ACCEPTED and DUPLICATE"


# --- bounded admission and the claim -------------------------------------------


@row("capacity-bounded", unit="A", topic="claim",
     covers="Step 4: bounded admission: capacity and the per-session limit refuse work, and running work still counts",
     hint="Count unfinished work (pending and running) before inserting: overall against queue.capacity, "
          "and for this session against queue.per_session_limit. Refuse when the count has reached the limit "
          "or gone past it (a restart may bring a smaller limit).")
def capacity_bounded(h: Harness) -> str:
    s = h.scenario("capacity")
    capacity = h.rng.randint(2, 4)
    sources = [h.source_id() for _ in range(capacity + 2)]
    sessions = [h.session_id() for _ in range(capacity + 2)]
    one_session, limited = h.session_id(), [h.source_id() for _ in range(4)]
    text = h.text()

    def script(c: Ctx):
        q = c.queue(capacity=capacity, per_session_limit=capacity)
        filled = [c.admit(q, sources[i], sessions[i], text) for i in range(capacity)]
        c.claim(q, "w1")  # running work is unfinished: it still holds its place
        over = c.admit(q, sources[capacity], sessions[capacity], text)
        # Restarted with a smaller capacity: the queue is already past it.
        shrunk = c.admit(c.queue(capacity=capacity - 1, per_session_limit=capacity), sources[-1], sessions[-1], text)
        narrow = c.queue(capacity=10, per_session_limit=2)
        per_session = [c.admit(narrow, src, one_session, text) for src in limited[:3]]
        per_session.append(c.admit(c.queue(capacity=10, per_session_limit=1), limited[-1], one_session, text))
        return filled, [over, shrunk], per_session

    filled, over, per_session = ok(s.run(script), "filling the queue to capacity")
    outcomes = [a["outcome"] for a in filled + over]
    expect(outcomes == ["accepted"] * capacity + ["refused", "refused"],
           f"with capacity {capacity} (one request running), {capacity + 1} admissions, then one more with the "
           f"capacity lowered to {capacity - 1}, gave {outcomes}")
    outcomes = [a["outcome"] for a in per_session]
    expect(outcomes == ["accepted", "accepted", "refused", "refused"],
           f"with a per-session limit of 2, three requests from one session, then one more with the limit lowered "
           f"to 1, gave {outcomes}")
    snap = seen(s.observe())
    expect(not any(snap.work_for(src) for src in (sources[capacity], sources[-1], limited[2], limited[3])),
           "a refused request was stored as work")
    return (f"capacity {capacity} and a per-session limit of 2 held, also once lowered below the work already "
            "waiting; refused requests were not stored")


@row("refused-leaves-no-trace", unit="A", topic="finish",
     covers="Step 4: refused work must not call the model or occupy ordinary capacity; done work frees its place",
     hint="Decide refusal before inserting anything, store nothing for a refused request, and count only "
          "pending and running work against the limits.")
def refused_leaves_no_trace(h: Harness) -> str:
    s = h.scenario("refused")
    kept, refused = h.source_id(), [h.source_id(), h.source_id()]
    session, text, marker = h.session_id(), h.text(), h.token()

    def script(c: Ctx):
        q = c.queue(capacity=1, per_session_limit=1)
        answers = [c.admit(q, kept, session, text)] + [c.admit(q, src, session, text) for src in refused]
        reports = [c.work_once(q, c.loop(marker), "w1") for _ in range(3)]
        again = c.admit(q, refused[0], session, text)
        return answers, reports, again

    answers, reports, again = ok(s.run(script), "admitting past capacity, then working")
    outcomes = [a["outcome"] for a in answers]
    expect(outcomes == ["accepted", "refused", "refused"], f"capacity 1 gave {outcomes}")
    snap = seen(s.observe())
    done = [r for r in reports if r is not None]
    expect(len(done) == 1, f"the worker produced {len(done)} reports from one accepted request")
    expect(snap.model_calls == 1, f"the model was called {snap.model_calls} times for one accepted request")
    worked = snap.work_for(kept)
    expect(len(worked) == 1 and worked[0]["state"] == "done",
           f"work_once returned a report for the accepted request, but a fresh process finds it "
           f"{[w['state'] for w in worked]}, not done: it still holds the only place in the queue",
           "finish must mark the work done and store its report in one committed transaction; work that never "
           "becomes done keeps its place, so nothing else can be admitted.")
    expect(again["outcome"] == "accepted",
           f"a refused request sent again after the queue emptied was {again['outcome']!r}, not accepted: "
           "the refusal left something behind")
    expect(len(snap.work_for(refused[1])) == 0, "a refused request was stored as work")
    return "refused requests stored nothing, called no model, and were accepted once there was room"


@row("empty-poll", unit="A", topic="finish",
     covers="Empty queue, one worker poll → no work and zero model invocations",
     hint="claim returns None when nothing is pending, and work_once must return None before it calls the loop.")
def empty_poll(h: Harness) -> str:
    s = h.scenario("empty")
    marker = h.token()
    answer = ok(s.run(lambda c: [c.claim(c.queue(), "w1"), c.work_once(c.queue(), c.loop(marker), "w1")]),
                "polling an empty queue")
    snap = seen(s.observe())
    expect(answer == [None, None], f"an empty queue handed out {answer}")
    expect(snap.model_calls == 0, f"polling an empty queue called the model {snap.model_calls} times")
    expect(not snap.work and not snap.reports, "polling an empty queue created rows")
    return "no assignment, no model call, no rows"


@row("claim-one", unit="A", topic="claim",
     covers="Step 4: one claim hands out one pending request, marks it running, and never the same one twice",
     hint="In one transaction: pick one pending row, set it to 'running', and return it as an Assignment.")
def claim_one(h: Harness) -> str:
    s = h.scenario("claim")
    sources = [h.source_id(), h.source_id()]
    session, text = h.session_id(), h.text()

    def script(c: Ctx):
        q = c.queue()
        for src in sources:
            c.admit(q, src, session, text)
        return [c.claim(q, "w1"), c.claim(q, "w2"), c.claim(q, "w3")]

    first, second, third = ok(s.run(script), "claiming three times from two pending requests")
    expect(first is not None and second is not None, "claim returned None while requests were pending")
    expect(not same_id(first["work_id"], second["work_id"]), f"work {first['work_id']!r} was handed out twice")
    expect(third is None, f"a third claim from two requests returned {third}")
    snap = seen(s.observe())
    for got in (first, second):
        stored = snap.work_by_id(got["work_id"])
        expect(stored is not None, f"claim returned work_id {got['work_id']!r}, which is not in the store")
        expect(stored["state"] == "running", f"claimed work is stored as {stored['state']!r}, not 'running'")
        expect(got["session_id"] == stored["session_id"] and got["text"] == stored["text"],
               "the Assignment does not carry the stored session and text")
    expect(snap.model_calls == 0, "claiming called the model")
    return "two claims got two different requests, both now running; the third got None"


@row("claim-concurrent", unit="A", topic="claim",
     covers="Step 4: one atomic claim: two workers claiming at the same moment never share a request",
     hint="Select and mark the row inside one transaction, so nobody can claim between your look and your write.")
def claim_concurrent(h: Harness) -> str:
    sources, session, text = [h.source_id(), h.source_id()], h.session_id(), h.text()

    def setup(c: Ctx):
        return [c.admit(c.queue(), src, session, text) for src in sources]

    for a, b, _ in race(h, "claim-race", setup, lambda c: c.claim(c.queue(), "w1"), lambda c: c.claim(c.queue(), "w2"),
                        ("the first worker's claim", "the second worker's claim")):
        expect(a is not None and b is not None, "a worker got nothing although two requests were pending")
        expect(not same_id(a["work_id"], b["work_id"]), f"two workers both claimed work {a['work_id']!r}")
    return "two racing workers claimed two different requests, in both orders of pause"


# --- the loop, the result and the report ---------------------------------------


@row("integrated-path", unit="A", topic="finish",
     covers="Step 5: the claimed request goes through the injected loop; a hard-coded report is detected",
     hint="work_once: claim, then loop.run(assignment.session_id, assignment.text), then finish with that result. "
          "The report's body must be the loop's text.")
def integrated_path(h: Harness) -> str:
    s = h.scenario("integrated")
    source, session, text, marker = h.source_id(), h.session_id(), h.text(), h.token(10)

    def script(c: Ctx):
        q = c.queue()
        c.admit(q, source, session, text)
        return c.work_once(q, c.loop(marker), "w1")

    report = ok(s.run(script), "admit, then work_once")
    expect(report is not None, "work_once returned None although a request was pending")
    snap = seen(s.observe())
    work = snap.work_for(source)
    expect(len(work) == 1 and work[0]["state"] == "done", f"after work_once the request is {[w['state'] for w in work]}")
    reports = snap.reports_for(work[0]["work_id"])
    expect(len(reports) == 1, f"{len(reports)} stored reports for the finished request, not 1")
    expect(marker in reports[0]["body"], "the stored report does not carry the loop's answer: "
           "its body was not produced by the loop this checker injected")
    expect(snap.model_calls == 1, f"the model was called {snap.model_calls} times for one request")
    return "one model call; the stored report carries the injected loop's answer"


@row("report-to-admitted-session", unit="A", topic="finish",
     covers="Authentication vs. generated text: the report goes to the admitted session whatever the loop's text says",
     hint="Take the report's session_id from the stored work row, never from the loop's result.")
def report_to_admitted_session(h: Harness) -> str:
    s = h.scenario("addressing")
    source, session, text, marker, intruder = h.source_id(), h.session_id(), h.text(), h.token(), h.session_id()

    def script(c: Ctx):
        q = c.queue()
        c.admit(q, source, session, text)
        return c.work_once(q, c.loop(marker, addressed_to=intruder), "w1")

    report = ok(s.run(script), "work_once with a loop that names another session")
    snap = seen(s.observe())
    work = snap.work_for(source)
    stored = snap.reports_for(work[0]["work_id"]) if work else []
    expect(len(stored) == 1, f"{len(stored)} reports stored for the request, not 1")
    expect(stored[0]["session_id"] == session, f"the report is addressed to {stored[0]['session_id']!r}; "
           f"the request was admitted from {session!r}")
    expect(report is not None and report["session_id"] == session, "the returned Report names another session")
    return "the loop named another session; the report still went to the admitted one"


@row("finish-binds-work", unit="A", topic="finish",
     covers="Completion binds the result to the specific claimed work identity",
     hint="Update and report exactly the work_id you were given (WHERE work_id = ?), never 'the running one'.")
def finish_binds_work(h: Harness) -> str:
    s = h.scenario("binding")
    sources, session, text = [h.source_id(), h.source_id()], h.session_id(), h.text()
    markers = [h.token(10), h.token(10)]

    def script(c: Ctx):
        q = c.queue()
        for src in sources:
            c.admit(q, src, session, text)
        x, y = c.claim(q, "w1"), c.claim(q, "w1")
        c.finish(q, y["work_id"], LoopResult(f"brief [{markers[1]}]", session, 1))
        return x, y

    x, y = ok(s.run(script), "claiming two requests and finishing the second")
    snap = seen(s.observe())
    later, earlier = snap.work_by_id(y["work_id"]), snap.work_by_id(x["work_id"])
    expect(later is not None and later["state"] == "done", "finishing a work_id did not mark that work done")
    expect(earlier is not None and earlier["state"] == "running",
           f"finishing one request changed another one to {earlier and earlier['state']!r}")
    stored = snap.reports_for(y["work_id"])
    expect(len(stored) == 1 and markers[1] in stored[0]["body"], "the finished work's report does not carry its result")
    expect(not snap.reports_for(x["work_id"]), "a report was stored for work that was not finished")
    return "finishing one of two running requests changed only that one"


@row("finish-misuse", unit="A", topic="finish",
     covers="finish on work that is not claimed is refused with an error and changes nothing",
     hint="Check the work is 'running' inside the transaction; if not, raise an error before writing anything, "
          "and let it leave finish.")
def finish_misuse(h: Harness) -> str:
    s = h.scenario("misuse")
    source, session, text = h.source_id(), h.session_id(), h.text()
    ok(s.run(lambda c: c.admit(c.queue(), source, session, text)), "admitting a request")
    snap = seen(s.observe())
    work_id = snap.work_for(source)[0]["work_id"] if snap.work_for(source) else None
    result = LoopResult(f"brief [{h.token()}]", session, 1)
    for target, what in ((work_id, "pending work"), (987_654_321, "a work id that does not exist")):
        answer = Attempt.of(ok(s.run(lambda c: attempt(lambda: c.finish(c.queue(), target, result))), f"finish on {what}"))
        _expect_raised(answer, f"finish on {what}")
    snap = seen(s.observe())
    stored = snap.work_for(source)
    expect(stored and stored[0]["state"] == "pending", "finish on unclaimed work changed its state")
    expect(not snap.reports, "finish on unclaimed work stored a report")
    return "finish refused unclaimed and unknown work with an error, and wrote nothing"


def _expect_raised(answer: Attempt, call: str, consequence: str = "") -> None:
    """Fail unless the learner's own error left the call; a swallowed one gets the hint that says so."""
    expect(answer.raised, answer.told(call) + (f": {consequence}" if consequence else ""),
           SWALLOWED_HINT if answer.ending is Ending.SWALLOWED else None)


@row("report-identity", unit="A", topic="finish",
     covers="Report identity is immutable and distinct from work identity, and the report carries its generation",
     hint="Give the report an id of its own (for example 'r-<work_id>-<generation>'), and store the generation with it.")
def report_identity(h: Harness) -> str:
    s = h.scenario("identity")
    source, session, text, marker = h.source_id(), h.session_id(), h.text(), h.token()

    def script(c: Ctx):
        q = c.queue()
        c.admit(q, source, session, text)
        return c.work_once(q, c.loop(marker), "w1")

    report = ok(s.run(script), "admit, then work_once")
    snap = seen(s.observe())
    stored = snap.reports
    expect(len(stored) == 1, f"{len(stored)} reports stored, not 1")
    r = stored[0]
    expect(str(r["report_id"]) != str(r["work_id"]), f"the report id {r['report_id']!r} is the work id")
    expect(isinstance(r["generation"], int) and not isinstance(r["generation"], bool) and r["generation"] >= 1,
           f"the report's generation is {r['generation']!r}, not a whole number from 1")
    expect(report is not None and str(report["report_id"]) == str(r["report_id"]),
           "the Report finish returned has another id than the one stored")
    return f"report {r['report_id']!r} for work {r['work_id']!r}, generation {r['generation']}"


# --- what survives a crash -----------------------------------------------------


def _finish_setup(h: Harness):
    source, session, text, marker = h.source_id(), h.session_id(), h.text(), h.token(10)
    result = LoopResult(f"brief [{marker}]", session, 1)
    return source, session, text, marker, result


@row("finish-atomic", unit="A", topic="durable",
     covers="Fail between terminal state and report insertion → reopen shows neither terminal change nor new report",
     hint="Mark the work done and insert its report inside ONE `with queue.store.transaction() as tx:` block.")
def finish_atomic(h: Harness) -> str:
    source, session, text, marker, result = _finish_setup(h)
    points = sweep(h, "finish", lambda c: admit_and_claim(c, source, session, text, "w1"),
                   lambda c, a: c.finish(c.queue(), a["work_id"], result),
                   lambda snap, where: _judge_completion(snap, source, where))
    return f"{len(points)} crash points inside finish: every reopen showed both halves or neither"


def _judge_completion(snap: Snapshot, source: str, where: str) -> None:
    work = snap.work_for(source)
    state = work[0]["state"] if work else None
    reports = snap.reports_for(work[0]["work_id"]) if work else []
    expect(not (state == "done" and not reports),
           f"{where} left the work done with no report: a completed request whose answer is lost")
    expect(not (state != "done" and reports), f"{where} left a report for work that is still {state!r}")


@row("finish-durable", unit="A", topic="durable",
     covers="Commit finish, then stop before the sender runs → one completed work item and one pending report survive",
     hint="Let the transaction block end before finish returns; store the report with delivery 'pending'.")
def finish_durable(h: Harness) -> str:
    source, session, text, marker, result = _finish_setup(h)
    s = h.scenario("after-finish")

    def script(c: Ctx):
        a = admit_and_claim(c, source, session, text, "w1")
        c.finish(c.queue(), a["work_id"], result)
        c.stop()

    ok(s.run(script, plan=Stop()), "finish, then the process dies", expect="crashed", harness=h)
    snap = seen(s.observe())
    work = snap.work_for(source)
    expect(len(work) == 1 and work[0]["state"] == "done", f"after the restart the work is {[w['state'] for w in work]}")
    reports = snap.reports_for(work[0]["work_id"])
    expect(len(reports) == 1, f"{len(reports)} reports survived, not 1")
    expect(reports[0]["delivery"] == "pending", f"the surviving report is {reports[0]['delivery']!r}, not 'pending'")
    expect(marker in reports[0]["body"], "the surviving report lost its body")
    expect(not snap.accepted, "something was sent although no sender ran")
    return "after the process died, a fresh reader found the work done and its report pending"


@row("running-crash-visible", unit="A", topic="crash",
     covers="A worker that dies while running leaves a visible unresolved item and no automatic replay (Chapter 12)",
     hint="claim only 'pending' work. A 'running' row whose worker died stays visible; Chapter 12 adds takeover.")
def running_crash_visible(h: Harness) -> str:
    s = h.scenario("running-crash")
    source, session, text, marker = h.source_id(), h.session_id(), h.text(), h.token()

    def crash(c: Ctx):
        q = c.queue()
        c.admit(q, source, session, text)
        c.work_once(q, c.loop(marker, crash=True), "w1")

    ok(s.run(crash, plan=Stop()), "a worker dies inside the loop", expect="crashed", harness=h)
    after = ok(s.run(lambda c: c.work_once(c.queue(), c.loop(marker), "w2")), "a new worker polls")
    snap = seen(s.observe())
    work = snap.work_for(source)
    expect(len(work) == 1 and work[0]["state"] == "running",
           f"the dead worker's request is {[w['state'] for w in work]}, not a visible 'running'")
    expect(after is None, "the new worker replayed the dead worker's request")
    expect(snap.model_calls == 1, f"the model was called {snap.model_calls} times: the request was run again")
    expect(not snap.reports, "a report appeared for work nobody finished")
    return "the dead worker's request stayed 'running', unreported, and was not run again"


# --- Unit B: repair, delivery, recovery, transfer ------------------------------

TOPICS.update({
    "repair": "25–45: completion rolls back and says so",
    "delivery": "45–60: one send, and an honest record of it",
    "recovery": "45–60: resolving UNKNOWN with the service's own record",
    "generation": "a second terminal generation",
    "transfer": "60–75: chat messages as occurrences",
    "break": "75–85: break finish on purpose",
    "sweep": "every crash point of every call",
})


def _seeded(c: Ctx, source: str, session: str, text: str, marker: str) -> dict:
    """A finished request and its pending report, written straight into the learner's own tables.

    Rows that grade a Unit B function (delivery, reconcile) start from what a correct
    ``finish`` would have left, so a slip in Unit A costs its points once, in Unit A.
    When the learner's schema will not take a plain insert, the learner's own Unit A
    path makes the report instead.
    """
    import sqlite3
    from contextlib import closing

    from ..work import REPORT_COLUMNS, WORK_COLUMNS
    from .observe import _find_table

    problems: list[str] = []
    with closing(sqlite3.connect(c.store.path)) as look:  # reading only: nothing bypasses the store
        work, work_columns = _find_table(look, WORK_COLUMNS, "work", problems, [])
        report, report_columns = _find_table(look, REPORT_COLUMNS, "report", problems, [])
        columns = look.execute(f'PRAGMA table_info("{work}")').fetchall() if work else []
    info = {name: (declared or "").upper() for _, name, declared, *_ in columns}
    # An INTEGER PRIMARY KEY is the rowid: SQLite makes the id. Otherwise the row needs one.
    auto = any(name == "work_id" and pk == 1 and info[name] == "INTEGER" for _, name, _, _, _, pk in columns)
    if problems:
        return _finished(c, source, session, text, marker)
    values = {"source_id": source, "session_id": session, "text": text, "state": "done"}
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
        return _finished(c, source, session, text, marker)
    return {k: v for k, v in stored.items() if k != "delivery"}


def _finished(c: Ctx, source: str, session: str, text: str, marker: str) -> dict:
    q = c.queue()
    c.admit(q, source, session, text)
    report = c.work_once(q, c.loop(marker), "w1")
    if report is None:
        raise AssertionError("work_once returned None although a request was pending")
    return report


@row("finish-rollback", unit="B", topic="repair",
     covers="Step 7: a failure inside finish rolls back both halves and propagates the error; without one both commit",
     hint="Let the error leave the `with queue.store.transaction()` block: the store rolls back and re-raises. "
          "Do not catch it inside finish.")
def finish_rollback(h: Harness) -> str:
    source, session, text, marker, result = _finish_setup(h)
    dry = h.scenario("rollback-points")

    def prepare(c: Ctx):
        return admit_and_claim(c, source, session, text, "w1")

    def fault(c: Ctx):  # the same code with and without a planned failure
        a = prepare(c)
        return attempt(lambda: c.finish(c.queue(), a["work_id"], result))

    skip = sum(1 for p in preparation(h, "rollback", prepare) if p.kind == "write")
    counted = dry.run(fault, plan=Count())
    ok(counted, "finish without a failure")
    writes = sum(1 for p in counted.points if p.kind == "write") - skip
    expect(writes > 0, "finish wrote nothing through queue.store")
    scenarios = []
    for n in range(1, writes + 1):
        s = h.scenario("fault")
        answer = Attempt.of(ok(s.run(fault, plan=FailAt(skip + n)), f"finish with its write {n} failing"))
        _expect_raised(answer, f"when write {n} of finish failed, finish",
                       "the caller cannot know the report was not stored")
        scenarios.append(s)
    for n, snap in enumerate(observe_many([s.target() for s in scenarios]), start=1):
        work = seen(snap).work_for(source)
        expect(work and work[0]["state"] == "running" and not snap.reports,
               f"after write {n} of finish failed, the store shows {[w['state'] for w in work]} with "
               f"{len(snap.reports)} reports: a failed finish must leave the work running and no report")
    committed = seen(dry.observe())
    work = committed.work_for(source)
    expect(work and work[0]["state"] == "done" and len(committed.reports) == 1,
           "without a failure, finish did not commit both the done state and the report")
    return f"a failure at each of {writes} writes raised and left nothing; without one, both halves committed"


@row("delivery-confirmed", unit="B", topic="delivery",
     covers="Step 8: claim a report for delivery, send it once, and retain the confirmed disposition",
     hint="deliver_one: in one transaction pick a 'pending' report and mark it 'sending'; send it; then record "
          "'confirmed' with the receipt. Return Disposition.NOTHING_TO_SEND when nothing is pending.")
def delivery_confirmed(h: Harness) -> str:
    s = h.scenario("deliver")
    source, session, text, marker = h.source_id(), h.session_id(), h.text(), h.token(10)

    def script(c: Ctx):
        report = _seeded(c, source, session, text, marker)
        transport = c.transport([])
        return report, [c.deliver_one(transport), c.deliver_one(transport)]

    report, answers = ok(s.run(script), "finishing a request, then delivering twice")
    expect(answers == ["confirmed", "nothing to send"], f"two deliveries answered {answers}")
    snap = seen(s.observe())
    expect(len(snap.accepted) == 1, f"the service accepted {len(snap.accepted)} sends of one report")
    sent = snap.accepted[0]
    expect(str(sent["report_id"]) == str(report["report_id"]) and sent["session_id"] == session
           and marker in sent["body"], "the service received something other than the stored report")
    stored = snap.reports[0]
    expect(stored["delivery"] == "confirmed", f"after a receipt the report is {stored['delivery']!r}")
    if "receipt" in stored:
        expect(stored["receipt"] == sent["remote_id"], "the stored receipt is not the service's message id")
    return "one send, to the admitted session, recorded as confirmed; the next call had nothing to send"


@row("delivery-refused-retry", unit="B", topic="delivery",
     covers="A known refusal is not a send: the report stays deliverable and goes out once on a later try",
     hint="On Refused, put the report back to 'pending' (the service said no, so nothing was sent).")
def delivery_refused_retry(h: Harness) -> str:
    from ..transport import Behaviour

    s = h.scenario("refused")
    source, session, text, marker = h.source_id(), h.session_id(), h.text(), h.token()

    def script(c: Ctx):
        _seeded(c, source, session, text, marker)
        transport = c.transport([Behaviour.REFUSE])
        return [c.deliver_one(transport), c.deliver_one(transport), c.deliver_one(transport)]

    answers = ok(s.run(script), "delivering to a service that refuses once")
    expect(answers == ["refused", "confirmed", "nothing to send"], f"three deliveries answered {answers}")
    snap = seen(s.observe())
    expect(len(snap.accepted) == 1 and snap.reports[0]["delivery"] == "confirmed",
           f"{len(snap.accepted)} accepted sends; report {snap.reports[0]['delivery']!r}")
    return "refused, then sent once and confirmed"


@row("lost-reply-unknown", unit="B", topic="delivery",
     covers="Fake service accepts r1 but loses its response → one externally accepted send, local UNKNOWN, "
            "no automatic second send",
     hint="On Uncertain, record 'unknown' and return Disposition.UNKNOWN. deliver_one picks only 'pending' "
          "reports, so an unknown one is never sent again by itself.")
def lost_reply_unknown(h: Harness) -> str:
    from ..transport import Behaviour

    s = h.scenario("lost-reply")
    source, session, text, marker = h.source_id(), h.session_id(), h.text(), h.token()

    def first(c: Ctx):
        _seeded(c, source, session, text, marker)
        return c.deliver_one(c.transport([Behaviour.LOSE_REPLY]))

    answer = ok(s.run(first), "delivering while the reply is lost")
    later = ok(s.run(lambda c: [c.deliver_one(c.transport([])) for _ in range(2)]), "delivering again later")
    snap = seen(s.observe())
    expect(answer == "unknown", f"a lost reply was recorded as {answer!r}, not unknown")
    expect(len(snap.accepted) == 1, f"the service's own log shows {len(snap.accepted)} accepted sends: "
           "the report was sent again although it may already have arrived")
    expect(snap.reports[0]["delivery"] == "unknown", f"the report is stored as {snap.reports[0]['delivery']!r}")
    expect(later == ["nothing to send"] * 2, f"later deliveries answered {later}")
    return "one accepted send in the service's log, UNKNOWN locally, and no second send"


@row("delivery-crash-after-accept", unit="B", topic="delivery",
     covers="Crash after the remote accepted and before its reply was recorded → no second send on restart",
     hint="Mark the report 'sending' in a committed transaction before calling the transport, and send only "
          "'pending' reports: a restart then finds 'sending' and leaves it alone.")
def delivery_crash_after_accept(h: Harness) -> str:
    s = h.scenario("crash-after-accept")
    source, session, text, marker = h.source_id(), h.session_id(), h.text(), h.token()

    def crash(c: Ctx):
        _seeded(c, source, session, text, marker)
        c.deliver_one(c.transport([]))

    ok(s.run(crash, plan=KillAt(1, kinds=("accepted",))), "the process dies after the service accepted",
       expect="crashed", harness=h)
    later = ok(s.run(lambda c: c.deliver_one(c.transport([]))), "a new process delivers")
    snap = seen(s.observe())
    expect(len(snap.accepted) == 1, f"after the restart the service has {len(snap.accepted)} accepted sends")
    expect(snap.reports[0]["delivery"] in ("sending", "unknown"),
           f"the report is {snap.reports[0]['delivery']!r}: nobody knows whether it arrived")
    expect(later == "nothing to send", f"the new process answered {later!r}")
    return "the restart found the report in flight and did not send it again"


@row("delivery-never-confirmed-unsent", unit="B", topic="delivery",
     covers="Delivery crash sweep: a crash at any statement never leaves 'confirmed' without an accepted send, "
            "nor a second send",
     hint="Commit 'sending' before calling the transport, and record 'confirmed' only after it returned a Receipt.")
def delivery_sweep(h: Harness) -> str:
    source, session, text, marker = h.source_id(), h.session_id(), h.text(), h.token()
    points = sweep(h, "deliver_one", lambda c: _seeded(c, source, session, text, marker),
                   lambda c, _: c.deliver_one(c.transport([])), _judge_delivery,
                   after=lambda c: [c.deliver_one(c.transport([])) for _ in range(2)])
    return f"{len(points)} crash points in deliver_one: never a second send, never confirmed without a send"


def _judge_delivery(snap: Snapshot, where: str) -> None:
    where += " and restarting"
    for report in snap.reports:
        sends = [a for a in snap.accepted if str(a["report_id"]) == str(report["report_id"])]
        expect(len(sends) <= 1, f"{where} sent report {report['report_id']} {len(sends)} times",
               "Commit 'sending' in a transaction of its own before calling the transport, and send only "
               "'pending' reports: a process that dies after the send then leaves a report no restart sends again.")
        expect(not (report["delivery"] == "confirmed" and not sends),
               f"{where} left report {report['report_id']} confirmed but never sent",
               "Record 'confirmed' only after the transport returned a Receipt, never before the send.")


@row("reconcile-unknown", unit="B", topic="recovery",
     covers="Recovery policy for UNKNOWN: reconcile by the report's own key against an idempotent service; "
            "no second send",
     hint="reconcile: for each 'unknown' (or 'sending') report, transport.lookup(report_id); a receipt means "
          "'confirmed'. Send with idempotency_key=report_id so the key names the report, not the attempt.")
def reconcile_unknown(h: Harness) -> str:
    from ..transport import Behaviour

    s = h.scenario("reconcile")
    sources = [h.source_id(), h.source_id()]
    session, text, marker = h.session_id(), h.text(), h.token()

    def script(c: Ctx):
        for src in sources:
            _seeded(c, src, session, text, marker)
        lossy = c.transport([Behaviour.LOSE_REPLY, Behaviour.REFUSE], idempotent=True)
        first = [c.deliver_one(lossy), c.deliver_one(lossy)]
        confirmed = c.reconcile(c.transport([], idempotent=True))
        after = [c.deliver_one(c.transport([], idempotent=True)) for _ in range(2)]
        return first, confirmed, after

    first, confirmed, after = ok(s.run(script), "a lost reply, a refusal, then reconcile")
    expect(first == ["unknown", "refused"], f"the two deliveries answered {first}")
    expect(confirmed == 1, f"reconcile confirmed {confirmed} reports; the service had accepted exactly one")
    snap = seen(s.observe())
    expect(len(snap.accepted) == 2, f"the service accepted {len(snap.accepted)} sends for two reports")
    expect(len({a["report_id"] for a in snap.accepted}) == 2, "one report was sent twice")
    expect(all(r["delivery"] == "confirmed" for r in snap.reports), f"reports end as {[r['delivery'] for r in snap.reports]}")
    expect(after[-1] == "nothing to send", f"deliveries after reconcile answered {after}")
    for report in snap.reports:
        sent = next(a for a in snap.accepted if str(a["report_id"]) == str(report["report_id"]))
        if "receipt" in report:
            expect(report["receipt"] == sent["remote_id"], "reconcile did not record the service's own receipt")
    return "the UNKNOWN report was confirmed from the service's record; every report was sent exactly once"


@row("idempotency-key-stable", unit="B", topic="recovery",
     covers="A key derived from the report's identity, not a fresh key per attempt",
     hint="Use the report's own id (or something derived only from it) as idempotency_key, on every attempt.")
def idempotency_key_stable(h: Harness) -> str:
    from ..transport import Behaviour

    s = h.scenario("keys")
    sources, session, text, marker = [h.source_id(), h.source_id()], h.session_id(), h.text(), h.token()

    def script(c: Ctx):
        for src in sources:
            _seeded(c, src, session, text, marker)
        transport = c.transport([Behaviour.REFUSE, Behaviour.REFUSE], idempotent=True)
        return [c.deliver_one(transport) for _ in range(4)]

    ok(s.run(script), "delivering two reports through two refusals")
    snap = seen(s.observe())
    keys: dict[str, set] = {}
    for request in snap.requests:
        keys.setdefault(str(request["report_id"]), set()).add(request["idempotency_key"])
    expect(keys and all(None not in k for k in keys.values()), "a send carried no idempotency key")
    expect(all(len(k) == 1 for k in keys.values()),
           f"one report was sent with several keys ({[sorted(k) for k in keys.values()]}): a fresh key per attempt "
           "makes every retry look like a new message")
    expect(len({next(iter(k)) for k in keys.values()}) == len(keys), "two different reports shared one key")
    return "every attempt for a report carried the same key, and each report its own"


@row("second-generation", unit="B", topic="generation",
     covers="Second terminal generation legitimately creates r2 → both immutable reports remain attributable "
            "to their own generation",
     hint="requeue moves done work back to pending with generation + 1, and raises for work that is not done; "
          "finish stores a new report whose id includes the generation, and never updates or replaces an earlier "
          "report.")
def second_generation(h: Harness) -> str:
    s = h.scenario("generation")
    source, session, text = h.source_id(), h.session_id(), h.text()
    first_marker, second_marker = h.token(10), h.token(10)

    def script(c: Ctx):
        q = c.queue()
        first = _finished(c, source, session, text, first_marker)
        c.deliver_one(c.transport([]))
        c.requeue(q, first["work_id"])
        second = c.work_once(q, c.loop(second_marker), "w2")
        return first, second

    first, second = ok(s.run(script), "finish, deliver, requeue, finish again")
    expect(second is not None, "after requeue, work_once found nothing to do")
    snap = seen(s.observe())
    reports = snap.reports_for(first["work_id"])
    expect(len(reports) == 2, f"the request has {len(reports)} stored reports after two generations, not 2")
    r1 = next((r for r in reports if str(r["report_id"]) == str(first["report_id"])), None)
    r2 = next((r for r in reports if str(r["report_id"]) == str(second["report_id"])), None)
    expect(r1 is not None and r2 is not None and r1 is not r2, "the two generations' reports do not have two ids")
    expect(first_marker in r1["body"] and r1["delivery"] == "confirmed",
           "the first report was rewritten by the second generation")
    expect(second_marker in r2["body"] and r2["delivery"] == "pending", "the second report does not carry its own answer")
    expect(r1["generation"] != r2["generation"] and r2["generation"] > r1["generation"],
           f"generations {r1['generation']!r} and {r2['generation']!r} do not tell the reports apart")

    early, other = h.scenario("generation-too-early"), h.source_id()

    def too_early(c: Ctx):
        q = c.queue()
        work_id = c.admit(q, other, session, text)["work_id"]
        pending = attempt(lambda: c.requeue(q, work_id))
        assignment = c.claim(q, "w1")
        return pending, attempt(lambda: c.requeue(q, work_id)), work_id, assignment

    pending, running, work_id, assignment = ok(early.run(too_early), "requeue on work that is not done yet")
    pending, running = Attempt.of(pending), Attempt.of(running)
    for answer, state in ((pending, "pending"), (running, "running")):
        expect(answer.raised, f"requeue of {state} work returned without an error: only done work can run again",
               "requeue must raise an error for work that is not done (any exception will do). If requeue "
               "catches it, " + SWALLOWED_HINT[0].lower() + SWALLOWED_HINT[1:])
    row = seen(early.observe()).work_by_id(work_id)
    expect(row is not None and row["state"] == "running" and assignment is not None
           and row.get("generation", assignment["generation"]) == assignment["generation"],
           f"a refused requeue changed the running work to {row}")
    return (f"{r1['report_id']} (generation {r1['generation']}) unchanged; {r2['report_id']} (generation "
            f"{r2['generation']}) new; requeue refused work that was not done ({pending.detail}, {running.detail})")


@row("transfer-intake", unit="B", topic="transfer",
     covers="Transfer: a second session, repeated input and rejected intake → no duplicate work, no unauthorized call",
     hint="admit_message: refuse a chat that is not allowed before anything else; otherwise the occurrence is "
          "chat id + message id, and the session is the one the allowed chat is bound to.")
def transfer_intake(h: Harness) -> str:
    s = h.scenario("transfer")
    chat_a, chat_b, stranger = (h.rng.randint(10_000, 99_999) for _ in range(3))
    allowed = {chat_a: h.session_id(), chat_b: h.session_id()}
    text, marker = h.text(), h.token()

    def script(c: Ctx):
        q = c.queue()
        answers = [
            c.admit_message(q, allowed, chat_a, 1, text),
            c.admit_message(q, allowed, chat_a, 1, text),  # delivered twice
            c.admit_message(q, allowed, chat_a, 2, text),  # same words, a new message
            c.admit_message(q, allowed, chat_b, 1, text),  # same message id in another chat
            c.admit_message(q, allowed, stranger, 3, text),  # not allowed
        ]
        reports = [c.work_once(q, c.loop(marker), "w1") for _ in range(4)]
        return answers, reports

    answers, reports = ok(s.run(script), "intake from two chats and a stranger")
    outcomes = [a["outcome"] for a in answers]
    expect(outcomes == ["accepted", "duplicate", "accepted", "accepted", "refused"],
           f"the five messages gave {outcomes}")
    snap = seen(s.observe())
    expect(len(snap.work) == 3, f"three distinct messages from allowed chats made {len(snap.work)} work rows")
    expect(snap.model_calls == 3, f"the model was called {snap.model_calls} times for three requests")
    sessions = sorted(w["session_id"] for w in snap.work)
    expect(sessions == sorted([allowed[chat_a], allowed[chat_a], allowed[chat_b]]),
           f"work was filed under sessions {sessions}, not the sessions the chats are bound to")
    expect(all(str(stranger) not in str(w["source_id"]) for w in snap.work), "the stranger's message was stored")
    return "one work per message from an allowed chat; the repeat was a duplicate; the stranger reached nothing"


@row("deliberate-break-caught", unit="B", topic="break",
     covers="Learner finish is replaced with a no-op → the integrated observer fails; supplied runtime cannot rescue",
     hint="Write broken_finish so that it returns a plausible Report but breaks the contract (for example it "
          "writes nothing); the rows must then fail while your real finish still passes.")
def deliberate_break_caught(h: Harness) -> str:
    from .harness import SwappedLearner

    probes = ("integrated-path", "finish-durable", "finish-atomic")
    broken = Harness(SwappedLearner(h.learner, {"finish": "broken_finish"}), seed=h.rng.randint(0, 1 << 30),
                     timeout=h.timeout, workdir=h.workdir / "broken")
    failed = []
    for probe in probes:
        try:
            ROWS[probe].run(broken)
        except Fail as failure:
            failed.append(probe)
            if "no function named 'broken_finish'" in failure.observation:
                raise Fail("broken_finish is not defined: run its cell") from None
    expect(failed, "with broken_finish in place of finish, every finish row still held: the break is not a break "
           "the observer can see (or broken_finish is a correct finish)")
    for probe in probes:
        ROWS[probe].run(h)  # the real finish must still hold
    return f"with broken_finish, {', '.join(failed)} failed; with the real finish they hold"


@row("crash-sweep", unit="B", topic="sweep",
     covers="Crash sweep: kill admit, claim, finish, a second generation's finish and deliver_one at every point; "
            "nothing admitted is lost, no done work lacks its report, no issued report is rewritten, no second send",
     hint="Each call should commit its whole change in one transaction, and deliver_one should commit 'sending' "
          "before it calls the transport.")
def crash_sweep(h: Harness) -> str:
    source, session, text = h.source_id(), h.session_id(), h.text()
    first_marker, second_marker = h.token(10), h.token(10)
    result = LoopResult(f"brief [{second_marker}]", session, 1)
    tried = {}

    def judge_admit(snap: Snapshot, where: str) -> None:
        rows = snap.work_for(source)
        expect(len(rows) == 1, f"{where}, then delivering the request again, left {len(rows)} work rows, not 1")
        expect(rows[0]["text"] == text and rows[0]["state"] == "pending", f"{where} changed the request")

    tried["admit"] = len(sweep(h, "admit", lambda c: None,
                               lambda c, _: c.admit(c.queue(), source, session, text), judge_admit,
                               after=lambda c: c.admit(c.queue(), source, session, text)))

    def admitted(c: Ctx) -> None:
        c.admit(c.queue(), source, session, text)

    def judge_claim(snap: Snapshot, where: str) -> None:
        rows = snap.work_for(source)
        expect(len(rows) == 1 and rows[0]["state"] in ("pending", "running"),
               f"{where} left the request {[r['state'] for r in rows]}: it must stay pending or be running")
        expect(not snap.reports, f"{where} created a report")

    tried["claim"] = len(sweep(h, "claim", admitted, lambda c, _: c.claim(c.queue(), "w1"), judge_claim))
    tried["finish"] = len(sweep(h, "finish", lambda c: admit_and_claim(c, source, session, text, "w1"),
                                lambda c, a: c.finish(c.queue(), a["work_id"], result),
                                lambda snap, where: _judge_completion(snap, source, where)))

    def second_run(c: Ctx) -> dict:
        q = c.queue()
        first = _finished(c, source, session, text, first_marker)
        c.deliver_one(c.transport([]))
        c.requeue(q, first["work_id"])
        return c.claim(q, "w2")

    def judge_generation(snap: Snapshot, where: str) -> None:
        work = snap.work_for(source)[0]
        reports = snap.reports_for(work["work_id"])
        old = [r for r in reports if first_marker in r["body"]]
        expect(len(old) == 1 and old[0]["delivery"] == "confirmed", f"{where} rewrote the first, already sent report")
        new = [r for r in reports if r is not old[0]]
        expect((work["state"] == "done") == (len(new) == 1) and len(new) <= 1,
               f"{where} left the second generation {work['state']!r} with {len(new)} new reports")

    tried["second finish"] = len(sweep(h, "second-finish", second_run,
                                       lambda c, a: c.finish(c.queue(), a["work_id"], result), judge_generation))
    tried["deliver_one"] = len(sweep(h, "deliver", lambda c: _finished(c, source, session, text, first_marker),
                                     lambda c, _: c.deliver_one(c.transport([])), _judge_delivery,
                                     after=lambda c: [c.deliver_one(c.transport([])) for _ in range(2)]))
    total = sum(tried.values())
    return f"{total} crash points tried ({', '.join(f'{k} {v}' for k, v in tried.items())}); every invariant held"


@row("model-based", unit="B", topic="sweep",
     covers="Model-based check: random sequences of admit, work, deliver and crashes agree with a plain model",
     hint="Read the failing sequence from the bottom up: the last step is where your queue and the model disagree.")
def model_based(h: Harness) -> str:
    from .model_based import run_model_check

    return run_model_check(h)
