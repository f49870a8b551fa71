"""The checkpoint's rows: the chapter 8/9 hand-off, run end to end through the learner's functions.

The Telegram adapter (against a fake Bot API on 127.0.0.1) and the clock producer run through
the learner's own ``admit``, ``work_once`` and ``deliver_one``, a capacity refusal on each path
included. They register in ``kit.CHECKPOINT_ROWS``, beside the acceptance rows, and
``rows.py`` holds both: ``lucy checkpoint`` runs them after every acceptance row, while
``check("all")`` and the notebooks never do.
"""

from __future__ import annotations

import datetime as dt
import sqlite3
from contextlib import closing
from functools import partial
from pathlib import Path

from ..engine.faults import KillAt
from .harness import Ctx, Harness
from .kit import CHECKPOINT_ROWS, Fail, ok, row, seen


def checkpoint_row(row_id: str, covers: str, hint: str):
    return row(row_id, unit="checkpoint", topic="checkpoint", covers=covers, hint=hint, registry=CHECKPOINT_ROWS)


def _store_rows(db: Path, sql: str) -> list[tuple]:
    with closing(sqlite3.connect(db)) as conn:
        return conn.execute(sql).fetchall()


def _crash_at_cursor(table: str) -> KillAt:
    """Stops the process just before the first write to a runtime cursor table."""
    return KillAt(1, kinds=("write",), where=lambda p: table in p.sql and "INSERT INTO lucy_" in p.sql
                   and "skipped" not in p.sql and "missed" not in p.sql)


@checkpoint_row("telegram-intake",
                "Telegram intake calls your admit: allowed chats only, one work item per message, a crash between "
                "the admission commit and the cursor advance gives redelivery and a duplicate, bad updates skipped",
                "admit must answer DUPLICATE for a source_id it already stored (Telegram redelivers), and must "
                "write through queue.store.")
def telegram_intake(h: Harness) -> str:
    from ..telegram import BotApi, TelegramIntake  # noqa: PLC0415 - httpx and the fake server load only when a checkpoint row runs
    from ..fakes.telegram import FakeTelegram  # noqa: PLC0415 - httpx and the fake server load only when a checkpoint row runs

    chat_a, chat_b, stranger = 4411, 9020, 6666
    allowed = {chat_a: "chat-4411", chat_b: "chat-9020"}
    with FakeTelegram(known_chats={chat_a, chat_b}) as api:
        api.message(chat_a, 1, "brief ACME 5 days")
        api.message(chat_a, 2, "brief HOOLI")
        api.message(stranger, 1, "brief ACME, let me in")
        api.raw({"message": {"message_id": 3, "chat": {"id": "not a number"}, "text": "brief ACME"}})
        api.raw({"edited_message": {"message_id": 1, "chat": {"id": chat_a}, "text": "brief GLOBEX"}})
        api.message(chat_a, 4, "x" * 5000)
        api.message(chat_b, 1, "brief ACME 5 days")
        s = h.scenario("telegram")

        def intake(c: Ctx) -> TelegramIntake:
            queue = c.queue()
            return TelegramIntake(BotApi(api.base_url, api.token), c.store, partial(c.fn("admit"), queue), allowed)

        def crash(c: Ctx):
            poller = intake(c)
            poller.poll_once()

        ok(s.run(crash, plan=lambda: _crash_at_cursor("lucy_telegram_cursor")),
           "intake stopped between admitting the first message and moving the cursor", expect="crashed", harness=h)
        result = [tuple(pair) for pair in ok(s.run(
            lambda c: [(src, a.outcome.value) for src, a in intake(c).poll_once().admitted]), "intake after the restart")]
        expect_outcomes = [("tg:4411:1", "duplicate"), ("tg:4411:2", "accepted"), ("tg:9020:1", "accepted")]
        if result != expect_outcomes:
            raise Fail(f"after the restart, intake admitted {result}; expected {expect_outcomes}")
        snap = seen(s.observe())
        sources = sorted(w["source_id"] for w in snap.work)
        if sources != ["tg:4411:1", "tg:4411:2", "tg:9020:1"]:
            raise Fail(f"the store holds work for {sources}")
        if any("6666" in w["source_id"] for w in snap.work) or snap.model_calls:
            raise Fail("the stranger's message reached the queue or the model")
        reasons = [r for (r,) in _store_rows(s.db, "SELECT reason FROM lucy_telegram_skipped ORDER BY seq")]
        if len(reasons) != 4:
            raise Fail(f"expected 4 skipped updates with reasons, found {reasons}")
        later = ok(s.run(lambda c: len(intake(c).poll_once().admitted)), "polling once more")
        if later or api.pending_updates:
            raise Fail("the cursor stalled: Telegram still delivers updates that were already handled")
    return "3 messages admitted once each (the redelivered one as a duplicate); stranger, malformed, edited and " \
           "oversized updates skipped with reasons"


@checkpoint_row("telegram-refusal",
                "A message your admit refuses for capacity is recorded (chat, message, reason, time) as the cursor "
                "moves past it, and the chat is told it is busy: no silent drop, and one full chat stalls no other",
                "admit must answer REFUSED with a reason when the session already holds per_session_limit unfinished "
                "jobs, and store nothing for it.")
def telegram_refusal(h: Harness) -> str:
    from ..telegram import BUSY_REPLY, BotApi, TelegramIntake  # noqa: PLC0415 - httpx and the fake server load only when a checkpoint row runs
    from ..fakes.telegram import FakeTelegram  # noqa: PLC0415 - httpx and the fake server load only when a checkpoint row runs

    allowed = {4411: "chat-4411", 9020: "chat-9020"}
    with FakeTelegram(known_chats=set(allowed)) as api:
        api.message(4411, 1, "brief ACME 5 days")
        api.message(4411, 2, "brief HOOLI")  # the session's one place is taken: refused
        api.message(9020, 1, "brief ACME 5 days")
        s = h.scenario("telegram-refusal")

        def intake(c: Ctx) -> TelegramIntake:
            queue = c.queue(per_session_limit=1)
            return TelegramIntake(BotApi(api.base_url, api.token), c.store, partial(c.fn("admit"), queue), allowed)

        def script(c: Ctx):
            poller = intake(c)
            first = [(src, a.outcome.value) for src, a in poller.poll_once().admitted]
            sent = poller.send_busy_replies()
            return first, sent, len(poller.poll_once().admitted)

        first, sent, later = ok(s.run(script), "polling three messages with a per-session limit of 1")
        expect = [["tg:4411:1", "accepted"], ["tg:4411:2", "refused"], ["tg:9020:1", "accepted"]]
        if [list(pair) for pair in first] != expect:
            raise Fail(f"intake admitted {first}; expected {expect}")
        refused = _store_rows(s.db, "SELECT source_id, chat_id, reason, refused_at, reply FROM lucy_telegram_refused")
        if len(refused) != 1 or refused[0][:2] != ("tg:4411:2", 4411) or not refused[0][2] or refused[0][4] != "sent":
            raise Fail(f"the refused message should be recorded once with a reason and a sent busy reply, found {refused}")
        if sent != 1 or [(m.chat_id, m.text) for m in api.sent] != [(4411, BUSY_REPLY)]:
            raise Fail(f"Telegram received {[(m.chat_id, m.text[:40]) for m in api.sent]}; expected one busy reply")
        if later or api.pending_updates:
            raise Fail("the cursor did not move past the handled and refused updates")
        sources = sorted(w["source_id"] for w in seen(s.observe()).work)
        if sources != ["tg:4411:1", "tg:9020:1"]:
            raise Fail(f"the store holds work for {sources}; the refused message must store nothing")
    return f"the refused message is recorded ({refused[0][2]!r}) and its chat was told it is busy; the other chat's " \
           "message was admitted"


@checkpoint_row("telegram-delivery",
                "Reports go out with sendMessage to the right chat: a 429 is tried again after its retry_after, a "
                "chat Telegram rejects ends failed, a lost reply is UNKNOWN and is not sent again",
                "deliver_one must retry a retryable refusal only when policy.next_due says so, mark a permanent "
                "refusal 'failed', record UNKNOWN for an Uncertain outcome and never pick an unknown report again.")
def telegram_delivery(h: Harness) -> str:
    from ..telegram import BotApi, TelegramTransport  # noqa: PLC0415 - httpx and the fake server load only when a checkpoint row runs
    from ..fakes.telegram import FakeTelegram  # noqa: PLC0415 - httpx and the fake server load only when a checkpoint row runs

    marker = h.token(10)
    chats = {"chat-4411": 4411, "chat-9020": 9020, "chat-5150": 5150}  # Telegram knows no chat 5150
    with FakeTelegram(known_chats={4411, 9020}) as api:
        s = h.scenario("telegram-send")
        api.fail_next_sends(429, retry_after=5)
        api.drop_next_replies(1)

        def script(c: Ctx):
            q = c.queue()
            for session, chat in chats.items():
                c.admit(q, f"tg:{chat}:1", session, "brief ACME 5 days")
                c.work_once(q, c.loop(marker), "w1")
            transport = TelegramTransport(BotApi(api.base_url, api.token), chats)
            answers = [c.deliver_one(transport) for _ in range(4)]
            c.clock.advance(10)
            return answers + [c.deliver_one(transport) for _ in range(2)]

        answers = ok(s.run(script, timeout=30), "delivering three reports through Telegram: a 429, a lost reply, "
                                                  "an unknown chat")
        if answers != ["refused", "unknown", "failed", "nothing to send", "confirmed", "nothing to send"]:
            raise Fail(f"six deliveries answered {answers}")
        sent = api.sent
        if sorted(str(m.chat_id) for m in sent) != ["4411", "9020"] or not all(marker in m.text for m in sent):
            raise Fail(f"Telegram received {[(m.chat_id, m.text[:30]) for m in sent]}")
        states = [r["delivery"] for r in seen(s.observe()).reports]
        if states != ["confirmed", "unknown", "failed"]:
            raise Fail(f"the reports are stored as {states}")
    return ("the 429 went out once its retry_after had passed, the rejected chat ended failed, the lost reply "
            "stayed UNKNOWN and was not sent again")


@checkpoint_row("telegram-model-outage",
                "A model that is down for good: the request is tried up to the cap, ends failed, and its chat gets "
                "the apology through sendMessage; the chat's next message is admitted",
                "work_once_retrying must hand a ModelUnavailable to fail_attempt, which ends the work 'failed' with "
                "an apology report once policy.next_due answers None; deliver_one sends that report like any other, "
                "and refusal must not count failed work.")
def telegram_model_outage(h: Harness) -> str:
    from dataclasses import replace  # noqa: PLC0415 - only this row copies the policy

    from ..telegram import BotApi, TelegramTransport  # noqa: PLC0415 - httpx and the fake server load only when a checkpoint row runs
    from ..fakes.telegram import FakeTelegram  # noqa: PLC0415 - httpx and the fake server load only when a checkpoint row runs

    marker = h.token(10)
    with FakeTelegram(known_chats={4411}) as api:
        s = h.scenario("telegram-outage")

        def script(c: Ctx):
            q = c.queue(per_session_limit=1)
            c.admit(q, "tg:4411:1", "chat-4411", "brief ACME 5 days")
            loop, policy = c.loop(marker, failures=None), replace(c.policy, max_attempts=3)
            for _ in range(6):
                c.work_once_retrying(q, loop, "w1", policy)
                c.clock.advance(policy.max_delay)
            answer = c.deliver_one(TelegramTransport(BotApi(api.base_url, api.token), {"chat-4411": 4411}))
            return answer, c.admit(q, "tg:4411:2", "chat-4411", "brief HOOLI")["outcome"]

        answer, again = ok(s.run(script, timeout=30), "a model that is always down, then one delivery to Telegram")
        snap = seen(s.observe())
        states = [w["state"] for w in snap.work]
        if answer != "confirmed" or len(api.sent) != 1 or str(api.sent[0].chat_id) != "4411":
            raise Fail(f"the delivery answered {answer!r} and Telegram received {len(api.sent)} messages; the "
                       f"request is {states}")
        if states[:1] != ["failed"] or snap.model_calls != 3:
            raise Fail(f"with an attempt cap of 3 the model was called {snap.model_calls} times and the request is "
                       f"{states[:1]}")
        if again != "accepted":
            raise Fail(f"the chat's next message was {again!r}: failed work still holds its place")
    return "3 attempts, then failed; the apology reached the chat through sendMessage; the chat's next message was " \
           "admitted"


def _hourly_acme():
    """The clock rows' schedule: an ACME brief for owner-ada every hour from 08:00 UTC."""
    from ..clock import Schedule  # noqa: PLC0415 - httpx and the fake server load only when a checkpoint row runs

    start = dt.datetime(2026, 11, 30, 8, 0, tzinfo=dt.timezone.utc)
    return start, Schedule("acme-hourly", "ACME", "owner-ada", start, dt.timedelta(hours=1))


@checkpoint_row("clock-producer",
                "The clock's scheduled briefs go through your admit: a slot fired twice is a duplicate, missed slots "
                "are visible, and the newest slot is worked",
                "admit must treat a repeated source_id with the same session and text as DUPLICATE.")
def clock_producer(h: Harness) -> str:
    from ..clock import ClockProducer  # noqa: PLC0415 - httpx and the fake server load only when a checkpoint row runs

    start, schedule = _hourly_acme()
    s = h.scenario("clock")
    marker = h.token()

    def producer(c: Ctx) -> ClockProducer:
        return ClockProducer(c.store, partial(c.fn("admit"), c.queue()), [schedule])

    first = [tuple(pair) for pair in ok(s.run(lambda c: [(f.source_id, f.admission.outcome.value) for f in
             producer(c).tick(start + dt.timedelta(hours=2, minutes=30)).fired]), "the first tick")]

    def crash(c: Ctx):
        clock = producer(c)
        clock.tick(start + dt.timedelta(hours=3, minutes=5))

    ok(s.run(crash, plan=lambda: _crash_at_cursor("lucy_clock_cursor")),
       "a tick stopped between admitting a slot and moving the cursor", expect="crashed", harness=h)
    again = ok(s.run(lambda c: [f.admission.outcome.value for f in
                                 producer(c).tick(start + dt.timedelta(hours=3, minutes=6)).fired]),
               "the tick after the restart")
    worked = ok(s.run(lambda c: [c.work_once(c.queue(), c.loop(marker), "w1") is not None for _ in range(3)]),
                "working the scheduled briefs")
    if first != [(schedule.source_id(start + dt.timedelta(hours=2)), "accepted")]:
        raise Fail(f"the first tick fired {first}; expected only the newest slot, 10:00")
    if again != ["duplicate"]:
        raise Fail(f"firing the 11:00 slot again after the restart answered {again}, not duplicate")
    snap = seen(s.observe())
    if len(snap.work) != 2:
        raise Fail(f"two slots were admitted, but the store holds {len(snap.work)} work rows")
    missed = _store_rows(s.db, "SELECT slot FROM lucy_clock_missed ORDER BY slot")
    if len(missed) != 2:
        raise Fail(f"the 08:00 and 09:00 slots should be recorded as missed, found {missed}")
    if worked != [True, True, False] or snap.model_calls != 2:
        raise Fail(f"working the queue gave {worked} with {snap.model_calls} model calls")
    return "newest slot admitted, 2 missed slots recorded, the double-fired slot was a duplicate, 2 briefs written"


@checkpoint_row("clock-refusal",
                "A scheduled brief your admit refuses for capacity is recorded with its slot, reason and time as the "
                "cursor moves on: no silent drop",
                "admit must answer REFUSED with a reason when the queue already holds capacity unfinished jobs.")
def clock_refusal(h: Harness) -> str:
    from ..clock import ClockProducer  # noqa: PLC0415 - httpx and the fake server load only when a checkpoint row runs

    start, schedule = _hourly_acme()
    s = h.scenario("clock-refusal")

    def script(c: Ctx):
        clock = ClockProducer(c.store, partial(c.fn("admit"), c.queue(capacity=1)), [schedule])
        return [f.admission.outcome.value for at in (5, 65, 70) for f in
                clock.tick(start + dt.timedelta(minutes=at)).fired]

    outcomes = ok(s.run(script), "three ticks with a capacity of 1 and nobody working")
    if outcomes != ["accepted", "refused"]:
        raise Fail(f"the 08:00 and 09:00 slots answered {outcomes}; expected accepted, then refused (and no retry)")
    refused = _store_rows(s.db, "SELECT slot, source_id, reason, refused_at FROM lucy_clock_refused")
    if len(refused) != 1 or refused[0][1] != schedule.source_id(start + dt.timedelta(hours=1)) or not refused[0][2]:
        raise Fail(f"the refused 09:00 slot should be recorded once with a reason, found {refused}")
    return f"the 09:00 brief was refused and recorded ({refused[0][2]!r}), not dropped"
