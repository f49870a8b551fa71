"""Long nbgrader runs are read as they go, a run that hangs in silence is still stopped, and
nbgrader does no needless work (no IRI grammar at start) without changing anything for the whole process."""

from __future__ import annotations

import sys
import time

import pytest

from lucy_runtime.course.course import stream_lines


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

    from lucy_runtime.course.course import NBGRADER

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


def test_nothing_of_the_course_is_written_into_the_virtualenv_s_site_packages():
    """A plain `nbgrader` starts as it would anywhere: no startup file of ours blocks an import in
    every interpreter of .venv (the known-bad: the `lucy_leave_out_unused_imports.pth` make wrote)."""
    import sysconfig
    from pathlib import Path

    site = Path(sysconfig.get_paths()["purelib"])
    ours = [p.name for p in site.glob("*.pth") if "lucy" in p.name and not p.name.startswith("__editable__")]
    assert ours == [], f"{ours} in {site}: `make bytecode` removes the old startup file"


def test_the_course_config_leaves_nbgrader_s_jsonschema_and_the_standard_library_as_they_are():
    """Loading nbgrader_config.py (as every nbgrader command does) replaces no module of nbgrader's and
    no function of the standard library (the known-bad: a jsonschema wrapper put into nbgrader's
    metadata check, docs/performance.md says why it went)."""
    import subprocess

    from lucy_runtime.course.course import REPO

    probe = ("import tempfile\nfrom traitlets.config.loader import PyFileConfigLoader\n"
             f"PyFileConfigLoader('nbgrader_config.py', path={str(REPO)!r}).load_config()\n"
             "import jsonschema\nfrom nbgrader.nbgraderformat import common\n"
             "print(common.jsonschema is jsonschema, tempfile.mkdtemp.__qualname__)\n")
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=120)
    assert done.stdout.split() == ["True", "mkdtemp"], done.stdout + done.stderr
