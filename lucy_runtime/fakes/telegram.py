"""A fake Telegram Bot API server on 127.0.0.1: real HTTP, scripted updates, its own sent log.

It follows the Bot API where the adapter depends on it: ``getUpdates`` returns every
update whose ``update_id`` is at least ``offset`` and forgets the ones below it (so an
update is delivered again until a later offset confirms it); ``sendMessage`` answers
``{"ok": true, "result": {"message_id": …}}``. It can also misbehave on purpose: drop
the HTTP reply after accepting a message, answer ``sendMessage`` with an error the
way the Bot API does (429 with ``parameters.retry_after``, 403 when the user blocked
the bot, 500), or serve malformed updates.

``reset_update_ids`` plays what the Bot API documents for a bot with no updates for
a week: the next ``update_id`` is chosen at random, so it can be far below the
offset the bot holds. The fake forgets the old offset until it has answered with an
update of the new sequence (the bot has received nothing the old offset could
confirm); after that an offset confirms every update below it, as the docs say.
"""

from __future__ import annotations

import json
import threading
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlparse

from ..errors import InvalidField

_HOST = "127.0.0.1"
_ERRORS = {
    400: "Bad Request: chat not found",
    403: "Forbidden: bot was blocked by the user",
    429: "Too Many Requests: retry after {retry_after}",
    500: "Internal Server Error",
}


@dataclass(frozen=True)
class SentMessage:
    message_id: int
    chat_id: int | str  # a string only for a channel's @username, as the Bot API allows
    text: str


class FakeTelegram:
    """Start with ``with FakeTelegram(token) as api:``; ``api.base_url`` is where the adapter points."""

    def __init__(self, token: str = "123456:TEST", *, known_chats: set[int] | None = None):
        self.token = token
        self.known_chats = set(known_chats or ())
        self._lock = threading.Lock()
        self._updates: list[dict] = []
        self._next_update_id = 1
        self._sent: list[SentMessage] = []
        self._drop_replies = 0
        self._errors: list[tuple[int, int]] = []  # (error_code, retry_after) for the next sendMessage calls
        self.requests: list[tuple[str, dict]] = []
        self._server = ThreadingHTTPServer((_HOST, 0), self._handler())
        # shutdown() waits for the serving loop's next poll: at the default 0.5 s, every fake's
        # end took half a second.
        self._thread = threading.Thread(target=self._server.serve_forever, kwargs={"poll_interval": 0.02},
                                        daemon=True)

    # -- scripting ------------------------------------------------------------
    def message(self, chat_id: Any, message_id: Any, text: Any, **extra: Any) -> int:
        """Queue an ordinary text message; returns its update_id."""
        return self.raw({"message": {"message_id": message_id, "chat": {"id": chat_id, "type": "private"},
                                     "date": 1_790_000_000, "text": text, **extra}})

    def raw(self, update: dict) -> int:
        """Queue any update body (malformed ones too); ``update_id`` is added unless given."""
        with self._lock:
            update = dict(update)
            update.setdefault("update_id", self._next_update_id)
            if isinstance(update["update_id"], int) and not isinstance(update["update_id"], bool):
                self._next_update_id = max(self._next_update_id, update["update_id"]) + 1
            else:
                self._next_update_id += 1
            self._updates.append(update)
            return update["update_id"]

    def reset_update_ids(self, first_id: int) -> None:
        """A week without updates: the next update gets ``first_id`` and ids run on from there."""
        if isinstance(first_id, bool) or not isinstance(first_id, int) or first_id < 1:
            raise InvalidField("first_id", f"a positive integer, got {first_id!r}")
        with self._lock:
            if self._updates:
                raise InvalidField("first_id", "the ids restart only after a quiet week: confirm the queued updates first")
            self._next_update_id = first_id

    def drop_next_replies(self, count: int = 1) -> None:
        """Accept the next ``count`` sendMessage calls, then close the connection without answering."""
        with self._lock:
            self._drop_replies += count

    def fail_next_sends(self, code: int, count: int = 1, *, retry_after: int = 5) -> None:
        """Answer the next ``count`` sendMessage calls with Bot API error ``code`` and send nothing."""
        if code not in _ERRORS:
            raise InvalidField("code", f"one of {sorted(_ERRORS)}, got {code!r}")
        with self._lock:
            self._errors.extend([(code, retry_after)] * count)

    @property
    def sent(self) -> list[SentMessage]:
        with self._lock:
            return list(self._sent)

    @property
    def pending_updates(self) -> int:
        with self._lock:
            return len(self._updates)

    # -- server ---------------------------------------------------------------
    @property
    def base_url(self) -> str:
        return f"http://{_HOST}:{self._server.server_port}"

    def __enter__(self) -> "FakeTelegram":
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()

    def _get_updates(self, params: dict) -> tuple[int, dict]:
        offset = params.get("offset")
        limit = int(params.get("limit", 100))
        with self._lock:
            if isinstance(offset, int):
                # An offset confirms every update below it, as Telegram does, also after an id reset:
                # a stale offset then discards new updates (intake sends none after a quiet week).
                self._updates = [u for u in self._updates
                                 if not (isinstance(u.get("update_id"), int) and u["update_id"] < offset)]
            result = self._updates[:limit]
            return 200, {"ok": True, "result": result}

    def _send_message(self, params: dict) -> tuple[int, dict] | None:
        chat_id, text = params.get("chat_id"), params.get("text")
        if isinstance(chat_id, str) and chat_id.lstrip("-").isdigit():
            chat_id = int(chat_id)
        if chat_id is None or chat_id == "":
            return 400, {"ok": False, "error_code": 400, "description": "Bad Request: chat_id is empty"}
        if isinstance(chat_id, bool) or not isinstance(chat_id, (int, str)):
            return 400, {"ok": False, "error_code": 400, "description": "Bad Request: chat not found"}
        if not isinstance(text, str) or not text or len(text) > 4096:
            return 400, {"ok": False, "error_code": 400, "description": "Bad Request: message text is empty or too long"}
        if self.known_chats and chat_id not in self.known_chats:
            return 400, {"ok": False, "error_code": 400, "description": "Bad Request: chat not found"}
        with self._lock:
            if self._errors:
                code, retry_after = self._errors.pop(0)
                answer = {"ok": False, "error_code": code, "description": _ERRORS[code].format(retry_after=retry_after)}
                if code == 429:
                    answer["parameters"] = {"retry_after": retry_after}
                return code, answer
            message = SentMessage(len(self._sent) + 1, chat_id, text)
            self._sent.append(message)
            if self._drop_replies:
                self._drop_replies -= 1
                return None  # accepted, and the answer is lost
        return 200, {"ok": True, "result": {"message_id": message.message_id, "chat": {"id": chat_id}, "text": text}}

    def _handler(self):
        api = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: object) -> None:  # keep test output quiet
                pass

            def _params(self) -> dict:
                query: dict[str, Any] = {k: v[-1] for k, v in parse_qs(urlparse(self.path).query).items()}
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length) if length else b""
                if body and "json" in (self.headers.get("Content-Type") or ""):
                    query.update(json.loads(body))
                elif body:
                    query.update({k: v[-1] for k, v in parse_qs(body.decode()).items()})
                for key in ("offset", "limit", "timeout"):
                    if isinstance(query.get(key), str) and query[key].lstrip("-").isdigit():
                        query[key] = int(query[key])
                return query

            def _answer(self, status: int, payload: dict) -> None:
                data = json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def _route(self) -> None:
                path = urlparse(self.path).path
                prefix = f"/bot{api.token}/"
                params = self._params()
                api.requests.append((path.rsplit("/", 1)[-1], params))
                if not path.startswith(prefix):
                    self._answer(401, {"ok": False, "error_code": 401, "description": "Unauthorized"})
                    return
                method = path[len(prefix):]
                if method == "getUpdates":
                    self._answer(*api._get_updates(params))
                elif method == "sendMessage":
                    answer = api._send_message(params)
                    if answer is None:
                        self.close_connection = True
                        self.connection.shutdown(2)  # the reply never arrives
                        return
                    self._answer(*answer)
                else:
                    self._answer(404, {"ok": False, "error_code": 404, "description": "Not Found"})

            do_GET = do_POST = _route

        return Handler
