"""Real nbgrader runs: generate the release, and autograde submissions in a scratch course.

Everything goes through nbgrader's own command line, in a course directory of its own,
exactly as an educator would run it. Scores are read back from nbgrader's gradebook.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

import nbformat

from ..errors import NbgraderFailed
from ..grading import nbgrader_log
from ..notebooks.cells import grade_id, nbgrader_meta, test_cells
from ..notebooks.notebook import UNITS

REPO = Path(__file__).resolve().parents[2]

NBGRADER = (sys.executable, "-m", "lucy_runtime.grading.nbgrader_main")
"""How grading starts nbgrader: its own command line, minus an import it never uses (see nbgrader_main)."""



def scratch_tmp() -> tempfile.TemporaryDirectory[str]:
    """The temporary folder of one nbgrader command: nbgrader and its kernels keep their scratch
    folders (a kernel's copy of its notebook folder, the runtime snapshot, a notebook's workspace)
    in it, and it goes when the command ends, also when a time limit killed the command first.
    Without the sandbox a learner's process may outlive the command: what it still writes there
    must not fail the grading."""
    return tempfile.TemporaryDirectory(prefix="lucy-nbgrader-", ignore_cleanup_errors=True)


def _env(tmp: str | os.PathLike | None = None) -> dict[str, str]:
    """nbgrader's environment; with ``tmp``, the temporary folder it and its kernels use."""
    env = dict(os.environ)
    env.setdefault("JUPYTER_PLATFORM_DIRS", "1")
    # nbgrader runs `alembic` (and the kernel) by name: this interpreter's bin folder comes first.
    env["PATH"] = str(Path(sys.executable).parent) + os.pathsep + env.get("PATH", "")
    if tmp is not None:
        env["TMPDIR"] = str(tmp)
    return env


def nbgrader(args: list[str], *, cwd: Path, timeout: float = 900) -> str:
    """Run one nbgrader command in ``cwd`` (a course directory); return its output."""
    with scratch_tmp() as tmp:
        done = subprocess.run([*NBGRADER, *args], cwd=cwd, capture_output=True, text=True,
                              timeout=timeout, env=_env(tmp))
    output = done.stdout + done.stderr
    if done.returncode != 0 or nbgrader_log.config_lost(output):
        raise NbgraderFailed(args, output)
    return output


@dataclass(frozen=True)
class Streamed:
    output: str
    returncode: int
    timed_out: bool


def stream_lines(command: list[str], *, cwd: Path, timeout: float, on_line, env: dict | None = None,
                 own_group: bool = False, restart_on: Callable[[str], bool] | None = None) -> Streamed:
    """Run ``command``, calling ``on_line`` for each line of output as it comes.

    A watchdog kills the process at ``timeout`` even when it prints nothing at all; with
    ``own_group`` the command runs in a process group of its own, and the watchdog kills
    that whole group (nbgrader and anything it started that did not leave the group).
    With ``restart_on``, a line it accepts starts the clock again: the limit is then per
    stretch of work (one submission of many), not for the whole command. It sees each
    line before ``on_line`` does.
    """
    lines: list[str] = []
    fired = threading.Event()
    finished = threading.Event()
    clock_started = [time.monotonic()]
    with subprocess.Popen(command, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                          env=env, start_new_session=own_group) as proc:
        def stop() -> None:
            fired.set()
            if own_group:
                try:
                    os.killpg(proc.pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
            else:
                proc.kill()

        def watch() -> None:
            while not finished.wait(0.1):
                if time.monotonic() - clock_started[0] > timeout:
                    stop()
                    return

        watchdog = threading.Thread(target=watch, name="stream-lines-watchdog", daemon=True)
        watchdog.start()
        try:
            for line in proc.stdout or ():
                lines.append(line)
                if restart_on is not None and restart_on(line):
                    clock_started[0] = time.monotonic()
                on_line(line)
        except BaseException:
            if own_group:  # nothing outlives a caller that stopped (Ctrl-C, a failing callback)
                os.killpg(proc.pid, signal.SIGKILL)
            raise
        finally:
            finished.set()
            watchdog.join()
    return Streamed("".join(lines), proc.returncode, fired.is_set())


def nbgrader_streaming(args: list[str], *, cwd: Path, timeout: float, on_student) -> str:
    """Like ``nbgrader`` but reads the log as it comes, calling ``on_student`` per student."""
    def on_line(line: str) -> None:
        student = nbgrader_log.student_started(line)
        if student:
            on_student(student)

    with scratch_tmp() as tmp:
        done = stream_lines([*NBGRADER, *args], cwd=cwd, timeout=timeout, on_line=on_line, env=_env(tmp))
    if done.timed_out:
        raise NbgraderFailed(args, done.output + f"\n(no end after {timeout:g} s: stopped)")
    if done.returncode != 0 or nbgrader_log.config_lost(done.output):
        raise NbgraderFailed(args, done.output)
    return done.output


def graded_test_cells(nb) -> dict[str, float]:
    """Autograded test cells of a notebook: grade id → points."""
    return {grade_id(c): float(nbgrader_meta(c).get("points", 0)) for c in test_cells(nb)}


@dataclass(frozen=True)
class GradedSubmission:
    name: str
    unit: str
    score: float
    max_score: float
    failing: tuple[str, ...] = ()
    seconds: float = 0.0
    errors: dict = field(default_factory=dict)

    @property
    def full_marks(self) -> bool:
        return self.score == self.max_score


def generate_release(units: tuple[str, ...] = UNITS, *, root: Path = REPO) -> list[Path]:
    """``nbgrader generate_assignment`` for each unit that has a source, into ``root/release``."""
    made = []
    for unit in units:
        if (root / "source" / unit / f"{unit}.ipynb").exists():
            # nbgrader gives each released cell its source cell's id (and `lucy sync` keeps those of unchanged
            # cells): the release is what a plain `nbgrader generate_assignment --force` writes, byte for byte.
            nbgrader(["generate_assignment", unit, "--force", "--no-db"], cwd=root)
            made.append(root / "release" / unit / f"{unit}.ipynb")
    return made


@dataclass(frozen=True)
class Release:
    """What ``release`` did: the notebooks it installed, or why it installed none."""

    released: tuple[Path, ...]
    problems: tuple[str, ...] = ()


def release(units: tuple[str, ...] = UNITS, *, root: Path = REPO, validate: bool = True) -> Release:
    """Regenerate and validate the release in a scratch copy of the course; only then replace
    ``root/release/<unit>``. When nbgrader fails (``NbgraderFailed``) or the release does not
    validate, ``root/release`` is left as it was."""
    units = tuple(u for u in units if (root / "source" / u / f"{u}.ipynb").exists())
    with tempfile.TemporaryDirectory(prefix="lucy-release-") as scratch:
        stage = Path(scratch)
        shutil.copy(root / "nbgrader_config.py", stage)
        for unit in units:
            shutil.copytree(root / "source" / unit, stage / "source" / unit,
                            ignore=shutil.ignore_patterns(".ipynb_checkpoints"))
        generate_release(units, root=stage)
        problems = validate_release(units, root=stage) if validate else []
        if problems:
            return Release((), tuple(problems))
        for unit in units:
            _replace_folder(stage / "release" / unit, root / "release" / unit)
    return Release(tuple(root / "release" / u / f"{u}.ipynb" for u in units))


def _replace_folder(new: Path, dest: Path) -> None:
    """Copy ``new`` beside ``dest``, then swap it in with renames."""
    incoming, old = dest.with_name(f".{dest.name}.incoming"), dest.with_name(f".{dest.name}.old")
    for leftover in (incoming, old):
        shutil.rmtree(leftover, ignore_errors=True)
    shutil.copytree(new, incoming)
    if dest.exists():
        os.replace(dest, old)
    os.replace(incoming, dest)
    shutil.rmtree(old, ignore_errors=True)


def validate_release(units: tuple[str, ...] = UNITS, *, root: Path = REPO) -> list[str]:
    """``nbgrader validate`` on each source (every test passes) and ``--invert`` on each release
    (every autograded test fails). Runs in a scratch copy: the notebooks write evidence files."""
    problems = []
    with tempfile.TemporaryDirectory(prefix="lucy-validate-") as scratch:
        scratch_root = Path(scratch)
        shutil.copy(root / "nbgrader_config.py", scratch_root)
        for area in ("source", "release"):
            shutil.copytree(root / area, scratch_root / area, ignore=shutil.ignore_patterns("*.md"))
        present = [unit for unit in units if (scratch_root / "source" / unit).exists()]
        # One nbgrader command per side; it prints one verdict per notebook, in order, without naming it.
        for area, flags, success, fault in (
                ("source", [], nbgrader_log.VALIDATE_PASSES, "does not pass its own tests"),
                ("release", ["--invert"], nbgrader_log.VALIDATE_INVERTED_PASSES, "passes a test although nothing is written")):
            notebooks = [f"{area}/{unit}/{unit}.ipynb" for unit in present]
            if not notebooks or nbgrader(["validate", *flags, *notebooks], cwd=scratch_root).count(success) == len(notebooks):
                continue
            for unit, notebook in zip(present, notebooks):  # something failed: say which, one at a time
                said = nbgrader(["validate", *flags, notebook], cwd=scratch_root)
                if success not in said:
                    problems.append(f"{area}/{unit} {fault}:\n{said[-1500:]}")
    return problems


class ScratchCourse:
    """A throwaway nbgrader course directory built from this repository's source/."""

    def __init__(self, root: Path, *, repo: Path = REPO, units: tuple[str, ...] = UNITS):
        self.root = Path(root)
        self.units = tuple(u for u in units if (repo / "source" / u / f"{u}.ipynb").exists())
        self.root.mkdir(parents=True, exist_ok=True)
        shutil.copy(repo / "nbgrader_config.py", self.root / "nbgrader_config.py")
        for unit in self.units:
            shutil.copytree(repo / "source" / unit, self.root / "source" / unit, dirs_exist_ok=True,
                            ignore=shutil.ignore_patterns("*.md", ".ipynb_checkpoints"))
            nbgrader(["generate_assignment", unit, "--force"], cwd=self.root)

    def copy(self, root: Path) -> "ScratchCourse":
        """Another course at ``root`` with everything this one holds: assignments, gradebook, submissions."""
        shutil.copytree(self.root, root)
        twin = object.__new__(ScratchCourse)  # nothing to generate: the copy has it all
        twin.root, twin.units = Path(root), self.units
        return twin

    def source(self, unit: str):
        return nbformat.read(str(self.root / "source" / unit / f"{unit}.ipynb"), as_version=4)

    def release(self, unit: str):
        return nbformat.read(str(self.root / "release" / unit / f"{unit}.ipynb"), as_version=4)

    def submit(self, student: str, unit: str, nb, extra_files: dict[str, str] | None = None) -> Path:
        folder = self.root / "submitted" / student / unit
        folder.mkdir(parents=True, exist_ok=True)
        nbformat.write(nb, str(folder / f"{unit}.ipynb"))
        for name, text in (extra_files or {}).items():
            (folder / name).write_text(text, encoding="utf-8")
        return folder

    def autograde(self, unit: str, student: str | None = None, *, timeout: float = 1800,
                  on_student=None) -> str:
        """Autograde one student, or every submitted student of ``unit`` in one nbgrader run.

        ``on_student(student_id)`` is called as nbgrader starts on each one (for a progress bar).
        """
        args = ["autograde", unit, "--force"] + ([f"--student={student}"] if student else [])
        if on_student is None:
            return nbgrader(args, cwd=self.root, timeout=timeout)
        return nbgrader_streaming(args, cwd=self.root, timeout=timeout, on_student=on_student)

    def graded(self, unit: str, student: str, *, name: str | None = None, seconds: float = 0.0) -> GradedSubmission:
        from nbgrader.api import Gradebook  # noqa: PLC0415 - nbgrader's package loads Jupyter server

        autograded = nbformat.read(str(self.root / "autograded" / student / unit / f"{unit}.ipynb"), as_version=4)
        errors = {}
        for cell in test_cells(autograded):
            for out in cell.get("outputs", []):
                if out.get("output_type") == "error":
                    errors[grade_id(cell)] = f"{out.get('ename')}: {out.get('evalue')}"[:400]
        with Gradebook(f"sqlite:///{self.root / 'gradebook.db'}") as gb:
            submission = gb.find_submission_notebook(unit, unit, student)
            failing, score, max_score = [], 0.0, 0.0
            for grade in submission.grades:
                if grade.cell.cell_type != "code":
                    continue  # written answers are marked by hand
                score += grade.auto_score or 0.0
                max_score += grade.max_score
                if (grade.auto_score or 0.0) < grade.max_score:
                    failing.append(grade.name)
            return GradedSubmission(name or student, unit, score, max_score, tuple(sorted(failing)), seconds, errors)

    def feedback(self, unit: str) -> list[Path]:
        """Generate the learners' HTML feedback for ``unit``; return the files written."""
        nbgrader(["generate_feedback", unit, "--force"], cwd=self.root)
        return sorted((self.root / "feedback").glob(f"*/{unit}/{unit}.html"))

    def export(self, to: Path):
        """Every grade in this course's gradebook, exported by nbgrader as CSV and read back with pandas."""
        import pandas as pd  # noqa: PLC0415 - slow to import, needed by export only

        nbgrader(["export", f"--to={to}"], cwd=self.root)
        return pd.read_csv(to)

