"""Resolving UNKNOWN with the service's own record, stable keys, and a second generation (Unit B)."""

from __future__ import annotations

from dataclasses import replace

from ..attempts import SWALLOWED_HINT, Attempt, attempt
from ...fakes.service import Behaviour, FakeTransport
from ..harness import Ctx, Harness
from ...loop import LoopResult
from ..kit import (Fail, admit_and_claim, expect, expect_raised, finished, ok, row, same_id, seeded, seen, topic,
                   whole_number)
from ...errors import SetupRefused
from ...store import Store
from ...work import REPORT_COLUMNS
from ..setup_moves import learner_table, move_report

topic("recovery", "B optional part: resolving UNKNOWN with the service's own record")
topic("generation", "B optional part: a second terminal generation")


@row("reconcile-unknown", unit="B", topic="recovery",
     covers="Recovery policy for UNKNOWN: reconcile by the report's own key against an idempotent service; a missing "
            "receipt goes back to pending and the retry, under the same key, sends nothing twice",
     hint="reconcile: for each 'unknown' (or 'sending') report, transport.lookup(policy.key(report_id)); a receipt "
          "means 'confirmed', none means 'pending' again. Send with idempotency_key=policy.key(report_id), so the key "
          "names the report, not the attempt.")
def reconcile_unknown(h: Harness) -> str:
    s = h.scenario("reconcile")
    sources = [h.source_id(), h.source_id()]
    session, text, marker = h.session_id(), h.text(), h.token()

    def script(c: Ctx):
        for src in sources:
            seeded(c, src, session, text, marker)
        lossy = c.transport([Behaviour.LOSE_REPLY, Behaviour.SERVER_ERROR], idempotent=True)
        first = [c.deliver_one(lossy), c.deliver_one(lossy)]
        confirmed = c.reconcile(c.transport([], idempotent=True))
        after = [c.deliver_one(c.transport([], idempotent=True)) for _ in range(2)]
        return first, confirmed, after

    first, confirmed, after = ok(s.run(script), "a lost reply, a server error that sent nothing, then reconcile")
    expect(first == ["unknown", "unknown"], f"a lost reply and a 500 were answered {first}, not unknown twice")
    expect(confirmed == 1, f"reconcile confirmed {confirmed} reports; the service had accepted exactly one")
    snap = seen(s.observe())
    expect(len(snap.accepted) == 2, f"the service accepted {len(snap.accepted)} sends for two reports")
    expect(len({a["report_id"] for a in snap.accepted}) == 2, "one report was sent twice")
    expect(all(r["delivery"] == "confirmed" for r in snap.reports), f"reports end as {[r['delivery'] for r in snap.reports]}")
    expect(after == ["confirmed", "nothing to send"],
           f"deliveries after reconcile answered {after}: the report the service never accepted must go out once")
    for report in snap.reports:
        sent = next(a for a in snap.accepted if str(a["report_id"]) == str(report["report_id"]))
        if "receipt" in report:
            expect(report["receipt"] == sent["remote_id"], "reconcile did not record the service's own receipt")
    return ("the UNKNOWN the service had accepted was confirmed from its record; the one it had not went out once, "
            "under the same key")


RETENTION = 600.0
"""The seconds the service of ``reconcile-after-retention`` remembers a key."""


@row("reconcile-after-retention", unit="B", topic="recovery",
     covers="Past the service's key retention, an UNKNOWN report goes to a person (needs_person, a state nothing "
            "sends), never back on the wire; inside the window, a report without a receipt is sent again once",
     hint="deliver_one records when a report was first sent (first_sent_at = COALESCE(first_sent_at, ?)); reconcile, "
          "finding no receipt, puts a report back to 'pending' only while policy.key_remembered(first_sent_at), and "
          "otherwise moves it to 'needs_person'.")
def reconcile_after_retention(h: Harness) -> str:
    s = h.scenario("retention")
    old, new = h.source_id(), h.source_id()
    session, text, marker = h.session_id(), h.text(), h.token()

    def script(c: Ctx):
        c.policy = replace(c.policy, key_retention=RETENTION)

        def service(script):
            return c.transport(script, idempotent=True, retention=RETENTION)

        old_id = str(seeded(c, old, session, text, marker)["report_id"])
        first = [c.deliver_one(service([Behaviour.LOSE_REPLY]))]  # accepted; the reply is lost
        c.clock.advance(RETENTION * 6)  # the service forgets that key
        seeded(c, new, session, text, marker)
        first.append(c.deliver_one(service([Behaviour.SERVER_ERROR])))  # nothing arrived
        c.clock.advance(RETENTION / 10)
        confirmed = c.reconcile(service([]))
        between = _report_state(c, old_id)  # before deliver_one, which keeps to the same window, runs again
        after = [c.deliver_one(service([])) for _ in range(2)]
        return first, confirmed, between, after

    first, confirmed, between, after = ok(s.run(script), "a lost reply, an hour, a server error, then reconcile")
    expect(between == "needs_person",
           f"reconcile left the report first sent before the key expired {between!r}: with no receipt and the key "
           "forgotten, a retry could be a second message, so it waits as 'needs_person'")
    expect(first == ["unknown", "unknown"], f"a lost reply and a 500 were answered {first}, not unknown twice")
    expect(confirmed == 0, f"reconcile confirmed {confirmed} reports; the service remembers no key of either")
    snap = seen(s.observe())
    sends: dict[str, int] = {}
    for sent in snap.accepted:
        sends[str(sent["report_id"])] = sends.get(str(sent["report_id"]), 0) + 1
    expect(all(n == 1 for n in sends.values()),
           f"the service accepted one report {max(sends.values(), default=0)} times: its key had expired, so the "
           "retry after reconcile was a second message to the customer")
    states = sorted(str(r["delivery"]) for r in snap.reports)
    expect(states == ["confirmed", "needs_person"],
           f"the reports end as {states}: the one first sent before the key expired should wait as 'needs_person', "
           "the one sent inside the window should go out again, once, and be 'confirmed'")
    expect(after == ["confirmed", "nothing to send"], f"deliveries after reconcile answered {after}")
    return "past the key's retention the UNKNOWN waits for a person; inside it the retry went out once"


@row("idempotency-key-stable", unit="B", topic="recovery",
     covers="A key derived from the report's identity, not a fresh key per attempt, and namespaced so two stores "
            "never share one",
     hint="Use policy.key(report_id) as idempotency_key, on every attempt: the report's id behind the store's own id.")
def idempotency_key_stable(h: Harness) -> str:
    s, other = h.scenario("keys"), h.scenario("keys-other-store")
    other.log = s.log  # two stores, one remote service
    sources, session, text, marker = [h.source_id(), h.source_id()], h.session_id(), h.text(), h.token()

    def script(c: Ctx):
        for src in sources:
            seeded(c, src, session, text, marker)
        transport = c.transport([Behaviour.REFUSE, Behaviour.REFUSE], idempotent=True)
        answers = []
        for _ in range(4):
            answers.append(c.deliver_one(transport))
            c.clock.advance(c.policy.max_delay)
        return answers

    def second_store(c: Ctx):
        report = seeded(c, sources[0], session, text, marker)
        return str(report["report_id"]), c.deliver_one(c.transport([], idempotent=True))

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
    report_id, answer = ok(other.run(second_store), "a second store delivers its own report to the same service")
    first_key = next(iter(keys.get(report_id, {None})))
    shared = seen(other.observe())
    expect(answer == "confirmed" and any(str(a["report_id"]) == report_id and a["idempotency_key"] != first_key
                                         for a in shared.accepted[len(snap.accepted):]),
           f"a second store's {report_id} was answered {answer!r} by the service that had already seen the first "
           f"store's {report_id}: both used the key {first_key!r}",
           "Put the store's name in front of the report id: idempotency_key=policy.key(report_id).")
    return "every attempt for a report carried the same key, each report its own, and each store its own"

def _report_state(c: Ctx, report_id: str) -> str | None:
    table = learner_table(c, REPORT_COLUMNS, "report")
    found = Store(c.store.path).query(f'SELECT delivery FROM "{table}" WHERE report_id = ?', (report_id,))
    return str(found[0]["delivery"]) if found else None


@row("delivery-moved-meanwhile", unit="B", topic="recovery",
     covers="deliver_one checks the row count of its last move: when the report left 'sending' while it was on "
            "the wire (an operator's reconcile put it back to pending), deliver_one neither stores nor answers "
            "an outcome it did not record, and the report goes out again under the same key",
     hint="deliver_one: after the send, check how many rows the guarded move (… AND delivery = 'sending') "
          "changed. None means someone else moved the report while it was on the wire: raise WrongState and "
          "leave the row as they left it.")
def delivery_moved_meanwhile(h: Harness) -> str:
    s = h.scenario("moved-meanwhile")
    source, session, text, marker = h.source_id(), h.session_id(), h.text(), h.token()

    def script(c: Ctx):
        report_id = str(seeded(c, source, session, text, marker)["report_id"])

        refused: list[SetupRefused] = []

        def reconcile_meanwhile(outgoing) -> None:  # the service has no receipt yet, so reconcile says pending
            try:
                move_report(c, str(outgoing.report_id), "pending", ("sending", "unknown"))
            except SetupRefused as refusal:  # kept: the learner's deliver_one may catch what its send raises
                refused.append(refusal)
                raise

        transport = FakeTransport(c.service([], idempotent=True), before_send=reconcile_meanwhile)
        try:
            first = c.deliver_one(transport)
        except Exception as error:  # raising is the honest answer; any exception will do
            first = f"raised {type(error).__name__}"
        for refusal in refused:  # the checker's own setup failed, whatever deliver_one made of it
            raise refusal
        between = _report_state(c, report_id)
        second = c.deliver_one(c.transport([], idempotent=True))
        return report_id, first, between, second

    report_id, first, between, second = ok(s.run(script), "a send during which an operator's reconcile put the "
                                                          "report back to pending, then the next delivery")
    expect(between == "pending",
           f"after the send, the report that reconcile had put back to pending was {between!r}: deliver_one "
           "overwrote another's move", "Guard every move on the state it leaves (… AND delivery = 'sending').")
    expect(first != "confirmed",
           f"deliver_one answered {first!r}, but its move to confirmed changed no row: the report is {between!r}",
           "Check the row count of the last update; when it is 0, raise WrongState instead of returning.")
    snap = seen(s.observe())
    expect(second == "confirmed" and len(snap.accepted) == 1,
           f"the next delivery answered {second!r}, and the service accepted {len(snap.accepted)} messages: the "
           "retry under the report's own key should have been answered with the first receipt")
    states = [str(r["delivery"]) for r in snap.reports]
    expect(states == ["confirmed"], f"the report ends {states}")
    return f"moved meanwhile: deliver_one answered {first}; the retry under the same key confirmed {report_id} once"


@row("delivery-key-forgotten", unit="B", topic="recovery",
     covers="deliver_one never sends a report again once the service may have forgotten its key: a report "
            "reconciled back to pending that meets a 429 and is due only after the key's retention goes to a "
            "person (needs_person), not on the wire",
     hint="deliver_one: before sending a report that was sent before (first_sent_at is set), ask "
          "policy.key_remembered(first_sent_at); when it is false, move the report to 'needs_person' and take the "
          "next one.")
def delivery_key_forgotten(h: Harness) -> str:
    s = h.scenario("key-forgotten")
    source, session, text, marker = h.source_id(), h.session_id(), h.text(), h.token()

    def script(c: Ctx):
        c.policy = replace(c.policy, key_retention=RETENTION)

        def service(script):
            return c.transport(script, idempotent=True, retention=RETENTION)

        report_id = str(seeded(c, source, session, text, marker)["report_id"])
        first = c.deliver_one(service([Behaviour.SERVER_ERROR]))  # nothing arrived, but Lucy cannot know that
        c.clock.advance(60)
        move_report(c, report_id, "pending", ("unknown",))  # reconcile found no receipt inside the window
        second = c.deliver_one(service([Behaviour.REFUSE]))  # a 429: due again in 30 seconds or more
        c.clock.advance(RETENTION)  # by the time it is due, the service has forgotten the key
        later = []
        for _ in range(2):
            try:
                later.append(c.deliver_one(service([])))
            except Exception as error:  # what deliver_one answers is not graded here; what it sends is
                later.append(f"raised {type(error).__name__}")
        return first, second, later

    first, second, later = ok(s.run(script), "a 500, reconcile back to pending, a 429, then the wait outlasts the "
                                             "key's retention")
    expect([first, second] == ["unknown", "refused"], f"a 500 and a 429 were answered {[first, second]}")
    snap = seen(s.observe())
    expect(len(snap.requests) == 2 and not snap.accepted,
           f"the service saw {len(snap.requests)} requests for one report, and accepted {len(snap.accepted)}: "
           "after the key expired, a send could be a second copy of the first, unknown one")
    states = [str(r["delivery"]) for r in snap.reports]
    expect(states == ["needs_person"], f"the report ends {states}, not 'needs_person' where a person decides")
    return f"due after its key expired, the report waits for a person (deliver_one answered {later})"


@row("second-generation", unit="B", topic="generation", runs_unit_a=("work_once",),
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
    if r1 is None or r2 is None or r1 is r2:
        raise Fail("the two generations' reports do not have two ids")
    expect(first_marker in r1["body"] and r1["delivery"] == "confirmed",
           "the first report was rewritten by the second generation")
    expect(second_marker in r2["body"] and r2["delivery"] == "pending", "the second report does not carry its own answer")
    first_generation, second_generation = whole_number(r1["generation"]), whole_number(r2["generation"])
    expect(first_generation is not None and second_generation is not None and second_generation > first_generation,
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
    row = seen(early.observe()).work_by_id(work_id)
    kept = (row is not None and row["state"] == "running" and assignment is not None
            and same_id(row.get("generation", assignment["generation"]), assignment["generation"]))
    for answer, state in ((pending, "pending"), (running, "running")):
        expect(answer.raised, f"requeue of {state} work returned without an error: only done work can run again",
               "requeue must raise an error for work that is not done (any exception will do). If requeue "
               "catches it, " + SWALLOWED_HINT[0].lower() + SWALLOWED_HINT[1:] if kept else
               f"requeue moved work that was not done (the running work is now {row}): the guard is missing. "
               "Move it only from done (UPDATE … WHERE work_id = ? AND state = 'done'), check that the update "
               "changed exactly one row, and raise an error when it changed none.")
    expect(kept, f"a refused requeue changed the running work to {row}")
    return (f"{r1['report_id']} (generation {r1['generation']}) unchanged; {r2['report_id']} (generation "
            f"{r2['generation']}) new; requeue refused work that was not done ({pending.detail}, {running.detail})")


@row("stale-finish-refused", unit="B", topic="generation", runs_unit_a=("claim",),
     covers="Completion binds the claim: after a requeue, the old worker's finish (its generation-1 Assignment) "
            "is refused by the fence and changes nothing; the new claim still finishes",
     hint="In your Unit A finish, move the work to done only WHERE state = 'running' AND worker_id = ? AND "
          "generation = ?, from the Assignment you are given, and raise when that changed no row.")
def stale_finish_refused(h: Harness) -> str:
    s = h.scenario("stale-finish")
    source, session, text = h.source_id(), h.session_id(), h.text()
    old, stale, new = (LoopResult(f"brief [{h.token(10)}]", session, 1) for _ in range(3))

    def script(c: Ctx):
        q = c.queue()
        first = admit_and_claim(c, source, session, text, "w1")
        c.finish(q, first, old)
        c.requeue(q, first["work_id"])
        second = c.claim(q, "w2")
        return second, attempt(lambda: c.finish(q, first, stale))

    second, answer = ok(s.run(script), "w1 finishes, the work runs again, w2 claims it, w1 finishes once more")
    expect(second is not None, "after requeue, w2's claim found nothing to do")
    expect_raised(Attempt.of(answer), "w1's finish with its generation-1 Assignment, after w2 claimed generation 2",
                  "the fence must refuse a claim that is no longer current")
    snap = seen(s.observe())
    work = snap.work_for(source)
    bodies = [r["body"] for r in snap.reports_for(work[0]["work_id"])] if work else []
    expect(len(work) == 1 and work[0]["state"] == "running",
           f"the stale finish left the work {[w['state'] for w in work]}, not 'running' under w2")
    expect(not any(stale.text in b for b in bodies), "the stale worker's answer was stored as a report")
    ok(s.run(lambda c: c.finish(c.queue(), second, new)), "w2 finishes its own claim")
    bodies = [r["body"] for r in seen(s.observe()).reports_for(work[0]["work_id"])]
    expect(len(bodies) == 2 and any(new.text in b for b in bodies), "w2, the current claim, could not finish the work")
    return "w1's stale finish was refused and changed nothing; w2's claim finished generation 2"
