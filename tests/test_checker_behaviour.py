"""How the checker treats broken, stuck and evasive learner code."""

from __future__ import annotations

import sys
import time

import nbformat
import pytest

from lucy_runtime.checker import GradeFailure, SourceLearner, check, grade, run_rows, select_rows
from lucy_runtime.checker.harness import LEARNER_MODULE
from lucy_runtime.checker.rows import ROWS
from lucy_runtime.notebooks.cells import definitions, grade_id, is_definitions, used_names
from lucy_runtime.notebooks.notebook import learner_implementation, read
from lucy_runtime.checker.stub import STUB_MESSAGE, is_release_stub
from lucy_runtime.educator.cases import Case, Edit, by_name

from .conftest import REPO, learner_with


def edited(cells, grade_id: str, new_body: str):
    return [(n, Edit(grade_id, None, new_body).apply(s) if n.endswith(":" + grade_id) else s) for n, s in cells]


def run_one(cells, row_id: str, timeout: float = 5.0):
    return run_rows(SourceLearner(cells), [ROWS[row_id]], seed=3, timeout=timeout).results[0]


def test_a_learner_function_that_never_returns_is_stopped_with_a_message(reference_cells):
    cells = edited(reference_cells, "admit", "while True:\n    pass")
    started = time.monotonic()
    result = run_one(cells, "duplicate-identical", timeout=1.0)
    assert time.monotonic() - started < 10
    assert not result.passed
    assert "did not finish in time" in result.observation
    assert "loop that never ends" in result.hint


def test_an_exception_in_learner_code_names_its_type_and_the_learners_line(reference_cells):
    cells = edited(reference_cells, "admit", "row = {}\nreturn row['work_id']")
    result = run_one(cells, "duplicate-identical")
    assert not result.passed
    assert "KeyError: 'work_id'" in result.observation
    assert "return row['work_id']" in result.observation
    assert "Traceback" not in result.observation and "lucy_runtime" not in result.observation


def test_learner_cells_run_as_in_a_kernel_with_only_their_own_future_imports():
    plain = "from dataclasses import dataclass\n\n\n@dataclass\nclass Plain:\n    n: int\n"
    postponed = "from __future__ import annotations\n\n" + plain.replace("Plain", "Later")
    try:
        after = "def ahead() -> NotYetDefined:\n    return None\n"
        ns = SourceLearner([("ch07_unit_a:plain", plain), ("ch07_unit_a:later", postponed),
                            ("ch07_unit_a:after", after)]).namespace()
        # The runtime's own postponed annotations do not leak into a cell; a cell's own still work,
        # because its dataclass finds the module it runs in, and later cells keep them, as in IPython.
        assert ns["Plain"].__annotations__ == {"n": int}
        assert ns["Later"].__annotations__ == {"n": "int"} and ns["Later"](1).n == 1
        assert ns["ahead"].__annotations__ == {"return": "NotYetDefined"}
    finally:
        sys.modules.pop(LEARNER_MODULE, None)


def test_a_helper_and_an_import_in_a_cell_the_learner_added_are_there_when_graded(tmp_path):
    nb = read(REPO / "source" / "ch07_unit_a" / "ch07_unit_a.ipynb")
    at = next(i for i, cell in enumerate(nb.cells) if grade_id(cell) == "admit")
    nb.cells.insert(at, nbformat.v4.new_code_cell(
        "import uuid\n"
        "scratch = Store(workspace / 'scratch.sqlite3')  # an experiment: not run when graded\n"
        "PLACE = workspace / 'elsewhere'  # a name only the experiments make: passed over\n\n\n"
        "def new_source(source_id):\n    return source_id + uuid.uuid4().hex[:0]  # the import is used, the id unchanged"))
    nb.cells[at + 1].source = nb.cells[at + 1].source.replace(
        '(source_id,)\n        ).fetchone()', '(new_source(source_id),)\n        ).fetchone()').replace(
        '"INSERT INTO work (source_id, session_id, text) VALUES (?, ?, ?)", (source_id,',
        '"INSERT INTO work (source_id, session_id, text) VALUES (?, ?, ?)", (new_source(source_id),')
    assert nb.cells[at + 1].source.count("new_source(") == 2
    nbformat.write(nb, str(tmp_path / "ch07_unit_a.ipynb"))
    cells = learner_implementation(tmp_path)
    try:
        ns = SourceLearner(cells).namespace()
        assert "new_source" in ns and "scratch" not in ns
    finally:
        sys.modules.pop(LEARNER_MODULE, None)
    report = run_rows(SourceLearner(cells), [ROWS["duplicate-identical"], ROWS["duplicate-conflict"]], seed=3)
    assert [r.observation for r in report.results if not r.passed] == []


def test_from_cells_without_metadata_only_the_definitions_the_learner_code_needs_are_taken():
    scratch = ("import uuid\nimport pandas as pd\nframe = pd.DataFrame()\nPREFIX = 'w-'\n\n\n"
               "def new_id():\n    return PREFIX + uuid.uuid4().hex\n\n\ndef unused():\n    return pd\n")
    [kept, nothing] = definitions([scratch, "x = 1\n"], used_names("def admit():\n    return new_id()\n"))
    assert [line for line in kept.splitlines() if line] == [
        "import uuid", "PREFIX = 'w-'", "def new_id():", "    return PREFIX + uuid.uuid4().hex"]
    assert kept.splitlines().index("def new_id():") == scratch.splitlines().index("def new_id():")
    assert nothing == ""
    # The chapter's own experiment cells define nothing the reference's functions use.
    assert not any(is_definitions(name) for name, _ in learner_implementation(REPO / "source"))


def test_a_syntax_error_is_reported_as_such(reference_cells):
    cells = [(n, s + "\ndef broken(:\n") if n.endswith(":claim") else (n, s) for n, s in reference_cells]
    result = run_one(cells, "claim-one")
    assert not result.passed and "SyntaxError" in result.observation
    assert "<cell ch07_unit_a:claim>" in result.observation and "def broken(:" in result.observation
    assert "exec(" not in result.observation


def test_the_blank_release_stub_is_reported_as_not_written_yet(reference_cells):
    cells = edited(reference_cells, "schema", f"raise NotImplementedError({STUB_MESSAGE!r})")
    result = run_one(cells, "schema-columns")
    assert "not written yet" in result.observation
    assert "NotImplementedError" in result.hint


def test_a_missing_function_asks_for_the_cells_above_to_be_run(reference_cells):
    cells = [(n, s) for n, s in reference_cells if not n.endswith(":work_once")]
    result = run_one(cells, "empty-poll")
    assert "no function named 'work_once'" in result.observation
    assert "Run All Above" in result.hint


def test_learner_code_that_bypasses_the_injected_store_is_reported_with_a_hint(reference_cells):
    result = run_one(learner_with(reference_cells, by_name("schema-bypasses-store")).cells, "schema-columns")
    assert not result.passed
    assert "no work table" in result.observation
    assert "queue.store" in result.hint


def test_a_return_value_of_the_wrong_type_is_named(reference_cells):
    cells = edited(reference_cells, "admit", "return 'accepted'")
    result = run_one(cells, "duplicate-identical")
    assert "it should return an Admission" in result.observation


def test_a_generation_in_a_text_column_is_read_as_its_number_and_a_name_is_not(reference_cells):
    text_columns = (Edit("schema", "    generation INTEGER NOT NULL DEFAULT 1,\n", "    generation TEXT NOT NULL DEFAULT '1',\n"),
                    Edit("schema", "    generation INTEGER NOT NULL,\n", "    generation TEXT NOT NULL,\n"))
    rows = [ROWS["report-identity"], ROWS["second-generation"]]
    stored_as_text = Case("generation-text", "ch07_unit_a", text_columns, "", (), "")
    assert [r.passed for r in run_rows(learner_with(reference_cells, stored_as_text), rows, seed=5).results] == [True, True]
    named = Edit("finish", "(report.report_id, report.work_id, report.generation,",
                 "(report.report_id, report.work_id, f\"g{report.generation}\",")
    stored_as_name = Case("generation-named", "ch07_unit_a", text_columns + (named,), "", (), "")
    result = run_rows(learner_with(reference_cells, stored_as_name), rows[:1], seed=5).results[0]
    assert not result.passed and "not a whole number" in result.observation


def test_tampering_inside_learner_cells_does_not_change_the_verdict(reference_cells):
    case = by_name("tamper-with-checker")
    report = run_rows(learner_with(reference_cells, case), [ROWS[r] for r in case.expected], seed=5)
    assert [r.passed for r in report.results] == [False] * len(case.expected)


def kernel_namespace(cells) -> dict:
    """What a notebook kernel holds after running the cells."""
    return SourceLearner(cells).namespace()


def test_check_reads_the_calling_notebooks_functions(reference_cells):
    ns = kernel_namespace(reference_cells)
    report = check("admission", namespace=ns)
    assert report.passed, report
    assert "rows hold" in repr(report) and "<table>" in report._repr_html_()


def test_check_finds_functions_in_the_callers_globals(reference_cells):
    ns = kernel_namespace(reference_cells)
    ns["check"] = check
    exec("report = check('schema')", ns)
    assert ns["report"].passed


def test_grade_raises_a_short_failure_and_returns_nothing_on_success(reference_cells, capsys):
    good = kernel_namespace(reference_cells)
    assert grade("empty-poll", namespace=good) is None
    assert "✔ empty-poll" in capsys.readouterr().out
    bad = kernel_namespace(learner_with(reference_cells, by_name("model-called-when-idle")).cells)
    with pytest.raises(GradeFailure) as caught:
        grade("empty-poll", namespace=bad)
    lines = caught.value._render_traceback_()
    assert lines[0] == "Row empty-poll does not hold." and any("Hint:" in line for line in lines)


def test_grade_refuses_an_unknown_row():
    with pytest.raises(KeyError):
        grade("no-such-row", namespace={})


def test_a_whole_unit_is_checked_within_the_speed_budget_on_a_quiet_machine(reference_cells):
    # Not a timing assertion (machines are noisy): the budget lives in `make bench`.
    report = run_rows(SourceLearner(reference_cells), select_rows("A"), seed=2)
    assert report.passed and all(r.seconds >= 0 for r in report.results)


def test_ready_fails_on_the_release_stub_and_on_a_missing_function_and_passes_once_written(reference_cells):
    from lucy_runtime.checker import NotWrittenYet, ready

    written = kernel_namespace(reference_cells)
    ready("admit", "finish", namespace=written)
    stub = kernel_namespace(edited(reference_cells, "admit", f"raise NotImplementedError({STUB_MESSAGE!r})"))
    with pytest.raises(NotWrittenYet, match="not written yet: admit"):
        ready("admit", "finish", namespace=stub)
    with pytest.raises(NotWrittenYet, match="not defined: deliver_everything"):
        ready("admit", "deliver_everything", namespace=written)


DELIBERATE = 'raise NotImplementedError("taking over running work needs chapter 12")'


def test_ready_names_only_the_release_stub_not_written(reference_cells):
    from lucy_runtime.checker import NotWrittenYet, ready

    deliberate = kernel_namespace(edited(reference_cells, "requeue", "if work_id is None:\n    " + DELIBERATE
                                         + "\nreturn None"))
    ready("requeue", namespace=deliberate)
    only_deliberate = kernel_namespace(edited(reference_cells, "requeue", DELIBERATE))
    ready("requeue", namespace=only_deliberate)  # written, if unhelpfully: its rows say why
    stub = kernel_namespace(edited(reference_cells, "requeue", f"# YOUR CODE HERE\nraise NotImplementedError({STUB_MESSAGE!r})"))
    with pytest.raises(NotWrittenYet, match="not written yet: requeue"):
        ready("requeue", namespace=stub)


def test_a_deliberate_not_implemented_error_is_the_learners_error_not_an_unwritten_cell(reference_cells):
    result = run_one(edited(reference_cells, "admit", DELIBERATE), "duplicate-identical")
    assert "not written yet" not in result.observation
    assert "your code raised NotImplementedError: taking over running work needs chapter 12" in result.observation


def test_every_function_of_the_blank_release_is_the_release_stub_nbgrader_writes():
    assert f'raise NotImplementedError(\\"{STUB_MESSAGE}\\")' in (REPO / "nbgrader_config.py").read_text()
    owned = [(name, text) for name, text in learner_implementation(REPO / "release") if not is_definitions(name)]
    namespace = SourceLearner(owned).namespace()
    learner_functions = [v for v in namespace.values() if callable(v) and getattr(v, "__module__", "") == "learner"]
    assert len(learner_functions) >= 10 and all(is_release_stub(f) for f in learner_functions)
    assert not any(is_release_stub(f) for f in kernel_namespace(learner_implementation(REPO / "source")).values())


def test_scenario_files_live_in_ram_when_the_machine_has_a_ram_folder(reference_cells, tmp_path, monkeypatch):
    import tempfile
    from pathlib import Path

    from lucy_runtime.checker import harness

    monkeypatch.setattr(harness, "RAM_FOLDER", tmp_path)
    with harness.Harness(SourceLearner(reference_cells)) as in_ram:
        assert in_ram.workdir.parent == tmp_path
    monkeypatch.setattr(harness, "RAM_FOLDER", tmp_path / "absent")
    with harness.Harness(SourceLearner(reference_cells)) as on_disk:
        assert on_disk.workdir.parent == Path(tempfile.gettempdir())
    assert not in_ram.workdir.exists() and not on_disk.workdir.exists()
