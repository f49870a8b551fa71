"""The learners' environment: a venv at a system path every account can run, built from this tree without
the educator's tools (``sandbox.EDUCATOR_TOOLS``) and without ``source/``, so no answer is in a learner's reach.
Its ``lucy`` is the learner's (``grading/learner_cli.py``)."""

from __future__ import annotations

import fcntl
import json
import os
import shutil
import stat
import sys
import tempfile
import tomllib
from pathlib import Path

from ..grading.sandbox import EDUCATOR_TOOLS
from .accounts import run_checked
from .site import Site

# What a learner's server runs; the hub's own version, so jupyterhub-singleuser speaks its API.
HUB_REQUIREMENT = "jupyterhub==6.1.1"
DEBIAN_PYTHON = Path("/usr/bin/python3.11")


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
        run_checked([str(python), "-m", "venv", str(env)])
    wanted = "\n".join(learner_requirements(site.course)) + "\n"
    stamp = env / ".lucy-requirements"
    if not stamp.exists() or stamp.read_text() != wanted:
        log("installing the learners' packages (JupyterLab, nbgrader, the single-user server)")
        run_checked([str(env / "bin" / "python"), "-m", "pip", "install", "--quiet", "--disable-pip-version-check",
                     *learner_requirements(site.course)])
        stamp.write_text(wanted)
    work = Path(tempfile.mkdtemp(prefix="lucy-learner-build-"))
    try:
        tree = learner_tree(site.course, work / "tree")
        run_checked([sys.executable, "-m", "pip", "wheel", "--quiet", "--disable-pip-version-check", "--no-deps",
                     "--no-build-isolation", "--wheel-dir", str(work / "dist"), str(tree)])
        wheel = next((work / "dist").glob("*.whl"))
        run_checked([str(env / "bin" / "python"), "-m", "pip", "install", "--quiet", "--disable-pip-version-check",
                     "--no-deps", "--force-reinstall", str(wheel)])
    finally:
        shutil.rmtree(work, ignore_errors=True)
    run_checked([str(env / "bin" / "python"), "-m", "compileall", "-q", str(_site_packages(env) / "lucy_runtime")])
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

