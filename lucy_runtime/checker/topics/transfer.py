"""Transfer to chat messages, and the deliberate break of finish (Unit B)."""

from __future__ import annotations

from ..harness import Ctx, Harness, SwappedLearner
from ..kit import ROWS, Fail, expect, ok, row, seen, topic

topic("transfer", "B 65–80: chat messages as occurrences")
topic("break", "B 80–85: break finish on purpose")


@row("transfer-intake", unit="B", topic="transfer", runs_unit_a=("admit", "work_once"),
     covers="Transfer: a second session, repeated input and rejected intake → no duplicate work, no unauthorized call",
     hint="admit_message: refuse a chat that is not allowed before anything else; otherwise the occurrence is "
          "chat id + message id, and the session is the one the allowed chat is bound to.")
def transfer_intake(h: Harness) -> str:
    s = h.scenario("transfer")
    chat_a, chat_b, stranger = (h.rng.randint(10_000, 99_999) for _ in range(3))
    allowed = {chat_a: h.session_id(), chat_b: h.session_id()}
    text, marker = h.text(), h.token()

    def script(c: Ctx):
        q = c.queue()
        answers = [
            c.admit_message(q, allowed, chat_a, 1, text),
            c.admit_message(q, allowed, chat_a, 1, text),  # delivered twice
            c.admit_message(q, allowed, chat_a, 2, text),  # same words, a new message
            c.admit_message(q, allowed, chat_b, 1, text),  # same message id in another chat
            c.admit_message(q, allowed, stranger, 3, text),  # not allowed
        ]
        reports = [c.work_once(q, c.loop(marker), "w1") for _ in range(4)]
        return answers, reports

    answers, reports = ok(s.run(script), "intake from two chats and a stranger")
    outcomes = [a["outcome"] for a in answers]
    expect(outcomes == ["accepted", "duplicate", "accepted", "accepted", "refused"],
           f"the five messages gave {outcomes}")
    snap = seen(s.observe())
    expect(len(snap.work) == 3, f"three distinct messages from allowed chats made {len(snap.work)} work rows")
    expect(snap.model_calls == 3, f"the model was called {snap.model_calls} times for three requests")
    sessions = sorted(w["session_id"] for w in snap.work)
    expect(sessions == sorted([allowed[chat_a], allowed[chat_a], allowed[chat_b]]),
           f"work was filed under sessions {sessions}, not the sessions the chats are bound to")
    expect(all(str(stranger) not in str(w["source_id"]) for w in snap.work), "the stranger's message was stored")
    return "one work per message from an allowed chat; the repeat was a duplicate; the stranger reached nothing"


@row("deliberate-break-caught", unit="B", topic="break", runs_unit_a=("admit", "claim", "work_once"),
     covers="Learner finish is replaced with a no-op → the integrated observer fails; supplied runtime cannot rescue",
     hint="Write broken_finish so that it returns a plausible Report but breaks the contract (for example it "
          "writes nothing); the rows must then fail while your real finish still passes.")
def deliberate_break_caught(h: Harness) -> str:
    probes = ("integrated-path", "finish-durable", "finish-atomic")
    broken = Harness(SwappedLearner(h.learner, {"finish": "broken_finish"}), seed=h.rng.randint(0, 1 << 30),
                     timeout=h.timeout, workdir=h.workdir / "broken")
    failed = []
    for probe in probes:
        try:
            ROWS[probe].run(broken)
        except Fail as failure:
            failed.append(probe)
            if "no function named 'broken_finish'" in failure.observation:
                raise Fail("broken_finish is not defined: run its cell") from None
    expect(failed, "with broken_finish in place of finish, every finish row still held: the break is not a break "
           "the observer can see (or broken_finish is a correct finish)")
    for probe in probes:
        ROWS[probe].run(h)  # the real finish must still hold
    return f"with broken_finish, {', '.join(failed)} failed; with the real finish they hold"
