"""Grading under nbgrader: the sandbox learner code runs in, the sandboxed kernel, the
sealed re-check and its orchestrator, the gradebook, and the glue nbgrader loads."""
