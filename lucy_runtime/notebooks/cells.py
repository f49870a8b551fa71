"""Cells of an nbgrader notebook: which cell is which, what a test cell grades, and running a cell's text.

A *learner cell* is an nbgrader autograded-answer cell (a code cell with
``solution: true`` and ``grade: false``) or the locked ``imports`` cell. A *test
cell* is an autograded test: a code cell with ``grade: true`` and no solution. Its
grade id names the row it grades: ``row_finish_atomic`` grades ``finish-atomic``.
Which flags a cell carries is nbgrader's question: the predicates here read the
flags exactly as ``nbgrader.utils`` does, without importing nbgrader.
"""

from __future__ import annotations

import __future__
import ast
import functools
import linecache
import operator
from types import CodeType
from typing import Any

IMPORTS_CELL = "imports"
BEGIN_SOLUTION = "### BEGIN SOLUTION"
END_SOLUTION = "### END SOLUTION"


def nbgrader_meta(cell: Any) -> dict:
    return cell.get("metadata", {}).get("nbgrader", {})


def grade_id(cell: Any) -> str:
    return nbgrader_meta(cell).get("grade_id", "")


# The three flags below read a cell exactly as nbgrader.utils does (is_grade, is_solution,
# is_locked; tests/test_notebooks.py compares them on every cell of every notebook). They
# are written out here because importing nbgrader loads Jupyter server and takes seconds,
# and a learner's kernel and the sealed re-check ask these questions on every start.

def is_grade(cell: Any) -> bool:
    """nbgrader scores the cell (a test, or a written answer marked by hand)."""
    return bool(nbgrader_meta(cell).get("grade", False))


def is_solution(cell: Any) -> bool:
    """The learner writes the cell."""
    return bool(nbgrader_meta(cell).get("solution", False))


def is_locked(cell: Any) -> bool:
    if "nbgrader" not in cell.get("metadata", {}) or is_solution(cell):
        return False
    return is_grade(cell) or bool(nbgrader_meta(cell).get("locked", False))


def is_learner_owned(cell: Any) -> bool:
    """An autograded answer: code the learner writes and the rows run."""
    return cell.cell_type == "code" and is_solution(cell) and not is_grade(cell)


def is_written_answer(cell: Any) -> bool:
    """A written answer: Markdown the learner writes and an educator scores in formgrader."""
    return cell.cell_type == "markdown" and is_solution(cell)


def is_learner_cell(cell: Any) -> bool:
    """A learner-owned cell, or the locked imports cell whose names those cells use."""
    return is_learner_owned(cell) or (cell.cell_type == "code" and grade_id(cell) == IMPORTS_CELL)


def is_test_cell(cell: Any) -> bool:
    """An autograded test cell: nbgrader scores it by whether it raises."""
    return cell.cell_type == "code" and is_grade(cell) and not is_solution(cell)


def test_cells(nb: Any) -> list:
    return [cell for cell in nb.cells if is_test_cell(cell)]


def row_of(cell_grade_id: str) -> str:
    """``row_finish_atomic`` → ``finish-atomic``: a test cell's grade id names its row."""
    return cell_grade_id.removeprefix("row_").replace("_", "-")


def solution_region(source: str) -> str:
    """The text between BEGIN SOLUTION and END SOLUTION (the reference, in source/)."""
    inside, kept = False, []
    for line in source.splitlines():
        if BEGIN_SOLUTION in line:
            inside = True
        elif END_SOLUTION in line:
            inside = False
        elif inside:
            kept.append(line)
    return "\n".join(kept)


def strip_markers(source: str) -> str:
    """The cell without its BEGIN/END SOLUTION lines: the reference as a learner would hand it in."""
    return "\n".join(line for line in source.splitlines() if BEGIN_SOLUTION not in line and END_SOLUTION not in line)


FUTURE_FLAGS = functools.reduce(operator.or_, (getattr(__future__, f).compiler_flag for f in __future__.all_feature_names))


def compile_cell(source: str, filename: str, future: int = 0) -> CodeType:
    """Compile a cell's text so that tracebacks from it show its lines (raises SyntaxError).

    The cell gets the ``__future__`` imports of earlier cells (``future``, as IPython carries
    them from cell to cell) and its own, never this module's: with postponed annotations
    a learner's dataclass would look its module up by name. ``code.co_flags & FUTURE_FLAGS``
    is what the next cell inherits.
    """
    linecache.cache[filename] = (len(source), None, source.splitlines(True), filename)
    return compile(source, filename, "exec", flags=future, dont_inherit=True)


DEFINITIONS = "definitions-"
"""The grade id given to the definitions taken from a cell without nbgrader metadata (``definitions-7``)."""

_DEFINING = (ast.Import, ast.ImportFrom, ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)
_ACTING = (ast.Call, ast.Await, ast.Yield, ast.YieldFrom, ast.NamedExpr)


def _defines(node: ast.stmt) -> bool:
    if isinstance(node, _DEFINING):
        return True
    if isinstance(node, (ast.Assign, ast.AnnAssign)) and node.value is not None:
        return not any(isinstance(part, _ACTING) for part in ast.walk(node.value))
    return False


def _bound(node: ast.stmt) -> set[str]:
    if isinstance(node, (ast.Import, ast.ImportFrom)):
        return {alias.asname or alias.name.split(".")[0] for alias in node.names if alias.name != "*"}
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        return {node.name}
    targets = node.targets if isinstance(node, ast.Assign) else [node.target]  # type: ignore[attr-defined]
    return {n.id for target in targets for n in ast.walk(target) if isinstance(n, ast.Name)}


def _names_in(tree: ast.AST) -> set[str]:
    return {n.id for n in ast.walk(tree) if isinstance(n, ast.Name)}


def used_names(source: str) -> set[str]:
    """Every name a cell's code reads (empty when it is not plain Python)."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return set()
    return _names_in(tree)


def definitions(sources: list[str], needed: set[str]) -> list[str]:
    """What the learner's code needs from cells without metadata: their top-level imports,
    functions, classes and assignments that call nothing, that bind a name in ``needed`` or
    in what those read in turn.

    A learner may keep a helper or an import in a cell of their own; the kernel has it, so the
    grader must too, and nothing more: the cell's experiments (anything that calls) and what
    nothing uses stay out. Each cell keeps its kept lines where they were, every other line
    blank; a cell that keeps nothing, or is not plain Python (a magic), is "".
    """
    bodies = []
    for source in sources:
        try:
            bodies.append(ast.parse(source).body)
        except SyntaxError:
            bodies.append([])
    parsed = [[node for node in body if _defines(node)] for body in bodies]
    needed = set(needed)
    kept: list[set[int]] = [set() for _ in sources]  # kept: indexes into parsed[i]
    changed = True
    while changed:
        changed = False
        for i, nodes in enumerate(parsed):
            for j, node in enumerate(nodes):
                if j not in kept[i] and _bound(node) & needed:
                    kept[i].add(j)
                    needed |= _names_in(node)
                    changed = True
    return [_only(source, bodies[i], [parsed[i][j] for j in sorted(kept[i])]) for i, source in enumerate(sources)]


def _only(source: str, body: list[ast.stmt], nodes: list[ast.stmt]) -> str:
    """``source`` with the lines of ``nodes`` (statements of ``body``) and every other line blank."""
    if not nodes:
        return ""
    lines = source.splitlines()
    keep = [False] * len(lines)
    others: set[int] = set()  # a line shared with a statement left out (a; b) is left out too
    for node in body:
        first = min([node.lineno] + [d.lineno for d in getattr(node, "decorator_list", [])])
        span = range(first - 1, node.end_lineno or node.lineno)
        if any(node is n for n in nodes):
            for i in span:
                keep[i] = True
        else:
            others.update(span)
    return "\n".join(line if keep[i] and i not in others else "" for i, line in enumerate(lines)) + "\n"


def is_definitions(name: str) -> bool:
    """True for a cell name (``unit:grade_id``) that holds definitions taken from a cell without metadata."""
    return name.rsplit(":", 1)[-1].startswith(DEFINITIONS)


def compile_definitions(source: str, filename: str, future: int = 0) -> list[CodeType]:
    """Each top-level statement of ``definitions(...)`` compiled on its own, so one that fails leaves the rest."""
    linecache.cache[filename] = (len(source), None, source.splitlines(True), filename)
    codes = []
    for node in ast.parse(source).body:
        codes.append(compile(ast.Module([node], []), filename, "exec", flags=future, dont_inherit=True))
        future |= codes[-1].co_flags & FUTURE_FLAGS
    return codes


def run_definitions(codes: list[CodeType], namespace: dict) -> None:
    """Run each statement of ``compile_definitions``; one that fails (a name only an experiment
    made) is passed over, as the kernel went on past an error in such a cell."""
    for code in codes:
        try:
            exec(code, namespace)
        except Exception:  # noqa: BLE001 - see the docstring
            pass


def is_unmarked_code(cell: Any) -> bool:
    """A code cell nbgrader knows nothing of: the notebook's experiments, or a cell the learner added."""
    return cell.cell_type == "code" and "nbgrader" not in cell.get("metadata", {})
