"""Every prediction is asked before anything the learner reads answers it.

The learner's path: Unit A, then the manuscript (its experiments and tables are Unit A's
material, read with it), then Unit B, then the practice notebook. ``predictions.REVEALS``
says, for each prompt, what text shows its answer; the test finds the first cell on the
path that shows it and fails when that cell comes before the prompt.
"""

from __future__ import annotations

import re

import pytest

from lucy_runtime.educator.predictions import Page, asked_at, chapter_page, notebook_page, spoilers

from .conftest import REPO


def learner_path() -> tuple[Page, ...]:
    unit = lambda name: notebook_page(REPO / "source" / name / f"{name}.ipynb")  # noqa: E731
    return (unit("ch07_unit_a"), chapter_page(REPO / "chapters" / "ch07" / "manuscript.md"), unit("ch07_unit_b"),
            unit("ch07_practice"))


def test_no_prediction_is_answered_before_it_is_asked():
    found = spoilers(learner_path())
    assert not found, "\n".join(f"{s.block!r} (asked in {s.asked}) is answered earlier, in {s.shown}: {s.text!r}"
                                for s in found)


EXPERIMENT = re.compile(r"after_restart\(|run_until_killed\(|evidence\.record\(")
RECORDED = re.compile(r"evidence\.record\(\"([^\"]+)\"")


@pytest.mark.parametrize("unit", ["ch07_unit_a", "ch07_unit_b", "ch07_practice"])
def test_every_block_that_runs_an_experiment_asks_for_a_prediction_first(unit):
    """The rhythm each notebook promises: a block that runs something asks what will happen before it runs.

    A cell that records an experiment's evidence needs that block's prediction before it; any other
    experiment needs a prediction earlier in its own block."""
    page = notebook_page(REPO / "source" / unit / f"{unit}.ipynb")
    asked: set[str] = set()
    in_block: list[str] = []
    heading = ""
    for text in page.cells:
        if re.match(r"#{2,3} ", text):
            heading, in_block = text.splitlines()[0], []
        predicted = re.findall(r"evidence\.predict\(\"([^\"]+)\"", text)
        asked.update(predicted)
        in_block += predicted
        if not EXPERIMENT.search(text) or "notes=" in text:
            continue
        recorded = RECORDED.findall(text)
        if recorded:
            assert set(recorded) <= asked, f"{unit}: {heading!r} records {recorded} before asking for its prediction"
        else:
            assert in_block, f"{unit}: {heading!r} runs an experiment before it asks for a prediction"


def test_the_path_asks_every_prediction_once():
    path = learner_path()
    asked = asked_at(path)
    total = sum(text.count("evidence.predict(") for page in path for text in page.cells)
    assert len(asked) == total
