# JupyterHub's configuration for the class: `make hub` starts the hub with it, as root, from the
# course folder. Every setting is in lucy_runtime/hub/settings.py (configure_hub); where things
# live (the exchange, the learners' environment, the port) comes from the LUCY_HUB_* variables
# `lucy hub start` sets (docs/class-on-a-server.md).
from lucy_runtime.hub.settings import configure_hub
from lucy_runtime.hub.site import Site

c = get_config()  # noqa: F821  (JupyterHub provides get_config)
configure_hub(c, Site.from_environment())
