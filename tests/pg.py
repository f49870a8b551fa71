"""A throwaway PostgreSQL server on loopback, from Debian's postgresql (``make test`` installs it).

As root, the server runs as the ``postgres`` user the Debian package creates: PostgreSQL
refuses to run as root.
"""

from __future__ import annotations

import glob
import os
import shutil
import socket
import subprocess
import tempfile
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

from .conftest import need


def server_bin() -> Path:
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"))
    if found:
        return Path(found[-1]).parent
    initdb = shutil.which("initdb")
    if initdb:
        return Path(initdb).resolve().parent
    need("PostgreSQL", False, "`make test` installs it (apt-get install -y postgresql)")
    raise AssertionError("unreachable: need() fails or skips")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextmanager
def postgres(database: str = "lucy", *, role: tuple[str, str] | None = None) -> Iterator[str]:
    """Start a server in a temporary folder; yield a SQLAlchemy URL (psycopg 3) for ``database``.

    With ``role`` (a name and a password), connections over TCP need a password, as on Debian's
    own server: ``database`` belongs to that role, and the URL names it without the password
    (libpq finds it in ``~/.pgpass``, or the file ``PGPASSFILE`` names)."""
    bin_dir = server_bin()
    data = Path(tempfile.mkdtemp(prefix="lucy-pg-"))
    as_user: list[str] = []
    if os.geteuid() == 0:
        shutil.chown(data, "postgres", "postgres")
        as_user = ["runuser", "-u", "postgres", "--"]
    port = _free_port()

    def run(*command: str) -> None:
        subprocess.run([*as_user, *command], check=True, capture_output=True, text=True, timeout=120)

    auth = ["--auth-local=trust", "--auth-host=scram-sha-256"] if role else ["--auth=trust"]
    run(str(bin_dir / "initdb"), "-D", str(data / "db"), "-U", "postgres", *auth, "-E", "UTF8")
    run(str(bin_dir / "pg_ctl"), "-D", str(data / "db"), "-l", str(data / "server.log"), "-w", "-t", "60",
        "-o", f"-h 127.0.0.1 -p {port} -k {data}", "start")
    try:
        if role:
            name, password = role
            admin = ["-h", str(data), "-p", str(port), "-U", "postgres"]  # the unix socket, trusted
            run(str(bin_dir / "psql"), *admin, "-v", "ON_ERROR_STOP=1", "-c",
                f"CREATE ROLE \"{name}\" LOGIN PASSWORD '{password}'", "postgres")
            run(str(bin_dir / "createdb"), *admin, "--owner", name, database)
            yield f"postgresql+psycopg://{name}@127.0.0.1:{port}/{database}"
        else:
            run(str(bin_dir / "createdb"), "-h", "127.0.0.1", "-p", str(port), "-U", "postgres", database)
            yield f"postgresql+psycopg://postgres@127.0.0.1:{port}/{database}"
    finally:
        subprocess.run([*as_user, str(bin_dir / "pg_ctl"), "-D", str(data / "db"), "-m", "fast", "stop"],
                       capture_output=True, timeout=120)
        shutil.rmtree(data, ignore_errors=True)
