"""Exercise 1's message broker: ``publish(key, body)`` that ignores a key it has seen.

The broker deduplicates by key: a second publish with a key it already holds appends
nothing and answers with the first message's offset. That makes the consumer of the
outbox's rows an **idempotent consumer** (each row's key is acted on once), which is
what makes a resumed publish safe, as long as the key names the outbox row and not
the attempt. (Kafka's "idempotent producer" is another thing: it deduplicates one
producer session's retries by sequence number, and a restarted process is a new
session, so it would not absorb the resumed publish this exercise is about.)

``rejects`` names payloads the broker refuses every time (a poison payload, under
whatever key it comes): ``publish`` records the request, raises ``BrokerRejected``
and stores nothing.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Protocol

from ..errors import BrokerRejected
from ..fields import require_id, require_str
from .service_log import Probe, ServiceLog, no_probe, read_rows

_SCHEMA = (
    "CREATE TABLE IF NOT EXISTS request (seq INTEGER PRIMARY KEY, key TEXT NOT NULL, body TEXT NOT NULL)",
    "CREATE TABLE IF NOT EXISTS message (offset INTEGER PRIMARY KEY, key TEXT NOT NULL UNIQUE, body TEXT NOT NULL)",
)


@dataclass(frozen=True)
class Ack:
    key: str
    offset: int
    replayed: bool = False
    """True when the key was already published: nothing new was appended."""


@dataclass(frozen=True)
class Message:
    offset: int
    key: str
    body: str


class Broker(Protocol):
    def publish(self, key: str, body: str) -> Ack: ...


class FakeBroker:
    """A broker whose message list and request log live in a SQLite file of its own."""

    def __init__(self, log_path: str | os.PathLike[str], *, probe: Probe = no_probe, rejects: frozenset[str] = frozenset()):
        self._log = ServiceLog(log_path, _SCHEMA)
        self._probe = probe
        self._rejects = frozenset(rejects)

    @property
    def log_path(self) -> str:
        return self._log.path

    def publish(self, key: str, body: str) -> Ack:
        require_id("key", key)
        require_str("body", body, allow_empty=True)
        self._probe("send", f"publish {key}")
        with self._log.transaction() as conn:
            conn.execute("INSERT INTO request (key, body) VALUES (?, ?)", (key, body))
        if body in self._rejects:
            raise BrokerRejected(f"the broker refuses message {key!r}: it will never take this payload")
        with self._log.transaction() as conn:
            known = conn.execute("SELECT offset FROM message WHERE key = ?", (key,)).fetchone()
            if known is not None:
                ack = Ack(key, known[0], replayed=True)
            else:
                offset = conn.execute("INSERT INTO message (key, body) VALUES (?, ?) RETURNING offset",
                                      (key, body)).fetchone()[0]
                ack = Ack(key, offset)
        self._probe("accepted", f"broker holds {key}")
        return ack

    def messages(self) -> list[Message]:
        return read_messages(self._log.path)


def read_messages(log_path: str | os.PathLike[str]) -> list[Message]:
    return [Message(*row) for row in read_rows(log_path, "SELECT offset, key, body FROM message ORDER BY offset")]


def read_publish_keys(log_path: str | os.PathLike[str]) -> list[str]:
    """The key of every publish the broker received, in order (replays and refusals included)."""
    return [key for (key,) in read_rows(log_path, "SELECT key FROM request ORDER BY seq")]
