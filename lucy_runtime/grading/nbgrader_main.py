"""nbgrader's command line as every grading command here starts it, without an IRI grammar.

``python -m lucy_runtime.grading.nbgrader_main autograde ch07_unit_a`` is ``nbgrader autograde
ch07_unit_a``, with one import blocked in its own process. nbformat imports jsonschema, and
jsonschema, when ``rfc3987_syntax`` is installed (Jupyter's server asks for it), builds a
Lark grammar for the ``iri`` string format at import: about 1.4 s before an nbgrader
command does anything. nbgrader never checks that format (nbformat validates notebooks
without a format checker), so with the import blocked jsonschema leaves the ``iri`` format
out and nothing else changes. ``tests/test_course_streaming.py`` holds both halves. The
``lucy`` command line blocks it too: it reads notebooks with nbformat and checks no IRI.

Nothing is written into the virtualenv: a plain ``nbgrader`` or ``jupyter lab`` an educator
types starts with the grammar, as it would anywhere (docs/performance.md has both times).
"""

from __future__ import annotations

import sys

NOT_NEEDED = ("rfc3987_syntax",)


def leave_out_unused_imports() -> None:
    """Make ``import`` of each module in NOT_NEEDED fail in this process (call it before nbformat loads)."""
    for name in NOT_NEEDED:
        sys.modules.setdefault(name, None)  # type: ignore[arg-type]  # None here makes `import name` fail


def main(argv: list[str] | None = None) -> int:
    leave_out_unused_imports()
    from nbgrader.apps.nbgraderapp import main as nbgrader  # noqa: PLC0415 - after the block above

    sys.argv = ["nbgrader", *(sys.argv[1:] if argv is None else argv)]
    nbgrader()
    return 0


if __name__ == "__main__":
    sys.exit(main())
