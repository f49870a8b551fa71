"""Telegram intake and sending, over real HTTP to a fake Bot API on 127.0.0.1."""

from __future__ import annotations

import datetime as dt
import os

import httpx
import pytest

from lucy_runtime.errors import InvalidField, TransportMisuse
from lucy_runtime.store import Store
from lucy_runtime.telegram import (BUSY_REPLY, BotApi, Message, Skipped, TelegramIntake, TelegramTransport,
                                   parse_update)
from lucy_runtime.fakes.telegram import FakeTelegram
from lucy_runtime.transport import OutgoingReport, Receipt, Refused, Uncertain
from lucy_runtime.work import Admission, Outcome


class SpyAdmit:
    """Stands in for the learner's admit and records every call (a fake of the same contract)."""

    def __init__(self):
        self.calls: list[tuple[str, str, str]] = []
        self.seen: set[str] = set()

    def __call__(self, source_id: str, session_id: str, text: str) -> Admission:
        self.calls.append((source_id, session_id, text))
        outcome = Outcome.DUPLICATE if source_id in self.seen else Outcome.ACCEPTED
        self.seen.add(source_id)
        return Admission(outcome, source_id)


@pytest.fixture
def api():
    with FakeTelegram(known_chats={4411, 9020}) as fake:
        yield fake


def intake_for(api, store, admit, allowed=None, now=None) -> TelegramIntake:
    return TelegramIntake(BotApi(api.base_url, api.token), store, admit, allowed or {4411: "chat-4411"},
                          **({"now": now} if now else {}))


class Clock:
    """A clock a test moves by hand."""

    def __init__(self) -> None:
        self.at = dt.datetime(2026, 12, 2, 9, tzinfo=dt.timezone.utc)

    def __call__(self) -> dt.datetime:
        return self.at


def test_an_allowed_message_is_admitted_as_chat_plus_message_id(api, store):
    api.message(4411, 87, "brief ACME 5 days")
    spy = SpyAdmit()
    result = intake_for(api, store, spy).poll_once()
    assert spy.calls == [("tg:4411:87", "chat-4411", "brief ACME 5 days")]
    assert result.admitted[0][1].outcome is Outcome.ACCEPTED


def test_an_unauthorized_chat_never_reaches_admit(api, store):
    api.message(6666, 1, "brief ACME")
    spy = SpyAdmit()
    poller = intake_for(api, store, spy)
    result = poller.poll_once()
    assert spy.calls == []
    assert result.skipped == (Skipped(1, "chat 6666 is not allowed: not admitted"),)
    assert poller.skipped() == [Skipped(1, "chat 6666 is not allowed: not admitted")]


@pytest.mark.parametrize("update, reason", [
    ({"message": {"message_id": 1, "chat": {"id": "x"}, "text": "hi"}}, "chat.id"),
    ({"message": {"message_id": 1, "chat": {"id": True}, "text": "hi"}}, "chat.id"),
    ({"message": {"message_id": "1", "chat": {"id": 4411}, "text": "hi"}}, "message_id"),
    ({"message": {"message_id": 1, "chat": {"id": 4411}, "photo": [{"file_id": "a"}]}}, "not a text message"),
    ({"message": {"message_id": 1, "chat": {"id": 4411}, "text": 42}}, "text is not a string"),
    ({"message": {"message_id": 1, "chat": {"id": 4411}, "text": "x" * 4097}}, "4097 characters"),
    ({"edited_message": {"message_id": 1, "chat": {"id": 4411}, "text": "changed"}}, "edited message"),
    ({"channel_post": {"message_id": 1}}, "not a message"),
])
def test_a_malformed_update_is_recorded_and_skipped_without_stalling_good_ones(api, store, update, reason):
    api.raw(update)
    api.message(4411, 2, "brief HOOLI")
    spy = SpyAdmit()
    poller = intake_for(api, store, spy)
    result = poller.poll_once()
    assert spy.calls == [("tg:4411:2", "chat-4411", "brief HOOLI")]
    assert len(result.skipped) == 1 and reason in result.skipped[0].reason
    assert poller.poll_once().admitted == () and api.pending_updates == 0


def test_an_update_without_an_id_is_reported(api, store):
    assert parse_update({"update_id": True, "message": {}}) == Skipped(None, "malformed: the update has no integer update_id")
    assert parse_update("nonsense").reason.startswith("malformed")
    assert isinstance(parse_update({"update_id": 5, "message": {"message_id": 1, "chat": {"id": 1}, "text": "hi"}}),
                      Message)


def test_a_crash_between_admission_and_the_cursor_gives_redelivery_and_one_work_item(api, tmp_path):
    """admit commits, the process dies before the cursor moves: Telegram redelivers, admit says duplicate."""
    path = tmp_path / "lucy.sqlite3"
    api.message(4411, 1, "brief ACME")
    log = tmp_path / "admitted.log"

    def admit(source_id, session_id, text):
        with Store(path) as s, s.transaction() as tx:  # a stand-in queue that commits like the learner's
            tx.execute("CREATE TABLE IF NOT EXISTS work (source_id TEXT PRIMARY KEY)")
            fresh = tx.execute("INSERT INTO work VALUES (?) ON CONFLICT DO NOTHING", (source_id,)).rowcount
        with open(log, "a") as fh:
            fh.write(f"{source_id} {'accepted' if fresh else 'duplicate'}\n")
        return Admission(Outcome.ACCEPTED if fresh else Outcome.DUPLICATE, source_id)

    pid = os.fork()
    if pid == 0:
        store = Store(path)
        poller = intake_for(api, store, admit)
        store.set_hook(lambda kind, sql: os._exit(77) if "lucy_telegram_cursor" in sql and kind == "write" else None)
        poller.poll_once()
        os._exit(0)
    _, status = os.waitpid(pid, 0)
    assert os.WEXITSTATUS(status) == 77
    with Store(path) as store:
        result = intake_for(api, store, admit).poll_once()
        assert [(src, a.outcome) for src, a in result.admitted] == [("tg:4411:1", Outcome.DUPLICATE)]
        assert store.query("SELECT COUNT(*) AS n FROM work")[0]["n"] == 1
    assert log.read_text().split("\n")[:2] == ["tg:4411:1 accepted", "tg:4411:1 duplicate"]


def test_the_cursor_is_kept_in_the_store_across_restarts(api, tmp_path):
    api.message(4411, 1, "brief ACME")
    with Store(tmp_path / "a.sqlite3") as store:
        intake_for(api, store, SpyAdmit()).poll_once()
    spy = SpyAdmit()
    with Store(tmp_path / "a.sqlite3") as store:
        poller = intake_for(api, store, spy)
        assert poller.cursor() == 2
        poller.poll_once()
    assert spy.calls == []


NOON = dt.datetime(2026, 11, 30, 12, 0, tzinfo=dt.timezone.utc)


class FullFor(SpyAdmit):
    """An admit whose per-session limit is reached for the sessions named: it answers REFUSED there."""

    def __init__(self, *full_sessions: str):
        super().__init__()
        self.full = set(full_sessions)

    def __call__(self, source_id, session_id, text):
        if session_id in self.full:
            self.calls.append((source_id, session_id, text))
            return Admission(Outcome.REFUSED, None, "session chat-4411 already has 1 job running")
        return super().__call__(source_id, session_id, text)


def busy_intake(api, store, admit):
    return TelegramIntake(BotApi(api.base_url, api.token), store, admit,
                          {4411: "chat-4411", 9020: "chat-9020"}, now=lambda: NOON)


def test_a_capacity_refusal_is_recorded_with_who_when_and_why_not_silently_dropped(api, store):
    api.message(4411, 7, "brief ACME")
    api.message(9020, 3, "brief HOOLI")
    poller = busy_intake(api, store, FullFor("chat-4411"))
    result = poller.poll_once()
    assert [(src, a.outcome) for src, a in result.admitted] == [("tg:4411:7", Outcome.REFUSED),
                                                                ("tg:9020:3", Outcome.ACCEPTED)]
    [refusal] = poller.refused()
    assert (refusal.chat_id, refusal.source_id, refusal.session_id, refusal.refused_at, refusal.reply) == \
        (4411, "tg:4411:7", "chat-4411", NOON, "pending")
    assert "1 job running" in refusal.reason
    assert poller.poll_once().admitted == () and api.pending_updates == 0  # the cursor moved on past it


def test_a_refused_chat_is_told_it_is_busy_once(api, store):
    api.message(4411, 7, "brief ACME")
    poller = busy_intake(api, store, FullFor("chat-4411"))
    poller.poll_once()
    assert poller.send_busy_replies() == 1
    assert poller.send_busy_replies() == 0
    assert [(m.chat_id, m.text) for m in api.sent] == [(4411, BUSY_REPLY)]
    assert [r.reply for r in poller.refused()] == ["sent"]


def test_a_busy_reply_refused_for_now_is_kept_and_one_refused_for_good_is_marked_failed(api, store):
    api.message(4411, 7, "brief ACME")
    poller = busy_intake(api, store, FullFor("chat-4411"))
    poller.poll_once()
    api.fail_next_sends(429)
    assert poller.send_busy_replies() == 0 and [r.reply for r in poller.refused()] == ["pending"]
    api.fail_next_sends(403)
    assert poller.send_busy_replies() == 0 and [r.reply for r in poller.refused()] == ["failed"]
    assert api.sent == []


def test_no_update_is_lost_across_an_update_id_reset(api, store):
    """After a quiet week the ids restart at random; a cursor kept as MAX(next_offset) would confirm new
    ones, and so would any offset sent after that week: intake sends none then."""
    for n in range(1, 4):
        api.message(4411, n, f"brief ACME {n}")
    spy, clock = SpyAdmit(), Clock()
    poller = intake_for(api, store, spy, now=clock)
    poller.poll_once()
    assert poller.cursor() == 4
    poller.poll_once()  # confirms 1-3
    clock.at += dt.timedelta(days=8)  # a quiet week: Telegram restarts its ids
    api.reset_update_ids(first_id=2)  # lower than the cursor: a MAX cursor would keep 4 and confirm id 2 and 3
    api.message(4411, 10, "brief HOOLI")
    assert [src for src, _ in poller.poll_once().admitted] == ["tg:4411:10"]
    api.message(4411, 11, "brief GLOBEX")
    api.message(4411, 12, "brief INITECH")
    assert [src for src, _ in poller.poll_once().admitted] == ["tg:4411:11", "tg:4411:12"]
    assert [call[0] for call in spy.calls] == ["tg:4411:1", "tg:4411:2", "tg:4411:3", "tg:4411:10",
                                               "tg:4411:11", "tg:4411:12"]
    assert poller.cursor() == 5  # the offset Telegram last answered with: id 4 + 1


def test_an_offset_kept_through_a_quiet_week_would_discard_new_updates_so_intake_sends_none(api, store):
    api.message(4411, 1, "brief ACME")
    spy, clock = SpyAdmit(), Clock()
    poller = intake_for(api, store, spy, now=clock)
    poller.poll_once()
    poller.poll_once()  # confirms 1: the cursor is 2
    api.reset_update_ids(first_id=1)
    api.message(4411, 2, "brief HOOLI")  # update_id 1, below the cursor
    clock.at += dt.timedelta(days=6, hours=23)
    assert poller.offset_to_send() == 2, "within the week the cursor still confirms what was handled"
    clock.at += dt.timedelta(hours=1)
    assert poller.offset_to_send() is None
    assert [src for src, _ in poller.poll_once().admitted] == ["tg:4411:2"]
    # The fake confirms as Telegram does: the stale offset would have discarded the new update.
    api.message(4411, 3, "brief GLOBEX")  # update_id 2
    gone = BotApi(api.base_url, api.token).get_updates(3)
    assert gone == [] and api.pending_updates == 0


def test_an_update_replayed_after_an_id_reset_is_absorbed_as_a_duplicate(api, store):
    api.message(4411, 1, "brief ACME")
    spy = SpyAdmit()
    poller = intake_for(api, store, spy)
    poller.poll_once()
    poller.poll_once()
    api.reset_update_ids(first_id=900)
    api.raw({"update_id": 900, "message": {"message_id": 1, "chat": {"id": 4411, "type": "private"},
                                           "text": "brief ACME"}})  # the same message under a new id
    assert [(src, a.outcome) for src, a in poller.poll_once().admitted] == [("tg:4411:1", Outcome.DUPLICATE)]


def test_the_fake_bot_api_restarts_ids_only_after_its_queue_is_confirmed(api):
    api.message(4411, 1, "brief ACME")
    with pytest.raises(ValueError, match="quiet week"):
        api.reset_update_ids(5)
    with pytest.raises(ValueError, match="positive"):
        FakeTelegram().reset_update_ids(0)


def transport(api):
    return TelegramTransport(BotApi(api.base_url, api.token), {"chat-4411": 4411, "chat-1": 1})


def test_send_message_returns_a_receipt_with_telegrams_message_id(api):
    outcome = transport(api).send(OutgoingReport("r-1-1", "chat-4411", "ACME closed at 101.20"))
    assert outcome == Receipt("r-1-1", "1")
    assert [(m.chat_id, m.text) for m in api.sent] == [(4411, "ACME closed at 101.20")]


def test_a_lost_reply_is_uncertain_and_the_message_did_arrive(api):
    api.drop_next_replies(1)
    outcome = transport(api).send(OutgoingReport("r-1-1", "chat-4411", "ACME brief"))
    assert isinstance(outcome, Uncertain)
    assert len(api.sent) == 1


def test_a_refusal_from_telegram_is_refused_for_good(api):
    outcome = transport(api).send(OutgoingReport("r-1-1", "chat-1", "ACME brief"))
    assert isinstance(outcome, Refused) and "chat not found" in outcome.reason and not outcome.retryable


def test_too_many_requests_from_the_fake_bot_api_is_retryable_after_its_wait(api):
    api.fail_next_sends(429, retry_after=17)
    outcome = transport(api).send(OutgoingReport("r-1-1", "chat-4411", "ACME brief"))
    assert outcome == Refused("r-1-1", "Too Many Requests: retry after 17", retryable=True, retry_after=17.0)
    assert api.sent == []


def test_a_blocked_bot_is_a_permanent_refusal_and_a_server_error_unknown(api):
    api.fail_next_sends(403)
    api.fail_next_sends(500)
    sender = transport(api)
    blocked = sender.send(OutgoingReport("r-1-1", "chat-4411", "ACME brief"))
    failed = sender.send(OutgoingReport("r-2-1", "chat-4411", "ACME brief"))
    assert isinstance(blocked, Refused) and not blocked.retryable and "blocked" in blocked.reason
    assert isinstance(failed, Uncertain)


def test_a_report_for_a_session_without_a_chat_is_refused_without_a_call(api):
    assert isinstance(transport(api).send(OutgoingReport("r-1-1", "chat-404", "x")), Refused)
    assert api.sent == []


def test_telegram_offers_no_lookup():
    with pytest.raises(TransportMisuse, match="stays UNKNOWN"):
        TelegramTransport(BotApi("http://127.0.0.1:9", "t"), {}).lookup("r-1-1")


def test_an_unreachable_bot_api_is_a_retryable_refusal_for_nothing_was_sent():
    closed = TelegramTransport(BotApi("http://127.0.0.1:9", "t", http=httpx.Client(timeout=0.5)), {"chat-1": 1})
    outcome = closed.send(OutgoingReport("r-1-1", "chat-1", "x"))
    assert isinstance(outcome, Refused) and outcome.retryable


# The Bot API's answers, served by httpx.MockTransport: each proves what it proves and no more.

def mocked(handler) -> TelegramTransport:
    http = httpx.Client(transport=httpx.MockTransport(handler))
    return TelegramTransport(BotApi("https://api.telegram.org", "123:abc", http=http), {"chat-1": 1})


def answering(status: int, body: dict):
    return lambda request: httpx.Response(status, json=body)


def failing(error: type[httpx.TransportError]):
    def handler(request):
        raise error("scripted", request=request)
    return handler


def send_mocked(handler):
    return mocked(handler).send(OutgoingReport("r-1-1", "chat-1", "ACME brief"))


@pytest.mark.parametrize("handler, retry_after", [
    (answering(429, {"ok": False, "error_code": 429, "description": "Too Many Requests: retry after 35",
                     "parameters": {"retry_after": 35}}), 35.0),
    (answering(429, {"ok": False, "error_code": 429, "description": "Too Many Requests"}), None),
    (failing(httpx.ConnectError), None),  # DNS failure or connection refused
    (failing(httpx.ConnectTimeout), None),
    (failing(httpx.PoolTimeout), None),
])
def test_answers_that_prove_nothing_was_sent_are_retryable_refusals(handler, retry_after):
    outcome = send_mocked(handler)
    assert isinstance(outcome, Refused) and outcome.retryable and outcome.retry_after == retry_after


@pytest.mark.parametrize("status, description", [
    (400, "Bad Request: chat not found"),
    (403, "Forbidden: bot was blocked by the user"),
    (401, "Unauthorized"),
])
def test_answers_that_will_never_change_are_permanent_refusals(status, description):
    outcome = send_mocked(answering(status, {"ok": False, "error_code": status, "description": description}))
    assert isinstance(outcome, Refused) and not outcome.retryable and description in outcome.reason


@pytest.mark.parametrize("handler", [
    failing(httpx.ReadTimeout),
    failing(httpx.WriteTimeout),
    failing(httpx.ReadError),  # the connection reset after the request left
    failing(httpx.RemoteProtocolError),
    answering(500, {"ok": False, "error_code": 500, "description": "Internal Server Error"}),
    answering(502, {"ok": False, "error_code": 502, "description": "Bad Gateway"}),
    lambda request: httpx.Response(504, text="<html>gateway timeout</html>"),
    answering(200, {"ok": True, "result": {"no": "message_id"}}),
])
def test_answers_after_the_request_left_are_unknown(handler):
    assert isinstance(send_mocked(handler), Uncertain)


def test_a_confirmed_send_carries_telegrams_message_id():
    assert send_mocked(answering(200, {"ok": True, "result": {"message_id": 812}})) == Receipt("r-1-1", "812")


def test_a_wrong_token_is_an_error_naming_the_method(api, store):
    from lucy_runtime.telegram import TelegramError

    with pytest.raises(TelegramError, match="getUpdates: 401"):
        BotApi(api.base_url, "wrong").get_updates(None)


def test_intake_refuses_a_bool_chat_id_in_the_allow_list(api, store):
    with pytest.raises(InvalidField, match="chat ids are integers"):
        intake_for(api, store, SpyAdmit(), {True: "chat-1"})


@pytest.mark.parametrize("chat_id, description", [(None, "Bad Request: chat_id is empty"),
                                                  ("", "Bad Request: chat_id is empty"),
                                                  (True, "Bad Request: chat not found"),
                                                  ([4411], "Bad Request: chat not found")])
def test_the_fake_bot_api_refuses_a_send_without_a_usable_chat_id_as_telegram_does(chat_id, description):
    with FakeTelegram() as api:  # no known chats: every well-formed chat id would be accepted
        body = {"text": "ACME closed at 101.20", **({} if chat_id is None else {"chat_id": chat_id})}
        answer = httpx.post(f"{api.base_url}/bot{api.token}/sendMessage", json=body, timeout=5)
        assert answer.status_code == 400 and answer.json()["description"] == description
        assert api.sent == []
