"""`lucy autograde --scheduler` against a real Dask cluster on loopback: its grades, its processes, its hole.

A real `dask scheduler` and two `dask worker` processes, started in the course folder as a
course on a server starts them, grade a small class through the `lucy` command into a
PostgreSQL gradebook owned by a role whose password is in a password file; plain
sequential `nbgrader autograde` grades the same class into SQLite, and the two must agree.
One more submission does what a learner on such a course could try: reach the scheduler
from inside the grading kernel and run a function on the workers, which grade outside the
sandbox, as root, in the course folder. It is handed the scheduler's real port (a learner
would scan loopback for it). The sandbox's network namespace of its own refuses it. A
second cluster, with a certificate authority made here by the README's `openssl`
commands, grades through TLS and refuses a client with any other certificate.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator

import dask
import nbformat
import pytest
from sqlalchemy.engine import make_url

from lucy_runtime.grading import sandbox
from lucy_runtime.notebooks.cells import is_learner_owned
from lucy_runtime.cli.main import main
from lucy_runtime.course.course import REPO, ScratchCourse, nbgrader
from lucy_runtime.course.scheduler import TlsFiles, connect
from lucy_runtime.proof.verify import filled

from .conftest import need_sandbox
from .pg import postgres

pytestmark = [pytest.mark.nbgrader, pytest.mark.slow]

UNIT = "ch07_unit_a"
CLASS = ("correct", "blank")
HOSTILE = "reach-the-scheduler"
MARKER = "written-by-the-learner-on-a-worker"
ROLE = ("lucy", "a-password-only-the-graders-hold")  # the gradebook's owner, as the README makes it
DASK = Path(sys.executable).parent / "dask"

# The learner's cell, in the kernel (the sealed re-check's children would only try the same
# again): reach the scheduler, run a function on every worker (Client.run: at once, outside
# any task queue), and say what happened. Only a connection that fails is caught (Dask's are
# OSErrors), so a cell that could not even import Dask says so instead of passing. The rest
# of the notebook stays the blank release.
REACH = '''
if __name__ == "__main__":
    from distributed import Client as _Client

    def _plant():
        import os
        with open(os.path.join(os.getcwd(), MARKER), "w") as fh:
            fh.write(f"uid={os.getuid()} cwd={os.getcwd()}")
        return os.getcwd()

    try:
        with _Client(f"tcp://127.0.0.1:{PORT}", timeout=5) as _client:
            print("reached the scheduler; the workers ran it in", sorted(set(_client.run(_plant).values())))
    except OSError as _error:
        print("no scheduler in reach:", type(_error).__name__)
'''


@dataclass(frozen=True)
class Cluster:
    address: str
    folder: Path  # the scheduler file, the workers' scratch folders and every process's log


@contextmanager
def dask_cluster(course: Path, folder: Path, *, workers: int, tls: TlsFiles | None = None) -> Iterator[Cluster]:
    """A `dask scheduler` and ``workers`` `dask worker` processes on 127.0.0.1, each in a process group
    of its own and working in the course folder; stopped on leaving, the workers first (SIGTERM, then
    SIGKILL after 30 s)."""
    folder.mkdir(parents=True)
    scheduler_file = folder / "scheduler.json"
    security = ["--tls-ca-file", tls.ca_file, "--tls-cert", tls.cert, "--tls-key", tls.key] if tls else []
    started: list[subprocess.Popen] = []

    def start(*args: str) -> None:
        with (folder / f"{len(started)}-{args[0]}.log").open("w") as log:
            started.append(subprocess.Popen([str(DASK), *args], cwd=course, stdout=log, stderr=subprocess.STDOUT,
                                            start_new_session=True))

    try:
        start("scheduler", "--host", "127.0.0.1", "--port", "0", "--no-dashboard", "--scheduler-file",
              str(scheduler_file), *(["--protocol", "tls"] if tls else []), *security)
        deadline = time.monotonic() + 60
        while not scheduler_file.exists() and time.monotonic() < deadline:
            assert started[0].poll() is None, (folder / "0-scheduler.log").read_text()
            time.sleep(0.2)
        address = json.loads(scheduler_file.read_text())["address"]
        for i in range(workers):
            start("worker", address, "--name", f"grader-{i}", "--nthreads", "1", "--no-nanny", "--no-dashboard",
                  "--local-directory", str(folder / f"worker-{i}"), *security)
        with connect(address, tls) as client:
            client.wait_for_workers(workers, timeout=60)
        yield Cluster(address, folder)
    finally:
        for process in reversed(started):  # the workers first: each says goodbye to a scheduler still there
            os.killpg(process.pid, signal.SIGTERM)
            try:
                process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                os.killpg(process.pid, signal.SIGKILL)
                process.wait()


def processes_of(course: Path, folder: Path) -> list[str]:
    """Every process still working in the course folder, or naming the cluster's folder (the scheduler
    file and the workers' scratch folders are on each dask command line)."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            command = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
            cwd = os.readlink(entry / "cwd")
        except OSError:  # gone meanwhile, or a kernel thread
            continue
        if str(folder) in command or cwd == str(course) or cwd.startswith(f"{course}/"):
            found.append(f"{entry.name} ({cwd}): {command}")
    return found


def lucy(*args: str) -> subprocess.CompletedProcess:
    """The `lucy` command, as an educator types it (the same interpreter, so the same package)."""
    return subprocess.run([sys.executable, "-m", "lucy_runtime.cli", *args], capture_output=True, text=True,
                          timeout=900)


def gradebook_entries(root: Path, students) -> dict:
    from nbgrader.api import Gradebook

    from lucy_runtime.grading.gradebook import course_db_url

    with Gradebook(course_db_url(root)) as gb:
        return {(s, g.name): (g.auto_score, g.max_score, g.needs_manual_grade)
                for s in students for g in gb.find_submission_notebook(UNIT, UNIT, s).grades}


def printed(root: Path, student: str) -> str:
    """What the first learner cell of a graded notebook printed."""
    nb = nbformat.read(str(root / "autograded" / student / UNIT / f"{UNIT}.ipynb"), as_version=4)
    cell = next(c for c in nb.cells if is_learner_owned(c))
    return "".join(o.get("text", "") for o in cell.get("outputs", []))


def refusal(address) -> str:
    """What PostgreSQL says to the gradebook's role without its password (no password file at all)."""
    import psycopg

    try:
        psycopg.connect(host=address.host, port=address.port, user=address.username, dbname=address.database,
                        passfile="/nonexistent", connect_timeout=10).close()
    except psycopg.OperationalError as error:
        return str(error)
    return "connected without the password"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@dataclass(frozen=True)
class Graded:
    sequential: Path  # the class graded by one plain `nbgrader autograde`, SQLite gradebook
    tls_course: Path  # the same course, ungraded, with the correct submission alone
    course: Path  # the class and the hostile submission, graded on the cluster, PostgreSQL gradebook
    done: subprocess.CompletedProcess
    entries: dict
    hostile_printed: str
    running: list[str]  # the cluster's processes, found while it ran
    left: list[str]  # the same search once it was stopped
    without_password: str  # what the gradebook's server said to a connection without the role's password


@pytest.fixture(scope="module")
def graded(tmp_path_factory) -> Graded:
    root = tmp_path_factory.mktemp("cluster")
    course = ScratchCourse(root / "sequential", units=(UNIT,))
    release, source = course.release(UNIT), course.source(UNIT)
    course.submit("correct", UNIT, filled(release, source))
    course.submit("blank", UNIT, release)
    tls_course = course.copy(root / "tls").root
    shutil.rmtree(tls_course / "submitted" / "blank")
    on_cluster = root / "on-cluster"
    shutil.copytree(course.root, on_cluster, ignore=shutil.ignore_patterns("gradebook.db"))
    nbgrader(["autograde", UNIT, "--force"], cwd=course.root)
    with postgres(role=ROLE) as url, pytest.MonkeyPatch.context() as patch:
        address = make_url(url)
        pgpass = root / "pgpass"  # the README's ~/.pgpass line, in a file of this test's own
        pgpass.write_text(f"127.0.0.1:{address.port}:{address.database}:{address.username}:{ROLE[1]}\n")
        pgpass.chmod(0o600)
        without_password = refusal(address)
        patch.setenv("PGPASSFILE", str(pgpass))  # for lucy, the workers and nbgrader, and this process
        with (on_cluster / "nbgrader_config.py").open("a") as config:
            config.write(f"\nc.CourseDirectory.db_url = {url!r}\n")
        with dask_cluster(on_cluster, root / "dask", workers=2) as cluster:
            nbgrader(["generate_assignment", UNIT, "--force"], cwd=on_cluster)
            hostile = nbformat.read(str(on_cluster / "release" / UNIT / f"{UNIT}.ipynb"), as_version=4)
            cell = next(c for c in hostile.cells if is_learner_owned(c))
            cell.source = f"PORT = {cluster.address.rsplit(':', 1)[1]}\nMARKER = {MARKER!r}\n{REACH}\n{cell.source}"
            target = on_cluster / "submitted" / HOSTILE / UNIT
            target.mkdir(parents=True)
            nbformat.write(hostile, str(target / f"{UNIT}.ipynb"))
            done = lucy("autograde", UNIT, "--scheduler", cluster.address, "--course", str(on_cluster), "--timeout", "600")
            entries = gradebook_entries(on_cluster, CLASS)
            running = processes_of(on_cluster, root / "dask")
    time.sleep(1)  # a process the cluster's stop left would still be there; give the kernel a moment to reap
    return Graded(course.root, tls_course, on_cluster, done, entries, printed(on_cluster, HOSTILE),
                  running, processes_of(on_cluster, root / "dask"), without_password)


def test_a_dask_cluster_grades_a_class_into_postgresql_as_sequential_nbgrader_does(graded):
    assert graded.done.returncode == 0, graded.done.stdout + graded.done.stderr
    assert f"3 of 3 submissions of {UNIT} graded" in graded.done.stdout
    assert graded.entries == gradebook_entries(graded.sequential, CLASS)
    assert any(score for score, _, _ in graded.entries.values()), "the correct submission earned nothing"
    assert not (graded.course / "gradebook.db").exists()


def test_the_gradebook_takes_its_password_from_the_password_file_and_refuses_a_connection_without_it(graded):
    assert graded.done.returncode == 0 and graded.entries
    assert "no password supplied" in graded.without_password


def test_a_plain_tcp_scheduler_is_named_as_open_to_anyone_who_reaches_it(graded):
    assert "WARNING: the scheduler at tcp://127.0.0.1:" in graded.done.stderr
    assert "Use a tls:// scheduler" in graded.done.stderr


def test_no_process_of_the_cluster_or_of_grading_is_left_once_the_cluster_is_stopped(graded):
    assert len([p for p in graded.running if " worker " in p]) == 2 and [p for p in graded.running if " scheduler " in p]
    assert graded.left == []


def test_learner_code_cannot_reach_the_scheduler_and_run_code_on_the_workers(graded):
    """Before the sandbox had a network of its own, this failed: the kernel reached the host's loopback,
    and the workers wrote the learner's marker in the course folder as uid 0."""
    box = sandbox.detect()
    need_sandbox(box)
    marker = graded.course / MARKER
    assert not marker.exists(), (f"learner code ran on a worker, outside the sandbox: {marker.read_text()}; "
                                 f"the kernel printed: {graded.hostile_printed!r}")
    assert "no scheduler in reach" in graded.hostile_printed, "the learner's cell never ran: this proves nothing"
    assert graded.entries == gradebook_entries(graded.sequential, CLASS)


# --- a TLS scheduler ---------------------------------------------------------------------------

# The README's commands (A class on a server), as written: a certificate authority, and one
# certificate it signed for the scheduler, the workers and `lucy` alike.
OPENSSL = ("openssl req -x509 -newkey rsa:2048 -nodes -days 365 -subj /CN=ch07-grading-ca -keyout ca.key -out ca.pem",
           "openssl req -newkey rsa:2048 -nodes -subj /CN=ch07-grader -keyout grader.key -out grader.csr",
           "openssl x509 -req -in grader.csr -CA ca.pem -CAkey ca.key -CAcreateserial -days 365 -out grader.pem")


def certificate_authority(folder: Path) -> TlsFiles:
    """A certificate authority of its own in ``folder``, by the README's commands: run twice, the same
    names, other keys."""
    folder.mkdir(parents=True)
    for command in OPENSSL:
        subprocess.run(command.split(), cwd=folder, check=True, capture_output=True, timeout=60)
    return TlsFiles(str(folder / "ca.pem"), str(folder / "grader.pem"), str(folder / "grader.key"))


def test_the_server_guide_makes_the_certificates_with_the_commands_tested_here():
    readme = (REPO / "docs" / "class-on-a-server.md").read_text(encoding="utf-8")
    assert [command for command in OPENSSL if command not in readme] == []


@dataclass(frozen=True)
class TlsCluster:
    address: str
    tls: TlsFiles
    done: subprocess.CompletedProcess  # the correct submission, graded through the TLS scheduler


@pytest.fixture(scope="module")
def tls_cluster(graded, tmp_path_factory) -> Iterator[TlsCluster]:
    root = tmp_path_factory.mktemp("tls")
    tls = certificate_authority(root / "certificates")
    with dask_cluster(graded.tls_course, root / "dask", workers=1, tls=tls) as cluster:
        done = lucy("autograde", UNIT, "--scheduler", cluster.address, "--course", str(graded.tls_course),
                    "--tls-ca-file", str(tls.ca_file), "--tls-cert", str(tls.cert), "--tls-key", str(tls.key))
        yield TlsCluster(cluster.address, tls, done)


def test_a_tls_scheduler_grades_with_the_course_s_certificate(graded, tls_cluster):
    done = tls_cluster.done
    assert tls_cluster.address.startswith("tls://127.0.0.1:")
    assert done.returncode == 0 and "WARNING" not in done.stderr, done.stdout + done.stderr
    assert f"1 of 1 submissions of {UNIT} graded" in done.stdout
    assert gradebook_entries(graded.tls_course, ["correct"]) == gradebook_entries(graded.sequential, ["correct"])


def test_a_tls_scheduler_refuses_a_certificate_of_anyone_s_own_making_in_one_clear_line(graded, tls_cluster,
                                                                                       tmp_path, capsys):
    mine = certificate_authority(tmp_path / "mine")  # the same names as the course's
    notebook = graded.tls_course / "autograded" / "correct" / UNIT / f"{UNIT}.ipynb"
    before = notebook.stat().st_mtime_ns
    for ca_file in (mine.ca_file, tls_cluster.tls.ca_file):  # their own authority; the course's, with their own certificate
        code = main(["autograde", UNIT, "--course", str(graded.tls_course), "--scheduler", tls_cluster.address,
                     "--tls-ca-file", ca_file, "--tls-cert", mine.cert, "--tls-key", mine.key])
        err = capsys.readouterr().err
        assert code == 2 and "the handshake failed" in err and "Traceback" not in err, err
    assert notebook.stat().st_mtime_ns == before


def test_a_tls_scheduler_with_no_certificate_for_it_is_refused_before_connecting(graded, tls_cluster, capsys):
    assert main(["autograde", UNIT, "--course", str(graded.tls_course), "--scheduler", tls_cluster.address]) == 2
    assert "is a TLS scheduler, and this client has no certificate for it" in capsys.readouterr().err


def test_a_scheduler_nobody_answers_at_is_refused_in_one_clear_line(graded, capsys):
    with dask.config.set({"distributed.comm.timeouts.connect": "3s"}):
        code = main(["autograde", UNIT, "--course", str(graded.tls_course), "--scheduler",
                     f"tcp://127.0.0.1:{free_port()}"])
    err = capsys.readouterr().err
    assert code == 2 and "nothing answered in time" in err and "Traceback" not in err, err


def test_the_tls_settings_can_come_from_dask_s_own_configuration(tls_cluster):
    tls = tls_cluster.tls
    with dask.config.set({"distributed.comm.tls.ca-file": tls.ca_file, "distributed.comm.tls.client.cert": tls.cert,
                          "distributed.comm.tls.client.key": tls.key}):
        with connect(tls_cluster.address) as client:
            assert len(client.scheduler_info()["workers"]) == 1
