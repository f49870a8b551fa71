# JupyterHub's configuration for the class: `make hub` starts the hub with it, as root, from the
# course folder. Every setting is in lucy_runtime/hub/hub.py (configure_hub); where things
# live (the exchange, the learners' environment, the port) comes from the LUCY_HUB_* variables
# `lucy hub start` sets (docs/class-on-a-server.md).
from lucy_runtime.hub.hub import Site, configure_hub

c = get_config()  # noqa: F821  (JupyterHub provides get_config)
configure_hub(c, Site.from_environment())
