"""JupyterHub's settings for the class (``configure_hub``, which ``hub/jupyterhub_config.py`` calls), and the
class's own API token.

Authentication is JupyterHub's default, PAM: the learners' system passwords, which
``accounts.add_learners`` sets. Only members of the course's learner group and the grader may log in.
"""

from __future__ import annotations

import os
import secrets

from .accounts import learners
from .site import COURSE_ID, EXCHANGE_ENV, Site


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

