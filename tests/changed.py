"""The test modules a change touches: ``make test-changed`` runs them.

``python -m tests.changed [--base REF]`` prints one test module path a line. A change is every
file that differs from ``REF`` (``HEAD`` by default: what is not committed yet), untracked
files included. A test module is touched when it changed, or when it imports (at the top or
deferred, directly or through other modules of this repository) a changed module of
``lucy_runtime`` or of ``tests/``, or names one in a string (``python -m
lucy_runtime.grading.orchestrator``). A changed file that is not Python (a notebook, the
README, a Makefile) touches the test modules that name it. A change to ``tests/conftest.py``
touches every test module; so does one to ``pyproject.toml``, which configures them all.
"""

from __future__ import annotations

import argparse
import re
import subprocess
import sys
from pathlib import Path

from .imports import imports_of, module_name

REPO = Path(__file__).resolve().parent.parent
EVERYTHING = ("tests/conftest.py", "pyproject.toml")
DOTTED = re.compile(r"\b(lucy_runtime(?:\.\w+)+|tests\.\w+)\b")


def changed_files(base: str = "HEAD", repo: Path = REPO) -> list[str]:
    """Paths (relative to ``repo``) that differ from ``base``, untracked ones included."""
    def git(*args: str) -> list[str]:
        done = subprocess.run(["git", *args], cwd=repo, capture_output=True, text=True, check=True)
        return [line for line in done.stdout.splitlines() if line]

    return sorted(set(git("diff", "--name-only", base, "--")) | set(git("ls-files", "--others", "--exclude-standard")))


def python_modules(repo: Path = REPO) -> dict[str, Path]:
    found = sorted((repo / "lucy_runtime").rglob("*.py")) + sorted((repo / "tests").glob("*.py"))
    return {module_name(p, repo): p for p in found if "__pycache__" not in p.parts}


def dependents(repo: Path = REPO) -> dict[str, set[str]]:
    """For each module of lucy_runtime and tests/, the modules that use it directly."""
    modules = python_modules(repo)
    known = set(modules)
    users: dict[str, set[str]] = {name: set() for name in modules}
    for name, path in modules.items():
        used = imports_of(name, path, known)
        used |= {m for m in DOTTED.findall(path.read_text(encoding="utf-8")) if m in known and m != name}
        for target in used:
            if name != "tests.conftest":  # it imports for every test module; a change to it selects them all
                users[target].add(name)
    return users


def touched_tests(changed: list[str], repo: Path = REPO) -> list[str]:
    """The test modules (paths relative to ``repo``) that ``changed`` touches."""
    modules = python_modules(repo)
    tests = {name: path for name, path in modules.items() if path.name.startswith("test_") and path.parent.name == "tests"}
    every = sorted(str(p.relative_to(repo)) for p in tests.values())
    if any(path in EVERYTHING for path in changed):
        return every
    by_path = {str(path.relative_to(repo)): name for name, path in modules.items()}
    seeds = [by_path[path] for path in changed if path in by_path]
    others = [path for path in changed if path not in by_path and not path.endswith(".py")]
    for name, path in modules.items():
        text = path.read_text(encoding="utf-8")
        if any(_names(other, text) for other in others):
            seeds.append(name)
    users = dependents(repo)
    reached: set[str] = set()
    while seeds:
        name = seeds.pop()
        if name not in reached:
            reached.add(name)
            seeds.extend(users.get(name, ()))
    return sorted(str(tests[name].relative_to(repo)) for name in reached if name in tests)


def _names(path: str, text: str) -> bool:
    """Whether ``text`` names the file at ``path``: whole, by file name, or by its top folder in quotes
    (``REPO / "source"``) when that folder is not a Python package's."""
    top = path.split("/", 1)[0]
    return (path in text or Path(path).name in text
            or ("/" in path and top not in ("lucy_runtime", "tests") and f'"{top}"' in text))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.changed", description=__doc__.split("\n\n")[0])
    parser.add_argument("--base", default="HEAD", help="the commit to compare with (default: HEAD, what is not committed)")
    args = parser.parse_args(argv)
    for path in touched_tests(changed_files(args.base)):
        print(path)
    return 0


if __name__ == "__main__":
    sys.exit(main())
