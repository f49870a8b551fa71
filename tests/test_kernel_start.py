"""A learner's kernel starts quickly: the notebooks' imports never load nbformat, nbgrader or jsonschema.

Those three cost seconds on every kernel start (jsonschema builds a Lark grammar for IRI
formats when it is imported; nbgrader loads Jupyter server). Every learner waits for
them on each restart, and nbgrader autograde pays for them once per submission.
"""

from __future__ import annotations

import ast
import json
import subprocess
import sys

import pytest

from .conftest import REPO

HEAVY = ("nbformat", "nbgrader", "jsonschema")
SOURCES = sorted((REPO / "source").glob("*/*.ipynb"))


def import_lines(notebook) -> list[str]:
    """Every ``import``/``from … import`` statement the notebook's code cells run at the top level."""
    lines = []
    for cell in json.loads(notebook.read_text(encoding="utf-8"))["cells"]:
        if cell["cell_type"] == "code":
            tree = ast.parse("".join(cell["source"]))
            lines += [ast.unparse(node) for node in tree.body if isinstance(node, (ast.Import, ast.ImportFrom))]
    return lines


def loaded_after(code: str, heavy: tuple[str, ...] = HEAVY) -> list[str]:
    probe = code + "\nimport sys, json\nprint(json.dumps(sorted(m for m in sys.modules if m.split('.')[0] in "
    probe += f"{heavy!r})))\n"
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, cwd=REPO, timeout=120)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.splitlines()[-1])


@pytest.mark.parametrize("notebook", SOURCES, ids=lambda p: p.stem)
def test_a_learners_kernel_imports_none_of_the_slow_packages(notebook):
    lines = import_lines(notebook)
    assert any("lucy_runtime.checker" in line for line in lines)  # the probe reaches the checker
    # Unit B also reads the learner's Unit A at start (lucy_runtime.carry).
    code = "\n".join(lines) + "\nfrom lucy_runtime.notebooks.notebook import learner_cells\n"
    code += f"learner_cells({str(REPO / 'source' / 'ch07_unit_a' / 'ch07_unit_a.ipynb')!r})"
    assert loaded_after(code) == []


def test_the_probe_sees_a_slow_package_when_one_is_imported():
    assert "nbformat" in loaded_after("from lucy_runtime.notebooks.notebook import read\nread(" +
                                      repr(str(REPO / "source" / "ch07_unit_a" / "ch07_unit_a.ipynb")) + ")")


def test_the_checker_process_that_forks_every_child_never_loads_pandas():
    """Each row forks a child per step, and a fork costs in proportion to the parent's memory:
    pandas alone would double the checker's (the price table is read with the csv module)."""
    code = ("from lucy_runtime.checker import SourceLearner, run_rows\n"
            "from lucy_runtime.checker.rows import ROWS\n"
            "from lucy_runtime.notebooks.notebook import learner_implementation\n"
            f"cells = learner_implementation({str(REPO / 'source')!r})\n"
            "report = run_rows(SourceLearner(cells), [ROWS['integrated-path']], seed=3)\n"
            "assert report.results[0].passed, report.results[0].observation\n")
    assert loaded_after(code, ("pandas", "numpy")) == []
