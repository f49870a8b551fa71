"""Scenarios: a fresh database, service log and model-call log per experiment.

The parent process (the kernel, or ``lucy check``) only forks children and asks
the observer what is on disk. Learner code runs in the children, through ``Ctx``.
"""

from __future__ import annotations

from dataclasses import replace
import os
import random
import shutil
import string
import sys
import tempfile
import types
from pathlib import Path
from types import CodeType
from typing import Any, Callable, Protocol, Sequence

from ..notebooks.cells import FUTURE_FLAGS, compile_cell, compile_definitions, is_definitions, run_definitions
from ..delivery import DeliveryPolicy, ManualClock
from ..errors import ContractBroken, MissingFunction, ReturnedNothing
from ..loop import AgentLoop, LoopResult
from ..fakes.model import InvocationLog, ScriptedModel
from ..prices import PriceBook
from ..store import Store
from ..fakes.service import Behaviour, FakeService, FakeTransport
from ..work import Admission, AfterError, Assignment, Disposition, OperatorNumbers, Queue, Report
from ..engine import child as _child
from ..engine.child import PROBE
from ..engine.forkserver import ForkServer, run_served
from ..engine.result import ChildResult
from ..engine.supervisor import Plan, run_in_child
from .observe import Snapshot, observe_many


class LearnerCode(Protocol):
    @property
    def runs_here(self) -> bool:
        """True when the learner's code has run in this process (a kernel), not only in its children."""

    def namespace(self) -> dict: ...


class KernelLearner:
    """The learner's functions as they stand in a running kernel (inherited by fork)."""

    runs_here = True

    def __init__(self, namespace: dict):
        self._namespace = namespace

    def namespace(self) -> dict:
        return self._namespace


def _ignore(*args: Any, **kwargs: Any) -> None:
    return None


class _Absent:
    """Stands in for IPython outside a kernel: every attribute and call leads nowhere."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        pass

    def __getattr__(self, name: str) -> "_Absent":
        return _Absent()

    def __setattr__(self, name: str, value: Any) -> None:
        pass

    def __call__(self, *args: Any, **kwargs: Any) -> "_Absent":
        return _Absent()


LEARNER_MODULE = "learner"
"""The module name learner cells run under outside a kernel."""


class SourceLearner:
    """Learner cells extracted from a notebook, executed afresh in each child.

    A cell named ``unit:definitions-N`` holds what ``cells.definitions`` kept of a cell
    without nbgrader metadata; its statements run one by one, and one that fails (a name
    only an experiment made) is passed over, as an error in such a cell is in the kernel.
    """

    runs_here = False

    def __init__(self, cells: list[tuple[str, str]]):
        self.cells = list(cells)
        self._compiled: list[tuple[list[CodeType], bool, BaseException | None]] = []
        future = 0
        for name, source in self.cells:  # compile once here; every child only executes
            optional = is_definitions(name)
            try:
                codes = (compile_definitions(source, f"<cell {name}>", future) if optional
                         else [compile_cell(source, f"<cell {name}>", future)])
            except SyntaxError as error:
                self._compiled.append(([], optional, None if optional else error))
                continue
            for code in codes:
                future |= code.co_flags & FUTURE_FLAGS
            self._compiled.append((codes, optional, None))

    def namespace(self) -> dict:
        # The cells run in a module that sys.modules knows, as a kernel's __main__ is: a learner's
        # dataclass, pickle or typing.get_type_hints looks its module up there by name.
        module = types.ModuleType(LEARNER_MODULE)
        sys.modules[LEARNER_MODULE] = module
        ns: dict[str, Any] = module.__dict__
        # A cell that displays a table or touches get_ipython() must not fail outside a kernel.
        ns.update({"display": _ignore, "get_ipython": _Absent})
        for codes, optional, error in self._compiled:
            if error is not None:
                raise error
            if optional:
                run_definitions(codes, ns)
            else:
                for code in codes:
                    exec(code, ns)
        return ns


class SwappedLearner:
    """The learner's code with one function standing in for another (``finish`` ← ``broken_finish``).

    The swap happens inside the child, in the namespace the learner's functions look
    their names up in, so ``work_once`` really calls the stand-in.
    """

    def __init__(self, base: "LearnerCode", swaps: dict[str, str]):
        self.base, self.swaps = base, dict(swaps)

    @property
    def runs_here(self) -> bool:
        return self.base.runs_here

    def namespace(self) -> dict:
        ns = self.base.namespace()
        for target, source in self.swaps.items():
            if not callable(ns.get(source)):
                raise MissingFunction(f"no function named {source!r} is defined: run the cell that defines it")
            ns[target] = ns[source]
        return ns


def broken(value: Any, message: str) -> ContractBroken:
    return (ReturnedNothing if value is None else ContractBroken)(message)


class ProbeLoop:
    """The checker's loop: a real agent loop whose answer carries a marker only the checker knows.

    It also claims the reply is addressed to ``addressed_to``, a session that never
    asked: the report must still go to the admitted session.
    """

    def __init__(self, calls_path: Path, marker: str, addressed_to: str, *, crash: bool = False,
                 failures: int | None = 0):
        self._loop = AgentLoop(ScriptedModel(InvocationLog(calls_path), failures=failures))
        self._marker = marker
        self._addressed_to = addressed_to
        self._crash = crash

    def run(self, session_id: str, text: str) -> LoopResult:
        answer = self._loop.run(session_id, text)
        if self._crash:
            _child.request_stop()
        return LoopResult(f"{answer.text} [{self._marker}]", self._addressed_to, answer.model_calls)


class Ctx:
    """What a scenario's child works with."""

    def __init__(self, scenario: "Scenario", ns: dict):
        self.scenario = scenario
        self.ns = ns
        self.store = Store(scenario.db)
        # Every child of a scenario starts at the same time, with the same key namespace and jitter;
        # a row moves the clock on with c.clock.advance(seconds).
        self.clock = ManualClock(CLOCK_START)
        self.policy = self.policy_for(scenario.namespace)

    def policy_for(self, namespace: str, *, short: bool = True) -> DeliveryPolicy:
        """The rows' policy. ``short``: a brief schedule (5 attempts from 2 s), so a row that grades the cap
        need not run its clock for half an hour; otherwise the defaults, which ride out a ten-minute outage."""
        policy = DeliveryPolicy(namespace, clock=self.clock, random=random.Random(self.scenario.namespace).random)
        return replace(policy, max_attempts=5, base_delay=2.0, max_delay=600.0) if short else policy

    def fn(self, name: str) -> Callable[..., Any]:
        value = self.ns.get(name)
        if not callable(value):
            raise MissingFunction(f"no function named {name!r} is defined: run the cell that defines it")
        return value

    def queue(self, capacity: int = 10, per_session_limit: int = 10) -> Queue:
        return Queue(self.store, capacity, per_session_limit)

    def loop(self, marker: str, addressed_to: str = "intruder", *, crash: bool = False,
             failures: int | None = 0) -> ProbeLoop:
        """The checker's loop; ``failures``: its model's first calls raise ModelUnavailable (None: every call)."""
        return ProbeLoop(self.scenario.calls, marker, addressed_to, crash=crash, failures=failures)

    def service(self, script=None, *, idempotent: bool = False, **settings: Any) -> FakeService:
        return FakeService(self.scenario.log, script=script, idempotent=idempotent, clock=self.clock, **settings)

    def transport(self, script=None, *, idempotent: bool = False, **settings: Any) -> FakeTransport:
        """A transport to the scenario's service; it reports the points "send" and "accepted" like the store.

        ``settings`` go to the ``FakeService`` (``sessions``, ``retention``).
        """
        return FakeTransport(self.service(script, idempotent=idempotent, **settings),
                             before_send=lambda report: PROBE("send", f"send {report.report_id}"),
                             on_accepted=lambda receipt: PROBE("accepted", f"service accepted {receipt.report_id}"))

    def stop(self) -> None:
        """The process dies here (the parent kills it), with nothing flushed or closed."""
        _child.request_stop()

    # Calls that check the learner kept the contract, so rows read plain values.

    def admit(self, queue: Queue, source_id: str, session_id: str, text: str) -> dict:
        value = self.fn("admit")(queue, source_id, session_id, text)
        if not isinstance(value, Admission):
            raise broken(value, f"admit returned {value!r}; it should return an Admission(outcome, work_id, reason)")
        return {"outcome": value.outcome.value, "work_id": value.work_id, "reason": value.reason}

    def claim(self, queue: Queue, worker_id: str) -> dict | None:
        value = self.fn("claim")(queue, worker_id)
        if value is None:
            return None
        if not isinstance(value, Assignment):
            raise broken(value, f"claim returned {value!r}; it should return an Assignment or None")
        return dict(value.__dict__)

    def finish(self, queue: Queue, assignment: dict | Assignment, result: LoopResult) -> dict:
        """``assignment`` as ``claim`` returned it here (a dict), or one the row made up (a stale or foreign claim)."""
        if isinstance(assignment, dict):
            assignment = Assignment(**assignment)
        value = self.fn("finish")(queue, assignment, result)
        if not isinstance(value, Report):
            raise broken(value, f"finish returned {value!r}; it should return the Report it stored")
        return dict(value.__dict__)

    def work_once(self, queue: Queue, loop, worker_id: str) -> dict | None:
        value = self.fn("work_once")(queue, loop, worker_id)
        if value is not None and not isinstance(value, Report):
            raise broken(value, f"work_once returned {value!r}; it should return the Report, or None when idle")
        return None if value is None else dict(value.__dict__)

    def deliver_one(self, transport, store: Store | None = None, policy: DeliveryPolicy | None = None) -> str:
        value = self.fn("deliver_one")(store or self.store, transport, policy or self.policy)
        if not isinstance(value, Disposition):
            raise broken(value, f"deliver_one returned {value!r}; it should return a Disposition")
        return value.value

    def reconcile(self, transport) -> int:
        value = self.fn("reconcile")(self.store, transport, self.policy)
        if isinstance(value, bool) or not isinstance(value, int):
            raise broken(value, f"reconcile returned {value!r}; it should return how many reports it confirmed")
        return value

    def requeue(self, queue: Queue, work_id) -> None:
        self.fn("requeue")(queue, work_id)

    def release(self, queue: Queue, work_id) -> None:
        self.fn("release")(queue, work_id)

    def fail_attempt(self, queue: Queue, assignment: dict | Assignment, error: Exception,
                     policy: DeliveryPolicy | None = None) -> str:
        if isinstance(assignment, dict):
            assignment = Assignment(**assignment)
        value = self.fn("fail_attempt")(queue, assignment, error, policy or self.policy)
        if not isinstance(value, AfterError):
            raise broken(value, f"fail_attempt returned {value!r}; it should return AfterError.RETRY or "
                                "AfterError.FAILED")
        return value.value

    def work_once_retrying(self, queue: Queue, loop, worker_id: str, policy: DeliveryPolicy | None = None) -> dict | None:
        value = self.fn("work_once_retrying")(queue, loop, worker_id, policy or self.policy)
        if value is not None and not isinstance(value, Report):
            raise broken(value, f"work_once_retrying returned {value!r}; it should return the Report, or None")
        return None if value is None else dict(value.__dict__)

    def operator_numbers(self, now: float) -> dict:
        value = self.fn("operator_numbers")(self.store, now)
        if not isinstance(value, OperatorNumbers):
            raise broken(value, f"operator_numbers returned {value!r}; it should return OperatorNumbers(…)")
        return dict(value.__dict__)

    def admit_message(self, queue: Queue, allowed: dict, chat_id: int, message_id: int, text: str) -> dict:
        value = self.fn("admit_message")(queue, allowed, chat_id, message_id, text)
        if not isinstance(value, Admission):
            raise broken(value, f"admit_message returned {value!r}; it should return an Admission")
        return {"outcome": value.outcome.value, "work_id": value.work_id, "reason": value.reason}


CLOCK_START = 1_000_000.0
"""The time every child of a scenario starts at (seconds)."""


class Scenario:
    def __init__(self, harness: "Harness", name: str):
        self.harness = harness
        self.name = name
        # Opaque folder names: learner code must not learn which experiment it is in from its path.
        self.dir = harness.workdir / os.urandom(8).hex()
        self.dir.mkdir(mode=0o777)
        self.dir.chmod(0o777)
        self.db, self.log, self.calls = (self.dir / name for name in SCENARIO_FILES)
        self.namespace = f"lucy-{os.urandom(4).hex()}"
        self._fresh = True

    def _child(self, script: Callable[[Ctx], Any], *, first: bool | None = None) -> Callable[[], Any]:
        """The child's function; ``first`` (the scenario's first run when not told) makes the learner's schema."""
        first, self._fresh = self._fresh if first is None else first, False
        make_schema = first and self.harness.schema is not None
        learner, schema = self.harness.learner, self.harness.schema

        def child() -> Any:
            ctx = Ctx(self, learner.namespace())
            if make_schema and schema is not None:
                ctx.fn(schema)(ctx.store)
            return script(ctx)

        return child

    def run(self, script: Callable[[Ctx], Any], *, plan: Plan | Callable[[], Plan] | None = None,
            timeout: float | None = None) -> ChildResult:
        """Run ``script`` in a child under ``plan``. A plan given as a maker (a Plan class, a function) is made
        only after the child's fork server was forked, so the child holds no plan (``child.ForkServer``)."""
        timeout = timeout or self.harness.timeout
        if plan is None or isinstance(plan, Plan):
            return run_in_child(self._child(script), plan=plan, db=self.db, timeout=timeout)
        with ForkServer({"run": self._child(script)}) as server:
            return run_served(server, ["run"], plans=[plan()], db=self.db, timeout=timeout)[0]

    def target(self) -> dict:
        return {"db": str(self.db), "log": str(self.log), "calls": str(self.calls)}

    def observe(self) -> Snapshot:
        return self.harness.observe([self])[0]


SCENARIO_FILES = ("lucy.sqlite3", "service.sqlite3", "model-calls.log")
"""A scenario's database, the fake service's log and the model-call log, in its folder."""


class Observed(Protocol):
    """A folder the observer reads: a scenario, or one a series kept (series.Kept)."""

    def target(self) -> dict: ...


RAM_FOLDER = Path("/dev/shm")


def scratch_parent() -> str | None:
    """Where a grading run's scenario folders go: a folder in RAM when the machine has one.

    The rows kill processes, never the machine: what a killed child wrote must outlive its
    process, and the page cache does that on any file system. A disk adds only the fsync
    SQLite makes at each COMMIT (``synchronous = FULL``), milliseconds each, about a quarter
    of the time of all rows. None (the usual temporary folder) without a writable RAM folder.
    """
    usable = RAM_FOLDER.is_dir() and os.access(RAM_FOLDER, os.W_OK | os.X_OK)
    return str(RAM_FOLDER) if usable else None


class Harness:
    """One grading run: a scratch folder, the learner's code and values made up now."""

    def __init__(self, learner: LearnerCode, *, seed: int | None = None, timeout: float = 5.0, workdir: Path | None = None,
                 schema: str | None = "create_schema", wipe_as: tuple[int, int] | None = None):
        self.learner = learner
        # The (uid, gid) learner code runs as in a sandbox whose /tmp is its own: before each run of a
        # series (series.py), what that user left outside its folder is removed. None: nothing is.
        self.wipe_as = wipe_as
        self.schema = schema  # the learner function each scenario's first run calls with the store; None: none
        self.timeout = timeout
        self.rng = random.Random(seed if seed is not None else int.from_bytes(os.urandom(8), "big"))
        # Read the price table once here, so forked children inherit it instead of reading it each.
        PriceBook().tickers
        self.crash_points = 0  # crash points tried so far in this grading run
        self._own_dir = workdir is None
        self.workdir = Path(workdir or tempfile.mkdtemp(prefix="lucy-check-", dir=scratch_parent()))
        self.workdir.mkdir(parents=True, exist_ok=True)
        self.workdir.chmod(0o711)  # scenario folders can be entered by name, never listed
        self._names = 0

    def scenario(self, name: str) -> Scenario:
        self._names += 1
        return Scenario(self, f"{self._names:03d}-{name}")

    @property
    def forks_observer(self) -> bool:
        """The observer may be a fork of this process: the learner's code runs only in its children.

        In a kernel it has run here too, and could have replaced anything the fork would inherit.
        """
        return not self.learner.runs_here

    def observe(self, scenarios: Sequence[Observed]) -> list[Snapshot]:
        """What one fresh process finds in each scenario's files."""
        return observe_many([s.target() for s in scenarios], fork=self.forks_observer)

    def token(self, length: int = 6) -> str:
        return "".join(self.rng.choice(string.ascii_lowercase + string.digits) for _ in range(length))

    def source_id(self) -> str:
        return f"src-{self.token()}"

    def session_id(self) -> str:
        return f"chat-{self.rng.randint(10_000, 99_999_999)}"

    def text(self) -> str:
        """A request that names a real ticker, with characters that break naive SQL and encodings."""
        ticker = self.rng.choice(["ACME", "GLOBEX", "HOOLI", "INITECH", "UMBRELLA"])
        extra = self.rng.choice(["it's 'quoted'", "x'); DROP TABLE work; --", "naïve café ☕", "🚀📈 now", "50% off_"])
        return f"brief {ticker} {self.rng.randint(2, 20)} days please {extra} #{self.token(4)}"

    def distinct(self, make: Callable[[], str], count: int = 3) -> list[str]:
        """``count`` different values from ``make``, in sort order."""
        values: set[str] = set()
        while len(values) < count:
            values.add(make())
        return sorted(values)

    def close(self) -> None:
        if self._own_dir:
            shutil.rmtree(self.workdir, ignore_errors=True)

    def __enter__(self) -> "Harness":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


__all__ = ["Behaviour", "Ctx", "Harness", "KernelLearner", "Scenario", "SourceLearner"]
