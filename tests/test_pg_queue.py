"""The chapter's concurrency claims, proven on PostgreSQL (real server on loopback, real concurrent connections).

On SQLite, ``BEGIN IMMEDIATE`` serializes every writer, so the reference's "count, then
insert" admission cannot overshoot its capacity. On PostgreSQL at READ COMMITTED two
admissions both count, both see room and both insert (write skew). These tests force
that order with holds at chosen statements (no sleeps, no luck), show the overshoot
with the reference ``refusal`` (the known-bad form on a server), and show it closed by
a locked gate row and by SERIALIZABLE with a retry. The claim: the reference's guarded
``UPDATE`` never hands one request to two workers, but the second worker waits for the
first one's row lock and then comes away empty although other work is pending;
``FOR UPDATE SKIP LOCKED`` passes over the locked row without waiting.

The reference comes from source/ and the translation from ``tests/pg_queue.py``.
"""

from __future__ import annotations

import threading
import time
from typing import Callable

import psycopg
import pytest

from lucy_runtime.errors import FenceError, StoreMisuse
from lucy_runtime.loop import LoopResult
from lucy_runtime.pg_store import PgStore, placeholders, plain_url
from lucy_runtime.work import Outcome, Queue

from . import pg_queue
from .pg import postgres

HOLD = 30.0  # seconds a held transaction waits before the test gives up on it


@pytest.fixture(scope="module")
def server():
    with postgres("lucy") as url:
        yield plain_url(url)


@pytest.fixture
def url(server, request):
    """A database of the test's own on the module's server."""
    name = "t_" + "".join(c if c.isalnum() else "_" for c in request.node.name.lower())[:50]
    with psycopg.connect(server, autocommit=True) as admin:
        admin.execute(f'DROP DATABASE IF EXISTS "{name}"')
        admin.execute(f'CREATE DATABASE "{name}"')
    yield server.rsplit("/", 1)[0] + "/" + name


@pytest.fixture
def ref(url):
    namespace = pg_queue.reference()
    with PgStore(url) as store:
        pg_queue.create_schema(namespace, store)
    return namespace


def wait_until(condition: Callable[[], bool], timeout: float = 15.0) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(0.02)
    return False


def waiting_on_a_lock(url: str, pid: int) -> bool:
    with psycopg.connect(url, autocommit=True) as watcher:
        row = watcher.execute("SELECT wait_event_type FROM pg_stat_activity WHERE pid = %s", (pid,)).fetchone()
    return row is not None and row[0] == "Lock"


class Held:
    """A worker on a connection of its own, stopped at the first statement ``at`` picks until ``go``."""

    def __init__(self, url: str, at: Callable[[str, str], bool], go: threading.Event, isolation: str = "read committed"):
        self.store = PgStore(url, isolation=isolation)
        self.arrived = threading.Event()
        self.result: object = None
        self._go = go

        def hook(kind: str, sql: str) -> None:
            if at(kind, sql):
                self.arrived.set()
                assert self._go.wait(HOLD), "the test never let this transaction go on"

        self.store.set_hook(hook)

    def start(self, work: Callable[[PgStore], object]) -> "Held":
        def run() -> None:
            try:
                self.result = work(self.store)
            except Exception as error:  # the test reads it
                self.result = error

        self.thread = threading.Thread(target=run, daemon=True)
        self.thread.start()
        return self

    def here_or_waiting(self, url: str) -> bool:
        """At its hold, or blocked on a lock another transaction holds."""
        return wait_until(lambda: self.arrived.is_set() or waiting_on_a_lock(url, self.store.backend_pid))

    def done(self) -> object:
        self.thread.join(HOLD)
        assert not self.thread.is_alive()
        self.store.close()
        return self.result


def at_insert_into_work(kind: str, sql: str) -> bool:
    return kind == "write" and sql.lstrip().upper().startswith("INSERT INTO WORK")


def unfinished(url: str) -> int:
    with PgStore(url) as store:
        return store.query("SELECT COUNT(*) FROM work WHERE state != 'done'")[0][0]


def admission_race(url: str, admit: Callable, isolation: str = "read committed") -> list[object]:
    """Two admissions for two chats, capacity 1: the first stopped just before its INSERT (its count
    done), the second let run until it is at its INSERT too, or blocked on a lock; then both go on."""
    go = threading.Event()
    first = Held(url, at_insert_into_work, go, isolation)
    second = Held(url, at_insert_into_work, go, isolation)
    first.start(lambda store: admit(Queue(store, capacity=1, per_session_limit=1), "tg:1:1", "chat-1", "brief ACME"))
    assert wait_until(first.arrived.is_set), "the first admission never reached its INSERT"
    second.start(lambda store: admit(Queue(store, capacity=1, per_session_limit=1), "tg:2:1", "chat-2", "brief HOOLI"))
    assert second.here_or_waiting(url), "the second admission neither reached its INSERT nor waited for a lock"
    go.set()
    return [first.done(), second.done()]


def outcomes(results: list[object]) -> list[str]:
    return sorted(r.outcome.value if hasattr(r, "outcome") else type(r).__name__ for r in results)


def test_the_reference_admission_overshoots_its_capacity_at_read_committed(url, ref):
    """The known-bad form on a server: both count 0 unfinished, both insert."""
    results = admission_race(url, ref["admit"])
    assert outcomes(results) == ["accepted", "accepted"]
    assert unfinished(url) == 2  # capacity 1


def test_a_locked_gate_row_closes_the_race(url, ref):
    ref["refusal"] = pg_queue.gated_refusal(ref["refusal"])  # the reference admit calls it by name
    results = admission_race(url, ref["admit"])
    assert outcomes(results) == ["accepted", "refused"]
    assert [r.reason for r in results if r.outcome is Outcome.REFUSED] == ["capacity"]
    assert unfinished(url) == 1


def test_serializable_with_a_retry_closes_the_race(url, ref):
    cancelled = []

    def admit_with_retry(queue, *args):
        for _ in range(5):
            try:
                return ref["admit"](queue, *args)
            except psycopg.errors.SerializationFailure as error:
                cancelled.append(error)  # the server cancelled one of the two: run it again from the start
        raise AssertionError("five serialization failures in a row")

    results = admission_race(url, admit_with_retry, isolation="serializable")
    assert outcomes(results) == ["accepted", "refused"]
    assert cancelled and unfinished(url) == 1  # once, or again when the retry ran before the other committed


def test_the_reference_admission_at_serializable_without_a_retry_loses_the_request(url, ref):
    """SERIALIZABLE alone is not the fix: the cancelled admission raises, and its request is not stored."""
    results = admission_race(url, ref["admit"], isolation="serializable")
    assert outcomes(results) == ["SerializationFailure", "accepted"]


def two_pending(url: str, ref: dict) -> None:
    with PgStore(url) as store:
        queue = Queue(store, capacity=5, per_session_limit=5)
        for n in (1, 2):
            assert ref["admit"](queue, f"tg:{n}:1", f"chat-{n}", "brief ACME").outcome is Outcome.ACCEPTED


def claim_race(url: str, claim: Callable) -> tuple[object, object, bool]:
    """Worker 1 claims and is held before its COMMIT; worker 2 claims meanwhile.
    Returns both claims and whether worker 2 finished while worker 1 still held its row."""
    go = threading.Event()
    first = Held(url, lambda kind, sql: kind == "commit", go)
    second = Held(url, lambda kind, sql: False, go)
    first.start(lambda store: claim(Queue(store, 5, 5), "worker-1"))
    assert wait_until(first.arrived.is_set), "worker 1 never reached its COMMIT"
    second.start(lambda store: claim(Queue(store, 5, 5), "worker-2"))
    assert wait_until(lambda: not second.thread.is_alive() or waiting_on_a_lock(url, second.store.backend_pid))
    without_waiting = not second.thread.is_alive()
    go.set()
    return first.done(), second.done(), without_waiting


def test_the_reference_claim_never_shares_a_row_but_waits_for_it_and_comes_away_empty(url, ref):
    two_pending(url, ref)
    one, two, without_waiting = claim_race(url, ref["claim"])
    assert one.work_id == 1
    assert not without_waiting  # worker 2 waited for worker 1's row lock ...
    assert two is None  # ... and then its guarded UPDATE changed no row, though work 2 was pending
    with PgStore(url) as store:
        assert [tuple(r) for r in store.query("SELECT work_id, state FROM work ORDER BY work_id")] == [
            (1, "running"), (2, "pending")]


def test_skip_locked_hands_the_next_row_to_the_second_worker_without_waiting(url, ref):
    two_pending(url, ref)
    one, two, without_waiting = claim_race(url, pg_queue.claim_skip_locked)
    assert without_waiting
    assert (one.work_id, one.worker_id) == (1, "worker-1") and (two.work_id, two.worker_id) == (2, "worker-2")


def test_four_workers_claim_every_request_once(url, ref):
    with PgStore(url) as store:
        queue = Queue(store, capacity=40, per_session_limit=40)
        for n in range(24):
            ref["admit"](queue, f"tg:7:{n}", "chat-7", f"brief ACME {n}")
    claimed: dict[str, list] = {}

    def worker(name: str) -> None:
        with PgStore(url) as store:
            mine = claimed.setdefault(name, [])
            while (assignment := pg_queue.claim_skip_locked(Queue(store, 40, 40), name)) is not None:
                mine.append(assignment.work_id)

    threads = [threading.Thread(target=worker, args=(f"worker-{n}",)) for n in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    every = sorted(w for ids in claimed.values() for w in ids)
    assert every == list(range(1, 25))


def test_the_reference_finish_keeps_its_fence_and_its_one_transaction_on_postgres(url, ref):
    with PgStore(url) as store:
        queue = Queue(store, capacity=5, per_session_limit=5)
        admission = ref["admit"](queue, "tg:4411:87", "chat-4411", "brief ACME 5 days")
        assert admission.outcome is Outcome.ACCEPTED and admission.work_id == 1  # lastrowid, from the identity
        assert ref["admit"](queue, "tg:4411:87", "chat-4411", "brief ACME 5 days").outcome is Outcome.DUPLICATE
        assignment = pg_queue.claim_skip_locked(queue, "worker-1")
        report = ref["finish"](queue, assignment, LoopResult("ACME closed at 101.20", "chat-?", 1))
        assert (report.report_id, report.session_id) == ("r-1-1", "chat-4411")
        with pytest.raises(FenceError):
            ref["finish"](queue, assignment, LoopResult("again", "chat-4411", 1))
        rows = store.query("SELECT report_id, delivery FROM report")
        assert [tuple(r) for r in rows] == [("r-1-1", "pending")]


def test_a_pg_store_rolls_back_on_an_error_and_reads_rows_as_sqlite_does(url):
    with PgStore(url) as store:
        with store.transaction() as tx:
            tx.execute("CREATE TABLE note (id BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY, text TEXT)")
        with pytest.raises(psycopg.errors.UniqueViolation):
            with store.transaction() as tx:
                tx.execute("INSERT INTO note (text) VALUES (?)", ("kept?",))
                tx.execute("INSERT INTO note (id, text) OVERRIDING SYSTEM VALUE VALUES (1, 'twice')")
        assert store.query("SELECT COUNT(*) FROM note")[0][0] == 0
        with store.transaction() as tx:
            cursor = tx.execute("INSERT INTO note (text) VALUES (?)", ("it's 100% '?'",))
            assert cursor.lastrowid == 2  # the failed transaction took 1 from the sequence
        row = store.query("SELECT id, text FROM note WHERE text LIKE ?", ("%?%",))[0]
        assert (row["id"], row[1], row.keys()) == (2, "it's 100% '?'", ["id", "text"])
        with pytest.raises(StoreMisuse):
            store.query("DELETE FROM note")
        with pytest.raises(StoreMisuse):
            with store.transaction() as tx:
                tx.execute("SELECT 1", {"named": 1})


def test_a_pg_store_has_a_random_id_of_its_own(url, server):
    with PgStore(url) as store:
        first = store.store_id()
    with PgStore(url) as again:
        assert again.store_id() == first
    with PgStore(server) as other:
        assert len(first) == 32 and other.store_id() != first


def test_placeholders_leave_quotes_and_comments_alone():
    assert placeholders("SELECT '?', \"a?\" -- why?\n, ? /* ? */ WHERE x LIKE '5%' AND y = ?") == (
        "SELECT '?', \"a?\" -- why?\n, %s /* ? */ WHERE x LIKE '5%%' AND y = %s")
