"""The class's hub settings and the learner distribution, checked without a hub (no root needed).

The hub itself, with real accounts, runs in test_hub_class.py and test_hub_browser.py.
"""

from __future__ import annotations

import re
import tomllib

from traitlets.config import Config

from lucy_runtime.grading.sandbox import EDUCATOR_TOOLS
from lucy_runtime.hub.learner_env import learner_tree
from lucy_runtime.hub.settings import configure_hub
from lucy_runtime.hub.site import PROXY_REQUIREMENT, Site, exchange_settings
from lucy_runtime.cli.main import build_parser

from .conftest import REPO


def configured(tmp_path) -> tuple[Config, Site]:
    site = Site(course=tmp_path / "course", state=tmp_path / "state", learner_env=tmp_path / "env", port=18000)
    c = Config()
    configure_hub(c, site)
    return c, site


def test_the_hub_has_nbgraders_course_groups_and_their_roles(tmp_path):
    c, site = configured(tmp_path)
    assert set(c.JupyterHub.load_groups) == {"formgrade-lucy-ch07", "nbgrader-lucy-ch07"}
    assert c.JupyterHub.load_groups["formgrade-lucy-ch07"]["users"] == [site.grader]
    roles = {role["name"]: role for role in c.JupyterHub.load_roles}
    assert roles["formgrade-lucy-ch07"]["scopes"] == ["access:services!service=lucy-ch07"]
    assert roles["nbgrader-lucy-ch07"]["scopes"] == ["list:services", "read:services!service=lucy-ch07"]


def test_formgrader_is_a_service_of_the_grader_account_in_the_course_folder(tmp_path):
    c, site = configured(tmp_path)
    service = next(s for s in c.JupyterHub.services if s["name"] == "lucy-ch07")
    assert service["user"] == site.grader and service["cwd"] == str(site.course)
    assert service["command"][0] == str(site.learner_env / "bin" / "jupyterhub-singleuser")
    assert any("formgrader': True" in arg for arg in service["command"])
    assert service["environment"]["PYTHONPATH"] == str(site.course)


def test_learners_servers_run_the_learner_environment_and_log_in_with_pam(tmp_path):
    c, site = configured(tmp_path)
    assert c.Spawner.cmd == [str(site.learner_env / "bin" / "jupyterhub-singleuser")]
    assert c.JupyterHub.authenticator_class == "pam"
    assert c.JupyterHub.bind_url == "http://127.0.0.1:18000"


def test_the_exchange_is_set_in_one_place_for_every_account(tmp_path):
    c, site = configured(tmp_path)
    settings = exchange_settings(site)
    assert f"configure(c, {str(tmp_path / 'state' / 'exchange')!r})" in settings  # the private exchange, there
    service = next(s for s in c.JupyterHub.services if s["name"] == "lucy-ch07")
    # Learners' servers and the grader's service read the same folder first.
    assert c.Spawner.environment["JUPYTER_CONFIG_PATH"] == service["environment"]["JUPYTER_CONFIG_PATH"] \
        == str(site.config_dir)
    # and the course's own configuration, where it names the exchange from LUCY_EXCHANGE, the same one.
    assert c.Spawner.environment["LUCY_EXCHANGE"] == service["environment"]["LUCY_EXCHANGE"] == str(site.exchange)


def test_the_learner_distribution_has_no_educator_tools_and_a_learners_lucy(tmp_path):
    tree = learner_tree(REPO, tmp_path)
    assert not any((tree / "lucy_runtime" / package).exists() for package in EDUCATOR_TOOLS)
    assert (tree / "lucy_runtime" / "grading" / "checkpoint.py").exists()
    project = tomllib.loads((tree / "pyproject.toml").read_text())["project"]
    assert project["scripts"] == {"lucy": "lucy_runtime.grading.learner_cli:main"}
    assert not any(p.name == "source" for p in tree.iterdir())


def test_the_readme_hub_block_uses_commands_that_exist():
    text = (REPO / "README.md").read_text(encoding="utf-8")
    section = text[text.index("### The class on JupyterHub"):]
    block = re.search(r"```bash\n(.*?)```", section, re.S).group(1)
    assert "lucy hub add-learner" in block and "make hub" in block
    hub_parser = build_parser()._subparsers._group_actions[0].choices["hub"]  # type: ignore[union-attr]
    assert "add-learner" in next(a for a in hub_parser._actions if a.dest == "action").choices
    assert re.search(r"^hub:", (REPO / "Makefile").read_text(), re.M)


def test_make_hub_installs_the_proxy_the_hub_names_when_it_is_missing():
    installs = re.findall(r"npm install .* (configurable-http-proxy@\S+)", (REPO / "Makefile").read_text(encoding="utf-8"))
    assert installs == [PROXY_REQUIREMENT]
