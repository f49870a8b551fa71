"""Resolving UNKNOWN with the service's own record, stable keys, and a second generation (Unit B)."""

from __future__ import annotations

from ..attempts import SWALLOWED_HINT, Attempt, attempt
from ...transport import Behaviour
from ..harness import Ctx, Harness
from ..kit import expect, finished, ok, row, seeded, seen, topic

topic("recovery", "45–60: resolving UNKNOWN with the service's own record")
topic("generation", "a second terminal generation")


@row("reconcile-unknown", unit="B", topic="recovery",
     covers="Recovery policy for UNKNOWN: reconcile by the report's own key against an idempotent service; "
            "no second send",
     hint="reconcile: for each 'unknown' (or 'sending') report, transport.lookup(report_id); a receipt means "
          "'confirmed'. Send with idempotency_key=report_id so the key names the report, not the attempt.")
def reconcile_unknown(h: Harness) -> str:
    s = h.scenario("reconcile")
    sources = [h.source_id(), h.source_id()]
    session, text, marker = h.session_id(), h.text(), h.token()

    def script(c: Ctx):
        for src in sources:
            seeded(c, src, session, text, marker)
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
    s = h.scenario("keys")
    sources, session, text, marker = [h.source_id(), h.source_id()], h.session_id(), h.text(), h.token()

    def script(c: Ctx):
        for src in sources:
            seeded(c, src, session, text, marker)
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


@row("second-generation", unit="B", topic="generation", runs_unit_a=("finish", "work_once"),
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
        first = finished(c, source, session, text, first_marker)
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
