"""Every exception the runtime, the checker and the educator tools raise on purpose.

Expected outcomes (a duplicate, a refusal, an uncertain send) are values, never
exceptions. Exceptions are for misuse, for a broken contract and for tools that fail.
Each one is a ``LucyError``; where Python already has a fitting built-in, it is that
too, so ``except ValueError`` or ``except AssertionError`` keeps working.

The tree:

* LucyError: the root; catch it to catch every error below
  + InvalidField: a value given to the runtime has the wrong type, size or form
    (also ``ValueError`` and ``TypeError``)
  + UnknownName: a session, ticker, row, topic or cell nobody defined (also ``KeyError``)
  + NotebooksNotFound: a folder holds none of the chapter's notebooks (also ``FileNotFoundError``)
  + StoreMisuse: the store used in a way that would lose or corrupt committed state
  + TransportMisuse: the sender boundary given something it cannot send
  + FenceError: ``finish`` given a claim that is not the work's current claim
  + WrongState: a move asked of work that is not in the state the move leaves (also ``LookupError``)
  + ModelUnavailable: the model could not answer now (a 429, a timeout, an outage); a later try may work
  + TelegramError: the Bot API answered ``ok: false``
  + UnitANotFound: Unit B cannot find the learner's Unit A (also ``FileNotFoundError``)
  + ExperimentFailed: a notebook experiment's process failed (also ``RuntimeError``)
  + NotInAnExperiment: the practice notebook's ``stop_here()`` called outside a supervised process
  + BrokerRejected: the practice broker refuses a message it can never take (a poison payload)
  + TablesNotFound: a store file holds no table with the work or report columns (also ``LookupError``)
  + RetentionTooShort: a retention window shorter than Telegram keeps an update (also ``ValueError``)
  + CheckerError: the checker could not get or accept an answer from learner code
    - MissingFunction: a row needs a function nobody defined (also ``NameError``)
    - ContractBroken: a learner function returned what its contract does not name
      (also ``TypeError``)
      . ReturnedNothing: it returned None
    - Fail: a row does not hold; the checker turns it into the row's failing verdict
    - Disagreement: the model-based row's store and model disagree (also ``AssertionError``)
    - InjectedFault: a database error the checker raised on purpose (also ``sqlite3.OperationalError``)
    - ForkServerGone: the process that forks a row's runs is gone (also ``ChildProcessError``)
    - CheckerFault: the checker's own contract broke, never the learner's fault (also ``AssertionError``)
    - SetupRefused: the learner's schema refused a move the checker made to plant a scenario, along an arrow the
      chapter's diagrams draw
    - AnswerUnreadable: a message the checker does not send or expect (also ``ValueError``)
    - ObserverFailed: the process that reads the files a row left failed
      (also ``RuntimeError``)
    - CheckerProcessGone: the checker process that runs rows apart ended before it answered
      (also ``RuntimeError``)
    - GradeFailure: a row does not hold, raised in a hidden test cell
      (also ``AssertionError``)
    - NotWrittenYet: a test cell's functions are missing or still the release stub
      (also ``AssertionError``)
  + GradingError: the grading machinery failed, not the learner (also ``RuntimeError``)
    - NbgraderFailed: an nbgrader command failed or never ended
    - SandboxUnavailable: the grading sandbox could not be built or did not answer
    - ExchangeSetupFailed: the course's exchange cannot be made as asked (no course folder in it,
      not a login name, no such account)
  + NamespaceFailed: a run of a row could not get the namespaces or mounts it starts from
    (also ``OSError``, with the C library's errno)
  + EducatorError: an educator tool could not do its job
    - EditDoesNotApply: a case's edit does not fit the cell it names (also ``ValueError``)
    - BaselineFails: the unmutated reference already fails a row (also ``RuntimeError``)
    - MutationToolFailed: cosmic-ray failed or is missing (also ``RuntimeError``)
    - UnknownCase: a case, alternative or tamper case named that the course does not have
      (also ``KeyError``)
    - BookBuildFailed: jupyter-book did not produce the book's site
    - NothingToGrade: ``lucy autograde`` found no such assignment or no submission of it, or
      ``lucy report`` no graded submission to report on
    - SchedulerUnreachable: ``lucy autograde --scheduler`` could not reach the Dask scheduler,
      or the scheduler and this client did not accept each other's TLS certificates
    - GradebookUnreadable: the course's nbgrader configuration names no gradebook to read
    - GradebookUnreachable: a server gradebook did not take the connection (and says why)
    - BenchFailed: the reference did not do the work ``make bench`` timed
    - GeneratedTextMissing: a page has no markers where a generated table belongs
    - HubError: the class's hub cannot be set up or started (a port taken, the proxy missing,
      a learner not in the course)

Two checker signals stay outside the tree on purpose: ``checker.kit.Fail`` and
``checker.model_based.Disagreement`` end a row's own run and never leave the checker.
"""

from __future__ import annotations

import sqlite3

from pathlib import Path
from typing import Any


class LucyError(Exception):
    """Base class for every error the runtime raises on purpose."""


class InvalidField(LucyError, ValueError, TypeError):
    """A value given to the runtime has the wrong type, size or form.

    ``field`` names the argument so the message can point at it.
    """

    def __init__(self, field: str, problem: str):
        self.field = field
        self.problem = problem
        super().__init__(f"{field}: {problem}")


class UnknownName(LucyError, KeyError):
    """A name the runtime does not know: a session, a ticker, a row, a topic, a learner cell.

    Also ``KeyError``, printed without the quotes ``KeyError`` adds."""

    def __str__(self) -> str:
        return str(self.args[0]) if self.args else ""


class NotebooksNotFound(LucyError, FileNotFoundError):
    """A folder holds none of the chapter's unit notebooks."""


class StoreMisuse(LucyError):
    """The store was used in a way that would lose or corrupt committed state."""


class RetentionTooShort(LucyError, ValueError):
    """A retention window shorter than the time Telegram may deliver an update again.

    Deleting a request forgets its ``source_id``; an update delivered again after that is
    admitted as new, and the customer gets a second answer."""


class TransportMisuse(LucyError):
    """The sender boundary was given something it cannot send."""


class FenceError(LucyError):
    """``finish`` was given a claim that is not the work's current claim.

    The fence: only the worker that holds the claim, at the generation it claimed,
    may finish the work. A stale worker (the work was requeued and claimed again) and
    a worker that never claimed the work are both stopped here, with nothing changed.
    Chapter 12 extends the fence with leases, so an expired owner is stopped too.
    """


class WrongState(LucyError, LookupError):
    """A move was asked of work that is not in the state the move leaves.

    ``release`` moves running work back to pending, and refuses work that is not running:
    pending work needs no way out, and done or failed work has already ended.
    """


class ModelUnavailable(LucyError):
    """The model could not answer now: a provider's 429, a timeout, an outage.

    Transient by nature: a later try may work, so ``retryable`` is always True, and
    ``retry_after`` is the wait in seconds the provider asked for, when it named one. A
    worker records the failed attempt on the work and tries again later, or gives up.
    """

    retryable = True

    def __init__(self, reason: str = "the model is unavailable", retry_after: float | None = None):
        self.reason = reason
        self.retry_after = retry_after
        super().__init__(reason)


class TelegramError(LucyError):
    """The Bot API answered ``ok: false``; ``retry_after`` is ``parameters.retry_after`` when it gave one."""

    def __init__(self, method: str, code: int, description: str, retry_after: float | None = None):
        self.method, self.code, self.description = method, code, description
        self.retry_after = retry_after
        super().__init__(f"{method}: {code} {description}")


class UnitANotFound(LucyError, FileNotFoundError):
    """Unit B builds on the learner's Unit A notebook, and none was found where it may be."""

    def __init__(self, looked: list[Path]):
        self.looked = looked
        super().__init__("Unit B builds on your Unit A notebook, and it was not found. Looked for:\n"
                         + "\n".join(f"  {p}" for p in looked))

    def _render_traceback_(self) -> list[str]:
        return [str(self), "Put your ch07_unit_a folder next to this ch07_unit_b folder, then run this cell again."]


class ExperimentFailed(LucyError, RuntimeError):
    """A process a notebook experiment started failed before it could show its result."""


class NotInAnExperiment(LucyError):
    """stop_here() was called outside a supervised process."""


class BrokerRejected(LucyError):
    """The practice broker refuses a message it will never take: a poison payload, every time it is published."""


class TablesNotFound(LucyError, LookupError):
    """A store file holds no table with the columns of the work or report table."""


class CheckerError(LucyError):
    """The checker could not get, or could not accept, an answer from learner code."""


class MissingFunction(CheckerError, NameError):
    """A row calls a learner function that is not defined."""


class ContractBroken(CheckerError, TypeError):
    """Raised by the harness, never by the learner: a learner function returned a value the contract does not name."""


class ReturnedNothing(ContractBroken):
    """Raised by the harness: a learner function returned None where the contract names a value.

    Most often an ``except`` that returns instead of re-raising.
    """


class ObserverFailed(CheckerError, RuntimeError):
    """The separate process that reads a scenario's files failed."""


class CheckerProcessGone(CheckerError, RuntimeError):
    """The checker process (grading/process.py) ended before it answered."""


class CheckerFault(CheckerError, AssertionError):
    """The checker's own contract broke (a child answered without what it always sends, a row
    registered twice, a scenario's setup did not hold): never the learner's fault, never a pass."""


class SetupRefused(CheckerError):
    """The checker moved a row of the learner's along an arrow the chapter's diagrams draw, to plant a scenario
    (an operator's reconcile, a bug that held work), and the learner's schema or triggers refused it.

    Not a mistake in the learner's SQL: the row could not start. ``what`` names the row moved, ``move`` the
    transition ("unknown -> needs_person"), ``reason`` the arrow's label and ``refusal`` what SQLite said.
    """

    def __init__(self, what: str, move: str, reason: str, refusal: str):
        self.what, self.move, self.reason, self.refusal = what, move, reason, refusal
        super().__init__(f"the checker could not set up its scenario: your schema refused its move of {what} "
                         f"{move} ({reason}): {refusal}")


class AnswerUnreadable(CheckerError, ValueError):
    """A child's or a checker process's message is not one the checker sends or expects."""


class Fail(LucyError):
    """A row does not hold: ``observation`` says what was seen, ``hint`` what to look at.

    Raised inside a row and turned into its failing verdict; never seen outside the checker."""

    def __init__(self, observation: str, hint: str | None = None):
        super().__init__(observation)
        self.observation = observation
        self.hint = hint


class Disagreement(CheckerError, AssertionError):
    """The model-based row's store and its model of the queue disagree after a step."""


class InjectedFault(CheckerError, sqlite3.OperationalError):
    """A database error the checker raised on purpose (the disk said no): to learner code, an
    ``sqlite3.OperationalError`` like any other."""


class ForkServerGone(CheckerError, ChildProcessError):
    """The process that forks a row's runs is gone (learner code outside the sandbox can kill it)."""


class GradeFailure(CheckerError, AssertionError):
    """Raised in a hidden test cell when a row does not hold. Shown without a traceback wall."""

    def __init__(self, result: Any):  # a checker.results.RowResult
        self.result = result
        super().__init__(f"{result.row_id}: {result.observation}")

    def _render_traceback_(self) -> list[str]:  # IPython shows these lines instead of a traceback
        return [f"Row {self.result.row_id} does not hold.", f"  Observed: {self.result.observation}",
                f"  Hint: {self.result.hint}"]


class NotWrittenYet(CheckerError, AssertionError):
    """A test cell's visible part: the functions it grades are missing or still the release stub."""

    def _render_traceback_(self) -> list[str]:
        return [str(self), "Fill in those cells, run them, then run this cell again."]


class GradingError(LucyError, RuntimeError):
    """The grading machinery failed, not the learner's code."""


class NbgraderFailed(GradingError):
    def __init__(self, args: list[str], output: str):
        super().__init__(f"nbgrader {' '.join(args)} failed:\n{output[-3000:]}")


class SandboxUnavailable(GradingError):
    """The sandbox was needed and could not be built or did not answer."""


class NamespaceFailed(LucyError, OSError):
    """unshare or mount failed for a run of a row (``errno`` is the C library's): the run cannot start from
    nothing, so no learner code runs in it."""


class ExchangeSetupFailed(GradingError):
    """``lucy exchange`` cannot make the course's exchange as asked; the message says what to do."""


class EducatorError(LucyError):
    """An educator tool (cases, verify-grader, mutation score) could not do its job."""


class EditDoesNotApply(EducatorError, ValueError):
    """A case's edit does not fit the cell it names: the text is missing, repeated, or there is no region."""


class BaselineFails(EducatorError, RuntimeError):
    """The unmutated reference already fails a row, so no mutant could tell anything."""


class MutationToolFailed(EducatorError, RuntimeError):
    def __init__(self, command: list[str], output: str):
        super().__init__(f"{' '.join(command)} failed:\n{output[-3000:]}")


class UnknownCase(EducatorError, KeyError):
    """A case, alternative or tamper case was named that the course does not have.

    Also ``KeyError``, printed without the quotes ``KeyError`` adds."""

    def __str__(self) -> str:
        return str(self.args[0]) if self.args else ""


class BookBuildFailed(EducatorError):
    """jupyter-book did not produce the site (its output is in the message)."""


class NothingToGrade(EducatorError):
    """The course has no such assignment in its gradebook, or no (graded) submission of it."""


class SchedulerUnreachable(EducatorError):
    """``lucy autograde --scheduler`` got no Dask scheduler to grade with: nothing answered at the
    address, or the TLS settings are missing, unreadable or not the scheduler's (no job has started)."""


class GradebookUnreadable(EducatorError):
    """The course's nbgrader configuration names no gradebook that can be read."""


class GradebookUnreachable(EducatorError):
    """A server gradebook did not take the connection: no server, no role, no password, no database."""


class BenchFailed(EducatorError):
    """The reference did not do the work being timed, so its time means nothing."""


class GeneratedTextMissing(EducatorError):
    """A page that should hold a generated table has no pair of markers to put it between."""


class HubError(EducatorError):
    """The class's JupyterHub cannot be set up or started, or was asked about someone not in the course."""
