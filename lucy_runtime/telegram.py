"""Chapter 8's hand-off: Telegram intake and the Telegram sender, around the learner's queue.

Intake long-polls ``getUpdates`` with an explicit offset cursor kept in the store:

1. authenticate: the chat must be on the allow-list, which binds it to a session
   (an unknown chat never reaches ``admit``, let alone the model);
2. identify the occurrence: ``tg:<chat id>:<message id>`` (update ids can restart);
3. call the learner's ``admit`` — its transaction commits there;
4. only then advance the cursor. A crash between 3 and 4 means Telegram delivers the
   update again and ``admit`` answers DUPLICATE: never a loss, never a second job.

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

import json
from dataclasses import dataclass
from typing import Any, Callable, Mapping

import httpx

from .errors import InvalidField, TelegramError, TransportMisuse
from .fields import require_id, require_str
from .store import Migration, Store
from .transport import OutgoingReport, Receipt, Refused, SendOutcome, Uncertain
from .work import Admission

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
)


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
    """Polls Telegram and hands each authenticated message to the learner's ``admit``."""

    def __init__(self, api: BotApi, store: Store, admit: Callable[[str, str, str], Admission],
                 allowed_chats: Mapping[int, str], *, bot: str = "lucy"):
        if not callable(admit):
            raise InvalidField("admit", "expected the learner's admit(source_id, session_id, text)")
        for chat_id, session_id in allowed_chats.items():
            if not _is_int(chat_id):
                raise InvalidField("allowed_chats", f"chat ids are integers, got {chat_id!r}")
            require_id("session_id", session_id)
        self._api, self._store, self._admit = api, store, admit
        self._allowed = dict(allowed_chats)
        self._bot = require_id("bot", bot)
        store.migrate("telegram", MIGRATIONS)

    def cursor(self) -> int | None:
        rows = self._store.query("SELECT next_offset FROM lucy_telegram_cursor WHERE bot = ?", (self._bot,))
        return rows[0]["next_offset"] if rows else None

    def _advance(self, next_offset: int, skipped: Skipped | None = None, raw: Any = None) -> None:
        with self._store.transaction() as tx:
            if skipped is not None:
                tx.execute("INSERT INTO lucy_telegram_skipped (bot, update_id, reason, raw) VALUES (?, ?, ?, ?)",
                           (self._bot, skipped.update_id, skipped.reason, json.dumps(raw, default=repr)[:10_000]))
            tx.execute(
                "INSERT INTO lucy_telegram_cursor (bot, next_offset) VALUES (?, ?) "
                "ON CONFLICT (bot) DO UPDATE SET next_offset = MAX(next_offset, excluded.next_offset)",
                (self._bot, next_offset))

    def skipped(self) -> list[Skipped]:
        rows = self._store.query("SELECT update_id, reason FROM lucy_telegram_skipped WHERE bot = ? ORDER BY seq",
                                 (self._bot,))
        return [Skipped(r["update_id"], r["reason"]) for r in rows]

    def poll_once(self, timeout: int = 0) -> PollResult:
        admitted, skipped = [], []
        for raw in self._api.get_updates(self.cursor(), timeout):
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
            self._advance(parsed.update_id + 1)  # only after admission committed
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
