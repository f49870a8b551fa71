"""A hand-in folder read as data: regular files only, never a link, within a size and a file count.

Everything a learner hands in is untrusted, the folder's shape included. A symbolic link, a
hard link (a regular file with more than one name may be a file of the course's, linked in
by the learner), a FIFO, a socket or a device is refused with one line naming it, and so is
a notebook that is itself a link. Nothing is followed: the walk opens every folder and file
relative to its parent's descriptor with ``O_NOFOLLOW`` and checks the opened file's own
``fstat``, so a link swapped in between the look and the open is refused too, and what is
copied is the bytes of the file that was checked. ``copy_regular_files`` is the one way a
submission is copied; ``scan`` walks the same way and copies nothing.
"""

from __future__ import annotations

import errno
import os
import stat
from dataclasses import dataclass, field
from pathlib import Path

CHUNK = 1 << 20
DEEPEST = 32
"""Folders nested deeper than this are refused: a walk holds one descriptor per level."""


@dataclass(frozen=True)
class HandinLimits:
    """What one hand-in may hold (``c.GradingLimits.submission_mb`` and ``submission_files``)."""

    max_bytes: int = 64 << 20
    max_files: int = 1000

    @property
    def mb(self) -> int:
        return self.max_bytes >> 20


@dataclass(frozen=True)
class Refusal:
    """One file of a hand-in that was not taken, and why."""

    path: str
    """Relative to the hand-in folder ('.' for the folder itself)."""
    why: str

    def line(self, outcome: str = "not collected") -> str:
        return f"{self.path}: {self.why}; {outcome}"


@dataclass
class _Walk:
    limits: HandinLimits
    skip: frozenset[str] = frozenset()
    dst_root: tuple[int, int] | None = None
    refused: list[Refusal] = field(default_factory=list)
    files: int = 0
    bytes: int = 0
    copied: list[str] = field(default_factory=list)


def _kind(mode: int, nlink: int) -> str:
    """What a file that is not a plain regular file or a folder is; '' when it may be read."""
    if stat.S_ISLNK(mode):
        return "a symbolic link"
    if stat.S_ISFIFO(mode):
        return "a FIFO (named pipe)"
    if stat.S_ISSOCK(mode):
        return "a socket"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "a device file"
    if stat.S_ISREG(mode):
        return f"a hard link (one of {nlink} names of the same file)" if nlink > 1 else ""
    if stat.S_ISDIR(mode):
        return ""
    return "not a regular file"


def _open_dir(name: str | os.PathLike, dir_fd: int | None) -> int:
    return os.open(name, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=dir_fd)


def _order(names: list[str]) -> list[str]:
    """Notebooks first, so a cap leaves out the extras before the work itself."""
    return sorted(names, key=lambda n: (not n.endswith(".ipynb"), n))


def _walk(walk: _Walk, src_fd: int, dst_fd: int | None, rel: str, depth: int) -> None:
    names = _order(os.listdir(src_fd))
    for name in names:
        path = f"{rel}/{name}" if rel else name
        if name in walk.skip:
            continue
        try:
            st = os.stat(name, dir_fd=src_fd, follow_symlinks=False)
        except FileNotFoundError:
            continue
        if (st.st_dev, st.st_ino) == walk.dst_root:  # the copy is being made inside the folder copied
            continue
        why = _kind(st.st_mode, st.st_nlink)
        if why:
            walk.refused.append(Refusal(path, why))
            continue
        if walk.files >= walk.limits.max_files:
            walk.refused.append(Refusal(path, f"over the file-count limit ({walk.limits.max_files} files, "
                                              "c.GradingLimits.submission_files)"))
            continue
        walk.files += 1
        if stat.S_ISDIR(st.st_mode):
            if depth >= DEEPEST:
                walk.refused.append(Refusal(path, f"folders nested deeper than {DEEPEST}"))
                continue
            _walk_dir(walk, src_fd, dst_fd, name, path, depth)
        else:
            _copy_file(walk, src_fd, dst_fd, name, path, st)


def _walk_dir(walk: _Walk, src_fd: int, dst_fd: int | None, name: str, path: str, depth: int) -> None:
    try:
        sub = _open_dir(name, src_fd)
    except OSError as e:
        walk.refused.append(Refusal(path, _why_open(e)))
        return
    try:
        child = None
        if dst_fd is not None:
            os.mkdir(name, 0o755, dir_fd=dst_fd)
            child = _open_dir(name, dst_fd)
        try:
            _walk(walk, sub, child, path, depth + 1)
        finally:
            if child is not None:
                os.close(child)
    finally:
        os.close(sub)


def _why_open(e: OSError) -> str:
    if e.errno in (errno.ELOOP, errno.ENOTDIR):
        return "a symbolic link"
    return f"could not be read ({os.strerror(e.errno or 0)})"


def _copy_file(walk: _Walk, src_fd: int, dst_fd: int | None, name: str, path: str, before: os.stat_result) -> None:
    try:
        fd = os.open(name, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC, dir_fd=src_fd)
    except OSError as e:
        walk.refused.append(Refusal(path, _why_open(e)))
        return
    try:
        st = os.fstat(fd)
        why = _kind(st.st_mode, st.st_nlink)
        if not why and (st.st_ino, st.st_dev) != (before.st_ino, before.st_dev):
            why = "changed while it was being collected"
        if why:
            walk.refused.append(Refusal(path, why))
            return
        if walk.bytes + st.st_size > walk.limits.max_bytes:
            walk.refused.append(Refusal(path, f"over the size limit of a hand-in ({walk.limits.mb} MB, "
                                              "c.GradingLimits.submission_mb)"))
            return
        if dst_fd is None:
            walk.bytes += st.st_size
            walk.copied.append(path)
            return
        out = os.open(name, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o644, dir_fd=dst_fd)
        copied = 0
        try:
            while chunk := os.read(fd, CHUNK):
                copied += len(chunk)
                if walk.bytes + copied > walk.limits.max_bytes:  # it grew while being read
                    break
                _write_all(out, chunk)
        finally:
            os.close(out)
        if walk.bytes + copied > walk.limits.max_bytes:
            os.unlink(name, dir_fd=dst_fd)
            walk.refused.append(Refusal(path, f"over the size limit of a hand-in ({walk.limits.mb} MB, "
                                              "c.GradingLimits.submission_mb)"))
            return
        walk.bytes += copied
        walk.copied.append(path)
    finally:
        os.close(fd)


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view):]


def _start(src: Path) -> tuple[int | None, list[Refusal]]:
    try:
        st = os.lstat(src)
    except FileNotFoundError:
        return None, [Refusal(".", "the hand-in folder does not exist")]
    why = _kind(st.st_mode, st.st_nlink) or ("" if stat.S_ISDIR(st.st_mode) else "not a folder")
    if why:
        return None, [Refusal(".", f"the hand-in folder is {why}" if why.startswith("a ") else why)]
    try:
        return _open_dir(src, None), []
    except OSError as e:
        return None, [Refusal(".", _why_open(e))]


def scan(folder: str | os.PathLike, limits: HandinLimits = HandinLimits()) -> list[Refusal]:
    """Every file of ``folder`` that a grading step must not read, one ``Refusal`` each."""
    fd, refused = _start(Path(folder))
    if fd is None:
        return refused
    walk = _Walk(limits)
    try:
        _walk(walk, fd, None, "", 0)
    finally:
        os.close(fd)
    return walk.refused


def copy_regular_files(src: str | os.PathLike, dst: str | os.PathLike,
                       limits: HandinLimits = HandinLimits(), skip: frozenset[str] = frozenset()) -> list[Refusal]:
    """Copy the folders and regular files of ``src`` into a new folder ``dst``; refuse the rest.

    ``dst`` must not exist. Links are never followed, in ``src`` or in ``dst``; the files are
    written with mode 0644, the folders 0755; names in ``skip`` are left out at every level.
    Returns what was refused (empty when all was taken).
    """
    fd, refused = _start(Path(src))
    if fd is None:
        return refused
    walk = _Walk(limits, skip)
    try:
        os.mkdir(dst, 0o755)
        out = _open_dir(dst, None)
        st = os.fstat(out)
        walk.dst_root = (st.st_dev, st.st_ino)
        try:
            _walk(walk, fd, out, "", 0)
        finally:
            os.close(out)
    finally:
        os.close(fd)
    return walk.refused


def safe_write(folder: str | os.PathLike, name: str, data: bytes, mode: int = 0o644,
               owner: tuple[int, int] = (-1, -1)) -> None:
    """Write ``folder/name`` whole, replacing it atomically, without following any link there.

    The bytes go to a new file of a fresh name (``O_EXCL | O_NOFOLLOW``) that is then renamed
    over ``name``: a link planted at ``name`` is replaced, never written through.
    """
    dir_fd = _open_dir(folder, None)
    try:
        tmp = f".{name}.{os.urandom(8).hex()}.tmp"
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, mode, dir_fd=dir_fd)
        try:
            _write_all(fd, data)
            os.fchown(fd, *owner)
            os.fchmod(fd, mode)
        finally:
            os.close(fd)
        os.replace(tmp, name, src_dir_fd=dir_fd, dst_dir_fd=dir_fd)
    finally:
        os.close(dir_fd)
