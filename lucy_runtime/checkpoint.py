"""``lucy checkpoint ch07``: is this learner's chapter-7 code ready for Telegram and the clock?

1. The learner's completed Unit A, Unit B and practice notebooks run top to bottom (Unit B's
   optional part may be left unwritten: its cells are not counted).
2. Every acceptance row holds on the learner-owned cells taken from them, except the rows of
   Unit B's optional part (``OPTIONAL_ROWS``), which are run and shown but not required.
3. The Telegram adapter (against a fake Bot API on 127.0.0.1) and the clock producer
   run end to end through the learner's own ``admit``, ``work_once`` and ``deliver_one``,
   including a capacity refusal on each path: recorded and (on Telegram) answered "busy".

Learner code runs only in forked children, exactly as in the checker, and in the notebooks'
kernels. Where the machine gives the grading sandbox (``sandbox.py``), ``run_checkpoint_isolated``
runs the whole checkpoint inside it, on a copy of the notebooks: the course, the network and
the machine beyond the limits are out of reach, as under ``nbgrader autograde``. The verdict
is the learner's own gate to Chapter 8, not a grade: code that runs as the same user as the
checkpoint could forge it, and would only fool its author.
"""

from __future__ import annotations

import datetime as dt
import json
import os
import shutil
import sqlite3
import subprocess
import sys
import tempfile
import time
from contextlib import closing
from dataclasses import asdict, dataclass
from functools import partial
from pathlib import Path

from . import sandbox
from .checker import SEALED_ENV, SourceLearner, run_rows
from .checker.harness import Ctx, Harness
from .checker.kit import Row, row
from .checker.results import CheckReport, RowResult
from .checker.faults import KillAt
from .checker.rows import ROWS, Fail, ok, seen
from .limits import LIMIT_HINT, Limits, group_label
from .notebook import UNITS, find_notebooks, learner_implementation

OPTIONAL_PART = "## Optional part"
"""How the heading of Unit B's optional part starts: its cells and rows are not required."""

OPTIONAL_ROWS = frozenset({"reconcile-unknown", "idempotency-key-stable", "second-generation", "stale-finish-refused",
                           "crash-sweep", "model-based"})
"""The rows graded in Unit B's optional part (a test keeps this in step with the notebook)."""

CHECKPOINT_ROWS: dict[str, Row] = {}
"""The checkpoint's own rows: the same ``Row`` and runner as the acceptance rows, kept apart so
that ``check("all")`` and the notebooks never run them."""


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
    from .telegram import BotApi, TelegramIntake
    from .telegram_fake import FakeTelegram

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

        ok(s.run(crash, plan=_crash_at_cursor("lucy_telegram_cursor")), "intake stopped between admitting the first message and moving the cursor", expect="crashed", harness=h)
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
    from .telegram import BUSY_REPLY, BotApi, TelegramIntake
    from .telegram_fake import FakeTelegram

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
    from .telegram import BotApi, TelegramTransport
    from .telegram_fake import FakeTelegram

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


def _hourly_acme():
    """The clock rows' schedule: an ACME brief for owner-ada every hour from 08:00 UTC."""
    from .clock import Schedule

    start = dt.datetime(2026, 11, 30, 8, 0, tzinfo=dt.timezone.utc)
    return start, Schedule("acme-hourly", "ACME", "owner-ada", start, dt.timedelta(hours=1))


@checkpoint_row("clock-producer",
                "The clock's scheduled briefs go through your admit: a slot fired twice is a duplicate, missed slots "
                "are visible, and the newest slot is worked",
                "admit must treat a repeated source_id with the same session and text as DUPLICATE.")
def clock_producer(h: Harness) -> str:
    from .clock import ClockProducer

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

    ok(s.run(crash, plan=_crash_at_cursor("lucy_clock_cursor")), "a tick stopped between admitting a slot and moving the cursor", expect="crashed", harness=h)
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
    from .clock import ClockProducer

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


@dataclass(frozen=True)
class CheckpointReport:
    results: tuple[RowResult, ...]
    seconds: float

    @property
    def ready(self) -> bool:
        required = [r for r in self.results if r.row_id not in OPTIONAL_ROWS]
        return bool(required) and all(r.passed for r in required)


def execute_notebooks(folder: Path) -> RowResult:
    """Run each unit notebook top to bottom in a fresh kernel, in a scratch copy."""
    import nbformat
    from nbclient import NotebookClient

    started = time.monotonic()
    notebooks = find_notebooks(folder)
    found = sorted(p.stem for p in notebooks)
    if found != sorted(UNITS):
        return RowResult("notebooks-run", False, f"found notebooks for {found or 'no unit'}; all of {', '.join(UNITS)} are needed",
                         f"Put your completed {', '.join(UNITS)} folders in the folder you check.", 0.0)
    problems = []
    with tempfile.TemporaryDirectory(prefix="lucy-checkpoint-") as scratch:
        for path in notebooks:
            shutil.copytree(path.parent, Path(scratch) / path.stem, dirs_exist_ok=True)
        # Each notebook makes a workspace in the temporary folder: the kernel's is in the scratch copy, and goes with it.
        kernel_tmp = Path(scratch) / "tmp"
        kernel_tmp.mkdir()
        for unit in UNITS:
            path = Path(scratch) / unit / f"{unit}.ipynb"
            nb = nbformat.read(str(path), as_version=4)
            NotebookClient(nb, timeout=300, kernel_name="python3", allow_errors=True,
                           resources={"metadata": {"path": str(path.parent)}}).execute(
                env={**os.environ, "TMPDIR": str(kernel_tmp)})
            for index, cell in enumerate(required_cells(nb.cells)):
                for out in cell.get("outputs", []):
                    if out.get("output_type") == "error":
                        problems.append(f"{unit} cell {index}: {out.get('ename')}: {str(out.get('evalue'))[:120]}")
    seconds = round(time.monotonic() - started, 1)
    if problems:
        return RowResult("notebooks-run", False, f"{len(problems)} cells raised; first: {problems[0]}",
                         "Run each notebook with Kernel ▸ Restart Kernel and Run All Cells, and fix the first error.",
                         seconds)
    return RowResult("notebooks-run", True, f"all {len(UNITS)} notebooks ran top to bottom without an error", "", seconds)


def required_cells(cells: list) -> list:
    """The cells before the optional part's heading: the ones that must run without an error."""
    for index, cell in enumerate(cells):
        if cell.get("cell_type") == "markdown" and str(cell.get("source", "")).startswith(OPTIONAL_PART):
            return cells[:index]
    return cells


def run_checkpoint(folder: str | os.PathLike, *, execute: bool = True, seed: int | None = None) -> CheckpointReport:
    started = time.monotonic()
    folder = Path(folder)
    results: list[RowResult] = []
    if execute:
        results.append(execute_notebooks(folder))
    learner = SourceLearner(learner_implementation(folder))
    results += run_rows(learner, [*ROWS.values(), *CHECKPOINT_ROWS.values()], seed=seed).results
    return CheckpointReport(tuple(results), round(time.monotonic() - started, 1))


RESULT_MARK = "lucy-checkpoint-result: "
"""Starts the line on which ``python -m lucy_runtime.checkpoint --inside`` prints its results."""


def run_checkpoint_isolated(folder: str | os.PathLike, *, execute: bool = True, seed: int | None = None,
                            limits: Limits | None = None, log=None) -> CheckpointReport:
    """``run_checkpoint`` inside the grading sandbox, on a copy of ``folder``; where this machine
    gives no sandbox, as it is, after the one warning line that says so."""
    box = sandbox.detect()
    if not box.isolated:
        sandbox._warn_once(box, log)
        return run_checkpoint(folder, execute=execute, seed=seed)
    limits = limits or Limits()
    started = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="lucy-checkpoint-box-") as scratch:
        scratch = os.path.realpath(scratch)
        work = Path(scratch) / "notebooks"
        skip = shutil.ignore_patterns(".ipynb_checkpoints", "__pycache__")

        def ignore(where: str, names: list[str]) -> set[str]:  # the scratch folder may sit inside ``folder``
            return set(skip(where, names)) | {n for n in names if os.path.join(where, n) == scratch}

        shutil.copytree(folder, work, symlinks=True, ignore=ignore)
        sandbox.hand_to_grader(box, work, enterable=True)  # a pytest tmp folder is 0700
        group, tree_limits = sandbox.tree_cgroup(limits, f"checkpoint-{group_label(folder)}", log)
        argv = [sys.executable, "-m", "lucy_runtime.checkpoint", "--inside", str(work)]
        argv += ([] if execute else ["--no-execute"]) + ([] if seed is None else ["--seed", str(seed)])
        # The notebooks' own check() cells run their rows, as on the learner's machine (not as under autograde).
        argv = box.command(argv, workdir=work, limits=tree_limits, env={SEALED_ENV: ""})
        if group is not None:
            argv = group.wrap(argv)
        try:
            done = subprocess.run(argv, capture_output=True, text=True, cwd="/", env={"PATH": "/usr/bin:/bin"},
                                  timeout=limits.wall_seconds)
        except subprocess.TimeoutExpired:
            return _stopped(f"the checkpoint did not finish within the wall time limit ({limits.wall_seconds} s)",
                            started)
        finally:
            if group is not None:
                breaches = group.breaches(limits)
                group.close()
        found = [line[len(RESULT_MARK):] for line in done.stdout.splitlines() if line.startswith(RESULT_MARK)]
        if not found:
            said = "; ".join(f"the {b} limit" for b in breaches) if group is not None and breaches else \
                f"exit {done.returncode}: {done.stderr.strip()[-300:]}"
            return _stopped(f"the checkpoint stopped before it could report ({said})", started)
        results = tuple(RowResult(**r) for r in json.loads(found[-1]))
    return CheckpointReport(results, round(time.monotonic() - started, 1))


def _stopped(why: str, started: float) -> CheckpointReport:
    return CheckpointReport((RowResult("checkpoint-ran", False, why, LIMIT_HINT, 0.0),),
                            round(time.monotonic() - started, 1))


def save_record(report: CheckpointReport, folder: Path, records: Path) -> Path:
    records.mkdir(parents=True, exist_ok=True)
    stamp = dt.datetime.now(dt.timezone.utc).strftime("%Y%m%dT%H%M%SZ")
    path = records / f"ch07-{stamp}.json"
    path.write_text(json.dumps({"checkpoint": "ch07", "notebooks": str(folder), "ready": report.ready,
                                "seconds": report.seconds, "rows": [asdict(r) for r in report.results]}, indent=2))
    return path


def table(report: CheckpointReport) -> str:
    shown = repr(CheckReport(report.results, "Checkpoint ch07 (before Chapter 8: Telegram)"))
    optional = sorted(r.row_id for r in report.results if r.row_id in OPTIONAL_ROWS)
    if optional:
        shown += "\nNot required (Unit B's optional part), shown for you: " + ", ".join(optional)
    return shown


def _inside(argv: list[str]) -> int:
    """``python -m lucy_runtime.checkpoint --inside DIR [--no-execute] [--seed N]``: the checkpoint in
    the sandbox, its results on one line of stdout after ``RESULT_MARK``."""
    import argparse  # noqa: PLC0415 - only this entry point parses arguments

    parser = argparse.ArgumentParser(prog="python -m lucy_runtime.checkpoint")
    parser.add_argument("--inside", required=True)
    parser.add_argument("--no-execute", action="store_true")
    parser.add_argument("--seed", type=int)
    args = parser.parse_args(argv)
    report = run_checkpoint(args.inside, execute=not args.no_execute, seed=args.seed)
    print(RESULT_MARK + json.dumps([asdict(r) for r in report.results]), flush=True)
    return 0


if __name__ == "__main__":
    # Run in the importable module, as the sandbox's orchestrator does: one registry of checkpoint rows.
    from lucy_runtime import checkpoint as _module

    raise SystemExit(_module._inside(sys.argv[1:]))
