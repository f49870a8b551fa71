"""Exercise 3's case service: one action per key, receipts, and a look-up by key.

The key is ``tenant:case``; the service also keeps a digest of the proposal it
accepted. The same key with the same proposal answers the original receipt and does
nothing new; the same key with another proposal is refused and never executed.
``lookup(key)`` is the reconciliation question: what, if anything, did you commit
under this key? Its receipt carries the digest of the proposal the service committed
(``digest(proposal)``), so a client can tell its own action from another one under
the same key. Every submit and every look-up is recorded in the service's own file.
"""

from __future__ import annotations

import hashlib
import os
from dataclasses import dataclass
from typing import Protocol, Union

from ..fields import require_id, require_str
from .service_log import Probe, ServiceLog, no_probe, read_rows

_SCHEMA = (
    "CREATE TABLE IF NOT EXISTS request (seq INTEGER PRIMARY KEY, verb TEXT NOT NULL, key TEXT NOT NULL, digest TEXT)",
    """CREATE TABLE IF NOT EXISTS action (receipt_id TEXT PRIMARY KEY, key TEXT NOT NULL UNIQUE,
           digest TEXT NOT NULL, proposal TEXT NOT NULL)""",
)


def digest(proposal: str) -> str:
    return hashlib.sha256(proposal.encode("utf-8")).hexdigest()[:16]


@dataclass(frozen=True)
class CaseReceipt:
    key: str
    receipt_id: str
    replayed: bool = False
    digest: str = ""  # the digest of the proposal the service committed under this key


@dataclass(frozen=True)
class CaseRefused:
    key: str
    reason: str


CaseAnswer = Union[CaseReceipt, CaseRefused]


class CaseService(Protocol):
    def submit(self, key: str, proposal: str) -> CaseAnswer: ...

    def lookup(self, key: str) -> CaseReceipt | None: ...


@dataclass(frozen=True)
class CaseRequest:
    seq: int
    verb: str  # submit | lookup
    key: str
    digest: str | None


@dataclass(frozen=True)
class CaseAction:
    receipt_id: str
    key: str
    digest: str
    proposal: str


class FakeCaseService:
    def __init__(self, log_path: str | os.PathLike[str], *, probe: Probe = no_probe):
        self._log = ServiceLog(log_path, _SCHEMA)
        self._probe = probe

    @property
    def log_path(self) -> str:
        return self._log.path

    def submit(self, key: str, proposal: str) -> CaseAnswer:
        require_id("key", key)
        require_str("proposal", proposal)
        self._probe("send", f"submit {key}")
        mark = digest(proposal)
        with self._log.transaction() as conn:
            conn.execute("INSERT INTO request (verb, key, digest) VALUES ('submit', ?, ?)", (key, mark))
            known = conn.execute("SELECT receipt_id, digest FROM action WHERE key = ?", (key,)).fetchone()
            if known is not None:
                if known[1] != mark:
                    return CaseRefused(key, "this key was used for another proposal; nothing was done")
                answer = CaseReceipt(key, known[0], replayed=True, digest=mark)
            else:
                receipt_id = f"rcpt-{conn.execute('SELECT COUNT(*) FROM action').fetchone()[0] + 1}"
                conn.execute("INSERT INTO action (receipt_id, key, digest, proposal) VALUES (?, ?, ?, ?)",
                             (receipt_id, key, mark, proposal))
                answer = CaseReceipt(key, receipt_id, digest=mark)
        self._probe("accepted", f"service committed {key}")
        return answer

    def lookup(self, key: str) -> CaseReceipt | None:
        require_id("key", key)
        with self._log.transaction() as conn:
            conn.execute("INSERT INTO request (verb, key) VALUES ('lookup', ?)", (key,))
            known = conn.execute("SELECT receipt_id, digest FROM action WHERE key = ?", (key,)).fetchone()
        return CaseReceipt(key, known[0], replayed=True, digest=known[1]) if known else None

    def actions(self) -> list[CaseAction]:
        return read_actions(self._log.path)

    def requests(self) -> list[CaseRequest]:
        return read_case_requests(self._log.path)


def read_actions(log_path: str | os.PathLike[str]) -> list[CaseAction]:
    return [CaseAction(*r) for r in read_rows(log_path, "SELECT receipt_id, key, digest, proposal FROM action ORDER BY rowid")]


def read_case_requests(log_path: str | os.PathLike[str]) -> list[CaseRequest]:
    return [CaseRequest(*r) for r in read_rows(log_path, "SELECT seq, verb, key, digest FROM request ORDER BY seq")]
