"""Long nbgrader runs are read as they go, a run that hangs in silence is still stopped, and
nbgrader does no needless work: no IRI grammar at start, each metadata schema checked once."""

from __future__ import annotations

import sys
import time

import pytest

from lucy_runtime.educator.course import stream_lines


def test_a_silent_hang_is_stopped_at_the_timeout(tmp_path):
    started = time.monotonic()
    done = stream_lines([sys.executable, "-c", "import time; time.sleep(60)"], cwd=tmp_path, timeout=1.0,
                        on_line=lambda line: None)
    assert done.timed_out and done.returncode != 0
    assert time.monotonic() - started < 30


def test_every_line_is_handed_on_as_it_comes_and_a_quick_run_is_not_a_timeout(tmp_path):
    seen = []
    done = stream_lines([sys.executable, "-c", "print('a'); print('b')"], cwd=tmp_path, timeout=30,
                        on_line=seen.append)
    assert seen == ["a\n", "b\n"] and done.output == "a\nb\n"
    assert not done.timed_out and done.returncode == 0


def test_in_its_own_group_a_hang_is_stopped_with_everything_it_started(tmp_path):
    import os

    script = ("import subprocess, sys, time\n"
              "child = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(300)'],\n"
              "                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)\n"
              "print(child.pid, flush=True)\n"
              "time.sleep(60)\n")
    done = stream_lines([sys.executable, "-c", script], cwd=tmp_path, timeout=3.0, on_line=lambda line: None,
                        own_group=True)
    assert done.timed_out
    grandchild = int(done.output.split()[0])
    time.sleep(0.5)
    try:
        os.kill(grandchild, 0)
        alive = not open(f"/proc/{grandchild}/stat").read().split(") ")[1].startswith("Z")
    except ProcessLookupError:
        alive = False
    if alive:
        os.kill(grandchild, 9)
    assert not alive, "a process the hung command started outlived the watchdog"


def _string_formats(schema) -> set[str]:
    """Every ``format`` a JSON schema asks of a string (a property named "format" is not one)."""
    found = set()
    if isinstance(schema, dict):
        if isinstance(schema.get("format"), str):
            found.add(schema["format"])
        for key, value in schema.items():
            if key == "properties" and isinstance(value, dict):
                found |= {f for sub in value.values() for f in _string_formats(sub)}
            elif key != "format":
                found |= _string_formats(value)
    elif isinstance(schema, list):
        found |= {f for sub in schema for f in _string_formats(sub)}
    return found


def test_grading_starts_nbgrader_without_the_iri_grammar_and_it_still_validates_notebooks(tmp_path):
    import subprocess

    from lucy_runtime.educator.course import NBGRADER

    probe = ("import sys\n"
             "from lucy_runtime.grading.nbgrader_main import main\n"
             "try:\n    main(['autograde', 'nothing'])\nexcept SystemExit as stop:\n    code = stop.code\n"
             "import jsonschema, nbformat\n"
             "nbformat.validate(nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell('1')]))\n"
             "print(code, sys.modules.get('rfc3987_syntax') is None, 'iri' in jsonschema.FormatChecker.checkers)\n")
    done = subprocess.run([sys.executable, "-c", probe], cwd=tmp_path, capture_output=True, text=True, timeout=120)
    # nbgrader ran (and refused a course with no submissions), never loaded the grammar, and validated a notebook.
    assert done.stdout.split() == ["1", "True", "False"], done.stdout + done.stderr
    assert NBGRADER[1:] == ("-m", "lucy_runtime.grading.nbgrader_main")


def test_no_notebook_schema_asks_for_the_format_grading_leaves_out():
    import json
    from pathlib import Path

    import nbformat

    schemas = sorted(Path(nbformat.__file__).parent.glob("v*/nbformat.v*.schema.json"))
    assert schemas
    formats = {f for path in schemas for f in _string_formats(json.loads(path.read_text(encoding="utf-8")))}
    assert not {"iri", "iri-reference"} & formats, formats


def test_every_interpreter_of_the_course_virtualenv_starts_without_the_iri_grammar(tmp_path):
    """``make`` writes a startup file into .venv, so the README's plain ``nbgrader`` and
    ``jupyter lab`` skip the grammar too; the line it writes works in a fresh interpreter."""
    import subprocess
    import sysconfig
    from pathlib import Path

    from lucy_runtime.grading.nbgrader_main import STARTUP_FILE, startup_line, write_startup_file

    installed = Path(sysconfig.get_paths()["purelib"]) / STARTUP_FILE
    assert installed.exists() and installed.read_text() == startup_line(), "make writes it: run `make test`"
    probe = "import sys, jsonschema\nprint(sys.modules.get('rfc3987_syntax') is None, 'iri' in jsonschema.FormatChecker.checkers)"
    venv = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=120)
    assert venv.stdout.split() == ["True", "False"], venv.stdout + venv.stderr

    written = write_startup_file(tmp_path)
    # -S: no site-packages, so only the file written here can block the import.
    fresh = subprocess.run([sys.executable, "-S", "-c", f"import site; site.addsitedir({str(tmp_path)!r})\n" + probe],
                           capture_output=True, text=True, timeout=120, env={"PYTHONPATH": str(Path(jsonschema_home()))})
    assert written.name == STARTUP_FILE and fresh.stdout.split() == ["True", "False"], fresh.stdout + fresh.stderr


def jsonschema_home() -> str:
    """The folder jsonschema and its dependencies are installed in."""
    import jsonschema
    from pathlib import Path

    return str(Path(jsonschema.__file__).parent.parent)


def test_nbgrader_checks_the_metadata_schema_once_and_refuses_what_it_refused_before(monkeypatch):
    import jsonschema
    from nbformat.v4 import new_code_cell
    from nbgrader.nbgraderformat import MetadataValidator, ValidationError, common

    from lucy_runtime.grading.patches import SchemaCheckedOnce

    good = new_code_cell("1", metadata={"nbgrader": {"grade": True, "grade_id": "row_a", "locked": True, "points": 1,
                                                     "schema_version": 3, "solution": False, "task": False}})
    bad = new_code_cell("1", metadata={"nbgrader": {**good.metadata["nbgrader"], "points": "three"}})
    validator = MetadataValidator()
    kind = jsonschema.validators.validator_for(validator.schema)
    checked: list[int] = []
    original = kind.check_schema
    monkeypatch.setattr(kind, "check_schema", classmethod(lambda cls, schema, **kw: checked.append(1) or original(schema, **kw)))

    def refusal(module) -> str:
        monkeypatch.setattr(common, "jsonschema", module)
        for _ in range(60):
            validator.validate_cell(good)
        with pytest.raises(ValidationError) as refused:
            validator.validate_cell(bad)
        return str(refused.value)

    plain = refusal(jsonschema)
    assert len(checked) == 61
    checked.clear()
    assert refusal(SchemaCheckedOnce(jsonschema)) == plain and "'three' is not of type 'number'" in plain
    assert len(checked) == 1


def test_the_course_config_gives_nbgrader_the_schema_checked_once():
    import subprocess

    from lucy_runtime.educator.course import REPO

    probe = ("from traitlets.config.loader import PyFileConfigLoader\n"
             f"PyFileConfigLoader('nbgrader_config.py', path={str(REPO)!r}).load_config()\n"
             "from nbgrader.nbgraderformat import common\n"
             "print(type(common.jsonschema).__name__)\n")
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=120)
    assert done.stdout.split() == ["SchemaCheckedOnce"], done.stdout + done.stderr
