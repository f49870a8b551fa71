"""Bounded admission and the single-worker claim (Unit A)."""

from __future__ import annotations

from ..harness import Ctx, Harness
from ..kit import claimed, expect, ok, race, row, same_id, seen, topic

topic("claim", "30–55: bounded admission and a single-worker claim")


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


FINISH_RETURNS_NOTHING = ("work_once ran the model, but no Report came back: look at finish. It must mark the work "
                          "done, store its report in the same transaction, and return that Report (and work_once "
                          "returns what finish returns).")
"""The hint when the model ran and no report came back: the cause is in finish, not in the refusal."""


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
    expect(len(done) == 1, f"the worker produced {len(done)} reports from one accepted request",
           FINISH_RETURNS_NOTHING if not done and snap.model_calls >= 1 else None)
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
        stored = claimed(snap.work_by_id(got["work_id"]),
                         f"claim returned work_id {got['work_id']!r}, which is not in the store")
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
