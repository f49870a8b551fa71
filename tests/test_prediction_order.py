"""Every prediction is asked before anything the learner reads answers it.

The learner's path: Unit A, then the manuscript, then Unit B, then the practice notebook.
Nobody keeps a list of what answers a prediction: ``predictions.predictions`` reads each
prompt and the answer its page gives after it (the opening sentence of the prose right after
the prompt, and of the prose right after the experiment that records the block's evidence,
with the table or sketch it introduces), and ``predictions.spoilers`` fails a prediction when
a statement earlier on the path (prose, a heading, a table row, a line of code or of output
shown in the text) holds nearly all of an answer statement's words.

What it cannot see, said plainly:
* cell outputs: the source notebooks are stored without them, so a prediction the page answers
  only by what its experiment prints (``ANSWERED_BY_OUTPUTS``) is checked for nothing but its
  place, and an earlier cell whose *output* answers a later prompt goes unseen;
* an answer told earlier in other words: the comparison is by words, so a rule taught before
  the prompt, from which the answer follows, is not a spoiler to it (nor should it be, mostly);
* an answer page that does not open with its answer: the sentences after the opening one say
  why, and often repeat a rule taught earlier, so they are not compared.
"""

from __future__ import annotations

import re
from dataclasses import replace

import pytest

from lucy_runtime.educator.predictions import (FEWEST_WORDS, Page, Place, Prediction, asked_at, chapter_page, notebook_page,
                                               predictions, spoilers, words)

from .conftest import REPO


def learner_path() -> tuple[Page, ...]:
    unit = lambda name: notebook_page(REPO / "source" / name / f"{name}.ipynb")  # noqa: E731
    return (unit("ch07_unit_a"), chapter_page(REPO / "chapters" / "ch07" / "manuscript.md"), unit("ch07_unit_b"),
            unit("ch07_practice"))


PATH = learner_path()
ASKED = predictions(PATH)


def readable(prediction: Prediction) -> list[str]:
    """The answer statements long enough for the check to compare."""
    return [s for s in prediction.answer if len(words(s)) >= FEWEST_WORDS]


def test_no_prediction_is_answered_before_it_is_asked():
    found = spoilers(PATH)
    assert not found, "\n".join(f"{s.block!r} (asked in {s.asked}) is answered earlier, in {s.shown}: {s.text!r}"
                                f"\n    its answer: {s.answer!r}" for s in found)


def test_the_check_reads_every_prediction_on_every_page():
    """A loop over nothing passes: these are today's counts, so a page whose prompts the check stops
    finding (a renamed call, a changed marker) fails here. A new prediction changes a count."""
    per_page = {page.name: sum(1 for p in ASKED if PATH[p.asked.page] is page) for page in PATH}
    assert per_page == {"ch07_unit_a": 7, "manuscript": 0, "ch07_unit_b": 15, "ch07_practice": 5}
    assert all(p.prompt.startswith("**Predict") for p in ASKED), [p.block for p in ASKED if not p.prompt]


ANSWERED_BY_OUTPUTS = {"30-55 limits and claim", "80-85 reopen", "85-90 dead worker", "65-80 transfer",
                       "further: generations", "10-35 resume", "35-55 grants"}


def test_predictions_without_a_written_answer_are_the_ones_answered_by_their_outputs():
    """The limit of the check, kept visible: these prompts have no prose right after their experiment,
    only what it prints, which the stored notebooks do not hold. A new prompt whose page writes no
    answer fails here until it is named, so nobody believes it is checked."""
    assert {p.block for p in ASKED if not readable(p)} == ANSWERED_BY_OUTPUTS


def _plant(path: tuple[Page, ...], where: Place, text: str) -> tuple[Page, ...]:
    """A copy of the path with ``text`` written into one prose cell at ``where``, as a paragraph of its own."""
    cells = list(path[where.page].cells)
    cells[where.cell] = f"{cells[where.cell][:where.at]}\n\n{text}\n\n{cells[where.cell][where.at:]}"
    return path[:where.page] + (replace(path[where.page], cells=tuple(cells)),) + path[where.page + 1:]


def _end_of(path: tuple[Page, ...], page: int, cell: int) -> Place:
    return Place(page, cell, len(path[page].cells[cell]))


CHECKED = [p for p in ASKED if readable(p)]


@pytest.mark.parametrize("prediction", CHECKED, ids=[p.block for p in CHECKED])
def test_an_answer_planted_before_its_prompt_is_caught(prediction):
    """Each answer the check reads, written into the page just before its "Predict." paragraph, fails it;
    so does the same sentence on the first page of the path, inside a paragraph of other prose."""
    answer = readable(prediction)[-1]
    assert [s.block for s in spoilers(_plant(PATH, prediction.asked, answer))] == [prediction.block]
    far = _plant(PATH, _end_of(PATH, 0, 0), f"Later you will see this. {answer} Keep it in mind.")
    found = spoilers(far)
    assert [(s.block, s.shown) for s in found] == [(prediction.block, "ch07_unit_a cell 0")]


@pytest.mark.parametrize("prediction", CHECKED, ids=[p.block for p in CHECKED])
def test_the_same_answer_after_its_prompt_is_no_spoiler(prediction):
    place = prediction.asked
    assert not spoilers(_plant(PATH, _end_of(PATH, place.page, place.cell), readable(prediction)[-1]))


def test_an_answer_inside_a_table_row_is_caught():
    """A paper table is where an answer slips in most easily: a row with the answer among other cells."""
    keys = next(p for p in ASKED if p.block == "further: keys")
    row = "| a retry with the report's own key | r-1-1 was accepted once, however often it was retried | one |"
    found = spoilers(_plant(PATH, keys.asked, f"| policy | what happens | sends |\n|---|---|---|\n{row}"))
    assert [(s.block, s.text) for s in found] == [("further: keys", row)]


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
    asked = asked_at(PATH)
    total = sum(text.count("evidence.predict(") for page in PATH for text in page.cells)
    assert len(asked) == total == len(ASKED)
