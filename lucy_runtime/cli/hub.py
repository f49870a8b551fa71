"""``lucy hub``: the class on JupyterHub, as root (lucy_runtime/hub/): set it up, add learners, start the hub."""

from __future__ import annotations


def _hub(args) -> int:
    from ..errors import HubError
    from ..hub.site import Site

    site = Site.from_environment()
    action = {"setup": _set_up, "add-learner": _add_learners, "start": _start}[args.action]
    try:
        return action(site, args.names)
    except HubError as problem:
        print(f"lucy hub: {problem}")
        return 2


def _set_up(site, names: list[str]) -> int:
    from ..hub.accounts import learners
    from ..hub.server import set_up

    password = set_up(site)
    if password:
        print(f"the grader's account {site.grader}, first password: {password} (`passwd {site.grader}` changes it)")
    print(f"the class is set up: the grader {site.grader}, learners {', '.join(learners(site)) or '(none yet)'}, "
          f"the exchange {site.exchange}, the learners' environment {site.learner_env}")
    return 0


def _add_learners(site, names: list[str]) -> int:
    import secrets

    from ..hub.accounts import add_learners, ensure_grader
    from ..hub.server import HubClient
    from ..hub.site import make_exchange

    if not names:
        print("lucy hub add-learner: name one learner or more")
        return 2
    passwords = {name: secrets.token_urlsafe(9) for name in names}
    grader_password = ensure_grader(site)
    if grader_password:
        print(f"the grader's account {site.grader}, first password: {grader_password}")
    make_exchange(site)
    add_learners(site, passwords)
    print("each learner's account and first password (give it to them; `passwd NAME` changes it):")
    for name, password in passwords.items():
        print(f"  {name} {password}")
    if HubClient(site, timeout=5).admit(list(passwords)):
        print(f"the hub at {site.url} lets them in now")
    else:
        print("the hub lets them in when it starts (`make hub`)")
    return 0


def _start(site, names: list[str]) -> int:
    from ..errors import HubError
    from ..hub.server import HubClient, start, stop

    process = start(site, site.course / "hub" / "jupyterhub_config.py")
    try:
        HubClient(site).wait_up(process)
    except HubError:
        stop(process)  # a hub that did not come up leaves no proxy behind
        raise
    print(f"the class's hub is up at {site.url} (formgrader: {site.url}/services/{site.service}/formgrader); "
          "Ctrl-C stops it")
    try:
        return process.wait()
    except KeyboardInterrupt:
        return stop(process)


def add_to(sub) -> None:
    """The ``hub`` subcommand, added to ``lucy``'s subparsers."""
    p = sub.add_parser("hub", help="the class on JupyterHub (as root): setup, add-learner NAME..., start")
    p.add_argument("action", choices=["setup", "add-learner", "start"])
    p.add_argument("names", nargs="*", help="add-learner: the learners' account names")
    p.set_defaults(func=_hub)
