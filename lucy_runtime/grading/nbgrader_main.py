"""nbgrader's command line as every grading command here starts it, without an IRI grammar.

``python -m lucy_runtime.grading.nbgrader_main autograde ch07_unit_a`` is ``nbgrader autograde
ch07_unit_a``, with one import blocked. nbformat imports jsonschema, and jsonschema, when
``rfc3987_syntax`` is installed (Jupyter's server asks for it), builds a Lark grammar for
the ``iri`` string format at import: about 1.6 s before an nbgrader command does
anything. nbgrader never checks that format (nbformat validates notebooks without a
format checker), so with the import blocked jsonschema leaves the ``iri`` format out
and nothing else changes. ``tests/test_course_streaming.py`` holds both halves. The
``lucy`` command line blocks it too: it reads notebooks with nbformat and checks no IRI.

The course's ``nbgrader_config.py`` also calls ``patches.check_metadata_schema_once``:
nbgrader checks every cell's ``nbgrader`` metadata with ``jsonschema.validate``, which
checks the schema itself against its meta-schema on every call (60 calls a notebook).
"""

from __future__ import annotations

import sys
import sysconfig
from pathlib import Path

NOT_NEEDED = ("rfc3987_syntax",)
STARTUP_FILE = "lucy_leave_out_unused_imports.pth"
"""Written into the course's virtualenv by ``make``: the same block in every one of its
interpreters, so the plain ``nbgrader`` and ``jupyter lab`` the README gives educators start
as fast as the course's own commands."""


def leave_out_unused_imports() -> None:
    """Make ``import`` of each module in NOT_NEEDED fail in this process (call it before nbformat loads)."""
    for name in NOT_NEEDED:
        sys.modules.setdefault(name, None)  # type: ignore[arg-type]  # None here makes `import name` fail


def startup_line() -> str:
    """A ``.pth`` line (site runs lines that start with ``import``) doing what leave_out_unused_imports does."""
    return f"import sys; [sys.modules.setdefault(name, None) for name in {NOT_NEEDED!r}]\n"


def write_startup_file(site_packages: Path | None = None) -> Path:
    """Put STARTUP_FILE in ``site_packages`` (this interpreter's by default); returns its path."""
    folder = Path(site_packages or sysconfig.get_paths()["purelib"])
    path = folder / STARTUP_FILE
    path.write_text(startup_line(), encoding="utf-8")
    return path


def main(argv: list[str] | None = None) -> int:
    leave_out_unused_imports()
    from nbgrader.apps.nbgraderapp import main as nbgrader  # noqa: PLC0415 - after the block above

    sys.argv = ["nbgrader", *(sys.argv[1:] if argv is None else argv)]
    nbgrader()
    return 0


if __name__ == "__main__":
    sys.exit(main())
