"""Every crash point of every call, and the model-based check (Unit B)."""

from __future__ import annotations

from ...loop import LoopResult
from ..harness import Ctx, Harness
from ..observe import Snapshot
from ..model_based import run_model_check
from ..kit import admit_and_claim, expect, finished, row, sweep, topic
from .durable import judge_completion
from .delivery import judge_delivery

topic("sweep", "B optional part: every crash point of every call")


@row("crash-sweep", unit="B", topic="sweep", runs_unit_a=("admit", "claim"),
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
                                lambda c, a: c.finish(c.queue(), a, result),
                                lambda snap, where: judge_completion(snap, source, where)))

    def second_run(c: Ctx) -> dict | None:
        q = c.queue()
        first = finished(c, source, session, text, first_marker)
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
                                       lambda c, a: c.finish(c.queue(), a, result), judge_generation))
    tried["deliver_one"] = len(sweep(h, "deliver", lambda c: finished(c, source, session, text, first_marker),
                                     lambda c, _: c.deliver_one(c.transport([])), judge_delivery,
                                     after=lambda c: [c.deliver_one(c.transport([])) for _ in range(2)]))
    total = sum(tried.values())
    return f"{total} crash points tried ({', '.join(f'{k} {v}' for k, v in tried.items())}); every invariant held"


@row("model-based", unit="B", topic="sweep", runs_unit_a=("admit", "claim", "work_once"),
     covers="Model-based check: random sequences of admit, work, deliver and crashes agree with a plain model",
     hint="Read the failing sequence from the bottom up: the last step is where your queue and the model disagree.")
def model_based(h: Harness) -> str:
    return run_model_check(h)
