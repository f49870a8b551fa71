"""A hand-in folder is walked as data: regular files are copied, everything else is refused by its
kind, one line each, and nothing is followed (lucy_runtime/grading/handin.py)."""

from __future__ import annotations

import os
import socket
import stat
from pathlib import Path

import nbformat
import pytest

from lucy_runtime.course.submitted import refused_at_hand_in
from lucy_runtime.grading import handin
from lucy_runtime.grading.exchange import REFUSED, collect_handin, refusals_of
from lucy_runtime.grading.handin import HandinLimits, Refusal, copy_regular_files, safe_write, scan

from .conftest import need

SECRET = b"the course's secret 7e1d"


@pytest.fixture
def hostile(tmp_path: Path) -> tuple[Path, Path]:
    """A hand-in with a notebook, a file in a folder, and beside them a link to a secret file, a
    link to a folder, a hard link, a FIFO and a socket."""
    secret = tmp_path / "secret.txt"
    secret.write_bytes(SECRET)
    src = tmp_path / "handin"
    (src / "data").mkdir(parents=True)
    nbformat.write(nbformat.v4.new_notebook(), str(src / "unit.ipynb"))
    (src / "data" / "table.csv").write_text("a,b\n1,2\n")
    (src / "secret-link.txt").symlink_to(secret)
    (src / "data" / "up").symlink_to(tmp_path)
    os.link(secret, src / "hard.txt")
    os.mkfifo(src / "pipe")
    sock = socket.socket(socket.AF_UNIX)
    sock.bind(str(src / "sock"))
    sock.close()
    return src, tmp_path / "copy"


def test_only_regular_files_and_folders_are_copied_and_each_other_file_is_refused_by_its_kind(hostile):
    src, dst = hostile
    refused = copy_regular_files(src, dst)
    assert sorted((r.path, r.why) for r in refused) == [
        ("data/up", "a symbolic link"),
        ("hard.txt", "a hard link (one of 2 names of the same file)"),
        ("pipe", "a FIFO (named pipe)"),
        ("secret-link.txt", "a symbolic link"),
        ("sock", "a socket")]
    copied = sorted(str(p.relative_to(dst)) for p in dst.rglob("*"))
    assert copied == ["data", "data/table.csv", "unit.ipynb"]
    assert all(SECRET not in p.read_bytes() for p in dst.rglob("*") if p.is_file())
    assert scan(src) == refused, "scan finds what the copy refuses"
    assert Refusal("pipe", "a FIFO (named pipe)").line() == "pipe: a FIFO (named pipe); not collected"


def test_a_hand_in_folder_that_is_a_link_is_refused_whole(hostile, tmp_path):
    src, dst = hostile
    (tmp_path / "linked").symlink_to(src)
    assert [r.line() for r in copy_regular_files(tmp_path / "linked", dst)] == [
        ".: the hand-in folder is a symbolic link; not collected"]
    assert not dst.exists()


def test_a_file_swapped_for_a_link_after_it_was_looked_at_is_refused(hostile, tmp_path, monkeypatch):
    """The look (lstat) saw a regular file; by the time it is opened it is a link to the secret."""
    src, dst = hostile
    swapped = src / "data" / "table.csv"
    real_stat = os.stat

    def stat_then_swap(name, *args, **kwargs):
        result = real_stat(name, *args, **kwargs)
        if name == "table.csv":
            swapped.unlink()
            swapped.symlink_to(tmp_path / "secret.txt")
        return result

    monkeypatch.setattr(handin.os, "stat", stat_then_swap)
    refused = copy_regular_files(src, dst)
    assert Refusal("data/table.csv", "a symbolic link") in refused
    assert not (dst / "data" / "table.csv").exists()


def test_the_size_and_file_count_caps_name_the_limit_and_take_notebooks_first(tmp_path):
    src = tmp_path / "big"
    src.mkdir()
    (src / "a.bin").write_bytes(b"x" * (3 << 20))
    (src / "unit.ipynb").write_bytes(b"y" * (2 << 20))
    refused = copy_regular_files(src, tmp_path / "copy", HandinLimits(max_bytes=4 << 20, max_files=10))
    assert [r.line() for r in refused] == [
        "a.bin: over the size limit of a hand-in (4 MB, c.GradingLimits.submission_mb); not collected"]
    assert (tmp_path / "copy" / "unit.ipynb").stat().st_size == 2 << 20

    for i in range(5):
        (src / f"f{i}.txt").write_text("z")
    refused = scan(src, HandinLimits(max_bytes=64 << 20, max_files=3))
    assert [r.path for r in refused] == ["f1.txt", "f2.txt", "f3.txt", "f4.txt"]  # unit.ipynb, a.bin, f0 taken
    assert "over the file-count limit (3 files, c.GradingLimits.submission_files)" in refused[0].why


def test_a_refused_notebook_is_replaced_by_the_released_one_and_every_notebook_names_the_refusals(tmp_path):
    released = tmp_path / "release"
    released.mkdir()
    blank = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell("# YOUR CODE HERE")])
    nbformat.write(blank, str(released / "unit.ipynb"))
    src = tmp_path / "handin"
    src.mkdir()
    (tmp_path / "reference.ipynb").write_text("the reference")
    (src / "unit.ipynb").symlink_to(tmp_path / "reference.ipynb")
    refused = collect_handin(src, tmp_path / "collected", HandinLimits(), released)
    assert [r.line() for r in refused] == ["unit.ipynb: a symbolic link; not collected"]
    nb = nbformat.read(str(tmp_path / "collected" / "unit.ipynb"), as_version=4)
    assert "`unit.ipynb`: a symbolic link" in nb.cells[0].source and nb.cells[1].source == "# YOUR CODE HERE"
    assert refusals_of(tmp_path / "collected") == ["unit.ipynb: a symbolic link; not collected"]
    assert (tmp_path / "collected" / REFUSED).is_file()


def test_lucy_autograde_grades_no_hand_in_that_holds_what_no_step_may_read(tmp_path):
    course = tmp_path / "course"
    ada, bea = course / "submitted" / "ada" / "unit", course / "submitted" / "bea" / "unit"
    ada.mkdir(parents=True)
    bea.mkdir(parents=True)
    (ada / "unit.ipynb").write_text("{}")
    (tmp_path / "source.ipynb").write_text("the reference")
    (bea / "unit.ipynb").symlink_to(tmp_path / "source.ipynb")
    refused, unsafe = refused_at_hand_in(course, "unit")
    assert refused == [] and unsafe == [("bea", "unit.ipynb: a symbolic link; not collected")]
    assert not bea.exists() and (ada / "unit.ipynb").exists(), "moved aside, not deleted; ada untouched"
    assert [p.name for p in bea.parent.iterdir()][0].startswith("unit.unsafe-")


def test_safe_write_replaces_a_planted_link_instead_of_writing_through_it(tmp_path):
    target = tmp_path / "target"
    target.write_bytes(SECRET)
    folder = tmp_path / "out"
    folder.mkdir()
    (folder / "page.html").symlink_to(target)
    safe_write(folder, "page.html", b"<p>feedback</p>", mode=0o440)
    assert target.read_bytes() == SECRET
    page = folder / "page.html"
    assert not page.is_symlink() and page.read_bytes() == b"<p>feedback</p>"
    assert stat.S_IMODE(page.stat().st_mode) == 0o440


def test_lucy_report_reads_no_autograded_hand_in_that_holds_a_link_and_names_it(tmp_path, capsys):
    from lucy_runtime.cli.main import main

    folder = tmp_path / "autograded" / "bea" / "unit"
    folder.mkdir(parents=True)
    (folder / "evidence.json").symlink_to(tmp_path / "anything")
    assert main(["report", "unit", "--course", str(tmp_path)]) == 2
    assert "bea/unit: evidence.json: a symbolic link; not read" in capsys.readouterr().err


def test_a_device_file_is_refused_without_being_opened(tmp_path):
    need("root", os.geteuid() == 0, "only root makes a device file (mknod); CI runs as root")
    src = tmp_path / "handin"
    src.mkdir()
    os.mknod(src / "zero", stat.S_IFCHR | 0o666, os.makedev(1, 5))  # /dev/zero: reading it never ends
    assert [r.line() for r in copy_regular_files(src, tmp_path / "copy")] == ["zero: a device file; not collected"]


def test_lucy_exchange_says_in_one_line_what_to_do_when_the_course_has_no_exchange_yet(tmp_path, monkeypatch, capsys):
    from lucy_runtime.cli.main import main

    (tmp_path / "nbgrader_config.py").write_text(
        "from lucy_runtime.grading.exchange import configure\nc = get_config()\n"
        "c.CourseDirectory.course_id = 'lucy-ch07'\nconfigure(c)\n")
    monkeypatch.setenv("LUCY_EXCHANGE", str(tmp_path / "exchange"))
    assert main(["exchange", "add", "ada", "--course", str(tmp_path)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err == [f"lucy exchange add: the course lucy-ch07 has no folder in the exchange {tmp_path / 'exchange'}: "
                   "run `lucy exchange create` first"]
    assert main(["exchange", "create", "--one-account", "--course", str(tmp_path)]) == 0
    assert main(["exchange", "add", "Not A Name", "--course", str(tmp_path)]) == 2
    assert "'Not A Name' is not a login name" in capsys.readouterr().err
    assert not (tmp_path / "exchange" / "lucy-ch07" / "inbound" / "Not A Name").exists()


def test_lucy_autograde_names_what_collect_refused_of_each_hand_in(tmp_path):
    released = tmp_path / "release"
    released.mkdir()
    nbformat.write(nbformat.v4.new_notebook(), str(released / "unit.ipynb"))
    src = tmp_path / "inbound"
    src.mkdir()
    nbformat.write(nbformat.v4.new_notebook(), str(src / "unit.ipynb"))
    os.mkfifo(src / "pipe")
    (tmp_path / "course" / "submitted" / "ada").mkdir(parents=True)
    collect_handin(src, tmp_path / "course" / "submitted" / "ada" / "unit", HandinLimits(), released)
    refused, unsafe = refused_at_hand_in(tmp_path / "course", "unit")
    assert refused == [("ada", "pipe: a FIFO (named pipe); not collected")] and unsafe == []


def test_an_exchange_made_again_with_reset_holds_nothing_of_the_try_out_before(tmp_path):
    """The README's block run twice: its second run must not collect the first run's hand-ins."""
    from lucy_runtime.grading import exchange

    root = tmp_path / "exchange"
    exchange.create(root, "lucy-ch07", one_account=True)
    [ada] = exchange.add(root, "lucy-ch07", ["ada"])
    (ada / "ada+ch07_unit_a+2026-01-01 00:00:00.000000 UTC+x").mkdir()
    exchange.create(root, "lucy-ch07", one_account=True)
    assert list(ada.iterdir()), "without --reset, what was handed in stays"
    exchange.create(root, "lucy-ch07", one_account=True, reset=True)
    assert not ada.exists()
    exchange.add(root, "lucy-ch07", ["ada"])
    assert list(ada.iterdir()) == [] and stat.S_IMODE(ada.stat().st_mode) == 0o2750
