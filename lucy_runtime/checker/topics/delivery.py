"""Delivery: one send per report, and an honest record of what the service said (Unit B)."""

from __future__ import annotations

from ..faults import KillAt
from ...transport import Behaviour
from ..harness import Ctx, Harness
from ..observe import Snapshot
from ..kit import expect, ok, row, seeded, seen, sweep, topic

topic("delivery", "45–60: one send, and an honest record of it")


@row("delivery-confirmed", unit="B", topic="delivery",
     covers="Step 8: claim a report for delivery, send it once, and retain the confirmed disposition",
     hint="deliver_one: in one transaction pick a 'pending' report and mark it 'sending'; send it; then record "
          "'confirmed' with the receipt. Return Disposition.NOTHING_TO_SEND when nothing is pending.")
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
     covers="A known refusal is not a send: the report stays deliverable and goes out once on a later try",
     hint="On Refused, put the report back to 'pending' (the service said no, so nothing was sent).")
def delivery_refused_retry(h: Harness) -> str:
    s = h.scenario("refused")
    source, session, text, marker = h.source_id(), h.session_id(), h.text(), h.token()

    def script(c: Ctx):
        seeded(c, source, session, text, marker)
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
    s = h.scenario("crash-after-accept")
    source, session, text, marker = h.source_id(), h.session_id(), h.text(), h.token()

    def crash(c: Ctx):
        seeded(c, source, session, text, marker)
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
