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


def test_in_its_own_group_a_hang_is_stopped_with_everything_it_started(tmp_path):
    import os

    script = ("import subprocess, sys, time\n"
              "child = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(300)'],\n"
              "                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)\n"
              "print(child.pid, flush=True)\n"
              "time.sleep(60)\n")
    done = stream_lines([sys.executable, "-c", script], cwd=tmp_path, timeout=3.0, on_line=lambda line: None,
                        own_group=True)
    assert done.timed_out
    grandchild = int(done.output.split()[0])
    time.sleep(0.5)
    try:
        os.kill(grandchild, 0)
        alive = not open(f"/proc/{grandchild}/stat").read().split(") ")[1].startswith("Z")
    except ProcessLookupError:
        alive = False
    if alive:
        os.kill(grandchild, 9)
    assert not alive, "a process the hung command started outlived the watchdog"
