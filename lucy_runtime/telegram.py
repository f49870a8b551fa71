"""Chapter 8's hand-off: Telegram intake and the Telegram sender, around the learner's queue.

Telegram authenticates: only the holder of the bot token, over HTTPS, can read this
bot's updates or send as it. Intake long-polls ``getUpdates`` with an offset cursor
kept in the store:

1. authorize: the chat must be on the allow-list, which binds it to a session
   (a chat that may not use Lucy never reaches ``admit``, let alone the model);
2. identify the occurrence: ``tg:<chat id>:<message id>``;
3. call the learner's ``admit`` — its transaction commits there;
4. only then move the cursor. A crash between 3 and 4 means Telegram delivers the
   update again and ``admit`` answers DUPLICATE: never a loss, never a second job.

The cursor is the offset Telegram last answered with: the last update's id + 1 from
the latest response, not the highest offset ever seen. ``update_id`` is not monotonic
forever: after a week without updates Telegram picks the next id at random, and a
stored maximum would confirm (so discard) every new update below it. For the same reason
an offset that has not moved for a week (``QUIET_WEEK``) is not sent at all: intake polls
without one, which confirms nothing, and moves on from Telegram's answer. If an update
comes again, the source identity absorbs the replay as a DUPLICATE.

A capacity refusal is recorded, not dropped. When ``admit`` answers REFUSED, the
refusal (chat, message, session, reason, time) goes into ``lucy_telegram_refused`` in
the same transaction that moves the cursor, with a "busy, please try again" reply
queued there. ``send_busy_replies`` sends the queued replies. We chose this over
holding the cursor: a held cursor blocks every chat behind one full session, and
Telegram forgets an update after 24 hours, so a long hold would lose it silently.
The busy reply is the adapter's own, not the learner's work, so it lives in the
adapter's table, not in the learner's outbox. A crash during its send can send it
twice; a second "busy" note is harmless.

Malformed, edited and non-text updates are recorded with a reason and stepped over,
so one bad update cannot stall the good ones behind it.

``TelegramTransport`` sends a report with ``sendMessage`` and says what the answer
proves. A connection that was never made sent nothing (retryable refusal). A timeout
or reset after the request left, and a 5xx, may have sent it (UNKNOWN). 429 "too
many requests" is a retryable refusal carrying ``parameters.retry_after``; 403 (the
user blocked the bot) and 400 (bad request) are permanent. Telegram takes no
idempotency key and offers no look-up, so a lost reply is UNKNOWN for good.
"""

from __future__ import annotations

import datetime as dt
import json
from dataclasses import dataclass
from typing import Any, Callable, Mapping

import httpx

from .errors import InvalidField, TelegramError, TransportMisuse
from .fields import require_id, require_str
from .store import Migration, Store
from .transport import OutgoingReport, Receipt, Refused, SendOutcome, Uncertain
from .work import Admission, Outcome

MAX_MESSAGE_CHARS = 4096
"""Telegram's limit for one text message."""

MIGRATIONS = (
    Migration(
        1,
        "telegram cursor and skipped updates",
        (
            "CREATE TABLE lucy_telegram_cursor (bot TEXT PRIMARY KEY, next_offset INTEGER NOT NULL)",
            """CREATE TABLE lucy_telegram_skipped (
                   seq INTEGER PRIMARY KEY, bot TEXT NOT NULL, update_id INTEGER, reason TEXT NOT NULL,
                   raw TEXT NOT NULL)""",
        ),
    ),
    Migration(
        2,
        "telegram capacity refusals and their busy replies",
        (
            """CREATE TABLE lucy_telegram_refused (
                   seq INTEGER PRIMARY KEY, bot TEXT NOT NULL, update_id INTEGER NOT NULL,
                   chat_id INTEGER NOT NULL, source_id TEXT NOT NULL, session_id TEXT NOT NULL,
                   reason TEXT NOT NULL, refused_at TEXT NOT NULL,
                   reply TEXT NOT NULL DEFAULT 'pending'
                       CHECK (reply IN ('pending', 'sent', 'unknown', 'failed')),
                   reply_note TEXT NOT NULL DEFAULT '')""",
        ),
    ),
    Migration(
        3,
        "when the telegram cursor last moved",
        ("ALTER TABLE lucy_telegram_cursor ADD COLUMN moved_at TEXT",),
    ),
)

QUIET_WEEK = dt.timedelta(days=7)
"""After this long without an update, Telegram picks the next ``update_id`` at random: an
offset from before could confirm, and so discard, every new update below it."""

BUSY_REPLY = "Lucy is busy right now and did not take this request. Please send it again in a few minutes."


class BotApi:
    """The two Bot API methods Lucy uses, over real HTTP."""

    def __init__(self, base_url: str, token: str, *, http: httpx.Client | None = None, timeout: float = 10.0):
        require_str("base_url", base_url, max_bytes=2048)
        require_str("token", token, max_bytes=256)
        self._root = f"{base_url.rstrip('/')}/bot{token}"
        self._http = http or httpx.Client(timeout=timeout)

    def _call(self, method: str, payload: dict) -> Any:
        response = self._http.post(f"{self._root}/{method}", json=payload)
        try:
            body = response.json()
        except ValueError:
            raise TelegramError(method, response.status_code, "the answer was not JSON") from None
        if not isinstance(body, dict) or body.get("ok") is not True:
            code = body.get("error_code", response.status_code) if isinstance(body, dict) else response.status_code
            description = body.get("description", "") if isinstance(body, dict) else ""
            raise TelegramError(method, int(code), str(description), _retry_after(body))
        return body.get("result")

    def get_updates(self, offset: int | None, timeout: int = 0) -> list:
        payload = {"timeout": timeout, "allowed_updates": ["message", "edited_message"]}
        if offset is not None:
            payload["offset"] = offset
        result = self._call("getUpdates", payload)
        if not isinstance(result, list):
            raise TelegramError("getUpdates", 200, "the result was not a list")
        return result

    def send_message(self, chat_id: int, text: str) -> dict:
        result = self._call("sendMessage", {"chat_id": chat_id, "text": text})
        if not isinstance(result, dict) or not isinstance(result.get("message_id"), int):
            raise TelegramError("sendMessage", 200, "the result carried no message_id")
        return result


def _retry_after(body: Any) -> float | None:
    parameters = body.get("parameters") if isinstance(body, dict) else None
    wait = parameters.get("retry_after") if isinstance(parameters, dict) else None
    return float(wait) if isinstance(wait, (int, float)) and not isinstance(wait, bool) and wait >= 0 else None


@dataclass(frozen=True)
class Message:
    update_id: int
    chat_id: int
    message_id: int
    text: str


@dataclass(frozen=True)
class Skipped:
    update_id: int | None
    reason: str


@dataclass(frozen=True)
class Refusal:
    """One message ``admit`` refused for capacity: who, when, why, and where its busy reply stands."""

    update_id: int
    chat_id: int
    source_id: str
    session_id: str
    reason: str
    refused_at: dt.datetime
    reply: str  # pending, sent, unknown (the reply was lost) or failed


@dataclass(frozen=True)
class PollResult:
    admitted: tuple[tuple[str, Admission], ...]  # (source_id, what admit answered)
    skipped: tuple[Skipped, ...]
    next_offset: int | None


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def parse_update(raw: Any) -> Message | Skipped:
    """A text message, or the reason this update is not a request."""
    if not isinstance(raw, dict) or not _is_int(raw.get("update_id")):
        return Skipped(None, "malformed: the update has no integer update_id")
    update_id = raw["update_id"]
    if "edited_message" in raw:
        return Skipped(update_id, "edited message: only new messages are requests")
    message = raw.get("message")
    if not isinstance(message, dict):
        kinds = ", ".join(sorted(k for k in raw if k != "update_id")) or "nothing"
        return Skipped(update_id, f"not a message (it holds {kinds})")
    chat = message.get("chat")
    if not isinstance(chat, dict) or not _is_int(chat.get("id")):
        return Skipped(update_id, "malformed: chat.id is missing or not an integer")
    if not _is_int(message.get("message_id")):
        return Skipped(update_id, "malformed: message_id is missing or not an integer")
    text = message.get("text")
    if text is None:
        return Skipped(update_id, "not a text message")
    if not isinstance(text, str):
        return Skipped(update_id, "malformed: text is not a string")
    if not text.strip():
        return Skipped(update_id, "empty text")
    if len(text) > MAX_MESSAGE_CHARS:
        return Skipped(update_id, f"text of {len(text)} characters; Telegram allows {MAX_MESSAGE_CHARS}")
    return Message(update_id, chat["id"], message["message_id"], text)


def source_id_of(message: Message) -> str:
    return f"tg:{message.chat_id}:{message.message_id}"


class TelegramIntake:
    """Polls Telegram and hands each message from an authorized chat to the learner's ``admit``."""

    def __init__(self, api: BotApi, store: Store, admit: Callable[[str, str, str], Admission],
                 allowed_chats: Mapping[int, str], *, bot: str = "lucy",
                 now: Callable[[], dt.datetime] = lambda: dt.datetime.now(dt.timezone.utc)):
        if not callable(admit):
            raise InvalidField("admit", "expected the learner's admit(source_id, session_id, text)")
        for chat_id, session_id in allowed_chats.items():
            if not _is_int(chat_id):
                raise InvalidField("allowed_chats", f"chat ids are integers, got {chat_id!r}")
            require_id("session_id", session_id)
        self._api, self._store, self._admit = api, store, admit
        self._allowed = dict(allowed_chats)
        self._bot = require_id("bot", bot)
        self._now = now
        store.migrate("telegram", MIGRATIONS)

    def cursor(self) -> int | None:
        rows = self._store.query("SELECT next_offset FROM lucy_telegram_cursor WHERE bot = ?", (self._bot,))
        return rows[0]["next_offset"] if rows else None

    def offset_to_send(self) -> int | None:
        """The cursor, unless it last moved a quiet week ago or more (or nobody knows when): then
        None, since Telegram may have restarted its ids below it."""
        rows = self._store.query("SELECT next_offset, moved_at FROM lucy_telegram_cursor WHERE bot = ?", (self._bot,))
        if not rows or rows[0]["moved_at"] is None:
            return None
        if self._now() - dt.datetime.fromisoformat(rows[0]["moved_at"]) >= QUIET_WEEK:
            return None
        return rows[0]["next_offset"]

    def _advance(self, next_offset: int, skipped: Skipped | None = None, raw: Any = None,
                 refused: tuple | None = None) -> None:
        with self._store.transaction() as tx:
            if refused is not None:
                tx.execute("INSERT INTO lucy_telegram_refused (bot, update_id, chat_id, source_id, session_id, reason, "
                           "refused_at) VALUES (?, ?, ?, ?, ?, ?, ?)", (self._bot, *refused))
            if skipped is not None:
                tx.execute("INSERT INTO lucy_telegram_skipped (bot, update_id, reason, raw) VALUES (?, ?, ?, ?)",
                           (self._bot, skipped.update_id, skipped.reason, json.dumps(raw, default=repr)[:10_000]))
            tx.execute(
                "INSERT INTO lucy_telegram_cursor (bot, next_offset, moved_at) VALUES (?, ?, ?) "
                # Telegram's latest answer, not MAX: after an id reset the ids start lower.
                "ON CONFLICT (bot) DO UPDATE SET next_offset = excluded.next_offset, moved_at = excluded.moved_at",
                (self._bot, next_offset, self._now().isoformat()))

    def skipped(self) -> list[Skipped]:
        rows = self._store.query("SELECT update_id, reason FROM lucy_telegram_skipped WHERE bot = ? ORDER BY seq",
                                 (self._bot,))
        return [Skipped(r["update_id"], r["reason"]) for r in rows]

    def refused(self) -> list[Refusal]:
        rows = self._store.query("SELECT * FROM lucy_telegram_refused WHERE bot = ? ORDER BY seq", (self._bot,))
        return [Refusal(r["update_id"], r["chat_id"], r["source_id"], r["session_id"], r["reason"],
                        dt.datetime.fromisoformat(r["refused_at"]), r["reply"]) for r in rows]

    def send_busy_replies(self) -> int:
        """Send each queued busy reply once; returns how many Telegram confirmed.

        A retryable refusal leaves the reply queued for the next call; a permanent one
        marks it failed; a lost answer marks it unknown and it is not sent again.
        """
        rows = self._store.query("SELECT seq, chat_id, session_id FROM lucy_telegram_refused "
                                 "WHERE bot = ? AND reply = 'pending' ORDER BY seq", (self._bot,))
        confirmed = 0
        for r in rows:
            transport = TelegramTransport(self._api, {r["session_id"]: r["chat_id"]})
            outcome = transport.send(OutgoingReport(f"busy-{r['seq']}", r["session_id"], BUSY_REPLY))
            if isinstance(outcome, Refused) and outcome.retryable:
                continue
            state = "sent" if isinstance(outcome, Receipt) else "unknown" if isinstance(outcome, Uncertain) else "failed"
            confirmed += state == "sent"
            with self._store.transaction() as tx:
                tx.execute("UPDATE lucy_telegram_refused SET reply = ?, reply_note = ? WHERE seq = ? AND reply = 'pending'",
                           (state, getattr(outcome, "reason", ""), r["seq"]))
        return confirmed

    def poll_once(self, timeout: int = 0) -> PollResult:
        admitted, skipped = [], []
        for raw in self._api.get_updates(self.offset_to_send(), timeout):
            parsed = parse_update(raw)
            if isinstance(parsed, Skipped):
                skipped.append(parsed)
                if parsed.update_id is not None:
                    self._advance(parsed.update_id + 1, parsed, raw)
                continue
            session_id = self._allowed.get(parsed.chat_id)
            if session_id is None:
                refusal = Skipped(parsed.update_id, f"chat {parsed.chat_id} is not allowed: not admitted")
                skipped.append(refusal)
                self._advance(parsed.update_id + 1, refusal, {"chat_id": parsed.chat_id})
                continue
            source_id = source_id_of(parsed)
            admission = self._admit(source_id, session_id, parsed.text)  # the learner's transaction commits here
            admitted.append((source_id, admission))
            refused = None
            if admission.outcome is Outcome.REFUSED:  # recorded with the cursor move: never a silent drop
                refused = (parsed.update_id, parsed.chat_id, source_id, session_id,
                           admission.reason or "refused: no capacity", self._now().isoformat())
            self._advance(parsed.update_id + 1, refused=refused)  # only after admission committed
        return PollResult(tuple(admitted), tuple(skipped), self.cursor())


_NEVER_CONNECTED = (httpx.ConnectError, httpx.ConnectTimeout, httpx.PoolTimeout, httpx.UnsupportedProtocol)
"""Failures before a connection existed (DNS, refused connection, no free connection): no byte was sent."""


def classify(report_id: str, error: TelegramError) -> Refused | Uncertain:
    """What an ``ok: false`` answer to ``sendMessage`` proves about the message."""
    if error.code == 429:
        return Refused(report_id, error.description or "too many requests", retryable=True,
                       retry_after=error.retry_after)
    if error.code >= 500 or error.code < 400:  # the server failed part way, or answered nonsense: it may have sent
        return Uncertain(report_id, f"Telegram answered {error.code}: the message may have been sent")
    # 400 bad request, 403 blocked by the user, 401/404 a wrong token: the same request will never succeed.
    return Refused(report_id, f"{error.code} {error.description}", retryable=False)


class TelegramTransport:
    """The sender boundary for Telegram: one ``sendMessage`` per report, no retries of its own."""

    def __init__(self, api: BotApi, chats_by_session: Mapping[str, int]):
        self._api = api
        self._chats = dict(chats_by_session)

    def send(self, report: OutgoingReport) -> SendOutcome:
        if not isinstance(report, OutgoingReport):
            raise TransportMisuse(f"send() takes an OutgoingReport, got {type(report).__name__}")
        chat_id = self._chats.get(report.session_id)
        if chat_id is None:
            return Refused(report.report_id, f"no Telegram chat is bound to session {report.session_id!r}",
                           retryable=False)
        if len(report.body) > MAX_MESSAGE_CHARS:
            return Refused(report.report_id, f"the report is longer than Telegram's {MAX_MESSAGE_CHARS} characters",
                           retryable=False)
        try:
            result = self._api.send_message(chat_id, report.body)
        except _NEVER_CONNECTED as failed:  # the request never left: nothing can have arrived
            return Refused(report.report_id, f"no connection to Telegram ({type(failed).__name__})", retryable=True)
        except httpx.TransportError as lost:  # a timeout or reset after the request left: it may have arrived
            return Uncertain(report.report_id, f"no answer from Telegram ({type(lost).__name__}): it may have arrived")
        except TelegramError as error:
            return classify(report.report_id, error)
        return Receipt(report.report_id, str(result["message_id"]))

    def lookup(self, idempotency_key: str) -> Receipt | None:
        raise TransportMisuse("Telegram offers no look-up by key: an UNKNOWN Telegram send stays UNKNOWN")
