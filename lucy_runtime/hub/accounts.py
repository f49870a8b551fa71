"""The class's system accounts: the grader's and each learner's (PAM passwords, the course's learner group),
the course folder given to the grader and closed to learners, commands run as either, and scratch
accounts removed with everything they still run."""

from __future__ import annotations

import grp
import os
import pwd
import secrets
import stat
import subprocess
import time
from pathlib import Path

from ..errors import HubError
from ..grading import exchange
from .site import COURSE_ID, EXCHANGE_ENV, Site


def run_checked(command: list[str], **kwargs) -> subprocess.CompletedProcess:
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
        run_checked(["groupadd", "--system", site.learners_group])
    password = None
    if not _user_exists(site.grader):
        run_checked(["useradd", "--create-home", "--shell", "/bin/bash", "--user-group", site.grader])
        password = secrets.token_urlsafe(12)
        set_passwords({site.grader: password})
    os.chmod(pwd.getpwnam(site.grader).pw_dir, 0o700)
    return password


def add_learners(site: Site, passwords: dict[str, str]) -> None:
    """Each learner a system account of their own (home mode 700), in the course's learner group,
    with the password they log in to the hub with."""
    for name in passwords:
        if not _user_exists(name):
            run_checked(["useradd", "--create-home", "--shell", "/bin/bash", "--user-group", name])
        run_checked(["usermod", "-a", "-G", site.learners_group, name])
        os.chmod(pwd.getpwnam(name).pw_dir, 0o700)
    set_passwords(passwords)
    exchange.add(site.exchange, COURSE_ID, list(passwords))  # each one's own folder of inbound/


def set_passwords(passwords: dict[str, str]) -> None:
    """The system passwords the hub's PAM log-in checks."""
    run_checked(["chpasswd"], input="".join(f"{name}:{password}\n" for name, password in passwords.items()))


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

