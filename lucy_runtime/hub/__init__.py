"""The class on JupyterHub: an account per learner, formgrader as the grader's service, the learners' environment."""
