"""Learner code cannot reach the course while it is graded (lucy_runtime/grading/sandbox.py).

Each trick below is a blank release with one learner cell changed, autograded by real
``nbgrader autograde``. The trick reports what it could reach through a Unix socket in
the test's channel folder (``sandbox.TEST_CHANNEL``: the network is shut), from the
kernel and from the sealed re-check's children alike, so a test can tell "refused" from
"never ran".
"""

from __future__ import annotations

import contextlib
import hashlib
import html
import json
import os
import socket
import subprocess
import threading
import time
from pathlib import Path

import pytest

from lucy_runtime.grading import orchestrator
from lucy_runtime.grading import sandbox
from lucy_runtime.course.course import REPO, ScratchCourse
from lucy_runtime.notebooks.cells import is_learner_owned

from .conftest import need, need_sandbox, temporary_folder_at

UNIT = "ch07_unit_a"
ROWS_PY = REPO / "lucy_runtime" / "checker" / "rows.py"


# --- the sandbox's command line and environment (fast) ---------------------------------------

def test_the_sandbox_command_carries_no_nbgrader_variable_and_no_course_path(tmp_path, monkeypatch):
    course = tmp_path / "course"
    folder = course / "autograded" / "alice" / UNIT
    monkeypatch.setenv("NBGRADER_EXECUTION", "autograde")
    monkeypatch.setenv("LUCY_COURSE", str(course))
    box = sandbox.Sandbox("user", "/usr/bin/bwrap", 999, 995, "lucy-grader", runtime=tmp_path / "snapshot")
    argv = box.command(["python", "-m", "ipykernel_launcher"], workdir=folder, work_source=tmp_path / "copy")
    env = {argv[i + 1]: argv[i + 2] for i, a in enumerate(argv) if a == "--setenv"}
    assert "--clearenv" in argv and argv.index("--clearenv") < argv.index("--setenv")
    assert not [k for k in env if k.startswith("NBGRADER")] and "NBGRADER_EXECUTION" not in " ".join(argv)
    assert not [v for v in env.values() if str(course) in v]
    assert env["LUCY_GRADING"] == "sealed" and env["PYTHONPATH"] == sandbox.RUNTIME_IN_BOX
    mounted = [argv[i + 2] for i, a in enumerate(argv) if a in ("--bind", "--ro-bind")]
    assert [m for m in mounted if str(course) in m] == [str(folder)]  # the one folder, nothing else of the course
    assert ["--bind", str(tmp_path / "copy"), str(folder)] == argv[argv.index(str(folder)) - 2:argv.index(str(folder)) + 1]
    assert str(REPO) not in mounted and "/" not in mounted
    for flag in ("--unshare-pid", "--die-with-parent", "--new-session"):
        assert flag in argv
    assert argv[argv.index("--") + 1:][:4] == ["/usr/bin/setpriv", "--reuid=999", "--regid=995", "--clear-groups"]


def test_unit_b_sees_only_its_own_students_unit_a(tmp_path):
    course = tmp_path / "course"
    for student in ("alice", "bob"):
        path = course / "submitted" / student / UNIT / f"{UNIT}.ipynb"
        path.parent.mkdir(parents=True)
        path.write_text("{}")
    folder = course / "autograded" / "alice" / "ch07_unit_b"
    assert sandbox.own_unit_a(folder) == [course / "submitted" / "alice" / UNIT / f"{UNIT}.ipynb"]
    assert sandbox.own_unit_a(course / "autograded" / "alice" / UNIT) == []


def test_without_bubblewrap_grading_says_so_once(monkeypatch, capsys):
    monkeypatch.setattr(sandbox.shutil, "which", lambda *a, **k: None)
    monkeypatch.delenv(sandbox.ENV_SWITCH, raising=False)
    sandbox.detect.cache_clear()
    try:
        box = sandbox.detect()
    finally:
        sandbox.detect.cache_clear()
    assert box.mode == "none" and "bubblewrap (bwrap) is not installed" in box.warning()
    monkeypatch.setattr(sandbox, "_warned", set())
    for _ in range(2):
        report = orchestrator.run_sealed_rows([], [], timeout=1.0, box=box)
        assert report.results == ()
    err = capsys.readouterr().err
    assert err.count("WARNING: no grading isolation") == 1 and box.describe() == box.warning()


def test_a_child_drops_to_the_grader_user_and_keeps_no_inherited_descriptor(monkeypatch, tmp_path):
    need("root", os.geteuid() == 0, "dropping to the grader user needs root (CI runs as root)")
    from lucy_runtime.engine import confine
    from lucy_runtime.engine.supervisor import run_in_child

    _, uid, gid = sandbox.grader_account()
    inherited = os.open(tmp_path / "secret", os.O_CREAT | os.O_WRONLY, 0o600)
    monkeypatch.setattr(confine, "_drop_to", (uid, gid))
    try:
        seen = run_in_child(lambda: (os.getuid(), os.getgid(), os.getgroups(), _is_open(inherited)))
    finally:
        os.close(inherited)
    assert seen.ok and seen.value == [uid, gid, [], False], seen  # answers travel as JSON: lists


def test_the_sealed_recheck_runs_learner_cells_in_the_sandbox_as_the_grader_user(tmp_path):
    from lucy_runtime.checker.rows import ROWS

    box = sandbox.detect()
    need_sandbox(box)
    listener = Listener(tmp_path / "channel")
    secret = tmp_path / "secret.txt"
    secret.write_text("the reference")
    secret.chmod(0o644)
    cell = (f"CHANNEL = {listener.path!r}\n" + REPORT + "import os\n"
            f"_lucy_report('sealed', sees={str(secret)!r} if os.path.exists({str(secret)!r}) else None,\n"
            "             env=sorted(k for k in os.environ if k.startswith('NBGRADER')))\n")
    row = next(r.id for r in ROWS.values() if r.unit == "A")
    with listener.open_to_the_sandbox():
        report = orchestrator.run_sealed_rows([(f"{UNIT}:create_schema", cell)], [row], timeout=2.0, box=box)
    assert [r.row_id for r in report.results] == [row] and not report.passed and report.title == "sealed"
    seen = listener.of("sealed")
    assert seen and all(r["where"] == "learner" and r["sees"] is None and r["env"] == [] for r in seen), seen
    if box.drops_user:
        assert {r["uid"] for r in seen} == {box.uid}


def test_the_reference_passes_every_graded_row_in_the_sealed_sandbox_as_it_does_unsealed():
    """A row that only works when learner code and the observer are one user (the observer's
    -wal/-shm files left read-only for the grader user) fails here, not first under nbgrader."""
    from lucy_runtime.checker.rows import ROWS
    from lucy_runtime.notebooks.notebook import learner_implementation

    box = sandbox.detect()
    need_sandbox(box)
    cells = learner_implementation(REPO / "source")
    rows = [r.id for r in ROWS.values() if r.unit in ("A", "B")]
    report = orchestrator.run_sealed_rows(cells, rows, timeout=5.0, box=box)
    assert [r.observation for r in report.results if not r.passed] == []


def _is_open(fd: int) -> bool:
    try:
        os.fstat(fd)
        return True
    except OSError:
        return False


# --- the tricks, through real nbgrader ------------------------------------------------------

REPORT = '''
import json as _j, os as _o, socket as _s
def _lucy_report(kind, **data):
    flag = f"/tmp/.lucy-trick-{kind}-{__name__}"
    if _o.path.exists(flag):
        return
    open(flag, "w").close()
    data.update(kind=kind, where=__name__, uid=_o.getuid())
    with _s.socket(_s.AF_UNIX) as c:
        c.settimeout(5)
        c.connect(CHANNEL)
        c.sendall(_j.dumps(data).encode())
'''

READ = '''
import pathlib
here = pathlib.Path.cwd()
found = [str(d / n) for d in [here, *here.parents] for n in ("source", "gradebook.db", "nbgrader_config.py", "release")
         if (d / n).exists()]
# The repository may hold the virtualenv (make puts it in .venv): that read-only folder may show, nothing else of it.
found += [p for p in (COURSE + "/source", COURSE + "/gradebook.db", COURSE + "/submitted/b-detach") if _o.path.exists(p)]
found += [REPO + "/" + n for n in (_o.listdir(REPO) if _o.path.isdir(REPO) else []) if n != ".venv"]
if __name__ == "__main__":  # everything but the system and the Python installation (nbgrader ships examples)
    import sys
    skip = {"/proc", "/sys", "/dev", "/usr", sys.prefix, sys.base_prefix}
    for root, dirs, files in _o.walk("/"):
        dirs[:] = [d for d in dirs if _o.path.join(root, d) not in skip]
        found += [_o.path.join(root, f) for f in files if f in ("gradebook.db", "nbgrader_config.py")
                  or f == "ch07_unit_a.ipynb" and "source" in root]
def _leaks(value):
    return any(COURSE in part or REPO in part and not part.startswith(REPO + "/.venv")
               for part in value.split(_o.pathsep))


env = sorted(k for k, v in _o.environ.items()  # PWD is the working folder, which is the submission's path
             if k.startswith("NBGRADER") or k != "PWD" and _leaks(v))
for path in found:  # the trick: run the reference's solution cells
    if path.endswith(".ipynb") and "source" in path:
        for cell in _j.load(open(path))["cells"]:
            if cell.get("metadata", {}).get("nbgrader", {}).get("solution") and cell["cell_type"] == "code":
                exec("".join(cell["source"]), globals())
_lucy_report("read", found=found, env=env, lucy_grading=_o.environ.get("LUCY_GRADING"))
'''

DETACH = '''
import sqlite3, time
if not _o.path.exists("/tmp/.lucy-detached-" + __name__):
    open("/tmp/.lucy-detached-" + __name__, "w").close()
    pid = _o.fork()
    if pid == 0:
        _o.setsid()
        if _o.fork() == 0:
            try:
                _lucy_report("detach-started")
                time.sleep(3)
                for target in (COURSE + "/gradebook.db", COURSE + "/marker"):
                    try:
                        with open(target, "a") as fh:
                            fh.write("forged")
                    except OSError:
                        pass
                try:
                    with sqlite3.connect(COURSE + "/gradebook.db") as db:
                        db.execute("UPDATE grade SET auto_score = max_score")
                except Exception:
                    pass
                for i in range(40):
                    _o.remove(f"/tmp/.lucy-trick-detach-alive-{__name__}") if i else None
                    _lucy_report("detach-alive", at=i)
                    time.sleep(0.5)
            finally:
                _o._exit(0)
        _o._exit(0)
    _o.waitpid(pid, 0)
'''

TAMPER = '''
import lucy_runtime, pathlib
rows = pathlib.Path(lucy_runtime.__file__).parent / "checker" / "rows.py"
try:
    with open(rows, "a") as fh:  # opening for append is the attempt; nothing is written either way
        fh.write("")
    result = "writable"
except OSError as error:
    result = type(error).__name__
_lucy_report("tamper", path=str(rows), result=result, checkout=_o.path.exists(REPO + "/lucy_runtime/checker/rows.py"))
'''

FINISH = '''
import pathlib
here = pathlib.Path.cwd()
candidates = [d / "source" / "ch07_unit_a" / "ch07_unit_a.ipynb" for d in [here, *here.parents]]
candidates.append(pathlib.Path(COURSE) / "source" / "ch07_unit_a" / "ch07_unit_a.ipynb")
shown = False
for path in candidates:
    if path.exists():
        for cell in _j.load(open(path))["cells"]:
            if "def finish" in "".join(cell["source"]):
                print("".join(cell["source"]))
                shown = True
if not shown:
    print("no reference in reach")
_lucy_report("finish", shown=shown)
'''

NETWORK = '''
try:
    with _s.create_connection(("127.0.0.1", HOST_PORT), timeout=3) as c:
        c.sendall(b"reached the host")
    reached = "connected"
except OSError as error:
    reached = type(error).__name__
_lucy_report("network", reached=reached, interfaces=sorted(name for _, name in _s.if_nameindex()))
'''

TRICKS = {"a-read": READ, "b-detach": DETACH, "c-tamper": TAMPER, "d-finish": FINISH, "f-network": NETWORK}
LATER = "e-reference"


class Listener:
    """Collects what the tricks report, with the time each report arrived, on a Unix socket in
    a folder of its own that the sandbox binds while ``open_to_the_sandbox`` holds."""

    def __init__(self, folder: Path):
        folder.mkdir(parents=True, exist_ok=True)
        folder.chmod(0o777)
        self.folder, self.path = folder, str(folder / "report.sock")
        self.server = socket.socket(socket.AF_UNIX)
        self.server.bind(self.path)
        os.chmod(self.path, 0o777)  # the grader user connects too
        self.server.listen(64)
        self.reports: list[tuple[float, dict]] = []
        threading.Thread(target=self._serve, daemon=True).start()

    @contextlib.contextmanager
    def open_to_the_sandbox(self):
        before = os.environ.get(sandbox.TEST_CHANNEL)
        os.environ[sandbox.TEST_CHANNEL] = str(self.folder)
        try:
            yield
        finally:
            if before is None:
                os.environ.pop(sandbox.TEST_CHANNEL, None)
            else:
                os.environ[sandbox.TEST_CHANNEL] = before

    def _serve(self):
        while True:
            try:
                conn, _ = self.server.accept()
            except OSError:
                return
            data = b""
            with conn, contextlib.suppress(OSError):
                conn.settimeout(5)
                while chunk := conn.recv(65536):
                    data += chunk
            try:
                self.reports.append((time.monotonic(), json.loads(data)))
            except ValueError:  # a reporter killed while it sent (a run's processes end with it): not a report
                continue

    def of(self, kind: str) -> list[dict]:
        return [r for _, r in self.reports if r["kind"] == kind]


@pytest.fixture(scope="module")
def graded(tmp_path_factory):
    box = sandbox.detect()
    need_sandbox(box)
    listener = Listener(tmp_path_factory.mktemp("channel"))
    host = socket.create_server(("127.0.0.1", 0))  # a service on the grading machine's loopback
    host.settimeout(0.5)
    course = ScratchCourse(tmp_path_factory.mktemp("isolation") / "course", units=(UNIT,))
    release = course.release(UNIT)
    for student, trick in TRICKS.items():
        nb = course.release(UNIT)
        cell = next(c for c in nb.cells if is_learner_owned(c))
        cell.source = (f"CHANNEL = {listener.path!r}\nHOST_PORT = {host.getsockname()[1]}\n"
                       f"COURSE = {str(course.root)!r}\nREPO = {str(REPO)!r}\n"
                       + REPORT + trick + "\n" + cell.source)
        course.submit(student, UNIT, nb)
    course.submit(LATER, UNIT, course.source(UNIT))
    rows_before = hashlib.sha256(ROWS_PY.read_bytes()).hexdigest()
    with listener.open_to_the_sandbox():
        course.autograde(UNIT)
    returned = time.monotonic()
    host_reached = 0
    with contextlib.suppress(OSError):
        while True:
            host.accept()[0].close()
            host_reached += 1
    host.close()
    time.sleep(5)  # a detached process that survived would report "alive" every half second
    feedback = {p.parts[-3]: p.read_text(encoding="utf-8") for p in course.feedback(UNIT)}
    export = course.export(course.root.parent / "grades.csv")
    return {"box": box, "course": course, "listener": listener, "returned": returned, "release": release,
            "host_reached": host_reached,
            "feedback": feedback, "export": export,
            "rows_unchanged": rows_before == hashlib.sha256(ROWS_PY.read_bytes()).hexdigest(),
            "scores": {s: course.graded(UNIT, s).score for s in [*TRICKS, LATER]},
            "full": course.graded(UNIT, LATER).max_score}


def _ran_in_kernel_and_sealed_children(reports: list[dict]) -> set[str]:
    return {r["where"] for r in reports}


@pytest.mark.nbgrader
def test_a_cell_that_looks_for_the_course_finds_nothing_and_scores_blank(graded):
    reports = graded["listener"].of("read")
    assert _ran_in_kernel_and_sealed_children(reports) == {"__main__", "learner"}
    for report in reports:
        assert report["found"] == [] and report["env"] == [], report
        assert report["lucy_grading"] == "sealed"
        if graded["box"].drops_user:
            assert report["uid"] == graded["box"].uid
    assert graded["scores"]["a-read"] == 0


@pytest.mark.nbgrader
def test_learner_code_reaches_no_service_on_the_grading_machine_and_has_only_its_own_loopback(graded):
    reports = graded["listener"].of("network")
    assert _ran_in_kernel_and_sealed_children(reports) == {"__main__", "learner"}
    for report in reports:
        assert report["reached"] in ("ConnectionRefusedError", "OSError"), report
        assert report["interfaces"] == ["lo"], report
    assert graded["host_reached"] == 0
    assert graded["scores"]["f-network"] == 0


@pytest.mark.nbgrader
def test_a_detached_process_is_dead_when_autograde_returns_and_the_grades_stand(graded):
    listener = graded["listener"]
    assert listener.of("detach-started"), "the detached process never started: the test proves nothing"
    late = [r for t, r in listener.reports if r["kind"] == "detach-alive" and t > graded["returned"] + 1.0]
    assert late == []
    assert not (graded["course"].root / "marker").exists()
    assert graded["scores"]["b-detach"] == 0
    exported = graded["export"].set_index("student_id")
    assert float(exported.loc["b-detach", "raw_score"]) == 0


@pytest.mark.nbgrader
def test_the_runtime_the_kernel_imports_cannot_be_changed_and_a_later_submission_is_unaffected(graded):
    reports = graded["listener"].of("tamper")
    assert _ran_in_kernel_and_sealed_children(reports) == {"__main__", "learner"}
    for report in reports:
        assert report["result"] in ("OSError", "PermissionError") and not report["checkout"], report
        assert report["path"].startswith(sandbox.RUNTIME_IN_BOX)
    assert graded["rows_unchanged"]
    assert graded["scores"]["c-tamper"] == 0
    assert graded["scores"][LATER] == graded["full"] >= 20


@pytest.mark.nbgrader
def test_a_cell_cannot_print_the_reference_into_its_own_feedback(graded):
    assert all(not r["shown"] for r in graded["listener"].of("finish"))
    reference = next(c.source for c in graded["course"].source(UNIT).cells if "def finish" in c.source)
    released = next(c.source for c in graded["release"].cells if "def finish" in c.source)
    secret = [line.strip() for line in reference.splitlines()
              if len(line.strip()) > 25 and line.strip() not in released]
    assert secret, "no solution line to look for"
    page = html.unescape(graded["feedback"]["d-finish"])
    assert "no reference in reach" in page
    assert [line for line in secret if line in page] == []
    assert graded["scores"]["d-finish"] == 0


# --- the sandboxed kernel on its own ----------------------------------------------------------

@contextlib.asynccontextmanager
async def grading_kernel(folder):
    """A kernel started as nbgrader starts it under grading, and its client; shut down and cleaned up after."""
    from lucy_runtime.grading.kernel import SandboxedKernelManager

    km = SandboxedKernelManager(kernel_name="python3")
    await km.start_kernel(cwd=str(folder))
    kc = km.client()
    kc.start_channels()
    try:
        await kc.wait_for_ready(timeout=60)
        yield km, kc
    finally:
        kc.stop_channels()
        await km.shutdown_kernel(now=False)
        await km.cleanup_resources()


def test_a_sandboxed_kernel_can_be_interrupted_and_takes_its_processes_with_it(tmp_path):
    """nbgrader interrupts a cell that runs too long: bwrap passes no SIGINT on, so it goes by message."""
    import asyncio

    box = sandbox.detect()
    need_sandbox(box)
    folder = tmp_path / "notebook"
    folder.mkdir()
    sleeper = f"300.{os.getpid()}{time.monotonic_ns() % 100000}"  # names this test's process on the host

    async def run():
        printed: list[str] = []
        async with grading_kernel(folder) as (km, kc):
            assert km.sandbox_provisioner is not None  # jupyter_client started it through the course's provisioner
            scratch = km.sandbox_provisioner.scratch
            reply = await kc.execute_interactive(
                "import os, subprocess\n"
                f"child = subprocess.Popen(['sleep', '{sleeper}'], start_new_session=True)\n"
                "print(os.getuid(), os.getcwd(), os.listdir('.'))", timeout=30,
                output_hook=lambda m: printed.append(m["content"].get("text", "")))
            assert reply["content"]["status"] == "ok"
            uid, cwd, listing = "".join(printed).split(" ", 2)
            assert cwd == str(folder) and listing.strip() == "[]"
            assert int(uid) == (box.uid if box.drops_user else os.getuid())
            assert subprocess.run(["pgrep", "-f", f"sleep {sleeper}"], capture_output=True).returncode == 0
            msg_id = kc.execute("while True: pass")
            await asyncio.sleep(1.5)
            await km.interrupt_kernel()
            reply = await kc._async_get_shell_msg(timeout=20)
            while reply["parent_header"].get("msg_id") != msg_id:
                reply = await kc._async_get_shell_msg(timeout=20)
            assert reply["content"]["status"] == "error" and reply["content"]["ename"] == "KeyboardInterrupt"
            assert await km.is_alive()
        return scratch

    scratch = asyncio.run(run())
    time.sleep(0.5)
    assert subprocess.run(["pgrep", "-f", f"sleep {sleeper}"], capture_output=True).returncode == 1
    assert not scratch.exists()


def test_an_unsandboxed_grading_kernel_keeps_the_notebook_s_temporary_files_in_a_folder_deleted_with_it(tmp_path, monkeypatch):
    """Without bubblewrap, a notebook's tempfile.mkdtemp() workspace would stay in the machine's /tmp
    after every graded submission; the kernel gets a temporary folder of its own instead."""
    import asyncio

    monkeypatch.setattr(sandbox, "detect", lambda: sandbox.Sandbox("none", reason="a test without a sandbox"))
    temporary_folder_at(monkeypatch, tmp_path)  # where this process makes the kernel's folder
    printed: list[str] = []

    async def run():
        async with grading_kernel(tmp_path) as (km, kc):
            await kc.execute_interactive("import tempfile\nprint(tempfile.mkdtemp(prefix='ch07-unit-a-'))", timeout=30,
                                         output_hook=lambda m: printed.append(m["content"].get("text", "")))
            return km.sandbox_provisioner.scratch

    scratch = asyncio.run(run())
    workspace = Path("".join(printed).strip())
    assert workspace.parent == scratch and scratch.parent == tmp_path
    assert not scratch.exists() and list(tmp_path.glob("ch07-*")) == []


def test_the_grading_kernel_s_provisioner_is_registered_under_the_name_the_manager_selects():
    """jupyter_client finds a provisioner by its entry point: pyproject.toml registers it, and the
    environment has to be installed from that pyproject (pip install -e .) for a kernel to start."""
    from importlib.metadata import entry_points

    from lucy_runtime.grading.provisioner import PROVISIONER_NAME, SandboxProvisioner

    found = entry_points(group="jupyter_client.kernel_provisioners", name=PROVISIONER_NAME)
    assert [entry.load() for entry in found] == [SandboxProvisioner], \
        "reinstall the course package (pip install -e .) so the environment sees pyproject.toml's entry point"


def test_without_its_provisioner_registered_the_grading_kernel_does_not_start_and_says_why(monkeypatch):
    """Never a kernel started unsandboxed by jupyter_client's own provisioner instead."""
    import asyncio

    from lucy_runtime.errors import SandboxUnavailable
    from lucy_runtime.grading import kernel

    monkeypatch.setattr(kernel, "entry_points", lambda **selection: ())
    km = kernel.SandboxedKernelManager(kernel_name="python3")
    with pytest.raises(SandboxUnavailable, match="pip install -e"):
        asyncio.run(km.start_kernel())
    assert km.provisioner is None and not km.has_kernel


# --- the network, with a service that hands out the answer --------------------------------------

def test_an_answer_served_on_the_machines_loopback_forges_points_unsandboxed_and_is_out_of_reach_sandboxed(checker):
    """The tamper case fetch-the-answer has teeth: with the network in reach (the checker's own
    process, as `lucy check` runs) it earns the reference's rows; in the sandbox it earns none
    and the service hears nothing."""
    from lucy_runtime.checker.rows import ROWS
    from lucy_runtime.proof.tampers import AnswerServer, tamper_by_name
    from lucy_runtime.notebooks.notebook import learner_implementation

    from .conftest import learner_with

    box = sandbox.detect()
    need_sandbox(box)
    rows = [r for r in ROWS.values() if r.unit == "A"]
    blank = learner_implementation(REPO / "release" / UNIT)
    with AnswerServer(learner_implementation(REPO / "source" / UNIT)) as answers:
        case = tamper_by_name("fetch-the-answer").as_case(None, answers.url)
        open_network = checker.run_rows(learner_with(blank, case), rows, seed=3)
        assert open_network.passed, [r.observation for r in open_network.results if not r.passed][:3]
        fetched_unsandboxed = len(answers.fetched)
        sealed = orchestrator.run_sealed_rows(learner_with(blank, case).cells, [r.id for r in rows], timeout=5.0, box=box)
    assert fetched_unsandboxed > 0 and len(answers.fetched) == fetched_unsandboxed
    assert [r.row_id for r in sealed.results if r.passed] == []


def test_a_kernels_sockets_fit_a_unix_socket_path_whatever_the_temporary_folder(tmp_path, monkeypatch):
    deep = tmp_path / ("a-long-folder-name-" * 6)
    deep.mkdir()
    temporary_folder_at(monkeypatch, deep)
    folder = sandbox.socket_folder(sandbox.detect())
    try:
        assert len(str(folder / "kernel-99")) <= sandbox.SOCKET_PATH_MAX
    finally:
        sandbox.remove_socket_folder(folder)
    assert not folder.exists()
