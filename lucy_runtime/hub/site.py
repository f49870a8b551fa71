"""Where one class on one machine lives, and the exchange its accounts share, named in one place.

What is where (docs/class-on-a-server.md):

* the hub's own state (its database, cookie secret, the class's API token) in
  ``STATE/hub`` (root only); the exchange in ``STATE/exchange``, a system path, named in one
  place, ``STATE/jupyter/nbgrader_config.py``, first on every class process's ``JUPYTER_CONFIG_PATH``;
* the grader's account runs formgrader as a hub-managed service, in the course folder,
  which it reaches through its group; learners' accounts cannot open the course folder
  (``accounts.py``);
* learners' single-user servers and kernels run the learner environment, a venv at a
  system path (``learner_env.py``). The grader's service runs the same interpreter with the course's
  full runtime first on ``PYTHONPATH``.

``LUCY_HUB_*`` variables name each place (``Site.from_environment``): ``lucy hub start`` sets them for the
hub, whose ``hub/jupyterhub_config.py`` reads them.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from ..grading import exchange

COURSE_ID = "lucy-ch07"
PROXY_REQUIREMENT = "configurable-http-proxy@5.3.0"
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
    return (f"# Written by lucy_runtime/hub/site.py for the class on this machine.\n"
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

