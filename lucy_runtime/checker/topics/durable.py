"""What a reopened store shows after a crash inside or after finish, and finish's rollback."""

from __future__ import annotations

from ...loop import LoopResult
from ..attempts import Attempt, attempt
from ...engine.faults import Count, FailAt, Stop
from ..harness import Ctx, Harness
from ..observe import Snapshot
from ..series import Series
from ..kit import admit_and_claim, expect, expect_raised, ok, preparation, row, seen, sweep, topic

topic("durable", "80–85: what a reopened store shows")
topic("crash", "85–90: a worker that dies while running")
topic("repair", "B 15–30: your finish again: it rolls back and says so")


def finish_setup(h: Harness):
    source, session, text, marker = h.source_id(), h.session_id(), h.text(), h.token(10)
    result = LoopResult(f"brief [{marker}]", session, 1)
    return source, session, text, marker, result


@row("finish-atomic", unit="A", topic="durable",
     covers="Fail between terminal state and report insertion → reopen shows neither terminal change nor new report",
     hint="Mark the work done and insert its report inside ONE `with queue.store.transaction() as tx:` block.")
def finish_atomic(h: Harness) -> str:
    source, session, text, marker, result = finish_setup(h)
    points = sweep(h, "finish", lambda c: admit_and_claim(c, source, session, text, "w1"),
                   lambda c, a: c.finish(c.queue(), a, result),
                   lambda snap, where: judge_completion(snap, source, where))
    return f"{len(points)} crash points inside finish: every reopen showed both halves or neither"


def judge_completion(snap: Snapshot, source: str, where: str) -> None:
    work = snap.work_for(source)
    state = work[0]["state"] if work else None
    reports = snap.reports_for(work[0]["work_id"]) if work else []
    expect(not (state == "done" and not reports),
           f"{where} left the work done with no report: a completed request whose answer is lost")
    expect(not (state != "done" and reports), f"{where} left a report for work that is still {state!r}")


@row("finish-durable", unit="A", topic="durable",
     covers="Commit finish, then stop before the sender runs → one completed work item and one pending report survive",
     hint="Let the transaction block end before finish returns; store the report with delivery 'pending'.")
def finish_durable(h: Harness) -> str:
    source, session, text, marker, result = finish_setup(h)
    s = h.scenario("after-finish")

    def script(c: Ctx):
        a = admit_and_claim(c, source, session, text, "w1")
        c.finish(c.queue(), a, result)
        c.stop()

    ok(s.run(script, plan=Stop), "finish, then the process dies", expect="crashed", harness=h)
    snap = seen(s.observe())
    work = snap.work_for(source)
    expect(len(work) == 1 and work[0]["state"] == "done", f"after the restart the work is {[w['state'] for w in work]}")
    reports = snap.reports_for(work[0]["work_id"])
    expect(len(reports) == 1, f"{len(reports)} reports survived, not 1")
    expect(reports[0]["delivery"] == "pending", f"the surviving report is {reports[0]['delivery']!r}, not 'pending'")
    expect(marker in reports[0]["body"], "the surviving report lost its body")
    expect(not snap.accepted, "something was sent although no sender ran")
    return "after the process died, a fresh reader found the work done and its report pending"


@row("running-crash-visible", unit="A", topic="crash",
     covers="A worker that dies while running leaves a visible unresolved item and no automatic replay (Chapter 12)",
     hint="claim only 'pending' work. A 'running' row whose worker died stays visible; Chapter 12 adds takeover.")
def running_crash_visible(h: Harness) -> str:
    s = h.scenario("running-crash")
    source, session, text, marker = h.source_id(), h.session_id(), h.text(), h.token()

    def crash(c: Ctx):
        q = c.queue()
        c.admit(q, source, session, text)
        c.work_once(q, c.loop(marker, crash=True), "w1")

    ok(s.run(crash, plan=Stop), "a worker dies inside the loop", expect="crashed", harness=h)
    after = ok(s.run(lambda c: c.work_once(c.queue(), c.loop(marker), "w2")), "a new worker polls")
    snap = seen(s.observe())
    work = snap.work_for(source)
    expect(len(work) == 1 and work[0]["state"] == "running",
           f"the dead worker's request is {[w['state'] for w in work]}, not a visible 'running'")
    expect(after is None, "the new worker replayed the dead worker's request")
    expect(snap.model_calls == 1, f"the model was called {snap.model_calls} times: the request was run again")
    expect(not snap.reports, "a report appeared for work nobody finished")
    return "the dead worker's request stayed 'running', unreported, and was not run again"


@row("finish-rollback", unit="B", topic="repair",
     covers="Step 7: a failure inside finish rolls back both halves and propagates the error; without one both commit",
     hint="Let the error leave the `with queue.store.transaction()` block: the store rolls back and re-raises. "
          "Do not catch it inside finish.")
def finish_rollback(h: Harness) -> str:
    source, session, text, marker, result = finish_setup(h)

    def prepare(c: Ctx):
        return admit_and_claim(c, source, session, text, "w1")

    def fault(c: Ctx):  # the same code with and without a planned failure
        a = prepare(c)
        return attempt(lambda: c.finish(c.queue(), a, result))

    skip = sum(1 for p in preparation(h, "rollback", prepare) if p.kind == "write")
    with Series(h, "fault", fault) as series:  # made before any plan: no child can learn which write fails
        counted = series.run(Count())
        dry = series.keep()
        ok(counted, "finish without a failure")
        writes = sum(1 for p in counted.points if p.kind == "write") - skip
        expect(writes > 0, "finish wrote nothing through queue.store")
        failed = {}
        for n in series.order(writes):  # the n-th run fails no write its place could name
            failed[n] = (series.run(FailAt(skip + n)), series.keep())
    for n in range(1, writes + 1):
        answer = Attempt.of(ok(failed[n][0], f"finish with its write {n} failing"))
        expect_raised(answer, f"when write {n} of finish failed, finish",
                       "the caller cannot know the report was not stored")
    for n, snap in enumerate(h.observe([failed[n][1] for n in range(1, writes + 1)]), start=1):
        work = seen(snap).work_for(source)
        expect(work and work[0]["state"] == "running" and not snap.reports,
               f"after write {n} of finish failed, the store shows {[w['state'] for w in work]} with "
               f"{len(snap.reports)} reports: a failed finish must leave the work running and no report")
    committed = seen(dry.observe())
    work = committed.work_for(source)
    expect(work and work[0]["state"] == "done" and len(committed.reports) == 1,
           "without a failure, finish did not commit both the done state and the report")
    return f"a failure at each of {writes} writes raised and left nothing; without one, both halves committed"
