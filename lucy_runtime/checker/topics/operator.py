"""An operator's way out for stuck work, and the numbers an operator watches (Unit B)."""

from __future__ import annotations

import sqlite3
import time
from contextlib import closing

from ...loop import LoopResult
from ...work import REPORT_COLUMNS, WORK_COLUMNS
from ..attempts import Attempt, attempt
from ..harness import Ctx, Harness
from ..kit import admit_and_claim, expect, expect_raised, ok, row, seeded, seen, topic, whole_number
from ..observe import _find_table

topic("release", "going further: a way out for a stuck request")
topic("operator", "going further: an operator's view")


@row("release-fenced", unit="B", topic="release", runs_unit_a=("claim", "finish"),
     covers="An operator releases a stuck running request: it goes back to pending as its next generation, so a "
            "late finish by the first worker is refused by the fence and the request still ends in one report; "
            "release refuses work that is not running",
     hint="release: in one conditional update, move the work from 'running' to 'pending' with generation + 1 and "
          "no worker (… WHERE work_id = ? AND state = 'running'), and raise when it changed no row. The new "
          "generation is what makes the old worker's Assignment stale, even when a worker of the same name "
          "claims the work again.")
def release_fenced(h: Harness) -> str:
    s = h.scenario("release")
    source, session, text = h.source_id(), h.session_id(), h.text()
    late, current = (LoopResult(f"brief [{h.token(10)}]", session, 1) for _ in range(2))

    def script(c: Ctx):
        q = c.queue()
        first = admit_and_claim(c, source, session, text, "w1")
        c.release(q, first["work_id"])
        second = c.claim(q, "w1")  # worker w1 was restarted and claims the released request again
        stale = attempt(lambda: c.finish(q, first, late))  # the first w1 process was only slow, and now finishes
        own = attempt(lambda: c.finish(q, second, current)) if second is not None else None
        return first, second, stale, own

    first, second, stale, own = ok(s.run(script), "w1 claims, an operator releases, w1 claims again, the first "
                                                  "w1 finishes late")
    expect(second is not None, "after release, claim found nothing to do: the request did not go back to pending")
    expect(whole_number(second["generation"]) != whole_number(first["generation"]),
           f"the released request was claimed again at generation {second['generation']!r}, the same as before: "
           "the first worker's Assignment is still current")
    snap = seen(s.observe())
    work = snap.work_for(source)
    bodies = [str(r["body"]) for r in snap.reports_for(work[0]["work_id"])] if work else []
    expect(not any(late.text in b for b in bodies),
           "the first worker's late finish landed: its answer was stored for a request an operator had released")
    expect_raised(Attempt.of(stale), "the first worker's late finish, after release",
                  "the fence must refuse a claim from before the release")
    expect(own is not None and Attempt.of(own).raised is False and len(work) == 1 and work[0]["state"] == "done",
           f"the new claim could not finish the released request (it is {[w['state'] for w in work]})")
    expect(len(bodies) == 1 and current.text in bodies[0],
           f"the released request ended with {len(bodies)} reports, not one with the new claim's answer")

    early, other, done = h.scenario("release-not-running"), h.source_id(), h.source_id()

    def not_running(c: Ctx):
        q = c.queue()
        finished_id = seeded(c, done, session, text, h.token())["work_id"]  # first: it may run the learner's work_once
        pending = c.admit(q, other, session, text)["work_id"]
        return (pending, finished_id, attempt(lambda: c.release(q, pending)),
                attempt(lambda: c.release(q, finished_id)))

    pending, finished_id, on_pending, on_done = ok(early.run(not_running), "release of pending and of done work")
    for answer, what in ((on_pending, "pending"), (on_done, "done")):
        expect_raised(Attempt.of(answer), f"release of {what} work", "only running work needs a way out")
    snap = seen(early.observe())
    states = [(snap.work_by_id(pending) or {}).get("state"), (snap.work_by_id(finished_id) or {}).get("state")]
    expect(states == ["pending", "done"], f"a refused release changed the work to {states}")
    return ("the released request ran again as generation " f"{second['generation']}; the first worker's late "
            "finish was refused; one report; release refused pending and done work")


@row("operator-numbers", unit="B", topic="operator",
     covers="The numbers an operator watches, each one query: the oldest pending request's age, UNKNOWN reports, "
            "failed reports and failed work",
     hint="operator_numbers: now minus MIN(admitted_at) of pending work (0 when none is pending), and COUNT(*) of "
          "reports in 'unknown', of reports in 'failed', and of work in 'failed'. Return OperatorNumbers(…).")
def operator_numbers(h: Harness) -> str:
    s = h.scenario("operator")
    session, text, marker = h.session_id(), h.text(), h.token()
    sources = [h.source_id() for _ in range(5)]
    waited = float(h.rng.randint(600, 7200))

    def script(c: Ctx):
        q = c.queue()
        empty = c.operator_numbers(time.time())
        reports = [seeded(c, src, session, text, marker)["report_id"] for src in sources[:3]]
        set_state(c, REPORT_COLUMNS, "report", "delivery", "report_id", [("unknown", reports[0]),
                                                                         ("failed", reports[1])])
        set_state(c, WORK_COLUMNS, "work", "state", "source_id", [("failed", sources[2])])
        c.admit(q, sources[3], session, text)
        c.admit(q, sources[4], session, text)
        backdate(c, sources[3], EARLIER)  # the oldest pending request came an hour before the other one
        return empty, c.operator_numbers(time.time() + waited)

    empty, numbers = ok(s.run(script), "an empty store, then a store with one of each")
    expect(whole_number(empty["unknown_reports"]) == 0 and whole_number(empty["failed_reports"]) == 0
           and whole_number(empty["failed_work"]) == 0 and empty["oldest_pending_seconds"] == 0,
           f"an empty store gave {empty}: every number should be 0")
    snap = seen(s.observe())
    expect(sorted(str(w["state"]) for w in snap.work) == ["done", "done", "failed", "pending", "pending"]
           and sorted(str(r["delivery"]) for r in snap.reports) == ["failed", "pending", "unknown"],
           "the checker could not set up one UNKNOWN report, one failed report and one failed request in your "
           "tables", "Keep the schema's states (the CHECK on work.state and report.delivery) as given.")
    for name, want in (("unknown_reports", 1), ("failed_reports", 1), ("failed_work", 1)):
        expect(whole_number(numbers[name]) == want,
               f"the store holds {want} of {name.replace('_', ' ')}; operator_numbers counted {numbers[name]!r}")
    age = numbers["oldest_pending_seconds"]
    oldest = waited + EARLIER
    expect(isinstance(age, (int, float)) and oldest <= age <= oldest + 120,
           f"two requests are pending, admitted about {oldest:.0f} s and {waited:.0f} s before the `now` given; you "
           f"said the oldest pending one has waited {age!r} s",
           "Subtract MIN(admitted_at) of pending work from the `now` you are given; the schema's admitted_at is the "
           "time of admission in seconds.")
    return f"oldest pending {age:.0f} s, 1 UNKNOWN, 1 failed report, 1 failed request; an empty store gave zeros"


EARLIER = 3600.0
"""How much earlier than the other pending request the operator row's oldest one was admitted (seconds)."""


def learner_table(c: Ctx, columns: tuple[str, ...], what: str) -> str:
    """The name of the learner's ``what`` table, found by its columns as the observer finds it."""
    with closing(sqlite3.connect(c.store.path)) as look:  # reading only: the writes go through the store
        table, _ = _find_table(look, columns, what, [], [])
    return table


def backdate(c: Ctx, source: str, seconds: float) -> None:
    """Move a request's admission time back, in the learner's work table."""
    table = learner_table(c, WORK_COLUMNS, "work")
    with c.store.transaction() as tx:
        tx.execute(f'UPDATE "{table}" SET admitted_at = admitted_at - ? WHERE source_id = ?', (seconds, source))


def set_state(c: Ctx, columns: tuple[str, ...], what: str, column: str, key: str, rows: list[tuple]) -> None:
    """Put rows of the learner's ``what`` table into a state."""
    table = learner_table(c, columns, what)
    with c.store.transaction() as tx:
        for state, value in rows:
            tx.execute(f'UPDATE "{table}" SET {column} = ? WHERE {key} = ?', (state, value))
