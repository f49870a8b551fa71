"""Delivery: one send per report, and an honest record of what the service said (Unit B)."""

from __future__ import annotations

from ...fakes.service import Behaviour
from ..harness import Ctx, Harness
from ..observe import Snapshot
from ..kit import crash_states, expect, finished, never_reached, ok, row, seeded, seen, sweep, topic

topic("delivery", "B 30–65: one send, and an honest record of it")


@row("delivery-confirmed", unit="B", topic="delivery",
     covers="Step 8: claim a report for delivery, send it once, and retain the confirmed disposition",
     hint="deliver_one: in one transaction pick the oldest 'pending' report that is due and mark it 'sending'; send "
          "it; then record 'confirmed' with the receipt. Return Disposition.NOTHING_TO_SEND when nothing is due.")
def delivery_confirmed(h: Harness) -> str:
    s = h.scenario("deliver")
    source, session, text, marker = h.source_id(), h.session_id(), h.text(), h.token(10)

    def script(c: Ctx):
        report = seeded(c, source, session, text, marker)
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
     covers="A retryable refusal is not a send: the report waits until policy.next_due, then goes out once",
     hint="On a retryable Refused, put the report back to 'pending' with due_at = policy.next_due(attempts, "
          "refusal), and pick only reports whose due_at has come (due_at <= policy.now()).")
def delivery_refused_retry(h: Harness) -> str:
    s = h.scenario("refused")
    source, session, text, marker = h.source_id(), h.session_id(), h.text(), h.token()

    def script(c: Ctx):
        seeded(c, source, session, text, marker)
        transport = c.transport([Behaviour.REFUSE])
        early = [c.deliver_one(transport), c.deliver_one(transport)]
        c.clock.advance(c.policy.max_delay)
        return early + [c.deliver_one(transport), c.deliver_one(transport)]

    answers = ok(s.run(script), "delivering to a service that refuses once, asking to wait 30 seconds")
    expect(answers[:1] == ["refused"], f"a retryable refusal was answered {answers[:1]}")
    expect(answers[1] == "nothing to send", f"right after the refusal, deliver_one answered {answers[1]!r}: "
           "the report went out again before it was due",
           "After a refusal store due_at = policy.next_due(...), and pick only reports with due_at <= policy.now().")
    expect(answers[2:] == ["confirmed", "nothing to send"], f"once the wait was over, deliveries answered {answers[2:]}")
    snap = seen(s.observe())
    expect(len(snap.accepted) == 1 and snap.reports[0]["delivery"] == "confirmed",
           f"{len(snap.accepted)} accepted sends; report {snap.reports[0]['delivery']!r}")
    return "refused, not tried again before it was due, then sent once and confirmed"


@row("delivery-no-poison", unit="B", topic="delivery",
     covers="No poison report: a report refused on every try never holds up another chat's; a permanent refusal, or "
            "a retryable one past the attempt cap, ends 'failed'",
     hint="Take the oldest report that is due, not the oldest pending one; when policy.next_due(attempts, refusal) "
          "answers None, mark the report 'failed' and return Disposition.FAILED.")
def delivery_no_poison(h: Harness) -> str:
    s = h.scenario("poison")
    limited, blocked, fine = h.distinct(h.session_id)
    marker = h.token()

    def script(c: Ctx):
        ids = {}
        for session in (limited, blocked, fine):
            ids[session] = str(seeded(c, h.source_id(), session, h.text(), marker)["report_id"])
        transport = c.transport(sessions={limited: Behaviour.REFUSE, blocked: Behaviour.REFUSE_PERMANENTLY})
        answers = []
        for _ in range(50):
            answers.append(c.deliver_one(transport))
            c.clock.advance(10)
        return ids, answers, c.policy.max_attempts

    ids, answers, cap = ok(s.run(script), "fifty deliveries, ten seconds apart: one chat always rate limited, one "
                                         "that blocked the bot, one that works")
    snap = seen(s.observe())
    tries = {session: [n for n, r in enumerate(snap.requests) if str(r["report_id"]) == ids[session]]
             for session in ids}
    expect([str(a["report_id"]) for a in snap.accepted] == [ids[fine]],
           f"the service accepted {[a['report_id'] for a in snap.accepted]}; only {ids[fine]} could be sent, and it "
           "must go out although the reports before it are refused every time")
    expect(len(tries[limited]) < 2 or tries[fine][0] < tries[limited][1],
           f"{ids[limited]} was tried again before {ids[fine]} was sent once: a refused report held up the next one",
           "A refused report is not due again until policy.next_due says so; take the oldest report that is due.")
    expect(len(tries[blocked]) == 1, f"{ids[blocked]} was refused for good and tried {len(tries[blocked])} times",
           "A Refused with retryable=False will never succeed: policy.next_due answers None, so mark it 'failed'.")
    expect(2 <= len(tries[limited]) <= cap,
           f"{ids[limited]} was tried {len(tries[limited])} times; a retryable refusal is tried again, at most "
           f"{cap} times in all (policy.max_attempts)",
           "Count the attempts in the report row and pass the count, this attempt included, to policy.next_due.")
    states = {session: next(r["delivery"] for r in snap.reports if str(r["report_id"]) == ids[session])
              for session in ids}
    expect(states == {limited: "failed", blocked: "failed", fine: "confirmed"},
           f"the reports ended as {list(states.values())}, not failed, failed, confirmed")
    expect(answers.count("failed") == 2, f"deliver_one answered 'failed' {answers.count('failed')} times, not 2")
    return (f"{ids[fine]} went out while the others were refused; the blocked chat failed after one try, the rate "
            f"limited one after {len(tries[limited])}")


@row("delivery-chat-order", unit="B", topic="delivery", runs_unit_a=("admit", "claim", "finish"),
     covers="Order within one chat, and a limit per chat: a 429 on a chat's report holds that chat's later reports "
            "until it has gone, so none overtakes it or meets the same limit; other chats are not held",
     hint="deliver_one: take a report only when no report of its chat (the same session_id) stored before it is "
          "still 'pending' or 'sending'. Reports of other chats do not wait.")
def delivery_chat_order(h: Harness) -> str:
    s = h.scenario("chat-order")
    busy, other = h.distinct(h.session_id, 2)
    chats = (busy, busy, other)
    sources, texts, marker = [h.source_id() for _ in chats], [h.text() for _ in chats], h.token()

    def script(c: Ctx):
        # The learner's own finish stores the reports, one after another: "stored before" is whatever their
        # schema records of that (a rowid, a time, a number per chat), which a plain insert would not fill in.
        ids = [str(finished(c, source, chat, text, marker)["report_id"]) for source, chat, text in zip(sources, chats, texts)]
        transport = c.transport([Behaviour.REFUSE])  # the first send meets a 429 that asks to wait RETRY_AFTER
        return ids, [c.deliver_one(transport) for _ in range(3)]

    (first, later, elsewhere), early = ok(s.run(script), "three reports, the first two for one chat; the first send "
                                                         "meets a 429 asking to wait 30 seconds; three deliveries")
    held = seen(s.observe())
    tried = [str(r["report_id"]) for r in held.requests]
    expect(tried[:1] == [first], f"the first delivery sent {tried[:1]}, not {first}, the report due the longest",
           "Take the report that has been due the longest: the smallest due_at, then the one stored first.")
    expect(later not in tried, f"{later} was sent while {first}, stored before it for the same chat, waited out a "
           "429: the chat's second answer overtook its first, into a chat that had just asked to wait",
           "A 429 is about the chat: while an earlier report of the chat is 'pending' or 'sending', its later "
           "reports wait too, however long they have been due.")
    expect([str(a["report_id"]) for a in held.accepted] == [elsewhere],
           f"while {first}'s chat waited, the service accepted {[a['report_id'] for a in held.accepted]}; only "
           f"{elsewhere}, for another chat, could go, and it must not wait",
           "Hold only the chat that asked to wait: a report waits for earlier reports of its own session_id, "
           "never for another chat's.")
    states = {str(r["report_id"]): r["delivery"] for r in held.reports}
    expect([states.get(i) for i in (first, later, elsewhere)] == ["pending", "pending", "confirmed"],
           f"after the 429 the reports are stored as {[states.get(i) for i in (first, later, elsewhere)]}, not "
           "pending (due again later), pending (held), confirmed")
    expect(early == ["refused", "confirmed", "nothing to send"], f"the three deliveries answered {early}")

    def after_the_wait(c: Ctx):
        c.clock.advance(c.policy.max_delay)
        transport = c.transport([])
        return [c.deliver_one(transport) for _ in range(3)]

    late = ok(s.run(after_the_wait), "three more deliveries once the wait is over")
    snap = seen(s.observe())
    order = [str(a["report_id"]) for a in snap.accepted]
    expect(order == [elsewhere, first, later], f"the service accepted {order}; the order that keeps each chat's "
           f"answers in turn is {[elsewhere, first, later]}")
    expect(late == ["confirmed", "confirmed", "nothing to send"], f"after the wait, the deliveries answered {late}")
    expect(all(r["delivery"] == "confirmed" for r in snap.reports),
           f"the reports ended as {[r['delivery'] for r in snap.reports]}, not all confirmed")
    expect(sum(str(r["report_id"]) == later for r in snap.requests) == 1,
           f"{later} was tried {sum(str(r['report_id']) == later for r in snap.requests)} times; held, it should "
           "spend no attempt on its chat's limit")
    return (f"{later} waited behind {first}, whose chat asked to wait; {elsewhere}, for another chat, went at once; "
            "then the chat's two reports went in turn")


@row("lost-reply-unknown", unit="B", topic="delivery",
     covers="Fake service accepts r1 but loses its response → one externally accepted send, local UNKNOWN, "
            "no automatic second send",
     hint="On Uncertain, record 'unknown' and return Disposition.UNKNOWN. deliver_one picks only 'pending' "
          "reports, so an unknown one is never sent again by itself.")
def lost_reply_unknown(h: Harness) -> str:
    s = h.scenario("lost-reply")
    source, session, text, marker = h.source_id(), h.session_id(), h.text(), h.token()

    def first(c: Ctx):
        seeded(c, source, session, text, marker)
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
    source, session, text, marker = h.source_id(), h.session_id(), h.text(), h.token()
    # Killed after the service accepted; and, in an order drawn in the parent, the same code let through
    # there and judged from a copy of what it left: no child can tell which of the two runs it is.
    points, states = crash_states(h, "crash-after-accept", lambda c: seeded(c, source, session, text, marker),
                                  lambda c, _: c.deliver_one(c.transport([])),
                                  after=lambda c: c.deliver_one(c.transport([])), kinds=("accepted",))
    if not points:
        never_reached("the process dies after the service accepted")
    for state, snap in zip(states[:2], h.observe([s.kept for s in states[:2]])):
        if state.crashed is not None:
            ok(state.crashed, "the process dies after the service accepted", expect="crashed", harness=h)
        later = ok(state.restarted, "a new process delivers") if state.restarted is not None else None
        seen(snap)
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
    points = sweep(h, "deliver_one", lambda c: seeded(c, source, session, text, marker),
                   lambda c, _: c.deliver_one(c.transport([])), judge_delivery,
                   after=lambda c: [c.deliver_one(c.transport([])) for _ in range(2)])
    return f"{len(points)} crash points in deliver_one: never a second send, never confirmed without a send"


def judge_delivery(snap: Snapshot, where: str) -> None:
    where += " and restarting"
    for report in snap.reports:
        sends = [a for a in snap.accepted if str(a["report_id"]) == str(report["report_id"])]
        expect(len(sends) <= 1, f"{where} sent report {report['report_id']} {len(sends)} times",
               "Commit 'sending' in a transaction of its own before calling the transport, and send only "
               "'pending' reports: a process that dies after the send then leaves a report no restart sends again.")
        expect(not (report["delivery"] == "confirmed" and not sends),
               f"{where} left report {report['report_id']} confirmed but never sent",
               "Record 'confirmed' only after the transport returned a Receipt, never before the send.")
