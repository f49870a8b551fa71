"""A Hypothesis rule-based state machine: the learner's queue against a plain model.

Each step runs the learner's code in a new child process on the same files, so only
what was committed carries over from step to step. After every step the checker reads
the files back itself (never the child, which has run the learner's cells and could
have replaced the reading function), and the machine compares them with the model. When they disagree,
Hypothesis shrinks the sequence and the row reports the shortest one it found.
"""

from __future__ import annotations

import io
from dataclasses import dataclass
from typing import Any

from ..errors import Disagreement
from ..engine.faults import KillAt
from .harness import Ctx, Harness
from .observe import read_between_children
from ..fakes.service import Behaviour
from .kit import Fail, ok

CAPACITY, PER_SESSION = 2, 1
EXAMPLES, STEPS = 10, 8
"""Sequences and steps per sequence. Each step is a child process (about 15 ms), so every
example costs a passing Unit B submission about 0.15 s. Ten catch each case of cases.py that
only a sequence shows, on every seed tried (five do not)."""
SHRINK_LIMIT = 40
"""Successful shrinks at most: enough for a short sequence."""
SHRINK_SECONDS = 6
"""Seconds of shrinking at most, so a failing learner hears back quickly."""
ANSWERS = {Behaviour.ACCEPT: "confirmed", Behaviour.REFUSE: "refused", Behaviour.REFUSE_PERMANENTLY: "failed",
           Behaviour.LOSE_REPLY: "unknown", Behaviour.SERVER_ERROR: "unknown"}
"""What deliver_one answers when the service does this to the report it sends (REFUSE: until the attempt cap)."""
LATER = 100_000.0
"""Seconds each delivery moves the clock beyond the last: longer than any wait, so every refused report is due."""
SEQUENCES = int("6442455536848114704879376537644653919424631178724946066721600744068897851052767661851614657991682391253625043112622")
"""The seed of the sequences Hypothesis draws. Derandomized, it would derive one from the machine's
source, so any edit of the machine would change which sequences run; this is the one it derived
before the machine left its closure, so the row draws the sequences the cases were measured with."""


class _bounded_shrinking:
    """Cap Hypothesis's shrinking for one run (its limit is an internal constant)."""

    def __enter__(self):
        try:
            from hypothesis.internal.conjecture import engine  # noqa: PLC0415 - Hypothesis loads only when this row runs
        except ImportError:  # pragma: no cover - a future Hypothesis may move it
            self.engine = None
            return self
        self.engine = engine
        self.saved = {name: getattr(engine, name) for name in ("MAX_SHRINKS", "MAX_SHRINKING_SECONDS")
                      if hasattr(engine, name)}
        limits = {"MAX_SHRINKS": SHRINK_LIMIT, "MAX_SHRINKING_SECONDS": SHRINK_SECONDS}
        for name in self.saved:
            setattr(engine, name, limits[name])
        return self

    def __exit__(self, *exc):
        if self.engine is not None:
            for name, value in self.saved.items():
                setattr(self.engine, name, value)


@dataclass(frozen=True)
class _Run:
    """What every example of one run shares: the harness, the ids its rules draw from, the counts."""

    h: Harness
    sources: list[str]
    sessions: list[str]
    texts: list[str]
    marker: str
    stats: dict[str, int]


class QueueModel:
    """The model and the steps that compare it with the files; ``machine`` makes Hypothesis's
    state machine of it, its rules drawn from one run's ids."""

    run: "_Run"

    def __init__(self) -> None:
        super().__init__()
        self.run.stats["examples"] += 1
        self.scenario = self.run.h.scenario("model")
        self.work: dict[str, dict] = {}  # source -> {session, text, state}
        self.reports = 0
        self.sent = 0
        self.calls = 0
        self.later = 0.0  # how far each delivery's clock is moved on: further every time

    # -- running a step --------------------------------------------------
    def step(self, what: str, script) -> Any:
        self.run.stats["steps"] += 1
        try:
            value = ok(self.scenario.run(script), what)
        except Fail as failure:
            raise Disagreement(failure.observation) from None
        seen_now = self.read()
        self.compare(seen_now, what)
        return value, seen_now

    def compare(self, seen_now: dict, what: str) -> None:
        if seen_now["problems"]:
            raise Disagreement(f"after {what}: {'; '.join(seen_now['problems'])}")
        stored = {w["source_id"]: w for w in seen_now["work"]}
        if set(stored) != set(self.work):
            raise Disagreement(f"after {what}: the store holds requests {sorted(stored)}, "
                               f"the model {sorted(self.work)}")
        for source, expected in self.work.items():
            got = stored[source]
            if (got["session_id"], got["text"]) != (expected["session"], expected["text"]):
                raise Disagreement(f"after {what}: request {source} changed its session or text")
            if got["state"] != expected["state"]:
                raise Disagreement(f"after {what}: request {source} is {got['state']!r}, "
                                   f"the model says {expected['state']!r}")
        if len(seen_now["reports"]) != self.reports:
            raise Disagreement(f"after {what}: {len(seen_now['reports'])} reports stored, "
                               f"the model has {self.reports}")
        if len(seen_now["accepted"]) != self.sent:
            raise Disagreement(f"after {what}: the service accepted {len(seen_now['accepted'])} sends, "
                               f"the model expects {self.sent}")
        if seen_now["model_calls"] != self.calls:
            raise Disagreement(f"after {what}: the model was called {seen_now['model_calls']} times, "
                               f"expected {self.calls}")

    def read(self) -> dict:
        return read_between_children(self.scenario.target())

    def unfinished(self, session: str | None = None) -> int:
        return sum(1 for w in self.work.values()
                   if w["state"] != "done" and (session is None or w["session"] == session))

    # -- rules -----------------------------------------------------------
    def admit(self, source: str, session: str, text: str) -> None:
        what = f"admit({source!r}, {session!r}, text #{self.run.texts.index(text) + 1})"
        known = self.work.get(source)
        if known is not None:
            expected = "duplicate" if (known["session"], known["text"]) == (session, text) else "conflict"
        elif self.unfinished() >= CAPACITY or self.unfinished(session) >= PER_SESSION:
            expected = "refused"
        else:
            expected = "accepted"
            self.work[source] = {"session": session, "text": text, "state": "pending"}
        answer, _ = self.step(what, lambda c: c.admit(c.queue(CAPACITY, PER_SESSION), source, session, text))
        if answer["outcome"] != expected:
            raise Disagreement(f"{what} answered {answer['outcome']!r}; the model expects {expected!r}")

    def work_once(self) -> None:
        pending = [s for s, w in self.work.items() if w["state"] == "pending"]
        if pending:
            self.calls += 1
            self.reports += 1
        before = {s: w["state"] for s, w in self.work.items()}
        # Which pending request the learner picks is theirs to choose: read it back from the store.
        self.run.stats["steps"] += 1
        try:
            report = ok(self.scenario.run(lambda c: c.work_once(c.queue(CAPACITY, PER_SESSION), c.loop(self.run.marker), "w1")),
                        "work_once()")
        except Fail as failure:
            raise Disagreement(failure.observation) from None
        seen_now = self.read()
        done_now = [w["source_id"] for w in seen_now["work"] if w["state"] == "done" and before.get(w["source_id"]) == "pending"]
        if pending and (report is None or len(done_now) != 1):
            raise Disagreement(f"work_once() with {len(pending)} pending finished {len(done_now)} requests")
        if not pending and report is not None:
            raise Disagreement("work_once() on a queue with nothing pending returned a report")
        for source in done_now:
            self.work[source]["state"] = "done"
        self.compare(seen_now, "work_once()")

    def crash_in_finish(self, point: int) -> None:
        what = f"claim, then finish stopped before its point {point}"

        try:  # claimed in a process of its own, so the plan counts the points of finish alone
            a = ok(self.scenario.run(lambda c: c.claim(c.queue(CAPACITY, PER_SESSION), "w1")), "claim()")
        except Fail as failure:
            raise Disagreement(failure.observation) from None

        def crash(c: Ctx):
            c.finish(c.queue(CAPACITY, PER_SESSION), a, c.loop(self.run.marker).run(a["session_id"], a["text"]))
            return a["source_id"]

        self.run.stats["steps"] += 1
        self.run.h.crash_points += 1
        result = self.scenario.run(crash, plan=lambda: KillAt(point))
        self.calls += 1
        if result.status not in ("crashed", "returned"):
            try:
                ok(result, what)
            except Fail as failure:
                raise Disagreement(failure.observation) from None
        seen_now = self.read()
        stored = {w["source_id"]: w["state"] for w in seen_now["work"]}
        moved = [s for s, w in self.work.items() if w["state"] == "pending" and stored.get(s) != "pending"]
        if len(moved) != 1:
            raise Disagreement(f"{what}: {len(moved)} requests left 'pending'")
        state = stored[moved[0]]
        self.work[moved[0]]["state"] = state  # running (crash before commit) or done (after)
        if state == "done":
            self.reports += 1
        self.compare(seen_now, what)

    def deliver(self, behaviour: Behaviour) -> None:
        what = f"deliver_one() with the service set to {behaviour.value}"
        self.later += LATER
        later = self.later

        def child(c: Ctx):
            c.clock.advance(later)  # every refused report is due again: the model has no clock
            return c.deliver_one(c.transport([behaviour])), c.policy.max_attempts

        self.run.stats["steps"] += 1
        before = self.read()
        try:
            answer, cap = ok(self.scenario.run(child), what)
        except Fail as failure:
            raise Disagreement(failure.observation) from None
        after = self.read()
        pending_before = [r for r in before["reports"] if r["delivery"] == "pending"]
        expected = ANSWERS[behaviour] if pending_before else "nothing to send"
        if pending_before and behaviour is Behaviour.REFUSE and after["requests"]:
            tried = str(after["requests"][-1]["report_id"])  # whichever due report the learner took
            if sum(1 for r in after["requests"] if str(r["report_id"]) == tried) >= cap:
                expected = "failed"
        if pending_before and behaviour in (Behaviour.ACCEPT, Behaviour.LOSE_REPLY):
            self.sent += 1
        if answer != expected:
            raise Disagreement(f"{what} answered {answer!r}; the model expects {expected!r}")
        self.compare(after, what)


def machine(run: _Run) -> type:
    """Hypothesis's state machine for one run: ``QueueModel`` with its rules, drawn from ``run``'s ids."""
    from hypothesis import seed, strategies as st  # noqa: PLC0415 - Hypothesis loads only when this row runs
    from hypothesis.stateful import RuleBasedStateMachine, precondition, rule  # noqa: PLC0415

    class QueueMachine(QueueModel, RuleBasedStateMachine):
        admit = rule(source=st.sampled_from(run.sources), session=st.sampled_from(run.sessions),
                     text=st.sampled_from(run.texts))(QueueModel.admit)
        work_once = rule()(QueueModel.work_once)
        crash_in_finish = precondition(lambda self: any(w["state"] == "pending" for w in self.work.values()))(
            rule(point=st.integers(min_value=1, max_value=4))(QueueModel.crash_in_finish))
        deliver = precondition(lambda self: self.reports > 0)(
            rule(behaviour=st.sampled_from(list(ANSWERS)))(QueueModel.deliver))

    QueueMachine.run = run
    return seed(SEQUENCES)(QueueMachine)


def run_model_check(h: Harness) -> str:
    from hypothesis import HealthCheck, Phase, settings  # noqa: PLC0415 - Hypothesis loads only when this row runs
    from hypothesis.reporting import with_reporter  # noqa: PLC0415
    from hypothesis.stateful import run_state_machine_as_test  # noqa: PLC0415

    stats = {"examples": 0, "steps": 0}
    run = _Run(h, [h.source_id() for _ in range(5)], [h.session_id() for _ in range(2)], [h.text(), h.text()],
               h.token(10), stats)
    report = io.StringIO()
    config = settings(max_examples=EXAMPLES, stateful_step_count=STEPS, deadline=None, derandomize=True,
                      database=None, phases=[Phase.generate, Phase.shrink], print_blob=False,
                      report_multiple_bugs=False, suppress_health_check=list(HealthCheck))
    try:
        with with_reporter(lambda text: print(text, file=report)), _bounded_shrinking():
            run_state_machine_as_test(machine(run), settings=config)
    except Disagreement as disagreement:
        text = "\n".join([report.getvalue(), *getattr(disagreement, "__notes__", [])])
        steps = [line.strip() for line in text.splitlines() if line.strip().startswith("state.")]
        sequence = "; ".join(s.removeprefix("state.") for s in steps if "teardown" not in s)
        raise Fail(f"{disagreement} — shortest failing sequence found: {sequence or '(not reported)'}") from None
    return (f"{stats['examples']} random sequences ({stats['steps']} steps) of admit, work, crashes and delivery "
            "agreed with the model")
