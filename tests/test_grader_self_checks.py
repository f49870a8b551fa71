"""The grader's own check through real nbgrader: ``nbgrader validate`` passes the source and
fails the release. (That verify reports a case that survives is planted in the one verify of
test_grader_nbgrader.py.)

Apart from test_grader_nbgrader.py so that the pytest workers share the nbgrader runs.
"""

from __future__ import annotations

import pytest


pytestmark = pytest.mark.nbgrader


def test_the_source_passes_every_test_and_the_release_fails_every_autograded_test():
    from lucy_runtime.course import validate_release

    assert validate_release() == []
