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
from ...practice import (Ack, Broker, FakeBroker, FakeSeatService, GrantResult, SeatEvent, SeatOutcome, SeatScript,
                         add_message, buggy_publish_one, create_tables)
from ...engine import child as _child
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


def publish(c: Ctx, broker: Broker, **settings: Any) -> str | None:
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


def still_there(found: dict | None, what: str) -> dict:
    """A row the checker's own setup wrote, as the observer found it; only the learner's code can have
    deleted it, and a row it deleted can no longer say whether it was sent."""
    return claimed(found, f"{what} is gone from the table after your code ran",
                   "Keep every row and record what happened to it in its own columns: a deleted row "
                   "cannot tell the next run, or anyone reading the table, that it was already sent.")


def broker(c: Ctx) -> FakeBroker:
    return FakeBroker(c.scenario.log, probe=PROBE)


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
     hint="A crash between your commit and the broker's answer must leave the row in a state that says it may be "
          "on its way, one the next run picks up; and the next run's publish must be one the broker recognises as "
          "the same message.")
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
                fresh = series.copy()  # the row as never tried: what a row on its way must differ from
                stopped = series.run(KillAt(1, kinds=(moments[n - 1][0],)), script="publish")
                crash = series.copy()
                runs[n] = (prepared, stopped, fresh, crash, series.run(Count(), script="again"), series.keep())
        order = range(1, len(moments) + 1)
        for n, (_, when) in enumerate(moments, start=1):
            ok(runs[n][0], "preparing the outbox")
            ok(runs[n][1], f"publish_one stopped {when}", expect="crashed", harness=p)
        untried, crashed = look([runs[n][2] for n in order]), look([runs[n][3] for n in order])
        answers = [ok(runs[n][4], "a new process publishes again") for n in order]
        resumed = look([runs[n][5] for n in order])
    states = [(got := snap.row(row_id)) and got["status"] for snap in crashed]
    for before, after, status, (moment, when) in zip(untried, crashed, states, moments):
        expect(status != "sent", f"stopped {when}, the row says 'sent' while the broker "
               f"{'is empty' if moment == 'send' else 'has not answered'}: the status was written before publish returned")
        # The learner's design names the state: whatever it committed before the broker call (the row's status, an
        # attempt count, a time, a note elsewhere) tells the next run the row may be on its way. Only a database
        # left as it was before publish_one began does not.
        still_there(after.row(row_id), f"stopped {when}, the outbox row")
        expect(after.database != before.database, f"stopped {when}, the database is exactly as it was before "
               "publish_one began: nothing says the row may be on its way",
               "Nothing committed before the broker call tells the next run this row may already be at the broker: "
               "a row on its way needs something committed before the call that a row never tried does not have.")
    for snap, row_id, answer, (_, when) in zip(resumed, row_ids, answers, moments):
        one_key(snap, payload, f"stopped {when}, then run again", "the row")
        got, messages = still_there(snap.row(row_id), "the outbox row"), snap.messages_for(row_id)
        expect(got["status"] == "sent" and messages == 1,
               f"stopped {when}, then run again, the row is {got['status']!r} and the broker holds {messages} "
               "messages for it, not 'sent' and 1",
               "A row left on its way must be picked up again, and published so the broker recognises it: the "
               "broker ignores only a key it has seen.")
        expect(answer[1] is None, f"the run after the row was sent answered {answer[1]!r}, not None")
    return f"the crashes left {states[0]!r} and {states[1]!r}; each next run published the row once and recorded it sent"


@row("practice-publish-sweep", unit=UNIT, topic="in-flight",
     covers="Exercise 1: publish_one killed at every write, commit and broker call, then run again: never 'sent' "
            "without a message, never two messages for one row",
     hint="For each moment the process could die, ask what the next run finds: the table must never claim more "
          "than the broker has, and a second publish must be one the broker recognises as the same message.")
def practice_publish_sweep(h: Harness) -> str:
    with practice(h) as p:
        rows = [(f"m-{p.token()}", f"order {p.token(4)} shipped") for _ in range(2)]

        def judge(snap: PracticeSnapshot, where: str) -> None:
            for (row_id, payload), which in zip(rows, ("first", "second")):
                one_key(snap, payload, where, f"the {which} outbox row")
                got, messages = snap.row(row_id), snap.messages_for(row_id)
                expect(messages <= 1, f"{where}, the broker holds {messages} messages for the {which} outbox row")
                expect(got is not None and got["status"] == "sent" and messages == 1,
                       f"{where}, the {which} outbox row is {got and got['status']!r} with {messages} messages, "
                       "not sent once")

        points = practice_sweep(p, "publish", lambda c: outbox_with(c, *rows), lambda c, _: publish(c, broker(c)),
                                judge, after=lambda c: [publish(c, FakeBroker(c.scenario.log)) for _ in range(3)],
                                roles={rows[0][0]: "the first row", rows[1][0]: "the second row"})
    return f"{len(points)} crash points in publish_one: every row ended sent, with exactly one message"


class DiesOn:
    """A broker, and one payload that kills the process publishing it, every time (no ``except`` runs)."""

    def __init__(self, broker: FakeBroker, payload: str):
        self.broker, self.payload = broker, payload

    def publish(self, key: str, body: str) -> Ack:
        if body == self.payload:
            _child.request_stop()
        return self.broker.publish(key, body)


def one_key(snap: PracticeSnapshot, payload: str, where: str, what: str) -> None:
    """Every publish of one row carried the same key; a key made per attempt is named as the cause."""
    keys = set(snap.publishes_of(payload))
    expect(len(keys) <= 1, f"{where}, the broker received {what} under {len(keys)} different keys",
           "The broker knows a message again only by its key: a key that changes between attempts makes every "
           "retry a new message. Name the row, not the attempt.")


def set_aside(left: dict, in_flight: str | None, which: str, why: str) -> None:
    expect(left["status"] not in ("sent", "pending"), f"{which} ended {left['status']!r}: {why}, and nothing says "
           "it was set aside")
    expect(left["status"] != in_flight,
           f"{which} ended {left['status']!r}, the state of a row being published right now: a person cannot tell "
           "it from one in flight, and nothing will ever move it",
           "A row that will never go out needs a state of its own (a dead letter), where a person sees it.")


@row("practice-publish-no-head-of-line", unit=UNIT, topic="in-flight",
     covers="Exercise 1: a payload the broker refuses every time is sent once, not retried up to the cap, and set "
            "aside; a row whose publish kills the worker every time is tried at most max_attempts times, then set "
            "aside; neither is left looking in flight, and the rows behind them are published",
     hint="A row that cannot go out must stop being the oldest candidate. A refusal will be the same next time, so a "
          "retry only delays the rows behind it. A row that kills the process never reaches an except: only what "
          "was committed before its publish can count its attempts.")
def practice_publish_no_head_of_line(h: Harness) -> str:
    with practice(h) as p:
        refused, crashing = p.scenario("refused-first"), p.scenario("dies-first")
        poison, behind, killer, after = (f"m-{p.token()}" for _ in range(4))
        bad, deadly = f"order {p.token(4)} with a payload the broker refuses", f"order {p.token(4)} the worker dies on"

        def refusals(c: Ctx) -> list:
            outbox_with(c, (poison, bad), (behind, f"order {p.token(4)} shipped"))
            broker = FakeBroker(c.scenario.log, probe=PROBE, rejects=frozenset({bad}))
            answers: list = []
            for _ in range(6):  # a worker that goes on after each error, as a supervisor would restart it
                try:
                    answers.append(publish(c, broker, max_attempts=3))
                except BrokerRejected:
                    answers.append("rejected")
            return answers

        answers = ok(refused.run(refusals), "publish_one, six times, with a refused payload first in the outbox")
        ok(crashing.run(lambda c: outbox_with(c, (killer, deadly), (after, f"order {p.token(4)} shipped"))),
           "preparing the outbox")
        crashed: list[bool] = []
        in_flight, last = None, None
        for n in range(6):
            result = crashing.run(lambda c: publish(c, DiesOn(FakeBroker(c.scenario.log), deadly), max_attempts=3),
                                  plan=Stop)
            crashed.append(result.status == "crashed")
            if not crashed[-1]:
                last = ok(result, f"publish_one, run {n + 1}, with a row the worker dies on first")
            if n == 0 and result.status == "crashed":  # the state of a row being published, as this code names it
                in_flight = ok(crashing.run(lambda c: c.store.query(
                    "SELECT status FROM outbox WHERE row_id = ?", (killer,))[0]["status"]), "reading the row")
        snaps = look([refused, crashing])
    tried = len(snaps[0].publishes_of(bad))
    expect(tried <= 1, f"the broker refused the first row for good, and was asked {tried} times with max_attempts=3",
           "A refusal that will never change is not worth a retry: each one only delays the rows behind it. Set the "
           "row aside the first time the broker refuses it.")
    for snap, row_id, which in ((snaps[0], behind, "the refused row"), (snaps[1], after, "the row the worker dies on")):
        got = still_there(snap.row(row_id), f"the outbox row behind {which}")
        expect(got["status"] == "sent" and snap.messages_for(row_id) == 1,
               f"after six runs the row behind {which} is {got['status']!r} with {snap.messages_for(row_id)} "
               f"messages: {which} held up every row behind it")
    set_aside(still_there(snaps[0].row(poison), "the refused row"), in_flight, "the refused row", "it was never published")
    died = crashed.count(True)
    expect(died <= 3, f"the worker died on the same row {died} times with max_attempts=3",
           "Count an attempt in the same commit that marks the row as on its way: a process that dies during the "
           "publish never reaches code after it, so the next run must see the attempt already counted.")
    set_aside(still_there(snaps[1].row(killer), "the row the worker dies on"), in_flight, "the row the worker dies on",
              "it was never published")
    expect(answers[-1] is None and not crashed[-1] and last is None,
           "the last run still picked a row, not None: a row that will never go out is still a candidate")
    return (f"the refused row was sent {tried} time and set aside; the row the worker dies on was tried {died} "
            "times and set aside; the rows behind both were published once")


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
     hint="The service recognises a retry only by its idempotency key: the key must name the request (the event's "
          "request id), and stay the same on every attempt and every redelivery.")
def practice_grant_at_most_once(h: Harness) -> str:
    lost, reset = SeatScript.COMMIT_THEN_TIMEOUT, SeatScript.RESET
    scripts = [[lost], [reset], [lost, lost], [SeatScript.UNAVAILABLE, lost, SeatScript.THROTTLED], [reset, lost, reset],
               [], [lost] * 5]
    with practice(h) as p:
        answers, snaps, _ = grants(p, "grant-once", scripts, replay=True)
    for steps, answer, snap in zip(scripts, answers, snaps):
        seats = snap.seats
        keys = {post["key"] for post in snap.posts}
        expect(None not in keys, f"with {_named(steps)}, a post carried no idempotency key")
        expect(len(keys) == 1, f"with {_named(steps)}, the attempts for one request carried {len(keys)} different keys",
               "A key that changes between attempts makes the service take each retry for a new request: after a lost "
               "answer, that is a second seat. Name the request, not the attempt.")
        expect(len(seats) <= 1, f"with {_named(steps)}, then the event delivered again, the service granted "
               f"{len(seats)} seats for one request (keys sent: {sorted(map(str, keys))})")
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
     covers="Exercise 2: 400 and 403 stop at once; 409 (the first request with this key is still being "
            "processed), 429, a 500 after the service granted the seat, and 503 are retried with the same key; a "
            "timeout or reset is UNKNOWN, never a failure, and so is giving up after a 409 or a 5xx, which may have "
            "granted the seat; EXHAUSTED only after 429s",
     hint="A 409, a 5xx or no answer may have granted the seat (the request may have arrived), so giving up after "
          "one of them is UNKNOWN, never EXHAUSTED, and never a refusal; 408, 425 and 429 prove nothing was done "
          "yet; other 4xx will never work and stop at once. Every retry carries the same key.")
def practice_grant_error_classes(h: Harness) -> str:
    cases = [
        ([SeatScript.BAD_REQUEST], "refused", 1, 0),
        ([SeatScript.FORBIDDEN], "refused", 1, 0),
        ([SeatScript.UNAVAILABLE, SeatScript.OK], "granted", 2, 1),
        ([SeatScript.COMMIT_THEN_500, SeatScript.OK], "granted", 2, 1),
        ([SeatScript.COMMIT_THEN_500] * 3, "unknown", 3, 1),
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
    return ("400/403 refused at once; 409 (in progress), 429, 500 and 503 retried; timeouts, resets, and giving up "
            "after 409s or 5xx left UNKNOWN; only throttling exhausted")


@row("practice-grant-backoff", unit=UNIT, topic="grant",
     covers="Exercise 2: retries stop at max_attempts; the pauses are bounded, grow from attempt to attempt, and "
            "carry jitter drawn from the given rng",
     hint="A struggling service needs more room after each failure, but no client should wait without bound; and "
          "clients that failed together come back together unless part of each pause is drawn at random from rng.")
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
