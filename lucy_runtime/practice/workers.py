"""The supplied parts of the practice: the two tables, and the workers the exercises start from.

``create_tables`` makes the outbox (exercise 1) and the case ledger (exercise 3) in a
store. ``buggy_publish_one`` is exercise 1's worker as it was found: it marks a row
sent before the broker has it. ``send_case`` is exercise 3's worker: it records its
intent, commits, then submits, and records the receipt afterwards.
"""

from __future__ import annotations

from ..errors import UnknownName
from ..store import Store
from ..fakes.broker import Ack, Broker
from ..fakes.case_service import CaseAnswer, CaseReceipt, CaseService

TABLES = """
CREATE TABLE IF NOT EXISTS outbox (
    row_id   TEXT PRIMARY KEY,
    payload  TEXT NOT NULL,
    status   TEXT NOT NULL DEFAULT 'pending',
    attempts INTEGER NOT NULL DEFAULT 0
);
CREATE TABLE IF NOT EXISTS ledger (
    case_id  TEXT PRIMARY KEY,
    tenant   TEXT NOT NULL,
    proposal TEXT NOT NULL,
    intent   TEXT NOT NULL DEFAULT 'new',
    receipt  TEXT,
    note     TEXT
);
"""


def create_tables(store: Store) -> None:
    with store.transaction() as tx:
        tx.execute_script(TABLES)


def add_message(store: Store, row_id: str, payload: str) -> None:
    with store.transaction() as tx:
        tx.execute("INSERT INTO outbox (row_id, payload) VALUES (?, ?)", (row_id, payload))


def buggy_publish_one(store: Store, broker: Broker) -> Ack | None:
    """Publish the oldest pending outbox row."""
    with store.transaction() as tx:
        row = tx.execute("SELECT row_id, payload FROM outbox WHERE status = 'pending' ORDER BY rowid LIMIT 1").fetchone()
        if row is None:
            return None
        tx.execute("UPDATE outbox SET status = 'sent', attempts = attempts + 1 WHERE row_id = ?", (row["row_id"],))
    return broker.publish(row["row_id"], row["payload"])


def case_key(tenant: str, case_id: str) -> str:
    """One key per logical action: the tenant and the case, never the attempt."""
    return f"{tenant}:{case_id}"


def open_case(store: Store, tenant: str, case_id: str, proposal: str) -> None:
    with store.transaction() as tx:
        tx.execute("INSERT INTO ledger (case_id, tenant, proposal) VALUES (?, ?, ?)", (case_id, tenant, proposal))


def send_case(store: Store, service: CaseService, case_id: str) -> CaseAnswer:
    """Record the intent, commit, submit, then record the service's receipt."""
    with store.transaction() as tx:
        row = tx.execute("SELECT tenant, proposal FROM ledger WHERE case_id = ? AND intent = 'new'",
                         (case_id,)).fetchone()
        if row is None:
            raise UnknownName(f"case {case_id!r} has no new action to send")
        tx.execute("UPDATE ledger SET intent = 'sent' WHERE case_id = ?", (case_id,))
    answer = service.submit(case_key(row["tenant"], case_id), row["proposal"])
    if isinstance(answer, CaseReceipt):
        with store.transaction() as tx:
            tx.execute("UPDATE ledger SET receipt = ? WHERE case_id = ?", (answer.receipt_id, case_id))
    return answer
