"""The rows of each teaching block are written into the book from the notebooks and the registry, never by hand."""

from __future__ import annotations

import pytest

from lucy_runtime.checker.rows import ROWS
from lucy_runtime.books.block_rows import BEGIN, END, Block, blocks, table, with_table
from lucy_runtime.errors import GeneratedTextMissing

from .conftest import REPO

PAGES = ["chapters/ch07/exercise-book.md", "chapters/ch07/manuscript.md"]


@pytest.fixture(scope="module")
def generated() -> str:
    return table(blocks(REPO / "source"))


def test_every_row_of_the_registry_is_graded_in_exactly_one_block():
    graded = [r for b in blocks(REPO / "source") for r in b.rows]
    assert sorted(graded) == sorted(ROWS)


def test_a_row_sits_in_the_block_whose_hidden_test_cell_grades_it():
    where = {r: (b.unit, b.label) for b in blocks(REPO / "source") for r in b.rows}
    # The two rows the hand-written lists once put in different blocks: their test cells are in 55–80.
    assert where["refused-leaves-no-trace"] == where["empty-poll"] == ("A", "55–80")
    assert where["model-based"] == ("B", "optional: Every crash point, and random sequences")


@pytest.mark.parametrize("page", PAGES)
def test_each_page_holds_the_generated_table_as_it_is(page, generated):
    text = (REPO / page).read_text(encoding="utf-8")
    assert with_table(text, generated) == text, f"run: lucy rows --write-blocks {page}"


def test_a_row_moved_by_hand_to_another_block_differs_from_the_generated_table(generated):
    text = (REPO / PAGES[0]).read_text(encoding="utf-8")
    moved = [Block("A", "40–55", ("capacity-bounded", "refused-leaves-no-trace", "empty-poll", "claim-one")),
             *blocks(REPO / "source")[3:]]
    edited = with_table(text, table(moved))
    assert with_table(edited, generated) != edited and with_table(edited, generated) == text


def test_a_page_without_markers_is_refused_and_left_as_it_was(tmp_path):
    from lucy_runtime.books.block_rows import write_blocks

    page = tmp_path / "page.md"
    page.write_text(f"no table here\n{END}\n{BEGIN}\n", encoding="utf-8")
    with pytest.raises(GeneratedTextMissing, match="no"):
        write_blocks([page], REPO / "source")
    assert page.read_text(encoding="utf-8") == f"no table here\n{END}\n{BEGIN}\n"
