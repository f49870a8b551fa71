"""Educator tools: the catalogue of known-bad implementations, and proof the grader catches them."""
