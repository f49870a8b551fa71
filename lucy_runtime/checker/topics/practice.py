"""The practice notebook's rows (unit "P"): four situations beyond Lucy's own queue.

The learner's code runs in supervised children as in every other row; what holds is
read by a fresh process from the learner's outbox and ledger tables and from each
fake's own log (``checker/practice_observe.py``), never from a return value alone.
"""

from __future__ import annotations

import random
from contextlib import contextmanager
from typing import Any, Callable, Iterator

from ...errors import BrokerRejected
from ...practice import (Ack, FakeBroker, FakeCaseService, FakeSeatService, GrantResult, SeatEvent, SeatOutcome,
                         SeatScript, add_message, buggy_publish_one, case_key, create_tables, open_case, send_case)
from ...engine.child import PROBE
from ...engine.faults import Count, KillAt, Stop
from ..harness import Ctx, Harness, broken
from ..practice_observe import PracticeSnapshot, observe_practice
from ..series import Series
from ..kit import Fail, claimed, crash_states, expect, ok, row, topic

UNIT = "P"

topic("kill-window", "practice 10–35: stop the buggy worker inside its gap")
topic("in-flight", "practice 10–35: a state for 'on its way', and one message per row")
topic("grant", "practice 35–55: at most one seat per request")
topic("recover", "practice 55–75: recover from the service's receipt")


@contextmanager
def practice(h: Harness) -> Iterator[Harness]:
    """A harness over the same learner whose scenarios start without the learner's Unit A schema."""
    p = Harness(h.learner, seed=h.rng.randint(0, 1 << 30), timeout=h.timeout,
                workdir=h.workdir / f"practice-{h.token(8)}", schema=None)
    try:
        yield p
    finally:
        h.crash_points += p.crash_points


def look(scenarios: list, logs: list | None = None, *, tables: bool = True) -> list[PracticeSnapshot]:
    """What a fresh process finds in each scenario's database and log (or the log given beside it).

    ``tables=False``: the row reads only the fake's log (exercise 2 keeps no table of its own).
    """
    logs = logs or [s.log for s in scenarios]
    snaps = observe_practice([{"db": str(s.db), "log": str(log)} for s, log in zip(scenarios, logs)],
                             fork=all(s.harness.forks_observer for s in scenarios))
    for snap in snaps:
        if snap.problems and tables:
            raise Fail("the observer, reading the files from a fresh process, found " + "; ".join(snap.problems),
                       "Keep the supplied outbox and ledger tables (create_tables makes them) and write through "
                       "the store you are given.")
    return snaps


# --- calls into learner code, in the child: plain values back, or a contract break --------------


def publish(c: Ctx, broker: FakeBroker, **settings: Any) -> str | None:
    value = c.fn("publish_one")(c.store, broker, **settings)
    if value is not None and not isinstance(value, Ack):
        raise broken(value, f"publish_one returned {value!r}; it should return the broker's Ack, or None when "
                            "nothing is left to publish")
    return None if value is None else value.key


def grant(c: Ctx, service: FakeSeatService, event: SeatEvent, sleep: Callable[[float], None], rng: random.Random,
          max_attempts: int = 5) -> dict:
    value = c.fn("grant_seat")(service, event, sleep, rng, max_attempts=max_attempts)
    if not isinstance(value, GrantResult) or not isinstance(value.outcome, SeatOutcome):
        raise broken(value, f"grant_seat returned {value!r}; it should return a GrantResult(outcome, seat_id, attempts)")
    return {"outcome": value.outcome.value, "seat_id": value.seat_id}


def recover(c: Ctx, service: FakeCaseService) -> int:
    value = c.fn("recover_cases")(c.store, service)
    if isinstance(value, bool) or not isinstance(value, int):
        raise broken(value, f"recover_cases returned {value!r}; it should return how many rows it recovered")
    return value


def still_there(found: dict | None, what: str) -> dict:
    """A row the checker's own setup wrote, as the observer found it; only the learner's code can have
    deleted it, and a row it deleted can no longer say whether it was sent."""
    return claimed(found, f"{what} is gone from the table after your code ran",
                   "Keep every row and record what happened to it in its own columns: a deleted row "
                   "cannot tell the next run, or anyone reading the table, that it was already sent.")


def broker(c: Ctx) -> FakeBroker:
    return FakeBroker(c.scenario.log, probe=PROBE)


def case_service(c: Ctx) -> FakeCaseService:
    return FakeCaseService(c.scenario.log, probe=PROBE)


def practice_sweep(p: Harness, name: str, setup: Callable[[Ctx], Any], call: Callable[[Ctx, Any], Any],
                   judge: Callable[[PracticeSnapshot, str], None], after: Callable[[Ctx], Any],
                   roles: dict[str, str] | None = None) -> list[str]:
    """Crash ``call`` before each of its points in turn; run ``after`` in a new process; judge the files
    (``kit.crash_states``: runs that learner code cannot tell apart, in an order it cannot know).

    ``roles`` names the checker's made-up ids by their role ("the first outbox row") in what the row says."""
    points, states = crash_states(p, name, setup, call, after=after)
    for made_up, role in (roles or {}).items():
        points = [point.replace(made_up, role) for point in points]
    expect(any(pt.startswith(("write", "send")) for pt in points),
           f"{name} wrote nothing through the store and sent nothing, so it cannot have done its job")
    for state in states:
        if state.crashed is not None:
            ok(state.crashed, f"{name} stopped before {points[state.n - 1]}", expect="crashed", harness=p)
        if state.restarted is not None:
            ok(state.restarted, f"a new process after {name} was stopped before {points[state.n - 1]}")
    for state, snap in zip(states, look([s.kept for s in states])):
        judge(snap, f"stopping {name} before {points[state.n - 1]!r}, then running it again")
    return points


# --- exercise 1: sent before ack -----------------------------------------------------------------


def outbox_with(c: Ctx, *messages: tuple[str, str]) -> None:
    create_tables(c.store)
    for row_id, payload in messages:
        add_message(c.store, row_id, payload)


@row("practice-kill-window", unit=UNIT, topic="kill-window",
     covers="Exercise 1: a kill hook after the buggy worker's status write strands a row: sent, and the broker "
            "empty, seen from a fresh process; a clean run is not a pass",
     hint="Remember that a write updated the outbox's status (kind 'write'), then call stop_here() at the next "
          "'committed'. Stop at no other commit.")
def practice_kill_window(h: Harness) -> str:
    with practice(h) as p:
        s = p.scenario("kill-window")
        first, other = f"m-{p.token()}", f"m-{p.token()}"
        ok(s.run(lambda c: outbox_with(c, (first, f"order {p.token(4)} shipped"))), "preparing the outbox")

        def strand(c: Ctx):
            c.store.set_hook(c.fn("kill_after_status_write"))
            add_message(c.store, other, "a commit that is not the status write")
            buggy_publish_one(c.store, broker(c))

        result = s.run(strand, plan=Stop)
        if result.status == "returned":
            raise Fail("your hook never stopped the process: the buggy worker ran to its end, and a clean run "
                       "proves nothing about the gap")
        ok(result, "the buggy worker with your hook", expect="crashed", harness=p)
        snap = look([s])[0]
        stranded, added = snap.row(first), snap.row(other)
        expect(added is not None, "the process stopped before an ordinary commit that came before the status write",
               "Stop only after the transaction that changed the outbox's status, not at the first commit you see.")
        expect(stranded is not None and stranded["status"] == "sent",
               f"a fresh process finds the first outbox row {stranded and stranded['status']!r}: the process stopped "
               "before the "
               "status write committed, so nothing was stranded")
        expect(snap.messages_for(first) == 0, "the broker already holds the row: the process stopped after publish")
    return "a fresh process found the first outbox row 'sent' and the broker empty: the row is stranded"


@row("practice-in-flight-resume", unit=UNIT, topic="in-flight",
     covers="Exercise 1: a crash just before or just after the broker publish leaves a distinct in-flight state; "
            "the next run publishes the row once, keyed by its row id, and records it sent",
     hint="Commit 'publishing' before calling the broker, pick 'pending' and 'publishing' rows, publish with the "
          "row id as the key, and write 'sent' only after publish returned.")
def practice_in_flight_resume(h: Harness) -> str:
    moments = (("send", "just before the broker received it"), ("accepted", "just after the broker stored it"))
    with practice(h) as p:
        # One series: the same outbox and the same code for both moments, in an order the parent draws,
        # so publish_one cannot tell whether it will be stopped before the broker or after it.
        row_id, payload = f"m-{p.token()}", f"order {p.token(4)} shipped"
        row_ids = [row_id] * len(moments)
        runs: dict[int, tuple] = {}
        with Series(p, "in-flight", lambda c: outbox_with(c, (row_id, payload)),
                    others={"publish": lambda c: publish(c, broker(c)),
                            "again": lambda c: [publish(c, FakeBroker(c.scenario.log)) for _ in range(2)]}) as series:
            for n in series.order(len(moments)):
                prepared = series.run(Count())
                stopped = series.run(KillAt(1, kinds=(moments[n - 1][0],)), script="publish")
                crash = series.copy()
                runs[n] = (prepared, stopped, crash, series.run(Count(), script="again"), series.keep())
        for n, (_, when) in enumerate(moments, start=1):
            ok(runs[n][0], "preparing the outbox")
            ok(runs[n][1], f"publish_one stopped {when}", expect="crashed", harness=p)
        crashed = [snap.row(row_id) for snap in look([runs[n][2] for n in range(1, len(moments) + 1)])]
        answers = [ok(runs[n][3], "a new process publishes again") for n in range(1, len(moments) + 1)]
        resumed = look([runs[n][4] for n in range(1, len(moments) + 1)])
    states = [got and got["status"] for got in crashed]
    for status, (moment, when) in zip(states, moments):
        expect(status != "sent", f"stopped {when}, the row says 'sent' while the broker "
               f"{'is empty' if moment == 'send' else 'has not answered'}: the status was written before publish returned")
        expect(status not in ("pending", None), f"stopped {when}, the row is {status!r}: nothing says it may be "
               "on its way", "Mark the row with a state of its own (for example 'publishing') and commit it "
               "before you call the broker.")
    for snap, row_id, answer, (_, when) in zip(resumed, row_ids, answers, moments):
        got, messages = still_there(snap.row(row_id), "the outbox row"), snap.messages_for(row_id)
        expect(got["status"] == "sent" and messages == 1,
               f"stopped {when}, then run again, the row is {got['status']!r} and the broker holds {messages} "
               "messages for it, not 'sent' and 1",
               "Pick up 'publishing' rows again, and publish with the row id as the key: the broker ignores a key "
               "it has seen, so a second publish of the same row adds nothing.")
        expect(answer[1] is None, f"the run after the row was sent answered {answer[1]!r}, not None")
    return f"the crashes left {states[0]!r} and {states[1]!r}; each next run published the row once and recorded it sent"


@row("practice-publish-sweep", unit=UNIT, topic="in-flight",
     covers="Exercise 1: publish_one killed at every write, commit and broker call, then run again: never 'sent' "
            "without a message, never two messages for one row",
     hint="Each step must leave a state the next run can finish: 'publishing' committed before the publish, the "
          "row id as the key, 'sent' only after the broker answered.")
def practice_publish_sweep(h: Harness) -> str:
    with practice(h) as p:
        rows = [(f"m-{p.token()}", f"order {p.token(4)} shipped") for _ in range(2)]

        def judge(snap: PracticeSnapshot, where: str) -> None:
            for (row_id, _), which in zip(rows, ("first", "second")):
                got, messages = snap.row(row_id), snap.messages_for(row_id)
                expect(messages <= 1, f"{where}, the broker holds {messages} messages for the {which} outbox row")
                expect(got is not None and got["status"] == "sent" and messages == 1,
                       f"{where}, the {which} outbox row is {got and got['status']!r} with {messages} messages, "
                       "not sent once")

        points = practice_sweep(p, "publish", lambda c: outbox_with(c, *rows), lambda c, _: publish(c, broker(c)),
                                judge, after=lambda c: [publish(c, FakeBroker(c.scenario.log)) for _ in range(3)],
                                roles={rows[0][0]: "the first row", rows[1][0]: "the second row"})
    return f"{len(points)} crash points in publish_one: every row ended sent, with exactly one message"


@row("practice-publish-no-head-of-line", unit=UNIT, topic="in-flight",
     covers="Exercise 1: a row the broker refuses every time (a poison payload) is tried at most max_attempts "
            "times, then set aside where a person can see it; the rows behind it are published",
     hint="Count each attempt when you mark the row 'publishing'. Pick only rows with fewer than max_attempts "
          "attempts, and mark a 'publishing' row that has used them all 'failed' (a dead letter), so the oldest "
          "row cannot hold up every row behind it.")
def practice_publish_no_head_of_line(h: Harness) -> str:
    with practice(h) as p:
        s = p.scenario("head-of-line")
        poison, behind = f"m-{p.token()}", f"m-{p.token()}"

        def script(c: Ctx):
            outbox_with(c, (poison, f"order {p.token(4)} with a payload the broker refuses"),
                        (behind, f"order {p.token(4)} shipped"))
            refusing = FakeBroker(c.scenario.log, probe=PROBE, rejects=frozenset({poison}))
            answers, in_flight = [], None
            for _ in range(8):  # a worker that goes on after each error, as a supervisor would restart it
                try:
                    answers.append(publish(c, refusing, max_attempts=3))
                except BrokerRejected:
                    answers.append("rejected")
                if in_flight is None:  # the state a row is in while it is being published, as this code names it
                    in_flight = c.store.query("SELECT status FROM outbox WHERE row_id = ?", (poison,))[0]["status"]
            return answers, in_flight

        answers, in_flight = ok(s.run(script), "publish_one, eight times, with a poison row first in the outbox")
        snap = look([s])[0]
    tried = snap.publishes_of(poison)
    got = still_there(snap.row(behind), "the outbox row behind the poison row")
    expect(tried <= 3, f"the poison row was sent to the broker {tried} times with max_attempts=3",
           "Stop picking a row once it has used max_attempts attempts.")
    expect(got["status"] == "sent" and snap.messages_for(behind) == 1,
           f"after eight runs the row behind the poison row is {got['status']!r} with "
           f"{snap.messages_for(behind)} messages: the first row held up every row behind it")
    left = still_there(snap.row(poison), "the poison row")
    expect(left["status"] not in ("sent", "pending"), f"the poison row ended {left['status']!r}: "
           "it was never published, and nothing says it was set aside")
    expect(left["status"] != in_flight,
           f"the poison row ended {left['status']!r}, the state of a row being published right now: a person "
           "cannot tell it from one in flight, and nothing will ever move it",
           "Set a row that has used its attempts aside in a state of its own (a dead letter), where a person sees it.")
    expect(answers[-1] is None, f"the last run answered {answers[-1]!r}, not None: a row is still being picked")
    return (f"the poison row was tried {tried} times and ended {left['status']!r}; the row behind it was "
            "published once")


# --- exercise 2: the retried grant ---------------------------------------------------------------


def grants(p: Harness, name: str, scripts: list[list[SeatScript]], *, max_attempts: int = 5,
           replay: bool = False) -> tuple[list[dict], list[PracticeSnapshot], list[list[float]]]:
    """``grant_seat`` for one new request per script, each against a service of its own, in one child.

    With ``replay`` each event is delivered again in a new process (a redelivered event).
    """
    s = p.scenario(name)
    events = [SeatEvent(f"req-{p.token(8)}", f"ws-{p.token(4)}", f"u-{p.token(8)}") for _ in scripts]
    logs = [s.dir / f"seats-{n}.sqlite3" for n in range(len(scripts))]
    seed = p.rng.randint(0, 1 << 30)

    def script(c: Ctx):
        answers, pauses = [], []
        for log, event, steps in zip(logs, events, scripts):
            slept: list[float] = []
            answers.append(grant(c, FakeSeatService(log, script=steps), event, slept.append, random.Random(seed),
                                 max_attempts))
            pauses.append(slept)
        return answers, pauses

    answers, pauses = ok(s.run(script), f"grant_seat under {len(scripts)} scripted failures")
    if replay:
        again = ok(s.run(lambda c: [grant(c, FakeSeatService(log), event, lambda _: None, random.Random(seed))
                                    for log, event in zip(logs, events)]), "the same events delivered again")
        answers = [dict(a, again=b) for a, b in zip(answers, again)]
    return answers, look([s] * len(logs), logs, tables=False), pauses


def _named(steps: list[SeatScript]) -> str:
    return ", ".join(step.value for step in steps) or "no failure"


@row("practice-grant-at-most-once", unit=UNIT, topic="grant",
     covers="Exercise 2: under every scripted failure (lost answers, resets, 503, 429) and a redelivered event, at "
            "most one seat per request id; a confirmed grant names the service's seat",
     hint="Derive the idempotency key from event.request_id once, and send it on every attempt. Never make a key "
          "per attempt, and never retry without one.")
def practice_grant_at_most_once(h: Harness) -> str:
    lost, reset = SeatScript.COMMIT_THEN_TIMEOUT, SeatScript.RESET
    scripts = [[lost], [reset], [lost, lost], [SeatScript.UNAVAILABLE, lost, SeatScript.THROTTLED], [reset, lost, reset],
               [], [lost] * 5]
    with practice(h) as p:
        answers, snaps, _ = grants(p, "grant-once", scripts, replay=True)
    for steps, answer, snap in zip(scripts, answers, snaps):
        seats = snap.seats
        keys = {post["key"] for post in snap.posts}
        expect(len(seats) <= 1, f"with {_named(steps)}, then the event delivered again, the service granted "
               f"{len(seats)} seats for one request (keys sent: {sorted(map(str, keys))})")
        expect(None not in keys, f"with {_named(steps)}, a post carried no idempotency key")
        expect(len(keys) == 1, f"with {_named(steps)}, the attempts for one request carried {len(keys)} different keys")
        expect(len(seats) == 1, f"with {_named(steps)}, no seat was granted")
        for got in (answer, answer["again"]):
            if got["outcome"] == "granted":
                expect(got["seat_id"] == seats[0]["seat_id"], f"with {_named(steps)}, grant_seat named seat "
                       f"{got['seat_id']!r}; the service holds {seats[0]['seat_id']!r}")
        expect(answer["again"]["outcome"] == "granted", f"with {_named(steps)}, the redelivered event answered "
               f"{answer['again']['outcome']!r}: for a key it knows, the service answers with the stored 201",
               "A retry of a key whose first request finished gets the stored response: 201 with the same seat.")
    request_keys = [next(iter({post["key"] for post in snap.posts})) for snap in snaps]
    expect(len(set(request_keys)) == len(request_keys), "two different requests were sent with the same key")
    return f"{len(scripts)} scripted failures, each request delivered twice: one seat per request, one key each"


@row("practice-grant-error-classes", unit=UNIT, topic="grant",
     covers="Exercise 2: 400, 403 and 422 stop at once; 409 (the first request with this key is still being "
            "processed), 429 and 503 are retried with the same key; a timeout or reset is UNKNOWN, never a failure, "
            "and so is giving up after a 409 or a 503, which may have granted the seat; EXHAUSTED only after 429s",
     hint="A 409, a 5xx or no answer may have granted the seat, so giving up after one of them is UNKNOWN, never "
          "EXHAUSTED; 429 (and 408, 425) prove nothing was done yet; other 4xx will never work and stop at once. "
          "Every retry carries the same key.")
def practice_grant_error_classes(h: Harness) -> str:
    cases = [
        ([SeatScript.BAD_REQUEST], "refused", 1, 0),
        ([SeatScript.FORBIDDEN], "refused", 1, 0),
        ([SeatScript.UNAVAILABLE, SeatScript.OK], "granted", 2, 1),
        ([SeatScript.IN_PROGRESS, SeatScript.OK], "granted", 2, 1),
        ([SeatScript.THROTTLED, SeatScript.THROTTLED], "granted", 3, 1),
        ([SeatScript.THROTTLED] * 3, "exhausted", 3, 0),
        ([SeatScript.UNAVAILABLE] * 3, "unknown", 3, 0),
        ([SeatScript.IN_PROGRESS] * 3, "unknown", 3, 0),
        ([SeatScript.COMMIT_THEN_TIMEOUT] * 3, "unknown", 3, 1),
        ([SeatScript.RESET] * 3, "unknown", 3, 0),
    ]
    with practice(h) as p:
        answers, snaps, pauses = grants(p, "grant-classes", [c[0] for c in cases], max_attempts=3)
    for (steps, outcome, posts, seats), answer, snap, slept in zip(cases, answers, snaps, pauses):
        expect(answer["outcome"] == outcome, f"with {_named(steps)} and max_attempts=3, grant_seat answered "
               f"{answer['outcome']!r}, not {outcome!r}")
        expect(len(snap.posts) == posts, f"with {_named(steps)}, the service saw {len(snap.posts)} posts, not {posts}")
        expect(len(snap.seats) == seats, f"with {_named(steps)}, the service holds {len(snap.seats)} seats")
        if outcome == "refused":
            expect(not slept, f"with {_named(steps)}, grant_seat paused {slept} before giving up on a request that "
                   "can never work")
    return ("400/403 refused at once; 409 (in progress), 429 and 503 retried; timeouts, resets, and giving up "
            "after 409s or 503s left UNKNOWN; only throttling exhausted")


@row("practice-grant-backoff", unit=UNIT, topic="grant",
     covers="Exercise 2: retries stop at max_attempts; the pauses are bounded, grow from attempt to attempt, and "
            "carry jitter drawn from the given rng",
     hint="Pause with sleep(rng.uniform(0, min(cap, base * 2 ** attempt))): it grows, it is capped, and two "
          "clients that failed together do not come back together.")
def practice_grant_backoff(h: Harness) -> str:
    with practice(h) as p:
        s = p.scenario("backoff")
        event = SeatEvent(f"req-{p.token(8)}", f"ws-{p.token(4)}", f"u-{p.token(8)}")
        seeds = [p.rng.randint(0, 1 << 30) for _ in range(10)]

        def script(c: Ctx):
            runs, posts = [], {}
            for n, seed in enumerate(seeds):
                slept: list[float] = []
                log = c.scenario.dir / f"busy-{n}.sqlite3"
                grant(c, FakeSeatService(log, script=[SeatScript.UNAVAILABLE] * 10), event, slept.append,
                      random.Random(seed), 4)
                runs.append(slept)
            for attempts in (2, 6):
                log = c.scenario.dir / f"cap-{attempts}.sqlite3"
                grant(c, FakeSeatService(log, script=[SeatScript.UNAVAILABLE] * 10), event, lambda _: None,
                      random.Random(1), attempts)
                posts[attempts] = len(FakeSeatService(log).posts())
            return runs, posts

        runs, posts = ok(s.run(script, timeout=6 * h.timeout), "grant_seat against a service that answers 503 every time")
    expect(posts == {"2": 2, "6": 6}, f"with max_attempts 2 and 6 the service saw {posts['2']} and {posts['6']} posts")
    first = runs[0]
    expect(len(first) in (3, 4), f"4 attempts made {len(first)} pauses, not 3")
    every = [x for run in runs for x in run]
    expect(all(isinstance(x, (int, float)) and 0 <= x <= 60 for x in every),
           f"pauses must be between 0 and 60 seconds; saw {sorted(every)[:3]} … {sorted(every)[-3:]}")
    expect(len({tuple(run) for run in runs}) > 1, f"10 clients with different rngs all paused {first}: no jitter, so "
           "clients that failed together retry together")
    growth = [max(run[i] for run in runs if len(run) > i) for i in range(3)]
    expect(growth[2] >= 2 * growth[0], f"the longest pauses at attempts 1, 2 and 3 were {[round(g, 3) for g in growth]}: "
           "they do not grow, so a struggling service gets no room")
    return f"capped at max_attempts; pauses jittered and growing (longest per attempt: {[round(g, 3) for g in growth]})"


# --- exercise 3: kill the worker -------------------------------------------------------------------


@row("practice-recover-from-receipt", unit=UNIT, topic="recover",
     covers="Exercise 3: after the worker dies between sending and recording, recovery takes the receipt from the "
            "service by the case's key, sends only what the service lacks, and never a duplicate request",
     hint="For each 'sent' row without a receipt: service.lookup(case_key(tenant, case_id)). Store a receipt whose "
          "digest is case_digest(your proposal); submit once, with the same key, only when the look-up finds "
          "nothing; record a refusal (intent 'refused', the reason in note) instead of skipping it.")
def practice_recover_from_receipt(h: Harness) -> str:
    with practice(h) as p:
        s = p.scenario("recover")
        tenant = f"t{p.token(4)}"
        committed, lost, done, fresh, clash = (f"C{p.rng.randint(100, 999)}{p.token(3)}" for _ in range(5))
        keys = {case: case_key(tenant, case) for case in (committed, lost, done, fresh, clash)}

        def setup(c: Ctx):
            create_tables(c.store)
            for case in (committed, lost, done, fresh, clash):
                open_case(c.store, tenant, case, f"replace pump P-{p.token(3)} for {case}")
            send_case(c.store, FakeCaseService(c.scenario.log), done)
            # another proposal already holds the clash's key at the service: its own send is refused, unrecorded
            FakeCaseService(c.scenario.log).submit(keys[clash], f"replace valve V-{p.token(3)} for {clash}")
            send_case(c.store, FakeCaseService(c.scenario.log), clash)

        ok(s.run(setup), "preparing the ledger")
        ok(s.run(lambda c: send_case(c.store, case_service(c), committed), plan=lambda: KillAt(1, kinds=("accepted",))),
           "the worker dies after the service committed", expect="crashed", harness=p)
        ok(s.run(lambda c: send_case(c.store, case_service(c), lost), plan=lambda: KillAt(1, kinds=("send",))),
           "the worker dies before its request left", expect="crashed", harness=p)
        first = ok(s.run(lambda c: recover(c, case_service(c))), "recover_cases in a new process")
        second = ok(s.run(lambda c: recover(c, case_service(c))), "recover_cases once more")
        snap = look([s])[0]
    receipts = {a["key"]: a["receipt_id"] for a in snap.actions}
    for case, what in ((committed, "the service had committed"), (lost, "the request never arrived")):
        got = snap.case(case)
        expect(got is not None and got["receipt"] == receipts.get(keys[case]),
               f"when {what}, the ledger holds receipt {got and got['receipt']!r}; the service's record says "
               f"{receipts.get(keys[case])!r}", "Take the receipt from service.lookup(...) or service.submit(...), "
               "never from the ledger or a value you make up.")
        expect(snap.submits(keys[case]) == 1, f"when {what}, the service received {snap.submits(keys[case])} submit "
               "requests for the case, not 1", "Ask the service first: submit only when lookup finds nothing.")
    expect(len(snap.actions) == 4 and len(receipts) == 4,
           f"the service holds {len(snap.actions)} actions for 3 sent cases and one other proposal")
    refused = still_there(snap.case(clash), "the case whose key holds another proposal")
    expect(refused["receipt"] is None, f"a case whose key holds another proposal at the service got receipt "
           f"{refused['receipt']!r}: that action is not this case's",
           "Compare the receipt's digest with case_digest(the row's proposal) before you store it.")
    expect(refused["intent"] != "sent", f"a case the service refused still says {refused['intent']!r}: "
           "nothing records the refusal", "Record a refusal in the ledger (intent 'refused', the reason in note) "
           "so a person sees it and the next run leaves it alone.")
    expect(still_there(snap.case(done), "the case that already had its receipt")["receipt"] == receipts[keys[done]]
           and snap.submits(keys[done]) == 1,
           "recovery touched a case that already had its receipt")
    expect(still_there(snap.case(fresh), "the case whose worker never sent it")["intent"] == "new" and snap.submits(keys[fresh]) == 0,
           "recovery sent a case whose worker never recorded an intent")
    expect((first, second) == (2, 0), f"recover_cases answered {first} and then {second}; 2 rows needed it, then none")
    return ("both stranded cases carry the service's own receipt; one submit request per case, none twice; the "
            "case whose key holds another proposal is recorded as refused")


@row("practice-recover-sweep", unit=UNIT, topic="recover",
     covers="Exercise 3: recovery killed at every write, commit and service call, then run again: one action per "
            "case, each ledger row with the service's receipt",
     hint="Record each receipt in its own committed transaction, and ask the service again on the next run: the "
          "look-up finds what an interrupted run already submitted.")
def practice_recover_sweep(h: Harness) -> str:
    with practice(h) as p:
        tenant = f"t{p.token(4)}"
        committed, lost = f"C{p.token(5)}", f"C{p.token(5)}"

        def setup(c: Ctx):
            create_tables(c.store)
            for case in (committed, lost):
                open_case(c.store, tenant, case, f"replace pump for {case}")
            with c.store.transaction() as tx:  # the worker recorded its intent and died, twice
                tx.execute("UPDATE ledger SET intent = 'sent'")
            FakeCaseService(c.scenario.log).submit(case_key(tenant, committed), f"replace pump for {committed}")

        def judge(snap: PracticeSnapshot, where: str) -> None:
            receipts = {a["key"]: a["receipt_id"] for a in snap.actions}
            expect(len(snap.actions) == 2, f"{where}, the service holds {len(snap.actions)} actions for 2 cases")
            for case, which in ((committed, "the case the service had committed"), (lost, "the case it never got")):
                key, got = case_key(tenant, case), still_there(snap.case(case), which)
                expect(got["receipt"] == receipts.get(key),
                       f"{where}, {which} holds receipt {got['receipt']!r}, the service {receipts.get(key)!r}")
                expect(snap.submits(key) == 1, f"{where}, the service received {snap.submits(key)} submits for {which}")

        points = practice_sweep(p, "recover", setup, lambda c, _: recover(c, case_service(c)), judge,
                                after=lambda c: recover(c, case_service(c)),
                                roles={case_key(tenant, committed): "the committed case's key",
                                       case_key(tenant, lost): "the lost case's key"})
    return f"{len(points)} crash points in recover_cases: one action and the service's receipt for each case"
