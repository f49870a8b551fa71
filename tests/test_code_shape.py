"""No function of complexity D or worse (radon's rank) and no module over 500 lines in lucy_runtime.

No exceptions: each test below names what it found, and a planted module or function shows it can."""

from __future__ import annotations

from radon.complexity import cc_rank, cc_visit

from .conftest import REPO

MAX_LINES = 500


def modules():
    return sorted(p for p in (REPO / "lucy_runtime").rglob("*.py"))


def long_modules() -> set[str]:
    return {str(p.relative_to(REPO)) for p in modules() if len(p.read_text(encoding="utf-8").splitlines()) > MAX_LINES}


def complex_functions(paths, root=REPO) -> set[str]:
    found = set()
    for path in paths:
        for block in cc_visit(path.read_text(encoding="utf-8")):
            if cc_rank(block.complexity) >= "D":
                name = f"{block.classname}.{block.name}" if getattr(block, "classname", None) else block.name
                found.add(f"{path.relative_to(root)}:{name}")
    return found


def test_no_module_is_longer_than_500_lines():
    assert long_modules() == set()


def test_no_function_is_of_complexity_d_or_worse():
    assert complex_functions(modules()) == set()


def test_a_planted_function_of_complexity_d_is_found(tmp_path):
    branches = "\n".join(f"    if x == {n}:\n        return {n}" for n in range(25))
    planted = tmp_path / "lucy_runtime" / "planted.py"
    planted.parent.mkdir()
    planted.write_text(f"def tangled(x):\n{branches}\n", encoding="utf-8")
    assert complex_functions([planted], tmp_path) == {"lucy_runtime/planted.py:tangled"}
