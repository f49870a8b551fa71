"""Work whose model fails: attempts, a wait before the next try, and a failed state with an apology (Unit B)."""

from __future__ import annotations

from dataclasses import replace

from ...errors import CheckerFault, ModelUnavailable
from ..harness import Ctx, Harness
from ..attempts import SWALLOWED_HINT, Attempt, Ending, attempt
from ..kit import admit_and_claim, expect, expect_raised, ok, row, seen, sweep, topic, whole_number
from ..observe import Snapshot
from ..setup_moves import release_work

topic("failure", "going further: a model that fails")

CAP = 3
"""The attempt cap the rows give the learner's policy: not the policy's default, so a constant cannot pass."""


def capped(c: Ctx, attempts: int = CAP):
    return replace(c.policy, max_attempts=attempts)


@row("model-recovers", unit="B", topic="failure", runs_unit_a=("admit", "refusal", "claim", "finish"),
     covers="A transient model error is an attempt, not an end: the work waits out its backoff (still holding its "
            "place), runs again when it is due, and ends done with one report and its attempts recorded",
     hint="work_once_retrying: catch ModelUnavailable from loop.run and call fail_attempt, which moves the running "
          "work to 'waiting' with attempts + 1 and due_at = policy.next_due(attempts, error). Before claiming, move "
          "waiting work whose due_at has come back to 'pending'. Your Unit A refusal must count waiting work: it "
          "can still finish.")
def model_recovers(h: Harness) -> str:
    s = h.scenario("model-recovers")
    source, other, session, text, marker = h.source_id(), h.source_id(), h.session_id(), h.text(), h.token(10)

    def script(c: Ctx):
        q = c.queue(capacity=10, per_session_limit=1)
        c.admit(q, source, session, text)
        loop = c.loop(marker, failures=1)
        first = c.work_once_retrying(q, loop, "w1")
        meanwhile = c.admit(q, other, session, text)  # the waiting request still holds its chat's place
        too_soon = c.work_once_retrying(q, loop, "w1")  # its wait is not over yet
        c.clock.advance(c.policy.max_delay)
        later = c.work_once_retrying(q, loop, "w1")
        return first, meanwhile, too_soon, later

    first, meanwhile, too_soon, later = ok(s.run(script), "a model that fails once, then answers")
    snap = seen(s.observe())
    work = snap.work_for(source)
    expect(len(work) == 1, f"the request is stored {len(work)} times, not once")
    expect(first is None or marker not in str(first.get("body")),
           "work_once_retrying returned a report with an answer from a model that had failed")
    expect(meanwhile["outcome"] == "refused",
           f"while the request waited to try again, a second request from its chat (per-session limit 1) was "
           f"{meanwhile['outcome']!r}, not refused: waiting work can still finish, so it holds its place")
    expect(snap.model_calls != 1,
           "after one model error the request was never tried again: it is stuck as "
           f"{work[0]['state']!r}",
           "fail_attempt must move the running work out of 'running' (to 'waiting'), and work_once_retrying must "
           "move waiting work back to 'pending' once its due_at has come.")
    expect(too_soon is None, "the request was tried again at once, before its wait was over: a model that is "
                             "down gets hammered",
           "Set due_at = policy.next_due(attempts, error) in fail_attempt, and wake only waiting work whose due_at "
           "<= policy.now().")
    expect(snap.model_calls == 2,
           f"the model was called {snap.model_calls} times for a request that failed once and then succeeded, not 2")
    expect(work[0]["state"] == "done", f"after the model recovered, the request is {work[0]['state']!r}, not done")
    reports = snap.reports_for(work[0]["work_id"])
    expect(len(reports) == 1 and marker in str(reports[0]["body"]),
           f"the recovered request has {len(reports)} reports; it should have one, with the model's answer")
    expect(later is not None, "work_once_retrying returned None although it finished the request")
    # The counter may have any name (the prose leaves extra columns to the learner); read it only when it is there.
    # That the attempts are counted shows in behaviour: model-fails-for-good stops at the policy's cap.
    if "attempts" in work[0]:
        attempts = whole_number(work[0]["attempts"])
        expect(attempts is not None and attempts >= 1,
               f"the work row's attempts column reads {work[0]['attempts']!r}: a failed attempt must be recorded "
               "on the work", "Add 1 to the work's attempts in fail_attempt.")
    return ("one model error: the request waited (and kept its place), ran again when due, and ended done with "
            "one report")


@row("model-fails-for-good", unit="B", topic="failure", runs_unit_a=("admit", "refusal", "claim"),
     covers="A model that always fails: the work is tried up to the policy's cap, then ends failed with one "
            "apology report to its own session through the outbox, and its place is free again; fail_attempt is "
            "fenced, so a stale claim's late failure changes nothing",
     hint="fail_attempt: when policy.next_due(attempts, error) is None, move the work to 'failed' and insert a "
          "short apology report (its own report id, such as 'r-<work_id>-<generation>'; delivery 'pending') in the "
          "same transaction. Your Unit A refusal must not count failed work: it can never finish.")
def model_fails_for_good(h: Harness) -> str:
    s = h.scenario("model-fails")
    source, later, session, text, marker = h.source_id(), h.source_id(), h.session_id(), h.text(), h.token(10)
    tries = 4 * CAP

    def script(c: Ctx):
        q = c.queue(capacity=10, per_session_limit=1)
        c.admit(q, source, session, text)
        loop, policy = c.loop(marker, failures=None), capped(c)
        for _ in range(tries):
            c.work_once_retrying(q, loop, "w1", policy)
            c.clock.advance(policy.max_delay)
        return c.admit(q, later, session, text)

    again = ok(s.run(script), f"a model that always fails, {tries} polls {CAP}-attempt cap apart")
    snap = seen(s.observe())
    work = snap.work_for(source)
    expect(len(work) == 1, f"the request is stored {len(work)} times, not once")
    state = work[0]["state"]
    expect(snap.model_calls <= CAP,
           f"with an attempt cap of {CAP}, the model was called {snap.model_calls} times and the request is "
           f"{state!r}: model errors are retried without end",
           "Give up when policy.next_due(attempts, error) answers None: count the attempts on the work row and "
           "pass that count, not a constant.")
    expect(snap.model_calls == CAP and state == "failed",
           f"with an attempt cap of {CAP}, the model was called {snap.model_calls} times and the request is "
           f"{state!r}, not 'failed' after {CAP} attempts",
           "After a model error the request must run again when it is due (fail_attempt moves it to 'waiting'; "
           "work_once_retrying wakes it), and end 'failed' once policy.next_due answers None.")
    reports = snap.reports_for(work[0]["work_id"])
    expect(len(reports) == 1, f"the failed request has {len(reports)} reports; the customer needs exactly one "
                              "apology, or they wait in silence")
    apology = reports[0]
    expect(apology["session_id"] == session, f"the apology goes to {apology['session_id']!r}, not the admitted "
                                             f"session {session!r}")
    expect(apology["delivery"] == "pending" and str(apology["body"]).strip(),
           f"the apology is stored as {apology['delivery']!r} with the body {apology['body']!r}: it must wait as "
           "'pending' in the outbox, with words for the customer")
    expect(again["outcome"] == "accepted",
           f"after the request failed, a new one from its chat (per-session limit 1) was {again['outcome']!r}: "
           "failed work can never finish, so it must not hold a place",
           "Count only work that can still finish in refusal (pending, running and waiting), not failed work.")

    stale_case, released = h.scenario("model-fails-stale-claim"), h.source_id()

    def stale_claim(c: Ctx):
        q = c.queue()
        first = admit_and_claim(c, released, session, text, "w1")
        if not release_work(c, first["work_id"]):  # an operator released it: w1 was judged gone
            raise CheckerFault("the work just claimed was not running")
        second = c.claim(q, "w1")  # w1, restarted, claims it again
        return first, second, attempt(lambda: c.fail_attempt(q, first, ModelUnavailable("a late 429"), capped(c, 1)))

    first, second, late = ok(stale_case.run(stale_claim), "w1 claims, an operator releases the request, w1 claims "
                                                           "it again, then the first w1's model call fails late")
    snap = seen(stale_case.observe())
    work = snap.work_for(released)
    answer = Attempt.of(late)
    expect(answer.raised, answer.told("fail_attempt with the first claim's Assignment, after the release") + ": "
           "the fence must refuse a claim from before the release",
           SWALLOWED_HINT if answer.ending is Ending.SWALLOWED else FENCED)
    expect(second is not None and len(work) == 1 and work[0]["state"] == "running"
           and not snap.reports_for(work[0]["work_id"]),
           f"a stale claim's fail_attempt left the request {[w['state'] for w in work]} with "
           f"{len(snap.reports_for(work[0]['work_id'])) if work else 0} reports: it belongs to the new claim, "
           "which is still running it", FENCED)
    return (f"{CAP} attempts, then 'failed' with one pending apology to the admitted session; the chat's place "
            "was free again; a stale claim's fail_attempt was refused")


FENCED = ("Fence fail_attempt like finish: … WHERE work_id = ? AND state = 'running' AND worker_id = ? AND "
          "generation = ?, with the Assignment's worker and generation, and raise FenceError when no row matches.")


OUTAGE = 600.0
"""The model outage the chapter names: down for ten minutes (seconds of the scenario's clock)."""


class OutageLoop:
    """The checker's loop, behind a model provider that is down until ``until`` on ``clock``."""

    def __init__(self, loop, clock, until: float):
        self.loop, self.clock, self.until = loop, clock, until

    def run(self, session_id: str, text: str):
        if self.clock() < self.until:
            raise ModelUnavailable("503: the model provider is down")
        return self.loop.run(session_id, text)


@row("model-rides-out-outage", unit="B", topic="failure", runs_unit_a=("admit", "refusal", "claim", "finish"),
     covers="With the policy's defaults, a request that arrives as the model goes down for ten minutes waits the "
            "outage out and ends done, its answer delivered, with no apology: the schedule outlasts the outage",
     hint="Give up only when policy.next_due(attempts, error) answers None, counting the attempts on the work row: "
          "the default schedule waits at least policy.shortest_total_wait() seconds, longer than the outage.")
def model_rides_out_outage(h: Harness) -> str:
    s = h.scenario("model-outage")
    source, session, text, marker = h.source_id(), h.session_id(), h.text(), h.token(10)
    polls = int(3 * OUTAGE / 60)

    def script(c: Ctx):
        c.policy = c.policy_for(c.scenario.namespace, short=False)  # the defaults, as Lucy would run
        q = c.queue()
        c.admit(q, source, session, text)
        loop = OutageLoop(c.loop(marker), c.clock, c.clock() + OUTAGE)
        for _ in range(polls):  # a worker polling once a minute for half an hour
            c.work_once_retrying(q, loop, "w1")
            c.clock.advance(60)
        return [c.deliver_one(c.transport([])) for _ in range(2)], c.policy.shortest_total_wait()

    answers, patience = ok(s.run(script), f"the model down for {OUTAGE / 60:.0f} minutes, a worker polling once a "
                                          "minute")
    snap = seen(s.observe())
    work = snap.work_for(source)
    expect(len(work) == 1, f"the request is stored {len(work)} times, not once")
    expect(work[0]["state"] == "done",
           f"after a {OUTAGE / 60:.0f}-minute outage the request is {work[0]['state']!r}, not done: the schedule "
           f"(at least {patience:.0f} s of waiting) should have outlasted it",
           "Count the attempts on the work row and pass the count to policy.next_due; give up only when it "
           "answers None, never on a cap of your own.")
    reports = snap.reports_for(work[0]["work_id"])
    expect(len(reports) == 1 and marker in str(reports[0]["body"]),
           f"the request has {len(reports)} reports: one, with the model's answer, and no apology")
    expect(answers[0] == "confirmed" and len(snap.accepted) == 1,
           f"delivering the answer gave {answers}: it should go out once, confirmed")
    return (f"the request waited out a {OUTAGE / 60:.0f}-minute outage (the schedule waits at least "
            f"{patience:.0f} s), ended done, and its answer was delivered")


def judge_failure(snap: Snapshot, source: str, where: str) -> None:
    work = snap.work_for(source)
    state = work[0]["state"] if work else None
    reports = snap.reports_for(work[0]["work_id"]) if work else []
    expect(not (state == "failed" and not reports),
           f"{where} left the work failed with no apology: the customer waits in silence, and nothing says so")
    expect(not (state != "failed" and reports), f"{where} left an apology for work that is still {state!r}")
    expect(len(reports) <= 1, f"{where} left {len(reports)} apologies")


@row("model-failure-atomic", unit="B", topic="failure", runs_unit_a=("admit", "claim"),
     covers="The failed state and its apology commit together: a crash at any statement of the last fail_attempt "
            "leaves both or neither",
     hint="In fail_attempt, move the work to 'failed' and insert its apology report inside ONE "
          "`with queue.store.transaction() as tx:` block.")
def model_failure_atomic(h: Harness) -> str:
    source, session, text = h.source_id(), h.session_id(), h.text()
    error = ModelUnavailable("the model provider timed out")
    points = sweep(h, "fail_attempt", lambda c: admit_and_claim(c, source, session, text, "w1"),
                   lambda c, a: c.fail_attempt(c.queue(), a, error, capped(c, 1)),
                   lambda snap, where: judge_failure(snap, source, where))
    return f"{len(points)} crash points inside the last fail_attempt: every reopen showed failed with its apology, " \
           "or neither"


topic("held", "going further: an error nobody expected")


class BugLoop:
    """A loop whose own code fails before the model is asked: a bug, not an outage. It counts its runs."""

    def __init__(self, token: str):
        self.token = token
        self.runs = 0

    def run(self, session_id: str, text: str):
        self.runs += 1
        tickers: dict[str, str] = {}
        return tickers[f"ticker-{self.token}"]  # the bug: a ticker nobody stored (a KeyError, as bugs raise)


def held_by_a_bug(c: Ctx, q, source: str, session: str, text: str, token: str, polls: int = 3) -> tuple[list, int]:
    """Admit one request and poll ``polls`` times with a loop that always fails with a bug; what each poll raised."""
    c.admit(q, source, session, text)
    loop, raised = BugLoop(token), list[str | None]()
    for _ in range(polls):
        try:
            c.work_once_retrying(q, loop, "w1")
            raised.append(None)
        except Exception as error:  # the error must leave work_once_retrying; any exception type will do
            raised.append(type(error).__name__)
        c.clock.advance(c.policy.max_delay)
    return raised, loop.runs


@row("bug-held", unit="B", topic="held", runs_unit_a=("admit", "refusal", "claim"),
     covers="An error from the loop that is not ModelUnavailable (a bug) is neither swallowed nor retried: it "
            "leaves work_once_retrying, its type and message and its time are recorded on the work row, and the "
            "work waits in needs_person, keeping its place, where an operator sees it",
     hint="work_once_retrying: catch any other exception from loop.run, and in one transaction fenced like "
          "fail_attempt move the work to 'needs_person' with error = the error's type and message and error_at = "
          "policy.now(); then raise it again.")
def bug_held(h: Harness) -> str:
    s = h.scenario("bug-held")
    source, other, session, text, token = h.source_id(), h.source_id(), h.session_id(), h.text(), h.token(8)

    def script(c: Ctx):
        q = c.queue(capacity=10, per_session_limit=1)
        started = c.clock()
        raised, runs = held_by_a_bug(c, q, source, session, text, token)
        return raised, runs, started, c.admit(q, other, session, text)

    raised, runs, started, meanwhile = ok(s.run(script), "a loop with a bug, polled three times")
    snap = seen(s.observe())
    work = snap.work_for(source)
    expect(len(work) == 1, f"the request is stored {len(work)} times, not once")
    row_ = work[0]
    expect(raised[0] is not None, "the bug did not leave work_once_retrying: the worker's log never shows it",
           "After recording it, raise the error again (a bare `raise` in the except block).")
    expect(runs == 1, f"the loop ran {runs} times: a bug fails the same way every time, so it is not an attempt "
                      f"to retry (the request is {row_['state']!r})",
           "Catch ModelUnavailable for fail_attempt; any other error goes to 'needs_person', never to 'waiting'.")
    expect(row_["state"] == "needs_person",
           f"after a bug the request is {row_['state']!r}: it should wait in 'needs_person', where a person sees it")
    expect(token in str(row_.get("error") or ""),
           f"the work row's error column reads {row_.get('error', 'nothing (no error column)')!r}: it should keep "
           "the error's type and message", "Write f\"{type(error).__name__}: {error}\" into the error column.")
    when = row_.get("error_at")
    expect(isinstance(when, (int, float)) and abs(float(when) - started) <= 1,
           f"the work row's error_at reads {when!r}; the bug happened at policy.now() = {started}",
           "Write policy.now() into error_at.")
    expect(meanwhile["outcome"] == "refused",
           f"while the request waited for a person, a second request from its chat (limit 1) was "
           f"{meanwhile['outcome']!r}: held work can still be answered, so it keeps its place",
           "Your Unit A refusal must count every state but done and failed, needs_person included.")
    return f"the bug left work_once_retrying ({raised[0]}), ran once, and is held with {row_['error']!r}"


@row("held-failed-with-apology", unit="B", topic="held", runs_unit_a=("admit", "claim"),
     covers="An operator fails held work with fail_held, fenced by the generation read from the row: a stale "
            "generation or work that is not held is refused and changes nothing; otherwise the work ends failed "
            "with one apology, stored in the same transaction",
     hint="fail_held: in one transaction, UPDATE … SET state = 'failed' WHERE work_id = ? AND state = "
          "'needs_person' AND generation = ?, raise WrongState when it changed no row, and insert the apology "
          "report (such as r-<work_id>-<generation>) as fail_attempt does.")
def held_failed_with_apology(h: Harness) -> str:
    s = h.scenario("held-failed")
    source, session, text, token = h.source_id(), h.session_id(), h.text(), h.token(8)

    def script(c: Ctx):
        q = c.queue()
        held_by_a_bug(c, q, source, session, text, token, polls=1)

    ok(s.run(script), "a request held after a bug")
    before = seen(s.observe()).work_for(source)
    expect(len(before) == 1 and before[0]["state"] == "needs_person",
           f"the checker could not hold a request after a bug: it is {[w['state'] for w in before]}",
           "Make bug-held pass first: this row starts from the state it leaves.")
    work_id, generation = before[0]["work_id"], whole_number(before[0].get("generation", 1)) or 1

    def stale(c: Ctx):
        return attempt(lambda: c.fn("fail_held")(c.queue(), work_id, generation + 1))

    refused = Attempt.of(ok(s.run(stale), "fail_held with a generation the row no longer has"))
    snap = seen(s.observe())
    expect_raised(refused, "fail_held with a stale generation", "the fence must refuse a generation that is not "
                                                                "the row's")
    expect(snap.work_for(source)[0]["state"] == "needs_person" and not snap.reports_for(work_id),
           "a refused fail_held changed the work or stored a report")

    def fail(c: Ctx):
        c.fn("fail_held")(c.queue(), work_id, generation)
        return attempt(lambda: c.fn("fail_held")(c.queue(), work_id, generation))

    again = Attempt.of(ok(s.run(fail), "fail_held with the row's generation, then once more"))
    snap = seen(s.observe())
    work, reports = snap.work_for(source), snap.reports_for(work_id)
    expect(work[0]["state"] == "failed", f"after fail_held the work is {work[0]['state']!r}, not failed")
    expect(len(reports) == 1 and reports[0]["session_id"] == session and reports[0]["delivery"] == "pending"
           and str(reports[0]["body"]).strip(),
           f"after fail_held the work has {len(reports)} reports: the customer needs one apology, pending, to "
           "the admitted session")
    expect_raised(again, "fail_held on work that already failed", "only held work can be failed")
    return "a stale generation was refused; the held work failed with one pending apology; a second call refused"
