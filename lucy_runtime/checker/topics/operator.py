"""An operator's way out for stuck work, and the numbers an operator watches (Unit B)."""

from __future__ import annotations

import time
from dataclasses import replace

from ...errors import CheckerFault, ModelUnavailable
from ...loop import LoopResult
from ...engine.faults import KillAt
from ...fakes.service import Behaviour
from ...work import STUCK_AFTER
from ..attempts import Attempt, attempt
from ..harness import Ctx, Harness
from ..kit import admit_and_claim, expect, expect_raised, ok, row, seeded, seen, topic, whole_number
from ..setup_moves import hold_work, move_report
from .failure import held_by_a_bug

topic("release", "going further: a way out for a stuck request")
topic("operator", "going further: an operator's view")


@row("release-fenced", unit="B", topic="release", runs_unit_a=("claim", "finish"),
     covers="An operator releases a stuck running request: it goes back to pending as its next generation, so a "
            "late finish by the first worker is refused by the fence and the request still ends in one report; "
            "release refuses work that is not running or held, and releases work held after a bug (needs_person)",
     hint="release: in one conditional update, move the work from 'running' or 'needs_person' to 'pending' with "
          "generation + 1 and no worker (… WHERE work_id = ? AND state IN ('running', 'needs_person')), and raise "
          "when it changed no row. The new generation is what makes the old worker's Assignment stale, even when "
          "a worker of the same name claims the work again.")
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

    held, stuck = h.scenario("release-held"), h.source_id()

    def release_held(c: Ctx):
        q = c.queue()
        first = admit_and_claim(c, stuck, session, text, "w1")
        if not hold_work(c, first["work_id"]):  # as work_once_retrying does after a bug
            raise CheckerFault("the work just claimed was not running")
        return first, attempt(lambda: c.release(q, first["work_id"])), c.claim(q, "w2")

    before, released, again = ok(held.run(release_held), "a request held for a person after a bug, then released")
    answer = Attempt.of(released)
    expect(not answer.raised and again is not None
           and whole_number(again["generation"]) != whole_number(before["generation"]),
           f"{answer.told('release of work held after a bug (needs_person)')}, and a claim afterwards found "
           f"{'nothing to do' if again is None else 'it at generation ' + repr(again['generation'])}: once the bug "
           "is fixed, release must put held work back to pending as its next generation",
           "release: move the work WHERE work_id = ? AND state IN ('running', 'needs_person'), with generation + 1 "
           "and no worker.")
    return ("the released request ran again as generation " f"{second['generation']}; the first worker's late "
            "finish was refused; one report; release refused pending and done work, and released held work")


@row("operator-numbers", unit="B", topic="operator", runs_unit_a=("admit", "claim"),
     covers="The numbers an operator watches: the oldest pending request's age, UNKNOWN reports, failed reports "
            "and failed work",
     hint="operator_numbers: now minus MIN(admitted_at) of pending work (0 when none is pending), and COUNT(*) of "
          "reports in 'unknown', of reports in 'failed', and of work in 'failed'. Return OperatorNumbers(…).")
def operator_numbers(h: Harness) -> str:
    s = h.scenario("operator")
    lost, blocked, session = h.distinct(h.session_id)
    text, marker = h.text(), h.token()
    sources = [h.source_id() for _ in range(5)]
    waited = float(h.rng.randint(600, 7200))

    def script(c: Ctx):
        q = c.queue()
        empty = c.operator_numbers(time.time())
        # Every state is reached along the chapter's diagrams, by the learner's own functions.
        seeded(c, sources[0], lost, text, marker)
        seeded(c, sources[1], blocked, text, marker)
        transport = c.transport(sessions={lost: Behaviour.LOSE_REPLY, blocked: Behaviour.REFUSE_PERMANENTLY})
        answers = [c.deliver_one(transport), c.deliver_one(transport)]
        doomed = admit_and_claim(c, sources[2], session, text, "w1")
        c.fail_attempt(q, doomed, ModelUnavailable("the model is down"), replace(c.policy, max_attempts=1))
        first = time.time()
        c.admit(q, sources[3], session, text)
        admitted = time.time()
        time.sleep(GAP)  # the oldest pending request came GAP seconds before the other one
        c.admit(q, sources[4], session, text)
        now = time.time() + waited
        return empty, answers, c.operator_numbers(now), now - admitted, now - first

    empty, answers, numbers, least, most = ok(s.run(script), "an empty store, then a store with one of each")
    expect(whole_number(empty["unknown_reports"]) == 0 and whole_number(empty["failed_reports"]) == 0
           and whole_number(empty["failed_work"]) == 0 and empty["oldest_pending_seconds"] == 0,
           f"an empty store gave {empty}: every number should be 0")
    snap = seen(s.observe())
    expect(sorted(str(w["state"]) for w in snap.work) == ["done", "done", "failed", "pending", "pending"]
           and sorted(str(r["delivery"]) for r in snap.reports) == ["failed", "pending", "unknown"],
           f"the checker could not set up one UNKNOWN report, one failed report and one failed request (your "
           f"deliver_one answered {answers})",
           "This row reaches each state through your deliver_one (a lost reply, a blocked chat) and fail_attempt "
           "(one attempt allowed): make their rows pass first.")
    for name, want in (("unknown_reports", 1), ("failed_reports", 1), ("failed_work", 1)):
        expect(whole_number(numbers[name]) == want,
               f"the store holds {want} of {name.replace('_', ' ')}; operator_numbers counted {numbers[name]!r}")
    age = numbers["oldest_pending_seconds"]
    # A schema may keep whole seconds (strftime('%s')): the age may be up to a second more.
    expect(isinstance(age, (int, float)) and least - 0.05 <= age <= most + 1.05,
           f"two requests are pending, admitted about {least:.1f} s and {least - GAP:.1f} s before the `now` given; "
           f"you said the oldest pending one has waited {age!r} s",
           "Subtract MIN(admitted_at) of pending work from the `now` you are given; admitted_at is the time of "
           "admission in seconds.")
    return f"oldest pending {age:.0f} s, 1 UNKNOWN, 1 failed report, 1 failed request; an empty store gave zeros"


GAP = 1.5
"""Seconds between the two pending requests of ``operator-numbers``: more than a whole second, so a schema that
keeps whole seconds still tells the oldest from the newest."""


@row("operator-sees-every-stuck-state", unit="B", topic="operator", runs_unit_a=("admit", "claim"),
     covers="Every failure ends in a state a person can see, and operator_numbers counts it: a report left "
            "'sending' by a dead sender, a report waiting for a person, work 'running' past STUCK_AFTER, "
            "'waiting' work, and work held after a bug; a report or request younger than STUCK_AFTER is not stuck",
     hint="operator_numbers: COUNT(*) of reports in 'needs_person'; of reports in 'sending' whose first_sent_at "
          "< now - STUCK_AFTER; of work in 'running' whose admitted_at < now - STUCK_AFTER; of work in 'waiting'; "
          "and of work in 'needs_person'.")
def operator_sees_every_stuck_state(h: Harness) -> str:
    s = h.scenario("stuck")
    stranded, asked, session = h.distinct(h.session_id)
    text, marker, token = h.text(), h.token(), h.token(8)
    held, waiting, running, unknown, sending = (h.source_id() for _ in range(5))

    def die_while_sending(c: Ctx):
        seeded(c, sending, stranded, text, marker)
        c.policy = replace(c.policy, clock=time.time)  # first_sent_at on the clock operator_numbers is given
        c.deliver_one(c.transport([]))

    ok(s.run(die_while_sending, plan=KillAt(1, kinds=("send",))), "a sender that dies with a report on the wire",
       expect="crashed", harness=h)

    def script(c: Ctx):
        q = c.queue()
        held_by_a_bug(c, q, held, session, text, token, polls=1)
        claimed = admit_and_claim(c, waiting, session, text, "w1")
        c.fail_attempt(q, claimed, ModelUnavailable("the model is down"))
        admit_and_claim(c, running, session, text, "w2")
        report_id = str(seeded(c, unknown, asked, text, marker)["report_id"])
        answer = c.deliver_one(c.transport([Behaviour.SERVER_ERROR]))
        move_report(c, report_id, "needs_person", ("unknown",))  # reconcile: no receipt, and the key expired
        return answer, c.operator_numbers(time.time() + 10), c.operator_numbers(time.time() + STUCK_AFTER + 60)

    answer, soon, late = ok(s.run(script), "a request held after a bug, one waiting, one running, a report for a "
                                          "person")
    snap = seen(s.observe())
    states = {str(w["source_id"]): str(w["state"]) for w in snap.work}
    deliveries = sorted(str(r["delivery"]) for r in snap.reports)
    # A sender that marks 'unknown' before it sends (a correct design) leaves 'unknown' when it dies.
    left = next((d for d in deliveries if d != "needs_person"), None)
    expect([states.get(held), states.get(waiting), states.get(running)] == ["needs_person", "waiting", "running"]
           and len(deliveries) == 2 and "needs_person" in deliveries and left in ("sending", "unknown"),
           f"the checker could not plant every stuck state: work {[states.get(x) for x in (held, waiting, running)]} "
           f"(held, waiting, running), reports {deliveries}; your deliver_one answered a 500 with {answer!r}",
           "This row reaches each state through your deliver_one, fail_attempt and work_once_retrying: make their "
           "rows pass first.")
    wanted = {"reports_needing_person": (1, 1), "stuck_running": (0, 1), "waiting_work": (1, 1),
              "work_needing_person": (1, 1)}
    wanted.update({"stuck_sending": (0, 1)} if left == "sending" else {"unknown_reports": (1, 1)})
    for name, (early, later) in wanted.items():
        what = name.replace("_", " ")
        expect(whole_number(soon.get(name)) == early,
               f"ten seconds after they began, operator_numbers counted {soon.get(name)!r} {what}, not {early}",
               "A report or a request younger than STUCK_AFTER is not stuck: compare with now - STUCK_AFTER."
               if early == 0 else None)
        expect(whole_number(late.get(name)) == later,
               f"after STUCK_AFTER, the store holds {later} of {what}; operator_numbers counted {late.get(name)!r}")
    return ("a dead sender's report, a report for a person, a stuck request, a waiting one and a held one: each "
            "counted, and nothing counted as stuck too soon")
