"""One exception tree: every public error is a LucyError, and bad values raise InvalidField everywhere."""

from __future__ import annotations

import datetime as dt
import inspect

import pytest

from lucy_runtime import errors
from lucy_runtime.clock import ClockProducer, Schedule
from lucy_runtime.educator.cases import Edit
from lucy_runtime.errors import EditDoesNotApply, InvalidField, LucyError
from lucy_runtime.fakes.model import ScriptedModel
from lucy_runtime.fakes.service import FakeService, FakeTransport
from lucy_runtime.loop import AgentLoop
from lucy_runtime.sessions import Sessions
from lucy_runtime.telegram import BotApi, TelegramIntake
from lucy_runtime.work import Admission, Outcome, Queue

PUBLIC = [value for name, value in vars(errors).items()
          if inspect.isclass(value) and issubclass(value, BaseException) and value.__module__ == errors.__name__]

START = dt.datetime(2026, 11, 30, 9, tzinfo=dt.timezone.utc)
HOUR = dt.timedelta(hours=1)


def admit(source_id: str, session_id: str, text: str) -> Admission:
    return Admission(Outcome.ACCEPTED, source_id)


@pytest.mark.parametrize("error", PUBLIC, ids=lambda e: e.__name__)
def test_every_public_error_is_a_lucy_error(error):
    assert issubclass(error, LucyError)


@pytest.mark.parametrize("error", PUBLIC, ids=lambda e: e.__name__)
def test_the_errors_docstring_lists_every_error(error):
    assert f" {error.__name__}:" in errors.__doc__


@pytest.mark.parametrize("module", ["course.course", "carry", "grading.sandbox", "telegram", "fakes.telegram", "checker",
                                    "checker.harness", "proof.mutation", "course.parallel", "course.scheduler",
                                    "books.book", "bench.bench", "grading.gradebook", "engine.confine",
                                    "practice.kill", "fakes.seats", "transport", "fakes.service", "delivery"])
def test_errors_raised_elsewhere_are_the_ones_in_the_tree(module):
    imported = __import__(f"lucy_runtime.{module}", fromlist=["_"])
    mine = [v for v in vars(imported).values() if inspect.isclass(v) and issubclass(v, Exception)
            and v.__module__ == imported.__name__]
    assert mine == [], f"lucy_runtime.{module} defines its own exceptions: {mine}"


def test_invalid_field_is_still_caught_as_type_error_or_value_error():
    for built_in in (TypeError, ValueError):
        with pytest.raises(built_in):
            raise InvalidField("count", "expected an int")


SITES = {
    "ScriptedModel(invocations)": ("invocations", lambda tmp, store: ScriptedModel("calls.log")),
    "AgentLoop(model)": ("model", lambda tmp, store: AgentLoop(object())),
    "Sessions.add_turn(role)": ("role", lambda tmp, store: Sessions(store).add_turn("chat-1", "narrator", "hi")),
    "Schedule(start)": ("start", lambda tmp, store: Schedule("s", "ACME", "owner", START.replace(tzinfo=None), HOUR)),
    "Schedule(every)": ("every", lambda tmp, store: Schedule("s", "ACME", "owner", START, dt.timedelta(0))),
    "ClockProducer(admit)": ("admit", lambda tmp, store: ClockProducer(store, "admit", [])),
    "ClockProducer(schedules)": ("schedules", lambda tmp, store: ClockProducer(
        store, admit, [Schedule("s", "ACME", "owner", START, HOUR)] * 2)),
    "ClockProducer.tick(now)": ("now", lambda tmp, store: ClockProducer(store, admit, []).tick(START.replace(tzinfo=None))),
    "FakeService(idempotent)": ("idempotent", lambda tmp, store: FakeService(tmp / "s.sqlite3", idempotent=1)),
    "FakeService(script)": ("script", lambda tmp, store: FakeService(tmp / "s.sqlite3", script=["fail"])),
    "FakeTransport(service)": ("service", lambda tmp, store: FakeTransport(object())),
    "Admission(outcome)": ("outcome", lambda tmp, store: Admission("accepted")),
    "Queue(store)": ("store", lambda tmp, store: Queue(str(tmp / "lucy.sqlite3"))),
    "TelegramIntake(admit)": ("admit", lambda tmp, store: TelegramIntake(
        BotApi("http://127.0.0.1:9", "t"), store, None, {})),
    "TelegramIntake(allowed_chats)": ("allowed_chats", lambda tmp, store: TelegramIntake(
        BotApi("http://127.0.0.1:9", "t"), store, admit, {True: "chat-1"})),
}


@pytest.mark.parametrize("site", SITES)
def test_a_bad_value_raises_invalid_field_naming_it(site, tmp_path, store):
    field, call = SITES[site]
    with pytest.raises(InvalidField) as caught:
        call(tmp_path, store)
    assert caught.value.field == field


def test_an_edit_whose_text_is_missing_does_not_apply():
    with pytest.raises(EditDoesNotApply, match="found it 0 times"):
        Edit("finish", "not there", "x").apply("def finish(): pass\n")


def test_an_edit_of_a_cell_without_a_solution_region_does_not_apply():
    with pytest.raises(EditDoesNotApply, match="no solution region"):
        Edit("finish", None, "x").apply("def finish(): pass\n")


PROTOCOL = {"SystemExit": "how a command ends with its exit code",
            "ArgumentTypeError": "what argparse asks of a type= function",
            "AttributeError": "what a __getattr__ raises for a name it does not have"}
"""Built-in exceptions a Python protocol requires by name; everything else comes from errors.py."""


def _factories(paths) -> dict[str, str]:
    """Function name -> the exception class its return annotation names, over ``paths``."""
    import ast

    return {f.name: f.returns.id for path in paths for f in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
            if isinstance(f, ast.FunctionDef) and isinstance(f.returns, ast.Name) and f.returns.id.endswith(
                ("Error", "Broken", "Fault", "Nothing"))}


def _raises(path, returns=None):
    """(line, what is raised, whether it is made there) for every ``raise`` of a module; a raised
    call to a function whose return annotation names an exception counts as that exception."""
    import ast

    returns = returns or {}
    tree = ast.parse(path.read_text(encoding="utf-8"))
    for node in ast.walk(tree):
        if isinstance(node, ast.Raise) and node.exc is not None:
            target = node.exc.func if isinstance(node.exc, ast.Call) else node.exc
            name = target.attr if isinstance(target, ast.Attribute) else getattr(target, "id", ast.dump(target))
            yield node.lineno, returns.get(name, name), isinstance(node.exc, ast.Call)


def test_every_raise_in_the_package_raises_from_the_tree_or_re_raises():
    """A new exception comes from errors.py; a raise that is no call hands on what was caught."""
    from pathlib import Path

    package = Path(errors.__file__).parent
    tree = {e.__name__ for e in PUBLIC}
    wrong, modules = [], sorted(package.rglob("*.py"))
    factories = _factories(modules)
    for path in modules:
        for line, name, made_here in _raises(path, factories):
            if made_here and name not in tree | set(PROTOCOL):
                wrong.append(f"{path.relative_to(package)}:{line}: raise {name}(...)")
            elif not made_here and name[:1].isupper() and name not in tree:
                wrong.append(f"{path.relative_to(package)}:{line}: raise {name}")
    assert wrong == []


def test_the_raise_check_finds_a_built_in_raised_on_purpose(tmp_path):
    module = tmp_path / "m.py"
    module.write_text("def f(x):\n    if x:\n        raise KeyError(x)\n    try:\n        g()\n"
                      "    except OSError as error:\n        raise error\n")
    assert [(line, name) for line, name, made in _raises(module) if made] == [(3, "KeyError")]


def test_a_name_nobody_defined_is_also_a_key_error_and_says_so_without_quotes():
    from lucy_runtime.checker import select_rows

    with pytest.raises(KeyError) as caught:
        select_rows("no-such-topic")
    assert isinstance(caught.value, errors.UnknownName) and str(caught.value).startswith("no rows for 'no-such-topic'")
