"""The course as a class runs it: JupyterHub, an account per learner, formgrader as the grader's service.

``make hub`` (as root, from the course folder) calls ``set_up`` and ``start``; the hub reads
``hub/jupyterhub_config.py``, which calls ``configure_hub`` with the ``Site`` the environment
names. What is where (docs/class-on-a-server.md):

* the hub's own state (its database, cookie secret, the class's API token) in
  ``STATE/hub`` (root only); the exchange in ``STATE/exchange``, a system path, named in one
  place, ``STATE/jupyter/nbgrader_config.py``, first on every class process's ``JUPYTER_CONFIG_PATH``;
* the grader's account runs formgrader as a hub-managed service, in the course folder,
  which it reaches through its group; learners' accounts cannot open the course folder;
* learners' single-user servers and kernels run the learner environment, a venv at a
  system path built from this tree without the educator's tools (``sandbox.EDUCATOR_TOOLS``) and without ``source/``
  (``build_learner_env``). The grader's service runs the same interpreter with the course's
  full runtime first on ``PYTHONPATH``.

Authentication is JupyterHub's default, PAM: the learners' system passwords, which
``add_learners`` sets. Only members of the course's learner group and the grader may log in.
"""

from __future__ import annotations

import contextlib
import csv
import fcntl
import grp
import io
import json
import os
import pwd
import secrets
import shutil
import signal
import socket
import stat
import subprocess
import sys
import tempfile
import threading
import time
import tomllib
from dataclasses import dataclass
from pathlib import Path

import httpx

from ..errors import HubError
from ..grading import exchange
from ..grading.sandbox import EDUCATOR_TOOLS

COURSE_ID = "lucy-ch07"
# What a learner's server runs; the hub's own version, so jupyterhub-singleuser speaks its API.
HUB_REQUIREMENT = "jupyterhub==6.1.1"
PROXY_REQUIREMENT = "configurable-http-proxy@5.3.0"
DEBIAN_PYTHON = Path("/usr/bin/python3.11")
ENV_PREFIX = "LUCY_HUB_"
# Where the course's own nbgrader_config.py looks for the exchange, when it names one (the private
# exchange, lucy_runtime/grading/exchange.py): every process of the class gets the site's.
EXCHANGE_ENV = "LUCY_EXCHANGE"


@dataclass(frozen=True)
class Site:
    """One class on one machine: where each part lives, and who the accounts are."""

    course: Path
    state: Path = Path("/srv/lucy-ch07")
    learner_env: Path = Path("/opt/lucy-learner")
    grader: str = "grader-lucy-ch07"
    learners_group: str = "lucy-ch07-learners"
    port: int = 8000
    proxy: Path | None = None

    @property
    def exchange(self) -> Path:
        return self.state / "exchange"

    @property
    def config_dir(self) -> Path:
        """The class's own Jupyter configuration folder (first on every account's JUPYTER_CONFIG_PATH)."""
        return self.state / "jupyter"

    @property
    def hub_dir(self) -> Path:
        return self.state / "hub"

    @property
    def hub_api_port(self) -> int:
        return self.port + 1

    @property
    def service_port(self) -> int:
        return self.port + 2

    @property
    def service(self) -> str:
        return COURSE_ID

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def proxy_command(self) -> Path:
        return self.proxy or self.course / ".venv" / "node" / "node_modules" / ".bin" / "configurable-http-proxy"

    def to_environment(self) -> dict[str, str]:
        return {ENV_PREFIX + "COURSE": str(self.course), ENV_PREFIX + "STATE": str(self.state),
                ENV_PREFIX + "LEARNER_ENV": str(self.learner_env), ENV_PREFIX + "GRADER": self.grader,
                ENV_PREFIX + "LEARNERS_GROUP": self.learners_group, ENV_PREFIX + "PORT": str(self.port),
                ENV_PREFIX + "PROXY": str(self.proxy_command)}

    @classmethod
    def from_environment(cls, environ: dict[str, str] | os._Environ = os.environ) -> Site:
        course = Path(environ.get(ENV_PREFIX + "COURSE") or os.getcwd())
        site = cls(course=course)
        return cls(course=course, state=Path(environ.get(ENV_PREFIX + "STATE", site.state)),
                   learner_env=Path(environ.get(ENV_PREFIX + "LEARNER_ENV", site.learner_env)),
                   grader=environ.get(ENV_PREFIX + "GRADER", site.grader),
                   learners_group=environ.get(ENV_PREFIX + "LEARNERS_GROUP", site.learners_group),
                   port=int(environ.get(ENV_PREFIX + "PORT", site.port)),
                   proxy=Path(environ[ENV_PREFIX + "PROXY"]) if environ.get(ENV_PREFIX + "PROXY") else None)


# ---- the exchange: set in one place -------------------------------------------------------------

def exchange_settings(site: Site) -> str:
    """The nbgrader configuration every account of the class reads (learners' servers, the grader's
    service and commands): the course's private exchange (lucy_runtime/grading/exchange.py) at the
    site's system path."""
    return (f"# Written by lucy_runtime/hub/hub.py for the class on this machine.\n"
            f"from lucy_runtime.grading.exchange import configure\n\n"
            f"c = get_config()  # noqa: F821\n"
            f"c.CourseDirectory.course_id = {COURSE_ID!r}\n"
            f"configure(c, {str(site.exchange)!r})\n")


def make_exchange(site: Site) -> None:
    """The course's folders in the private exchange, the grader's (exchange.create), and the class's
    configuration folder that names it."""
    site.state.mkdir(parents=True, exist_ok=True)
    os.chmod(site.state, 0o755)
    exchange.create(site.exchange, COURSE_ID, grader=site.grader)
    site.config_dir.mkdir(parents=True, exist_ok=True)
    os.chmod(site.config_dir, 0o755)
    (site.config_dir / "nbgrader_config.py").write_text(exchange_settings(site))
    os.chmod(site.config_dir / "nbgrader_config.py", 0o644)


# ---- accounts ----------------------------------------------------------------------------------

def _run(command: list[str], **kwargs) -> subprocess.CompletedProcess:
    done = subprocess.run(command, capture_output=True, text=True, **kwargs)
    if done.returncode != 0:
        raise HubError(f"{' '.join(command[:3])} failed: {(done.stderr or done.stdout).strip().splitlines()[-1:]}")
    return done


def _user_exists(name: str) -> bool:
    try:
        pwd.getpwnam(name)
        return True
    except KeyError:
        return False


def _group_exists(name: str) -> bool:
    try:
        grp.getgrnam(name)
        return True
    except KeyError:
        return False


def ensure_grader(site: Site) -> str | None:
    """The learners' group and the grader's account; the grader's first password when it is new."""
    if not _group_exists(site.learners_group):
        _run(["groupadd", "--system", site.learners_group])
    password = None
    if not _user_exists(site.grader):
        _run(["useradd", "--create-home", "--shell", "/bin/bash", "--user-group", site.grader])
        password = secrets.token_urlsafe(12)
        set_passwords({site.grader: password})
    os.chmod(pwd.getpwnam(site.grader).pw_dir, 0o700)
    return password


def add_learners(site: Site, passwords: dict[str, str]) -> None:
    """Each learner a system account of their own (home mode 700), in the course's learner group,
    with the password they log in to the hub with."""
    for name in passwords:
        if not _user_exists(name):
            _run(["useradd", "--create-home", "--shell", "/bin/bash", "--user-group", name])
        _run(["usermod", "-a", "-G", site.learners_group, name])
        os.chmod(pwd.getpwnam(name).pw_dir, 0o700)
    set_passwords(passwords)
    exchange.add(site.exchange, COURSE_ID, list(passwords))  # each one's own folder of inbound/


def set_passwords(passwords: dict[str, str]) -> None:
    """The system passwords the hub's PAM log-in checks."""
    _run(["chpasswd"], input="".join(f"{name}:{password}\n" for name, password in passwords.items()))


def learners(site: Site) -> list[str]:
    """The course's learners: the members of its system group."""
    try:
        return sorted(grp.getgrnam(site.learners_group).gr_mem)
    except KeyError:
        return []


def require_learner(site: Site, name: str) -> None:
    if name not in learners(site):
        raise HubError(f"{name} is not a learner of {COURSE_ID}: add them with `lucy hub add-learner {name}`, "
                       "then restart the hub")


def processes_of(uid: int) -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                if entry.stat().st_uid == uid:
                    found.append(int(entry.name))
            except OSError:
                pass
    return found


def remove_accounts(names: list[str]) -> None:
    """Scratch accounts (the tests' and the bench's) and everything they still run: userdel refuses
    an account with a process left, and a kernel may outlive its server by a moment."""
    for name in names:
        if not _user_exists(name):
            continue
        uid = pwd.getpwnam(name).pw_uid
        for _ in range(20):
            running = processes_of(uid)
            if not running:
                break
            for pid in running:
                try:
                    os.kill(pid, 9)
                except OSError:
                    pass
            time.sleep(0.2)
        subprocess.run(["userdel", "--remove", name], capture_output=True)


# ---- the course folder: the grader's, closed to learners ----------------------------------------

def closed_ancestor(path: Path) -> Path | None:
    """The first folder above ``path`` that other accounts cannot pass through, if any."""
    for parent in reversed(path.resolve().parents):
        if not os.stat(parent).st_mode & stat.S_IXOTH:
            return parent
    return None


def give_course_to_grader(site: Site) -> None:
    """The course folder and everything in it belong to the grader's group (read and write, new
    files keep the group); other accounts, learners included, cannot open it."""
    closed = closed_ancestor(site.course)
    if closed is not None:
        raise HubError(f"the grader account cannot reach {site.course}: {closed} is closed to other accounts "
                       f"(mode {stat.S_IMODE(os.stat(closed).st_mode):o}); put the course under /srv or /home")
    gid = grp.getgrnam(site.grader).gr_gid
    for root, dirs, files in os.walk(site.course):
        dirs[:] = [d for d in dirs if not os.path.islink(os.path.join(root, d))]
        for name in dirs:
            path = os.path.join(root, name)
            os.chown(path, -1, gid)
            os.chmod(path, stat.S_IMODE(os.stat(path).st_mode) | 0o2070)
        for name in files:
            path = os.path.join(root, name)
            if os.path.islink(path):
                continue
            os.chown(path, -1, gid)
            mode = stat.S_IMODE(os.stat(path).st_mode)
            os.chmod(path, mode | 0o060 | (0o010 if mode & 0o100 else 0))
    os.chown(site.course, -1, gid)
    os.chmod(site.course, 0o2770)


# ---- the learners' environment: no educator/, no source/ ---------------------------------------

def learner_requirements(course: Path) -> list[str]:
    """What the runtime needs (pyproject's dependencies), and the hub's single-user server."""
    project = tomllib.loads((course / "pyproject.toml").read_text())["project"]
    return sorted(project["dependencies"]) + [HUB_REQUIREMENT]


LEARNER_PYPROJECT = """[build-system]
requires = ["setuptools>=68"]
build-backend = "setuptools.build_meta"

[project]
name = "lucy-runtime-learner"
version = "{version}"
description = "Lucy, Chapter 7: the runtime a learner imports. No educator tools, cases or solutions."
requires-python = ">=3.11"
dependencies = {dependencies}

[project.scripts]
lucy = "lucy_runtime.grading.learner_cli:main"

[project.entry-points."jupyter_client.kernel_provisioners"]
lucy-sandbox = "lucy_runtime.grading.provisioner:SandboxProvisioner"

[tool.setuptools.packages.find]
include = ["lucy_runtime*"]

[tool.setuptools.package-data]
lucy_runtime = ["data/*.csv"]
"""


def learner_tree(course: Path, into: Path) -> Path:
    """The learner distribution's source: this runtime less the educator's tools (and any bytecode)."""
    project = tomllib.loads((course / "pyproject.toml").read_text())["project"]
    shutil.copytree(course / "lucy_runtime", into / "lucy_runtime",
                    ignore=shutil.ignore_patterns("__pycache__", "*.pyc", *EDUCATOR_TOOLS))
    (into / "pyproject.toml").write_text(LEARNER_PYPROJECT.format(
        version=project["version"], dependencies=json.dumps(project["dependencies"])))
    return into


def build_learner_env(site: Site, python: Path = DEBIAN_PYTHON, log=print) -> None:
    """A venv at ``site.learner_env`` every account can run: the dependencies once (again only when
    they change), then the learner distribution, rebuilt from this tree each time. One build at a
    time per machine (the environment is shared by every class on it)."""
    env = site.learner_env
    env.parent.mkdir(parents=True, exist_ok=True)
    with open(env.parent / f".{env.name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        _build_learner_env(site, python, log)


def _build_learner_env(site: Site, python: Path, log) -> None:
    env = site.learner_env
    if not (env / "bin" / "python").exists():
        log(f"creating the learners' environment in {env}")
        _run([str(python), "-m", "venv", str(env)])
    wanted = "\n".join(learner_requirements(site.course)) + "\n"
    stamp = env / ".lucy-requirements"
    if not stamp.exists() or stamp.read_text() != wanted:
        log("installing the learners' packages (JupyterLab, nbgrader, the single-user server)")
        _run([str(env / "bin" / "python"), "-m", "pip", "install", "--quiet", "--disable-pip-version-check",
              *learner_requirements(site.course)])
        stamp.write_text(wanted)
    work = Path(tempfile.mkdtemp(prefix="lucy-learner-build-"))
    try:
        tree = learner_tree(site.course, work / "tree")
        _run([sys.executable, "-m", "pip", "wheel", "--quiet", "--disable-pip-version-check", "--no-deps",
              "--no-build-isolation", "--wheel-dir", str(work / "dist"), str(tree)])
        wheel = next((work / "dist").glob("*.whl"))
        _run([str(env / "bin" / "python"), "-m", "pip", "install", "--quiet", "--disable-pip-version-check",
              "--no-deps", "--force-reinstall", str(wheel)])
    finally:
        shutil.rmtree(work, ignore_errors=True)
    _run([str(env / "bin" / "python"), "-m", "compileall", "-q", str(_site_packages(env) / "lucy_runtime")])
    etc = env / "etc" / "jupyter"
    (etc / "jupyter_server_config.d").mkdir(parents=True, exist_ok=True)
    # Learners get the Assignments tab; formgrader and course tools are the grader's service's,
    # which turns them on for itself on its command line.
    (etc / "jupyter_server_config.d" / "zz-lucy-learners.json").write_text(json.dumps({"ServerApp": {
        "jpserver_extensions": {"nbgrader.server_extensions.formgrader": False,
                                "nbgrader.server_extensions.course_list": False,
                                "nbgrader.server_extensions.assignment_list": True}}}, indent=1))
    (env / "etc" / "jupyter" / "labconfig").mkdir(parents=True, exist_ok=True)
    (env / "etc" / "jupyter" / "labconfig" / "page_config.json").write_text(json.dumps({"disabledExtensions": {
        "@jupyter/nbgrader:formgrader": True, "@jupyter/nbgrader:create-assignment": True,
        "@jupyter/nbgrader:course-list": True}}, indent=1))
    # No news and no update checks from the learners' JupyterLab: the class's server need not reach out.
    (env / "share" / "jupyter" / "lab" / "settings").mkdir(parents=True, exist_ok=True)
    (env / "share" / "jupyter" / "lab" / "settings" / "overrides.json").write_text(json.dumps({
        "@jupyterlab/apputils-extension:notification": {"fetchNews": "false", "checkForUpdates": False}}, indent=1))
    for root, dirs, files in os.walk(env):
        for name in dirs + files:
            path = os.path.join(root, name)
            if not os.path.islink(path):
                os.chmod(path, stat.S_IMODE(os.lstat(path).st_mode) | 0o444 | (0o111 if os.path.isdir(path) else 0))


def _site_packages(env: Path) -> Path:
    return next((env / "lib").glob("python3*/site-packages"))


# ---- the hub's configuration --------------------------------------------------------------------

def api_token(site: Site) -> str:
    """The class's own token (root only): the scripted class and `lucy hub` use the hub's API with it."""
    path = site.hub_dir / "class-api-token"
    if not path.exists():
        site.hub_dir.mkdir(parents=True, exist_ok=True)
        os.chmod(site.hub_dir, 0o700)
        path.write_text(secrets.token_hex(32))
        os.chmod(path, 0o600)
    return path.read_text().strip()


def configure_hub(c, site: Site) -> None:
    """JupyterHub's settings for the class (nbgrader's "one class, one grader" demo, with the
    course's names): PAM accounts, the course's groups and roles, formgrader as a service."""
    members = learners(site)
    env_bin = site.learner_env / "bin"
    c.JupyterHub.bind_url = site.url
    c.JupyterHub.hub_bind_url = f"http://127.0.0.1:{site.hub_api_port}"
    c.JupyterHub.db_url = f"sqlite:///{site.hub_dir / 'jupyterhub.sqlite'}"
    c.JupyterHub.cookie_secret_file = str(site.hub_dir / "jupyterhub_cookie_secret")
    c.JupyterHub.pid_file = str(site.hub_dir / "jupyterhub.pid")
    c.ConfigurableHTTPProxy.command = [str(site.proxy_command)]
    c.ConfigurableHTTPProxy.pid_file = str(site.hub_dir / "jupyterhub-proxy.pid")
    c.ConfigurableHTTPProxy.api_url = f"http://127.0.0.1:{site.port + 3}"
    c.JupyterHub.authenticator_class = "pam"
    c.Authenticator.allowed_users = set(members) | {site.grader}
    c.Authenticator.admin_users = {site.grader}
    c.JupyterHub.load_groups = {f"formgrade-{COURSE_ID}": {"users": [site.grader]},
                                f"nbgrader-{COURSE_ID}": {"users": members}}
    c.JupyterHub.load_roles = [
        {"name": f"formgrade-{COURSE_ID}", "groups": [f"formgrade-{COURSE_ID}"],
         "scopes": [f"access:services!service={site.service}"]},
        {"name": f"nbgrader-{COURSE_ID}", "groups": [f"nbgrader-{COURSE_ID}"],
         "scopes": ["list:services", f"read:services!service={site.service}"]},
        {"name": "lucy-class", "services": ["lucy-class"],
         "scopes": ["admin:users", "admin:servers", "access:servers", "tokens", "list:users", "groups"]},
    ]
    c.JupyterHub.services = [
        {"name": site.service, "url": f"http://127.0.0.1:{site.service_port}", "user": site.grader,
         "cwd": str(site.course), "oauth_no_confirm": True,
         "command": [str(env_bin / "jupyterhub-singleuser"), f"--ServerApp.root_dir={site.course}",
                     # learner files served sandboxed, a script policy on the grading page (grading/page_headers.py)
                     "--ServerApp.jpserver_extensions={'nbgrader.server_extensions.formgrader': True, "
                     "'lucy_runtime.grading.page_headers': True}"],
         "environment": {"PATH": f"{env_bin}:/usr/bin:/bin", "PYTHONPATH": str(site.course),
                         "JUPYTER_CONFIG_PATH": str(site.config_dir), EXCHANGE_ENV: str(site.exchange),
                         "JUPYTERHUB_DEFAULT_URL": "/formgrader"}},
        {"name": "lucy-class", "api_token": api_token(site)},
    ]
    c.Spawner.cmd = [str(env_bin / "jupyterhub-singleuser")]
    c.Spawner.default_url = "/lab"
    c.Spawner.notebook_dir = "~"
    c.Spawner.environment = {"PATH": f"{env_bin}:/usr/bin:/bin", "JUPYTER_CONFIG_PATH": str(site.config_dir),
                             EXCHANGE_ENV: str(site.exchange)}
    c.Spawner.http_timeout = 60
    c.Spawner.start_timeout = 120
    c.JupyterHub.cleanup_servers = True


# ---- starting, and the class through the hub's API ------------------------------------------------

def port_free(port: int) -> bool:
    with socket.socket() as probe:
        try:
            probe.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


def check_can_start(site: Site) -> None:
    for port in (site.port, site.hub_api_port, site.service_port, site.port + 3):
        if not port_free(port):
            raise HubError(f"port {port} on 127.0.0.1 is taken: stop what uses it, or start the hub with "
                           f"LUCY_HUB_PORT=N (it uses N to N+3)")
    if not os.access(site.proxy_command, os.X_OK):
        raise HubError(f"configurable-http-proxy is missing ({site.proxy_command}): `make hub` installs it "
                       "with npm, or set LUCY_HUB_PROXY")
    if not (site.learner_env / "bin" / "jupyterhub-singleuser").exists():
        raise HubError(f"the learners' environment {site.learner_env} is missing: `make hub` builds it")


def set_up(site: Site, log=print) -> str | None:
    """Everything ``make hub`` does before the hub starts (idempotent; as root). Returns the grader's
    first password when this made the account."""
    if os.geteuid() != 0:
        raise HubError("setting up the class's accounts needs root: run `make hub` as root")
    password = ensure_grader(site)
    give_course_to_grader(site)
    make_exchange(site)
    build_learner_env(site, log=log)
    api_token(site)
    return password


def start(site: Site, config: Path, log_file=None) -> subprocess.Popen:
    check_can_start(site)
    site.hub_dir.mkdir(parents=True, exist_ok=True)
    os.chmod(site.hub_dir, 0o700)
    env = {**os.environ, **site.to_environment()}
    # A session of its own, so that ``stop`` can end the proxy the hub started even when the hub did not.
    return subprocess.Popen([str(Path(sys.executable).parent / "jupyterhub"), "-f", str(config)],
                            cwd=site.hub_dir, env=env, stdout=log_file, stderr=subprocess.STDOUT if log_file else None,
                            start_new_session=True)


def stop(process: subprocess.Popen, within: float = 30) -> int:
    """Stop a hub that ``start`` started, then whatever of its session outlived it (its proxy); its exit code."""
    process.terminate()
    try:
        code = process.wait(within)
    except subprocess.TimeoutExpired:
        process.kill()
        code = process.wait()
    try:
        os.killpg(process.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    return code


class HubClient:
    """The hub's REST API with the class's token."""

    def __init__(self, site: Site, timeout: float = 60):
        self.site = site
        self.http = httpx.Client(base_url=site.url, headers={"Authorization": f"token {api_token(site)}"},
                                 timeout=timeout)

    def wait_up(self, process: subprocess.Popen | None = None, within: float = 60) -> None:
        deadline = time.monotonic() + within
        while time.monotonic() < deadline:
            if process is not None and process.poll() is not None:
                raise HubError(f"the hub stopped at start (exit code {process.returncode}): its log says why")
            try:
                if self.http.get("/hub/api/").status_code == 200:
                    return
            except httpx.HTTPError:
                pass
            time.sleep(0.3)
        raise HubError(f"the hub did not answer on {self.site.url} within {within:.0f} s")

    def admit(self, names: list[str]) -> bool:
        """Let new learners into a running hub (the hub reads the learner group only when it
        starts): their hub users, in the course's group. False when no hub answers."""
        try:
            self.http.get("/hub/api/")
        except httpx.HTTPError:
            return False
        for name in names:
            if self.http.get(f"/hub/api/users/{name}").status_code == 404:
                self._ok(self.http.post(f"/hub/api/users/{name}"), f"adding {name} to the hub")
        self._ok(self.http.post(f"/hub/api/groups/nbgrader-{COURSE_ID}/users", json={"users": names}),
                 f"adding {', '.join(names)} to nbgrader-{COURSE_ID}")
        return True

    def start_server(self, name: str) -> None:
        require_learner(self.site, name)
        answer = self.http.post(f"/hub/api/users/{name}/server")
        if answer.status_code not in (201, 202, 400):  # 400: already running
            raise HubError(f"the hub did not start {name}'s server: {answer.status_code} {answer.text[:200]}")

    def wait_ready(self, names: list[str], within: float = 180) -> None:
        deadline = time.monotonic() + within
        waiting = set(names)
        while waiting and time.monotonic() < deadline:
            for name in sorted(waiting):
                user = self.http.get(f"/hub/api/users/{name}").json()
                if (user.get("servers") or {}).get("", {}).get("ready"):
                    waiting.discard(name)
            time.sleep(0.5)
        if waiting:
            raise HubError(f"servers not ready within {within:.0f} s: {', '.join(sorted(waiting))}")

    def stop_server(self, name: str) -> None:
        self.http.delete(f"/hub/api/users/{name}/server")

    @staticmethod
    def _ok(answer: httpx.Response, what: str) -> httpx.Response:
        if answer.is_error:
            raise HubError(f"{what}: {answer.status_code} {answer.text[:1500]}")
        return answer

    def assignments(self, name: str, action: str, assignment: str) -> list | dict:
        """What the Assignments tab does when a learner clicks Fetch, Submit or Fetch Feedback."""
        answer = self.http.post(f"/user/{name}/assignments/{action}",
                                data={"course_id": COURSE_ID, "assignment_id": assignment})
        return self._ok(answer, f"{name}'s {action} of {assignment}").json()

    def listing(self, name: str) -> list:
        answer = self.http.get(f"/user/{name}/assignments", params={"course_id": COURSE_ID})
        return self._ok(answer, f"{name}'s assignment list").json()["value"]

    def read(self, name: str, path: str) -> dict:
        answer = self.http.get(f"/user/{name}/api/contents/{path}", params={"content": "1"})
        return self._ok(answer, f"reading {name}'s {path}").json()

    def write_notebook(self, name: str, path: str, notebook: dict) -> None:
        answer = self.http.put(f"/user/{name}/api/contents/{path}",
                               json={"type": "notebook", "format": "json", "content": notebook})
        self._ok(answer, f"saving {name}'s {path}")


def as_grader(site: Site, command: list[str], **kwargs) -> subprocess.CompletedProcess:
    """A course command as the grader account, with the learner environment's interpreter and the
    course's full runtime first (what the formgrader service runs)."""
    env = {"PATH": f"{site.learner_env / 'bin'}:/usr/bin:/bin", "PYTHONPATH": str(site.course),
           "JUPYTER_CONFIG_PATH": str(site.config_dir), EXCHANGE_ENV: str(site.exchange),
           "HOME": pwd.getpwnam(site.grader).pw_dir, "LANG": "C.UTF-8"}
    return subprocess.run(["runuser", "-u", site.grader, "--", "env", "-i",
                           *[f"{k}={v}" for k, v in env.items()], *command],
                          cwd=site.course, capture_output=True, text=True, **kwargs)


def as_learner(site: Site, name: str, command: list[str], **kwargs) -> subprocess.CompletedProcess:
    env = {"PATH": f"{site.learner_env / 'bin'}:/usr/bin:/bin", "JUPYTER_CONFIG_PATH": str(site.config_dir),
           EXCHANGE_ENV: str(site.exchange),
           "HOME": pwd.getpwnam(name).pw_dir, "LANG": "C.UTF-8"}
    return subprocess.run(["runuser", "-u", name, "--", "env", "-i", *[f"{k}={v}" for k, v in env.items()],
                           *command], cwd=pwd.getpwnam(name).pw_dir, capture_output=True, text=True, **kwargs)


# ---- a scratch class: the tests' and the bench's ------------------------------------------------------

def course_copy(repo: Path, into: Path) -> Path:
    """The course's own files (no .venv, no git history): what a course folder on a server holds."""
    course = into / "course"
    course.mkdir(parents=True)
    for name in ("nbgrader_config.py", "pyproject.toml"):
        shutil.copy(repo / name, course)
    for name in ("source", "release", "lucy_runtime", "hub"):
        shutil.copytree(repo / name, course / name, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    return course


def free_base_port(tries: int = 50) -> int:
    for _ in range(tries):
        base = secrets.choice(range(20000, 40000, 4))
        if all(port_free(base + i) for i in range(4)):
            return base
    raise HubError("no four free ports in a row on 127.0.0.1")


@contextlib.contextmanager
def scratch_class(repo: Path, names: list[str], prefix: str, log=lambda line: None):
    """A class of ``names`` on a hub of its own: a copy of the course under /srv, its grader
    ``PREFIX-grader``, accounts made and removed again. Yields the site, a client and the passwords."""
    top = Path(tempfile.mkdtemp(prefix=f"{prefix}-", dir="/srv" if Path("/srv").is_dir() else None))
    top.chmod(0o755)
    site = Site(course=course_copy(repo, top), state=top / "state", grader=f"{prefix}-grader",
                learners_group=f"{prefix}-learners", port=free_base_port(),
                proxy=repo / ".venv" / "node" / "node_modules" / ".bin" / "configurable-http-proxy")
    passwords = {name: secrets.token_urlsafe(12) for name in names}
    process = None
    remove_accounts([*names, site.grader])  # left by a run that was stopped before its clean-up
    try:
        set_up(site, log=log)
        add_learners(site, passwords)
        with open(top / "hub.log", "wb") as hub_log:
            process = start(site, repo / "hub" / "jupyterhub_config.py", log_file=hub_log)
            client = HubClient(site)
            client.wait_up(process)
            try:
                yield site, client, passwords
            finally:
                for name in [*names, site.grader]:
                    try:
                        client.stop_server(name)
                    except httpx.HTTPError:
                        pass
    finally:
        if process is not None:
            stop(process)
        remove_accounts([*names, site.grader])
        subprocess.run(["groupdel", site.learners_group], capture_output=True)
        shutil.rmtree(top, ignore_errors=True)


def used_memory_mb() -> float:
    """The machine's memory in use (MemTotal less MemAvailable), in MB."""
    fields = dict(line.split(":", 1) for line in Path("/proc/meminfo").read_text().splitlines())
    return (int(fields["MemTotal"].split()[0]) - int(fields["MemAvailable"].split()[0])) / 1024


@dataclass(frozen=True)
class ClassRun:
    """One scripted class through the hub: each step's wall seconds, the machine's peak memory while
    the learners' servers ran, each learner's grade and the feedback pages each fetched."""

    learners: int
    seconds: dict[str, float]
    peak_memory_mb: float
    idle_memory_mb: float
    grades: dict[str, float]
    feedback_pages: dict[str, int]


def run_class(site: Site, client: HubClient, hand_in: dict[str, dict | None], unit: str, jobs: int = 2) -> ClassRun:
    """The whole cycle, scripted: release; every learner's server started through the hub's API; fetch,
    hand in (``hand_in[name]``: the notebook to save, or None to submit it as fetched) and submit
    through the Assignments tab's handlers; then, as the grader, collect (owner check on),
    ``lucy autograde --jobs``, feedback and release; every learner fetches their feedback."""
    seconds: dict[str, float] = {}
    names = sorted(hand_in)

    def step(name: str, action) -> None:
        started = time.monotonic()
        action()
        seconds[name] = round(time.monotonic() - started, 1)

    def grader(*command: str) -> None:
        done = as_grader(site, list(command), timeout=3600)
        if done.returncode != 0:
            raise HubError(f"{' '.join(command[:4])} failed as {site.grader}: {(done.stderr or done.stdout)[-500:]}")

    idle = used_memory_mb()
    peak = [idle]
    sampling = threading.Event()

    def sample() -> None:
        while not sampling.wait(0.5):
            peak[0] = max(peak[0], used_memory_mb())

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    try:
        def release() -> None:
            grader("python", "-m", "nbgrader", "generate_assignment", unit, "--force")
            grader("python", "-m", "nbgrader", "release_assignment", unit, "--force")

        step("release", release)

        def start_all() -> None:
            for name in names:
                client.start_server(name)
            client.wait_ready(names, within=60 + 10 * len(names))

        step("start servers", start_all)
        step("fetch", lambda: [client.assignments(name, "fetch", unit) for name in names])
        path = f"{unit}/{unit}.ipynb"

        def submit_all() -> None:
            for name in names:
                notebook = hand_in[name]
                if notebook is not None:
                    client.write_notebook(name, path, notebook)
                answer = client.assignments(name, "submit", unit)
                if isinstance(answer, dict) and not answer.get("success", True):
                    raise HubError(f"{name} could not submit: {answer.get('error', answer)}")

        step("hand in and submit", submit_all)
        step("collect", lambda: grader("python", "-m", "nbgrader", "collect", unit))
        step("autograde", lambda: grader("python", "-m", "lucy_runtime.cli", "autograde", unit,
                                         "--jobs", str(jobs)))
        step("feedback", lambda: grader("python", "-m", "nbgrader", "generate_feedback", unit))
        step("release feedback", lambda: grader("python", "-m", "nbgrader", "release_feedback", unit))
        step("fetch feedback", lambda: [client.assignments(name, "fetch_feedback", unit) for name in names])
    finally:
        sampling.set()
        sampler.join()
    grader("python", "-m", "nbgrader", "export")
    grades = {row["student_id"]: float(row["raw_score"]) for row in csv.DictReader(io.StringIO(
        (site.course / "grades.csv").read_text())) if row["assignment"] == unit}
    pages = {}
    for name in names:
        stamps = client.read(name, f"{unit}/feedback")["content"]
        pages[name] = sum(1 for stamp in stamps for item in client.read(name, stamp["path"])["content"]
                          if item["name"].endswith(".html"))
    for name in names:
        client.stop_server(name)
    return ClassRun(len(names), seconds, round(peak[0], 1), round(idle, 1), grades, pages)
