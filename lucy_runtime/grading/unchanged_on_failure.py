"""A course command that fails leaves release/ and the gradebook as it found them.

``nbgrader generate_assignment --force`` deletes ``release/<assignment>`` before it
converts, and writes the gradebook while it converts. When the conversion then fails,
the release is gone and the gradebook half-written. ``nbgrader_config.py`` calls
``patches.guard_generate_assignment``, so every run of that command first copies
``release/`` and ``gradebook.db`` aside and puts the copies back, byte for byte, when
the run fails.
"""

from __future__ import annotations

import shutil
import tempfile
from contextlib import contextmanager
from pathlib import Path
from typing import Iterable, Iterator

SQLITE = "sqlite:///"


def _copy(src: Path, dest: Path) -> None:
    if src.is_dir():
        shutil.copytree(src, dest, symlinks=True)  # copy2: bytes, modes and times
    else:
        shutil.copy2(src, dest)


def _remove(path: Path) -> None:
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path)
    elif path.exists() or path.is_symlink():
        path.unlink()


@contextmanager
def unchanged_on_failure(paths: Iterable[Path]) -> Iterator[None]:
    """Run the block; if it raises (or exits), each path is again what it was before it,
    absent if it was absent. On success nothing is put back."""
    paths = [Path(p) for p in paths]
    with tempfile.TemporaryDirectory(prefix="lucy-keep-") as aside:
        kept = {}
        for i, path in enumerate(paths):
            if path.exists():
                kept[path] = Path(aside) / str(i)
                _copy(path, kept[path])
        try:
            yield
        except BaseException:
            for path in paths:
                _remove(path)
                if path in kept:
                    _copy(kept[path], path)
            raise


def sqlite_files(db_url: str) -> list[Path]:
    """The files of a SQLite gradebook (the database and its journals); none for another database."""
    if not db_url.startswith(SQLITE):
        return []
    db = Path(db_url[len(SQLITE):])
    return [db, *(db.with_name(db.name + suffix) for suffix in ("-journal", "-wal", "-shm"))]


