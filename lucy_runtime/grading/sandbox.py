"""Where untrusted learner code runs while it is graded.

Under ``nbgrader autograde`` learner code runs in two places: the notebook's kernel,
and the children the sealed re-check forks (``sealed.py``). Both run inside a
sandbox built with Debian's bubblewrap (``bwrap``) when the platform gives it:

* **user** (root and bwrap): a mount namespace that holds only ``/usr``, ``/etc``, the
  Python installation, a read-only snapshot of this runtime and the one working folder;
  a private ``/tmp`` (a tmpfs of limited size), ``/proc`` and pid namespace (everything
  started inside dies with it); a network namespace with nothing but its own loopback;
  learner code runs as the dedicated system user ``lucy-grader``, under the rlimits and
  in a cgroup of ``limits.py``.
* **mounts** (bwrap through user namespaces, not root): the same mounts, as the
  educator's own user.
* **none**: learner code runs as the grading user, with the course and the network in
  reach and no resource limits but the grader's own (output, wall time); only the sealed
  verdict protects the grade. One warning line says so.

The kernel talks to nbgrader over Unix sockets in a folder bound into the sandbox
(jupyter_client's ``ipc`` transport): no TCP port is needed, so the network stays shut.

The course directory, ``source/``, the gradebook and other students' folders do not
exist inside. The environment is rebuilt from scratch: no ``NBGRADER_*`` variables and
no course paths, plus ``LUCY_GRADING=sealed``.

The sealed re-check's orchestrator, which runs inside the sandbox, is ``orchestrator.py``
beside this module; this module knows nothing of rows. What the orchestrator's children
do first (``enter_child``: close what they inherit, take the limits, drop to the grader
user) and what it reaps after a run are the engine's (``engine/confine.py``), set by the
orchestrator.
``python -m lucy_runtime.grading.sandbox`` prints what isolation this machine gives.
"""

from __future__ import annotations

import atexit
import compileall
import functools
import os
import pwd
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from ..errors import SandboxUnavailable
from ..engine import confine, limits as _limits
from ..engine.limits import PRLIMIT, Limits
from .handin import HandinLimits, copy_regular_files

GRADER_USER = "lucy-grader"
NOBODY = 65534
CHECK_IN_BOX = "/var/lucy-check"
"""The sealed re-check's own folder for its scenario folders, a tmpfs of ``tmp_mb`` (its runs each get a new ``/tmp``)."""
RUNTIME_IN_BOX = "/opt/lucy-runtime"
"""Where the read-only snapshot of ``lucy_runtime`` is mounted inside the sandbox."""
EDUCATOR_TOOLS = ("bench", "books", "cli", "course", "educator", "hub", "proof", "report")
"""The packages of the educator's tools: never in a learner's environment or the sandbox's snapshot."""
SNAPSHOT_LEAVES_OUT = ("__pycache__", "*.pyc", *EDUCATOR_TOOLS)
"""Not in the snapshot: bytecode (compiled afresh) and the educator's tools (correct alternatives are solutions)."""
ENV_SWITCH = "LUCY_SANDBOX"
"""``LUCY_SANDBOX=off`` grades without isolation (for an educator who knows why)."""
TEST_CHANNEL = "LUCY_SANDBOX_TEST_CHANNEL"
"""A folder bound writable into every sandbox, at its own path, when the grading process has
this variable: the isolation tests' tricks report through a Unix socket there, since the
network is shut. Learner code cannot set the grader's environment."""


@dataclass(frozen=True)
class Sandbox:
    """The grading isolation this machine gives, and how to run a command inside it."""

    mode: str  # "user" | "mounts" | "none"
    bwrap: str | None = None
    uid: int | None = None
    gid: int | None = None
    user: str = ""
    reason: str = ""
    runtime: Path | None = field(default=None, compare=False)

    @property
    def isolated(self) -> bool:
        return self.mode != "none"

    @property
    def drops_user(self) -> bool:
        return self.mode == "user"

    def describe(self) -> str:
        if self.mode == "user":
            return (f"grading isolation: learner code runs as {self.user} (uid {self.uid}) in a bubblewrap "
                    "sandbox without the course directory and without a network, within the grading limits")
        if self.mode == "mounts":
            return ("grading isolation: learner code runs in a bubblewrap sandbox without the course directory "
                    "and without a network, within the grading limits but without a cgroup, "
                    "as your own user (run as root for a dedicated grader user and a cgroup per submission)")
        return self.warning()

    def warning(self) -> str:
        return ("WARNING: no grading isolation: learner code runs as this user with the course directory and the "
                f"network in reach and no memory, process, file or CPU limits ({self.reason}); only the sealed "
                "re-check protects grades. See README, 'Grading isolation'.")

    def command(self, argv: list[str], *, workdir: str | os.PathLike | None = None, work_source: str | os.PathLike | None = None,
                read_only: Sequence[tuple[str, str]] = (), env: dict[str, str] | None = None, as_grader: bool = True,
                caps: tuple[str, ...] = (), writable: Sequence[str] = (), limits: Limits | None = None,
                private: Sequence[tuple[str, int]] = (), copy_work: bool = False) -> list[str]:
        """The bwrap command line that runs ``argv`` inside the sandbox.

        ``workdir`` is the one writable folder, seen at that path inside (``/tmp`` only when
        None); ``work_source`` is the host folder mounted there (``workdir`` itself when not given).
        ``read_only`` adds (host path, path inside) pairs; ``writable`` host folders bound at
        their own path (the kernel's socket folder). ``as_grader`` runs ``argv``
        as the grader user (mode "user"); ``caps`` are the capabilities ``argv`` keeps
        instead (the rows' orchestrator keeps CAP_SETUID and CAP_SETGID for its children, and CAP_KILL to stop them).
        ``limits`` sizes ``/tmp``; unless ``argv`` keeps capabilities, it also runs under their rlimits
        (the orchestrator sets them in each child instead). ``private`` adds (path inside, size in bytes)
        folders, each an empty tmpfs of that size, open to everyone inside. With ``copy_work``, ``workdir``
        is a tmpfs of ``limits.work_mb`` and ``argv`` first copies ``work_source`` (bound read-only) into it,
        as the user it runs as: what learner code writes there takes no disk of the host's.
        """
        if not self.isolated or self.bwrap is None:
            raise SandboxUnavailable(self.warning())
        runtime = self.runtime or runtime_snapshot()
        box = [self.bwrap, *_system_binds()]
        limits = limits or Limits()
        box += ["--proc", "/proc", "--dev", "/dev", "--perms", "1777", "--size", str(limits.tmp_mb << 20), "--tmpfs", "/tmp"]
        tree = _Tree()
        box += _python_mounts(tree, argv, workdir, runtime) + _extra_mounts(tree, read_only, private, writable)
        work, argv = _work_mounts(tree, argv, workdir, work_source, limits, copy_work)
        box += work + ["--unshare-pid", "--unshare-ipc", "--unshare-net", "--die-with-parent", "--new-session"]
        drop_here = self.drops_user and as_grader and not caps
        box += self._capabilities(caps, drop_here) + ["--clearenv"]
        for key, value in sandbox_env(env).items():
            box += ["--setenv", key, value]
        box += self._user(drop_here)
        if not caps:  # after setpriv: the grader user's own processes count against RLIMIT_NPROC
            box += limits.prlimit_argv()
        return box + list(argv)

    def _capabilities(self, caps: tuple[str, ...], drop_here: bool) -> list[str]:
        """In mode "user", every capability dropped but ``caps`` (or the two setpriv needs, when it drops here)."""
        if self.mode != "user":
            return []
        box = ["--cap-drop", "ALL"]  # setpriv (or the orchestrator) needs these two to become the grader user
        for cap in caps or (("CAP_SETUID", "CAP_SETGID") if drop_here else ()):
            box += ["--cap-add", cap]
        return box

    def _user(self, drop_here: bool) -> list[str]:
        """The end of bwrap's options, and setpriv to become the grader user when ``argv`` runs as it here."""
        if not drop_here:
            return ["--"]
        setpriv = shutil.which("setpriv", path="/usr/bin:/bin") or "/usr/bin/setpriv"
        return ["--", setpriv, f"--reuid={self.uid}", f"--regid={self.gid}", "--clear-groups"]


class _Tree:
    """The folders made inside the sandbox so far: each mount's missing parents are made once, open to all."""

    def __init__(self) -> None:
        self.made = {"/", "/tmp", "/usr", "/etc", "/proc", "/dev"}

    def parents(self, inside: str) -> list[str]:
        dirs = []  # bwrap would make missing parents 0700: the grader user could not pass them
        for parent in reversed(Path(inside).parents):
            if str(parent) not in self.made:
                self.made.add(str(parent))
                dirs += ["--perms", "0755", "--dir", str(parent)]
        return dirs

    def mount(self, kind: str, host: str, inside: str) -> list[str]:
        return self.parents(inside) + [kind, host, inside]

    def sized(self, inside: str, size: int, perms: str = "0777") -> list[str]:
        return self.parents(inside) + ["--perms", perms, "--size", str(size), "--tmpfs", inside]


def _python_mounts(tree: _Tree, argv: list[str], workdir: str | os.PathLike | None, runtime: Path) -> list[str]:
    """Python's installation and the runtime's snapshot, read-only; never a Python that holds the graded folder."""
    box: list[str] = []
    for path in python_paths(argv[0] if argv else None):
        if workdir is not None and Path(workdir).is_relative_to(path):
            raise SandboxUnavailable(f"the Python installation {path} holds the folder being graded: "
                                     "mounting it would mount the course")
        box += tree.mount("--ro-bind", path, path)
    return box + tree.mount("--ro-bind", str(runtime), RUNTIME_IN_BOX)


def _extra_mounts(tree: _Tree, read_only: Sequence[tuple[str, str]], private: Sequence[tuple[str, int]],
                  writable: Sequence[str]) -> list[str]:
    """The folders the caller adds: read-only ones, private tmpfs ones, and writable ones (the test channel's too)."""
    box: list[str] = []
    for host, inside in read_only:
        box += tree.mount("--ro-bind", str(host), str(inside))
    for inside, size in private:
        box += tree.sized(inside, size)
    channel = os.environ.get(TEST_CHANNEL)
    for folder in [*writable, *([channel] if channel else [])]:
        box += tree.mount("--bind", str(folder), str(folder))
    return box


def _work_mounts(tree: _Tree, argv: list[str], workdir: str | os.PathLike | None, work_source: str | os.PathLike | None,
                 limits: Limits, copy_work: bool) -> tuple[list[str], list[str]]:
    """The working folder and the folder ``argv`` starts in; with ``copy_work``, ``argv`` behind the copy into it."""
    if workdir is None:
        return ["--chdir", "/tmp"], argv
    if not copy_work:
        return tree.mount("--bind", str(work_source or workdir), str(workdir)) + ["--chdir", str(workdir)], argv
    box = tree.mount("--ro-bind", str(work_source or workdir), HANDED_IN_BOX)
    box += tree.sized(str(workdir), limits.work_mb << 20) + ["--chdir", str(workdir)]
    argv = ["/bin/sh", "-c", '/bin/cp -RT --preserve=mode,timestamps -- "$1" "$2"; shift 2; exec "$@"',
            "lucy-work", HANDED_IN_BOX, str(workdir), *argv]
    return box, argv


def _system_binds() -> list[str]:
    """/usr and /etc read-only, and the /lib, /bin ... links (or folders) of a merged-/usr system."""
    binds = ["--ro-bind", "/usr", "/usr", "--ro-bind", "/etc", "/etc"]
    for name in ("lib", "lib32", "lib64", "bin", "sbin"):
        if os.path.islink(f"/{name}"):
            binds += ["--symlink", os.readlink(f"/{name}"), f"/{name}"]
        elif os.path.isdir(f"/{name}"):
            binds += ["--ro-bind", f"/{name}", f"/{name}"]
    return binds


def python_paths(executable: str | None = None) -> list[str]:
    """Folders the sandbox needs for Python itself: the venv and the interpreter it was made from."""
    found = [sys.prefix, sys.base_prefix, sys.exec_prefix]
    for exe in filter(None, (executable, sys.executable)):
        if os.path.isabs(exe):
            found += [str(Path(exe).parent.parent), str(Path(exe).resolve().parent.parent)]
    kept: list[str] = []
    for path in sorted({os.path.realpath(p) for p in found} | set(found), key=len):
        if path in ("/", "/usr") or path.startswith("/usr/") or not os.path.isdir(path):
            continue
        if any(path == k or path.startswith(k + "/") for k in kept):
            continue
        kept.append(path)
    return kept


def sandbox_env(extra: dict[str, str] | None = None) -> dict[str, str]:
    """The whole environment inside: nothing of nbgrader's or the course's."""
    env = {
        "PATH": f"{Path(sys.executable).parent}:/usr/local/bin:/usr/bin:/bin",
        "HOME": "/tmp",
        "IPYTHONDIR": "/tmp/.ipython",
        "JUPYTER_RUNTIME_DIR": "/tmp/.jupyter-runtime",
        "JUPYTER_PLATFORM_DIRS": "1",
        "MPLCONFIGDIR": "/tmp/.matplotlib",
        "PYTHONPATH": RUNTIME_IN_BOX,
        "PYTHONDONTWRITEBYTECODE": "1",
        "LANG": "C.UTF-8",
        "LUCY_GRADING": "sealed",
        # numpy's OpenBLAS starts a spinning thread per core at import; a notebook does no
        # linear algebra, and a class graded in parallel already keeps every core busy.
        "OPENBLAS_NUM_THREADS": "1",
    }
    env.update(extra or {})
    return {k: v for k, v in env.items() if not k.startswith("NBGRADER")}


# --- the notebook's kernel -----------------------------------------------------------------

CONNECTION_IN_BOX = "/run/lucy/kernel.json"
HANDED_IN_BOX = "/run/lucy/handed-in"
"""Where the host's copy of the submission's folder is bound read-only, to be copied into the kernel's working folder."""
UNIT_A = "ch07_unit_a"


def own_unit_a(folder: Path) -> list[Path]:
    """The Unit A notebooks of the student whose Unit B runs in ``folder`` (where ``carry.py`` looks).

    Only Unit B runs Unit A: Unit A and the practice notebook get nothing beside them."""
    parts = folder.parts
    if len(parts) < 3 or parts[-3] not in ("autograded", "submitted") or parts[-1] != "ch07_unit_b":
        return []
    course, student = folder.parents[2], parts[-2]
    found = [course / area / student / UNIT_A / f"{UNIT_A}.ipynb" for area in ("autograded", "submitted")]
    return [p for p in found if p.is_file() and not p.is_symlink()]


def kernel_launch(box: Sandbox, kernel_cmd: list[str], *, cwd: str | os.PathLike | None,
                  connection_file: str, sockets: str | os.PathLike | None = None,
                  limits: Limits | None = None) -> tuple[list[str], Path]:
    """The sandboxed command line of a notebook's kernel, and a scratch folder to delete after it.

    The kernel works in a private copy of its notebook folder, mounted at the folder's own
    path: the learner sees the usual path, and nothing written there reaches the course
    (a symlink left in the real folder would make nbgrader write through it). ``sockets`` is
    the folder of the kernel's Unix sockets (the ``ipc`` transport), bound writable.
    """
    scratch = Path(tempfile.mkdtemp(prefix="lucy-kernel-"))
    work, connection = scratch / "work", scratch / "kernel.json"
    if cwd is None:  # no notebook folder: an empty one, never the grader's own working folder
        folder = Path("/tmp/notebook")
        work.mkdir()
    else:
        folder = Path(cwd).resolve()
        copy_handed_in(folder, work, limits)
    shutil.copyfile(connection_file, connection)
    connection.chmod(0o400)
    hand_to_grader(box, work)
    if box.drops_user and box.uid is not None and box.gid is not None:
        os.chown(connection, box.uid, box.gid)
    real = os.path.realpath(connection_file)
    argv = [CONNECTION_IN_BOX if arg in (connection_file, real) else arg for arg in kernel_cmd]
    read_only = [(str(connection), CONNECTION_IN_BOX)] + [(str(p), str(p)) for p in own_unit_a(folder)]
    return box.command(argv, workdir=folder, work_source=work, read_only=read_only, copy_work=True,
                       writable=[str(sockets)] if sockets else [], limits=limits), scratch


LEFT_OUT = frozenset({".ipynb_checkpoints"})


def copy_handed_in(source: Path, target: Path, limits: Limits | None = None) -> list[str]:
    """Copy the regular files and folders of ``source`` into a new folder ``target`` with the hand-in's
    own walk (``handin.py``: no link followed, no FIFO, socket or device opened, a name swapped for a link
    meanwhile left out), within the kernel's working folder (``work_mb``); the names of what was left out."""
    active = limits or _limits.active()
    bound = HandinLimits(max_bytes=active.work_mb << 20, max_files=active.submission_files)
    return [r.path for r in copy_regular_files(source, target, bound, skip=LEFT_OUT)]


SOCKET_PATH_MAX = 100
"""A Unix socket's path must fit in 107 bytes (``sun_path``); the kernel's are ``<folder>/kernel-N``."""


def hand_to_grader(box: Sandbox, folder: Path, *, enterable: bool = False) -> None:
    """Make a private copy the grader user's: every file and folder in it owned by that user (mode
    "user"; otherwise nothing to do). ``enterable`` also opens each folder (0755) for bwrap, which
    enters the working folder before it drops to that user."""
    if not (box.drops_user and box.uid is not None and box.gid is not None):
        return
    for root, dirs, files in os.walk(folder):
        os.lchown(root, box.uid, box.gid)
        if enterable:
            os.chmod(root, 0o755)
        for name in dirs + files:
            os.lchown(os.path.join(root, name), box.uid, box.gid)


def tree_cgroup(limits: Limits, kind: str, log=None) -> tuple["_limits.Cgroup | None", Limits]:
    """A cgroup for one process tree, and the limits its processes then take: with a group,
    RLIMIT_NPROC leaves room for the submissions graded beside it; without one (named in the
    warning line), the limits as given."""
    group, why = _limits.make_cgroup(limits, kind)
    if group is None:
        _warn_limits_once(why, log)
        return None, limits
    return group, limits.bounded_by_cgroup()


def socket_folder(box: Sandbox, limits: Limits | None = None, log=None) -> Path:
    """A new folder for one kernel's Unix sockets, writable by the user the kernel runs as: in the
    temporary folder, or in ``/tmp`` when that path is too long for a socket (a test's, an nbgrader
    command's own). As root it is a tmpfs of ``limits.sockets_mb`` (otherwise one warning line says
    it is not bounded). It goes with the kernel (``remove_socket_folder``)."""
    for base in (tempfile.gettempdir(), "/tmp", "/dev/shm"):
        if len(os.path.join(base, "lucy-ipc-xxxxxxxx", "kernel-99")) <= SOCKET_PATH_MAX and os.access(base, os.W_OK):
            break
    folder = Path(tempfile.mkdtemp(prefix="lucy-ipc-", dir=base))
    owner = (box.uid, box.gid) if box.drops_user and box.uid is not None and box.gid is not None else (os.getuid(), os.getgid())
    size = (limits or Limits()).sockets_mb << 20
    try:
        confine.libc_call("mount", b"tmpfs", str(folder).encode(), b"tmpfs", confine.MS_NOSUID | confine.MS_NODEV | confine.MS_NOEXEC,
                          f"size={size},mode=0700,uid={owner[0]},gid={owner[1]}".encode())
    except OSError as error:
        _warn_limits_once(f"the folder of the kernel's Unix sockets is not a tmpfs of its own ({error.strerror}): "
                          "its size is not bounded", log, whole=True)
        os.chown(folder, *owner)
    return folder


def remove_socket_folder(folder: Path) -> None:
    """Unmount (when it is a tmpfs) and remove a folder of ``socket_folder``'s."""
    try:
        confine.libc_call("umount2", str(folder).encode(), MNT_DETACH)
    except OSError:
        pass
    shutil.rmtree(folder, ignore_errors=True)


MNT_DETACH = 2


# --- what the platform gives --------------------------------------------------------------

def _bwrap_works(bwrap: str) -> str:
    """'' when a trivial sandbox starts, else why not."""
    try:
        done = subprocess.run([bwrap, *_system_binds(), "--proc", "/proc", "--dev", "/dev", "--size", str(1 << 20),
                               "--tmpfs", "/tmp", "--unshare-pid", "--unshare-net", "--die-with-parent", "/usr/bin/true"],
                              capture_output=True, text=True, timeout=20)
    except (OSError, subprocess.TimeoutExpired) as error:
        return f"bwrap does not start: {error}"
    return "" if done.returncode == 0 else f"bwrap cannot build a sandbox here: {done.stderr.strip()[:200]}"


def grader_account() -> tuple[str, int, int]:
    """The dedicated grader user, created on first use (root only); nobody when that fails."""
    try:
        entry = pwd.getpwnam(GRADER_USER)
        return GRADER_USER, entry.pw_uid, entry.pw_gid
    except KeyError:
        pass
    useradd = shutil.which("useradd", path="/usr/sbin:/sbin:/usr/bin")
    if useradd:
        subprocess.run([useradd, "--system", "--no-create-home", "--home-dir", "/nonexistent",
                        "--shell", "/usr/sbin/nologin", GRADER_USER], capture_output=True, timeout=60)
        try:
            entry = pwd.getpwnam(GRADER_USER)
            return GRADER_USER, entry.pw_uid, entry.pw_gid
        except KeyError:
            pass
    return "nobody", NOBODY, NOBODY


@functools.lru_cache(maxsize=1)
def detect() -> Sandbox:
    """The isolation this process can give learner code (checked once per process)."""
    if os.environ.get(ENV_SWITCH, "").lower() in ("off", "none", "0", "no"):
        return Sandbox("none", reason=f"{ENV_SWITCH}={os.environ[ENV_SWITCH]}")
    bwrap = shutil.which("bwrap")
    if not bwrap:
        return Sandbox("none", reason="bubblewrap (bwrap) is not installed")
    if not os.path.exists(PRLIMIT):
        return Sandbox("none", bwrap=bwrap, reason=f"util-linux's prlimit ({PRLIMIT}) is missing: no limits could be set")
    problem = _bwrap_works(bwrap)
    if problem:
        return Sandbox("none", bwrap=bwrap, reason=problem)
    if os.geteuid() == 0:
        user, uid, gid = grader_account()
        return Sandbox("user", bwrap, uid, gid, user)
    return Sandbox("mounts", bwrap, os.getuid(), os.getgid(), reason="not root: no separate grader user")


@functools.lru_cache(maxsize=1)
def runtime_snapshot() -> Path:
    """A read-only copy of this package, made once per process; what the grading kernel imports."""
    package = Path(__file__).resolve().parents[1]  # lucy_runtime, this module sits in grading/
    holder = Path(tempfile.mkdtemp(prefix="lucy-runtime-"))
    atexit.register(shutil.rmtree, holder, True)
    copy = holder / package.name
    shutil.copytree(package, copy, ignore=shutil.ignore_patterns(*SNAPSHOT_LEAVES_OUT))
    compileall.compile_dir(str(copy), quiet=2, ddir=f"{RUNTIME_IN_BOX}/{package.name}", workers=1)
    for root, dirs, files in os.walk(holder):
        os.chmod(root, 0o755)
        for name in files:
            os.chmod(os.path.join(root, name), 0o644)
    return holder


_limits_warned: set[str] = set()


def _warn_limits_once(why: str, log=None, whole: bool = False) -> None:
    """A limit this platform cannot apply is named, once per process, never skipped in silence. ``whole``:
    ``why`` is the whole warning, not the reason there is no cgroup."""
    if why in _limits_warned:
        return
    _limits_warned.add(why)
    text = (f"WARNING: {why}. See README, 'Grading isolation'." if whole else
            f"WARNING: no cgroup for a submission's process tree ({why}): memory is bounded per process "
            "(address space) and processes per grader user only. See README, 'Grading isolation'.")
    if log is not None:
        log.warning(text)
    else:
        print(text, file=sys.stderr, flush=True)


_warned: set[str] = set()


def _warn_once(box: Sandbox, log=None) -> None:
    if box.isolated or box.reason in _warned:
        return
    _warned.add(box.reason)
    if log is not None:
        log.warning(box.warning())
    else:
        print(box.warning(), file=sys.stderr, flush=True)


if __name__ == "__main__":
    print(detect().describe())
