"""The class on JupyterHub: an account per learner, formgrader as the grader's service, the learners' environment.

``make hub`` (as root, from the course folder) calls ``server.set_up`` and ``server.start``; the hub reads
``hub/jupyterhub_config.py``, which calls ``settings.configure_hub`` with the ``Site`` the environment
names. One module per part: where the class lives (``site.py``), its accounts (``accounts.py``), the
learners' environment (``learner_env.py``), the hub's settings (``settings.py``), the hub's process and
its client (``server.py``), and the tests' and the bench's scratch class (``scratch.py``).
"""
