"""Long nbgrader runs are read as they go, and a run that hangs in silence is still stopped."""

from __future__ import annotations

import sys
import time

from lucy_runtime.course import stream_lines


def test_a_silent_hang_is_stopped_at_the_timeout(tmp_path):
    started = time.monotonic()
    done = stream_lines([sys.executable, "-c", "import time; time.sleep(60)"], cwd=tmp_path, timeout=1.0,
                        on_line=lambda line: None)
    assert done.timed_out and done.returncode != 0
    assert time.monotonic() - started < 30


def test_every_line_is_handed_on_as_it_comes_and_a_quick_run_is_not_a_timeout(tmp_path):
    seen = []
    done = stream_lines([sys.executable, "-c", "print('a'); print('b')"], cwd=tmp_path, timeout=30,
                        on_line=seen.append)
    assert seen == ["a\n", "b\n"] and done.output == "a\nb\n"
    assert not done.timed_out and done.returncode == 0
