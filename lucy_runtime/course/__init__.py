"""Course operations through real nbgrader: the release, class grading through Dask, regrading and the record of grading runs."""
