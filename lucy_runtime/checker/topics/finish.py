"""The loop, the result and the report that finish writes (Unit A)."""

from __future__ import annotations

from ...errors import CheckerFault
from ...loop import LoopResult
from ..attempts import Attempt, attempt
from ..harness import Ctx, Harness
from ..kit import admit_and_claim, expect, expect_raised, ok, row, seen, topic, whole_number

topic("finish", "55–80: the loop, the result and the report")


@row("integrated-path", unit="A", topic="finish",
     covers="Step 5: the claimed request goes through the injected loop; a hard-coded report is detected",
     hint="work_once: claim, then loop.run(assignment.session_id, assignment.text), then finish with that result. "
          "The report's body must be the loop's text.")
def integrated_path(h: Harness) -> str:
    s = h.scenario("integrated")
    source, session, text, marker = h.source_id(), h.session_id(), h.text(), h.token(10)

    def script(c: Ctx):
        q = c.queue()
        c.admit(q, source, session, text)
        return c.work_once(q, c.loop(marker), "w1")

    report = ok(s.run(script), "admit, then work_once")
    expect(report is not None, "work_once returned None although a request was pending")
    snap = seen(s.observe())
    work = snap.work_for(source)
    expect(len(work) == 1 and work[0]["state"] == "done", f"after work_once the request is {[w['state'] for w in work]}")
    reports = snap.reports_for(work[0]["work_id"])
    expect(len(reports) == 1, f"{len(reports)} stored reports for the finished request, not 1")
    expect(marker in reports[0]["body"], "the stored report does not carry the loop's answer: "
           "its body was not produced by the loop this checker injected")
    expect(snap.model_calls == 1, f"the model was called {snap.model_calls} times for one request")
    return "one model call; the stored report carries the injected loop's answer"


@row("report-to-admitted-session", unit="A", topic="finish",
     covers="Authentication vs. generated text: the report goes to the admitted session whatever the loop's text says",
     hint="Take the report's session_id from the stored work row, never from the loop's result.")
def report_to_admitted_session(h: Harness) -> str:
    s = h.scenario("addressing")
    source, session, text, marker, intruder = h.source_id(), h.session_id(), h.text(), h.token(), h.session_id()

    def script(c: Ctx):
        q = c.queue()
        c.admit(q, source, session, text)
        return c.work_once(q, c.loop(marker, addressed_to=intruder), "w1")

    report = ok(s.run(script), "work_once with a loop that names another session")
    snap = seen(s.observe())
    work = snap.work_for(source)
    stored = snap.reports_for(work[0]["work_id"]) if work else []
    expect(len(stored) == 1, f"{len(stored)} reports stored for the request, not 1",
           "finish must store the report (in the same transaction that marks the work done) and return it; "
           "only then can the checker see where it is addressed.")
    expect(stored[0]["session_id"] == session, f"the report is addressed to {stored[0]['session_id']!r}; "
           f"the request was admitted from {session!r}")
    expect(report is not None and report["session_id"] == session, "the returned Report names another session")
    return "the loop named another session; the report still went to the admitted one"


@row("finish-binds-work", unit="A", topic="finish",
     covers="Completion binds the result to the specific claimed work identity",
     hint="Update and report exactly the Assignment's work_id (WHERE work_id = ?), never 'the running one'.")
def finish_binds_work(h: Harness) -> str:
    s = h.scenario("binding")
    sources, session, text = [h.source_id(), h.source_id()], h.session_id(), h.text()
    markers = [h.token(10), h.token(10)]

    def script(c: Ctx):
        q = c.queue()
        for src in sources:
            c.admit(q, src, session, text)
        x, y = c.claim(q, "w1"), c.claim(q, "w1")
        if x is None or y is None:
            raise CheckerFault(f"claim returned {x} and then {y} although two requests were pending")
        c.finish(q, y, LoopResult(f"brief [{markers[1]}]", session, 1))
        return x, y

    x, y = ok(s.run(script), "claiming two requests and finishing the second")
    snap = seen(s.observe())
    later, earlier = snap.work_by_id(y["work_id"]), snap.work_by_id(x["work_id"])
    expect(later is not None and later["state"] == "done", "finishing a work_id did not mark that work done")
    expect(earlier is not None and earlier["state"] == "running",
           f"finishing one request changed another one to {earlier and earlier['state']!r}")
    stored = snap.reports_for(y["work_id"])
    expect(len(stored) == 1 and markers[1] in stored[0]["body"], "the finished work's report does not carry its result")
    expect(not snap.reports_for(x["work_id"]), "a report was stored for work that was not finished")
    return "finishing one of two running requests changed only that one"


@row("finish-misuse", unit="A", topic="finish",
     covers="finish on work that is not claimed is refused with an error and changes nothing",
     hint="Move the work to done only from 'running' (UPDATE … WHERE … AND state = 'running'); if that changed "
          "no row, raise an error before writing anything, and let it leave finish.")
def finish_misuse(h: Harness) -> str:
    s = h.scenario("misuse")
    source, session, text = h.source_id(), h.session_id(), h.text()
    ok(s.run(lambda c: c.admit(c.queue(), source, session, text)), "admitting a request")
    snap = seen(s.observe())
    work_id = snap.work_for(source)[0]["work_id"] if snap.work_for(source) else None
    result = LoopResult(f"brief [{h.token()}]", session, 1)
    never_claimed = {"work_id": work_id, "source_id": source, "session_id": session, "text": text, "worker_id": "w1",
                     "generation": 1}
    for target, what in ((never_claimed, "pending work"),
                         ({**never_claimed, "work_id": 987_654_321}, "a work id that does not exist")):
        answer = Attempt.of(ok(s.run(lambda c: attempt(lambda: c.finish(c.queue(), target, result))), f"finish on {what}"))
        expect_raised(answer, f"finish on {what}")
    snap = seen(s.observe())
    stored = snap.work_for(source)
    expect(stored and stored[0]["state"] == "pending", "finish on unclaimed work changed its state")
    expect(not snap.reports, "finish on unclaimed work stored a report")
    return "finish refused unclaimed and unknown work with an error, and wrote nothing"


@row("finish-fenced", unit="A", topic="finish",
     covers="Completion binds the result to the claim: a finish with another worker's or another generation's "
            "Assignment is refused with an error (the fence) and changes nothing; the current claim still finishes",
     hint="finish is given the Assignment claim handed out. Move the work to done only WHERE its state is "
          "'running' AND worker_id and generation match the Assignment; if the UPDATE changed no row, raise "
          "an error before writing anything.")
def finish_fenced(h: Harness) -> str:
    s = h.scenario("fence")
    source, session, text, marker = h.source_id(), h.session_id(), h.text(), h.token(10)
    result = LoopResult(f"brief [{marker}]", session, 1)
    mine = ok(s.run(lambda c: admit_and_claim(c, source, session, text, "w1")), "admitting a request; w1 claims it")
    generation = mine["generation"]
    other = generation + 1 if isinstance(generation, int) and not isinstance(generation, bool) else -1
    for stranger, what in (({**mine, "worker_id": "w2"}, "w2's Assignment for the work w1 claimed"),
                           ({**mine, "generation": other}, f"w1's Assignment with generation {other}")):
        answer = Attempt.of(ok(s.run(lambda c: attempt(lambda: c.finish(c.queue(), stranger, result))),
                               f"finish with {what}"))
        expect_raised(answer, f"finish with {what}", "the fence must refuse a claim that is not the current one")
        snap = seen(s.observe())
        work = snap.work_for(source)
        expect(len(work) == 1 and work[0]["state"] == "running",
               f"finish with {what} left the work {[w['state'] for w in work]}, not 'running'")
        expect(not snap.reports, f"finish with {what} stored a report")
    ok(s.run(lambda c: c.finish(c.queue(), mine, result)), "finish with w1's own Assignment, after the refusals")
    snap = seen(s.observe())
    work = snap.work_for(source)
    expect(len(work) == 1 and work[0]["state"] == "done", "the claim that is current could not finish the work")
    reports = snap.reports_for(work[0]["work_id"])
    expect(len(reports) == 1 and marker in reports[0]["body"], "the current claim's finish stored no report with its result")
    return "another worker's and another generation's Assignment were refused and changed nothing; w1's own finished"


@row("report-identity", unit="A", topic="finish",
     covers="Report identity is immutable and distinct from work identity, and the report carries its generation",
     hint="Give the report an id of its own (for example 'r-<work_id>-<generation>'), and store the generation with it.")
def report_identity(h: Harness) -> str:
    s = h.scenario("identity")
    source, session, text, marker = h.source_id(), h.session_id(), h.text(), h.token()

    def script(c: Ctx):
        q = c.queue()
        c.admit(q, source, session, text)
        return c.work_once(q, c.loop(marker), "w1")

    report = ok(s.run(script), "admit, then work_once")
    snap = seen(s.observe())
    stored = snap.reports
    expect(len(stored) == 1, f"{len(stored)} reports stored, not 1")
    r = stored[0]
    expect(str(r["report_id"]) != str(r["work_id"]), f"the report id {r['report_id']!r} is the work id")
    generation = whole_number(r["generation"])
    expect(generation is not None and generation >= 1,
           f"the report's generation is {r['generation']!r}, not a whole number from 1")
    expect(report is not None and str(report["report_id"]) == str(r["report_id"]),
           "the Report finish returned has another id than the one stored")
    return f"report {r['report_id']!r} for work {r['work_id']!r}, generation {r['generation']}"
