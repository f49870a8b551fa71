"""Every patch into a third party is pinned: an upgrade fails here, loudly, before it can change a grade."""

from __future__ import annotations

import importlib
import importlib.metadata
import platform

import pytest

from lucy_runtime.grading.patches import PATCHES, Patch


def installed(package: str) -> str:
    if package == "python":
        return ".".join(platform.python_version_tuple()[:2])
    return importlib.metadata.version(package)


def resolve(target: str) -> object:
    """The object ``target`` names: the longest importable module, then attributes."""
    parts = target.split(".")
    for cut in range(len(parts), 0, -1):
        try:
            found: object = importlib.import_module(".".join(parts[:cut]))
        except ImportError:
            continue
        for name in parts[cut:]:
            found = getattr(found, name)
        return found
    raise AssertionError(f"nothing of {target} can be imported")


@pytest.mark.parametrize("patch", PATCHES, ids=lambda p: p.target)
def test_the_patched_package_is_the_version_the_patch_was_written_for(patch: Patch):
    assert installed(patch.package) == patch.pinned, (
        f"{patch.package} is {installed(patch.package)}, but {patch.where} replaces {patch.target} as "
        f"{patch.package} {patch.pinned} has it. Read that code in the new version, adapt the patch, "
        f"then pin the new version in lucy_runtime/grading/patches.py")


@pytest.mark.parametrize("patch", PATCHES, ids=lambda p: p.target)
def test_what_each_patch_replaces_still_exists(patch: Patch):
    resolve(patch.target)


def test_a_version_other_than_the_pinned_one_fails():
    moved = Patch("nbgrader", "0.0.1", "nbgrader.converters.GenerateAssignment.start", "patches.guard_generate_assignment")
    with pytest.raises(AssertionError, match="pin the new version"):
        test_the_patched_package_is_the_version_the_patch_was_written_for(moved)
    with pytest.raises(AttributeError):
        resolve("nbgrader.converters.GenerateAssignment.no_such_method")


def test_the_sandboxed_orchestrator_leaves_the_standard_library_s_mkdtemp_as_it_is(tmp_path):
    """The rows' orchestrator, told to drop its children to a user (as in the sandbox), makes its
    folders open where it makes them: ``tempfile.mkdtemp`` stays the standard library's for
    everything else in the process (the known-bad: a replacement that made every new folder 0777)."""
    import json
    import os
    import subprocess
    import sys

    request = json.dumps({"cells": [], "rows": [], "timeout": 1.0, "drop_to": [os.getuid(), os.getgid()]})
    # In the sandbox the scenario folders go under sandbox.CHECK_IN_BOX, which only the sandbox has.
    probe = ("import sys, tempfile\n"
             "from lucy_runtime.grading import orchestrator, sandbox\n"
             f"sandbox.CHECK_IN_BOX = {str(tmp_path)!r}\n"
             "orchestrator._rows_main()\n"
             "print(tempfile.mkdtemp.__qualname__, file=sys.stderr)\n")
    done = subprocess.run([sys.executable, "-c", probe], input=request, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0 and done.stdout.split() == ["[]"], done.stdout + done.stderr
    assert done.stderr.split()[-1:] == ["mkdtemp"], done.stderr
