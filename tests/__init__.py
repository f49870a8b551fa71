"""The test suite. Its processes read notebooks as `lucy` and the grading commands do: without
jsonschema's IRI grammar, about 1.5 s of every worker's start (grading/nbgrader_main.py says why
nothing else changes). This runs before any test module or conftest imports nbformat."""

from lucy_runtime.grading.nbgrader_main import leave_out_unused_imports

leave_out_unused_imports()
