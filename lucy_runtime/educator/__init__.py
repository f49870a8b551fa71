"""The course tools an educator runs: the ``lucy`` command, nbgrader courses, the books,
known-bad cases and proof the grader catches them, class reports, benchmarks."""
