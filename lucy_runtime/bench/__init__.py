"""The benchmarks of `make bench`: ratios from one run, not verdicts."""
