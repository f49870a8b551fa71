"""A class on JupyterHub, with real accounts: what `make hub` sets up, run by a hub on 127.0.0.1.

The hub is JupyterHub with configurable-http-proxy, PAM accounts made with useradd, the
learners' servers started through the hub's REST API, and the Assignments tab's own
handlers (what its Fetch, Submit and Fetch Feedback buttons post). The course is a copy
of this one in a folder of its own under /srv, set up by the same functions `make hub`
runs (lucy_runtime/hub/). Needs root (useradd, runuser); CI runs as root.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import nbformat
import pytest

from lucy_runtime.hub.accounts import as_learner, give_course_to_grader, remove_accounts
from lucy_runtime.hub.scratch import free_base_port, run_class, scratch_class
from lucy_runtime.hub.server import check_can_start
from lucy_runtime.hub.site import COURSE_ID, Site
from lucy_runtime.proof.verify import filled, with_written_answers
from lucy_runtime.errors import HubError
from lucy_runtime.notebooks.notebook import learner_implementation

from .conftest import REPO, need

pytestmark = [pytest.mark.slow, pytest.mark.nbgrader]


@pytest.fixture(autouse=True)
def _as_root():
    need("root", os.geteuid() == 0, "a class's accounts are system accounts: run as root (CI runs as root)")


UNIT = "ch07_unit_a"
PREFIX = "lhub"
FULL, BLANK = [f"{PREFIX}a{i}" for i in range(3)], [f"{PREFIX}b{i}" for i in range(3)]
LEARNERS = FULL + BLANK


@pytest.fixture(scope="module")
def site():
    global BEFORE_THE_CLASS, CLASS_SET_UP_AT
    BEFORE_THE_CLASS = sorted(str(entry) for entry in Path(tempfile.gettempdir()).iterdir())
    CLASS_SET_UP_AT = int(time.time()) - 1
    with scratch_class(REPO, LEARNERS, PREFIX) as running:
        yield running


# ---- bad input: one line each -----------------------------------------------------------------

def test_a_hub_that_cannot_start_says_why_in_one_line(tmp_path):
    with __import__("socket").socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        site = Site(course=tmp_path, state=tmp_path, port=taken.getsockname()[1], proxy=REPO / ".venv" / "node" /
                    "node_modules" / ".bin" / "configurable-http-proxy")
        with pytest.raises(HubError, match=rf"^port {site.port} on 127.0.0.1 is taken: .*LUCY_HUB_PORT") as taken_error:
            check_can_start(site)
    assert "\n" not in str(taken_error.value)
    missing = Site(course=tmp_path, state=tmp_path, port=free_base_port(), proxy=tmp_path / "no-proxy")
    with pytest.raises(HubError, match=r"^configurable-http-proxy is missing .*make hub"):
        check_can_start(missing)


def test_a_learner_not_in_the_course_is_named_with_what_to_do(site):
    site, client, _ = site
    with pytest.raises(HubError, match=rf"^{site.grader} is not a learner of lucy-ch07: add them with"):
        client.start_server(site.grader)


def test_a_course_folder_the_grader_cannot_reach_is_refused():
    top = Path(tempfile.mkdtemp(prefix="lucy-hub-closed-", dir="/srv" if Path("/srv").is_dir() else None))
    try:
        top.chmod(0o755)
        (top / "closed" / "course").mkdir(parents=True)
        (top / "closed").chmod(0o700)
        with pytest.raises(HubError, match=rf"^the grader account cannot reach .*: {top}/closed is closed to other accounts"):
            give_course_to_grader(Site(course=top / "closed" / "course", grader="root"))
    finally:
        shutil.rmtree(top)


def lucy_hub(site, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "lucy_runtime.cli", "hub", *args], cwd=site.course,
                          env={**os.environ, **site.to_environment()}, capture_output=True, text=True, timeout=300)


def test_a_second_hub_on_the_classs_port_is_refused_in_one_line(site):
    site, _, _ = site
    done = lucy_hub(site, "start")
    assert done.returncode == 2
    assert done.stdout.splitlines() == [f"lucy hub: port {site.port} on 127.0.0.1 is taken: stop what uses it, or start "
                                        "the hub with LUCY_HUB_PORT=N (it uses N to N+3)"]


def test_a_learner_added_while_the_hub_runs_is_let_in_at_once(site):
    site, client, _ = site
    late = f"{PREFIX}late"
    try:
        done = lucy_hub(site, "add-learner", late)
        assert done.returncode == 0 and f"the hub at {site.url} lets them in now" in done.stdout, done.stdout
        client.start_server(late)
        client.wait_ready([late])
        group = client.http.get(f"/hub/api/groups/nbgrader-lucy-ch07").json()
        assert late in group["users"]
    finally:
        client.stop_server(late)
        remove_accounts([late])


# ---- a learner's environment holds no answer ------------------------------------------------------

def solution_lines() -> set[str]:
    """Lines of the reference solution cells (source/, their only copy) long enough to be the
    solution's own, less those the released notebooks hand every learner anyway."""
    released = "".join(path.read_text() for path in (REPO / "release").rglob("*.ipynb"))
    lines = {line.strip() for _, code in learner_implementation(REPO / "source") for line in code.splitlines()}
    return {line for line in lines if len(line) >= 30 and json.dumps(line)[1:-1] not in released}


BEFORE_THE_CLASS: list[str] = []
# What a machine held before the class was set up is not the class's server: a CI runner's own
# files (its copy of the change under test), other courses, a developer's home. The walk reads what
# changed status since: every file the class set up, made, copied or opened up (a new file, a copy
# and a chmod all set a file's ctime to now, and no copy can keep an old one; cp -p keeps only mtime).
CLASS_SET_UP_AT = 0


def other_checkouts(serving: Path) -> list[str]:
    """Git checkouts of this course on this machine other than the folder the hub serves: developers'
    copies (the one the tests run from, its worktrees, a CI clone, another developer's checkout), which a
    class's server does not have. Each is named when the test fails. The course folder the hub serves is
    in the walk."""
    marks = subprocess.run(["find", "/", "(", "-path", "/proc", "-o", "-path", "/sys", "-o", "-path", "/dev", "-o",
                            "-path", "/run", ")", "-prune", "-o", "-name", ".git", "-print", "-prune"],
                           capture_output=True, text=True).stdout.splitlines()
    found = {str(REPO)}
    for mark in marks:
        folder = Path(mark).parent
        config = folder / "nbgrader_config.py"
        if folder != serving and config.is_file() and f'course_id = "{COURSE_ID}"' in config.read_text(errors="replace"):
            found.add(str(folder))
    # What was in the shared temporary folder before the class was set up (other developers' scratch
    # courses on a shared machine: a class server's /tmp starts empty). What the hub, the grader's
    # commands and the sandbox leave there while the class runs is in the walk.
    return sorted(found) + BEFORE_THE_CLASS


def test_a_learner_account_can_read_no_line_of_any_reference_solution(graded):
    """After a whole cycle (fetch, submit, collect, autograde, feedback), as a learner who handed in the
    notebook as fetched (one who wrote the reference holds it in their own folder, as they should)."""
    site, _, _ = graded
    lines = solution_lines()
    assert len(lines) > 50
    # The lines to look for, where the learner's grep reads them (the walk leaves this one file out).
    patterns = Path(tempfile.mkdtemp(prefix="lucy-hub-patterns-")) / "patterns"
    patterns.parent.chmod(0o755)
    patterns.write_text("\n".join(sorted(lines)) + "\n")
    patterns.chmod(0o644)
    # The detector's own proof: one solution line in a file the learner may read must be found.
    planted = Path(tempfile.mkdtemp(prefix="lucy-hub-planted-"))
    planted.chmod(0o755)
    (planted / "copied_answer.py").write_text(sorted(lines)[0] + "\n")
    (planted / "copied_answer.py").chmod(0o644)
    (planted / "copied_as_of_old.py").write_text(sorted(lines)[-1] + "\n")
    (planted / "copied_as_of_old.py").chmod(0o644)
    os.utime(planted / "copied_as_of_old.py", (946684800, 946684800))  # cp -p of a file from 2000
    prune = ["/proc", "/sys", "/dev", "/run", str(patterns), *other_checkouts(site.course)]
    pruned = [arg for path in prune for arg in ("-path", path, "-o")][:-1]
    walk = ("find / \\( " + " ".join(f"'{a}'" if a != "-o" and a != "-path" else a for a in pruned) + " \\) -prune "
            f"-o -type f -newerct @{CLASS_SET_UP_AT} -size -1024k -readable -print0 2>/dev/null "
            f"| xargs -0 -r grep -l -F -I -f {patterns} 2>/dev/null; true")
    try:
        done = as_learner(site, BLANK[0], ["nice", "sh", "-c", walk], timeout=900)
    finally:
        found = done.stdout.split() if "done" in locals() else []
        shutil.rmtree(planted)
        shutil.rmtree(patterns.parent)
    assert {str(planted / "copied_answer.py"), str(planted / "copied_as_of_old.py")} <= set(found), (done.stderr[-2000:], found)
    leaks = [path for path in found if not path.startswith(str(planted))]
    assert leaks == [], "\n".join(leaks)


def test_the_learner_environment_has_no_educator_tools_and_its_own_checkpoint(site):
    site, _, _ = site
    probe = as_learner(site, LEARNERS[0], ["python", "-c",
                                            "import importlib.util, lucy_runtime, lucy_runtime.grading.checkpoint;"
                                            "print(importlib.util.find_spec('lucy_runtime.educator'))"])
    assert probe.stdout.strip() == "None", probe.stderr
    usage = as_learner(site, LEARNERS[0], ["lucy", "checkpoint", "--help"])
    assert usage.returncode == 0 and "notebook_dir" in usage.stdout, usage.stderr
    assert as_learner(site, LEARNERS[0], ["lucy", "autograde", "x"]).returncode == 2  # not a learner's command


def test_a_learner_runs_the_checkpoint_from_their_own_account(graded):
    """Before Chapter 8: the checkpoint on the learner's fetched notebook, in the learner environment
    (it runs the rows in a sandbox of its own, as that account)."""
    site, _, _ = graded
    done = as_learner(site, BLANK[0], ["lucy", "checkpoint", "ch07", ".", "--no-execute"], timeout=600)
    assert done.returncode == 1, done.stdout[-2000:] + done.stderr[-2000:]
    assert "NOT READY for Chapter 8" in done.stdout and "your code is not written yet" in done.stdout


# ---- a class: servers through the hub's API, the Assignments tab's fetch and submit -----------------

@pytest.fixture(scope="module")
def graded(site):
    """Three learners hand in the reference (code and written answers), three the notebook as fetched."""
    site, client, passwords = site
    release = nbformat.read(str(REPO / "release" / UNIT / f"{UNIT}.ipynb"), as_version=4)
    source = nbformat.read(str(REPO / "source" / UNIT / f"{UNIT}.ipynb"), as_version=4)
    reference = with_written_answers(filled(release, source), source)
    run = run_class(site, client, {name: (reference if name in FULL else None) for name in LEARNERS}, UNIT)
    return site, client, run


def test_the_class_is_collected_with_the_owner_check_on_and_graded_in_parallel(graded):
    site, client, run = graded
    grades = run.grades
    assert sorted(p.name for p in (site.course / "submitted").iterdir()) == sorted(LEARNERS)
    assert sorted(grades) == sorted(LEARNERS)
    assert {grades[name] for name in BLANK} == {0.0}
    assert len({grades[name] for name in FULL}) == 1 and grades[FULL[0]] > 0

    assert run.feedback_pages == {name: 1 for name in LEARNERS}
    for name in LEARNERS:
        client.start_server(name)
    client.wait_ready(LEARNERS)
    for name in LEARNERS:
        folder = client.read(name, f"{UNIT}/feedback")["content"]
        pages = [item for stamp in folder for item in client.read(name, stamp["path"])["content"]
                 if item["name"].endswith(".html")]
        assert len(pages) == 1, (name, pages)
        page = client.read(name, pages[0]["path"])["content"]
        score = re.search(r"Score:\s*([\d.]+)\s*/", page)
        assert score and float(score.group(1)) == grades[name], (name, score and score.group(0))


def test_the_learners_own_check_runs_in_their_kernel(graded):
    """What a learner does in the notebook: run the cells, the check(...) cells with them, in a kernel
    of their account's own environment."""
    site, _, _ = graded
    name = FULL[0]
    run = as_learner(site, name, ["jupyter", "nbconvert", "--to", "notebook", "--execute", "--output",
                                  "ran.ipynb", f"{UNIT}/{UNIT}.ipynb"], timeout=600)
    assert run.returncode == 0, run.stderr[-3000:]
    ran = nbformat.read(str(Path(f"/home/{name}") / UNIT / "ran.ipynb"), as_version=4)
    checks = [cell for cell in ran.cells if cell.cell_type == "code" and "check(" in cell.source]
    assert checks
    text = "".join(out.get("text", "") + json.dumps(out.get("data", {})) for cell in checks for out in cell.outputs)
    assert "NotImplementedError" not in text and "Traceback" not in text, text[:2000]
