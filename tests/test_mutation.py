"""The grader's mutation score: cosmic-ray mutants of the reference cells against the rows."""

from __future__ import annotations

import json

import pytest

from lucy_runtime.educator.cases import by_name
from lucy_runtime.proof.mutation import (BaselineFails, MutationReport, Mutant, MutantOutcome, check_cells, mutation_score,
                                            read_cells, write_cells)

from .conftest import with_case


def test_cells_keep_their_names_and_order_on_disk(reference_cells, tmp_path):
    write_cells(reference_cells, tmp_path)
    assert read_cells(tmp_path) == [(name, source if source.endswith("\n") else source + "\n")
                                    for name, source in reference_cells]


def test_the_test_command_passes_the_reference_and_names_the_row_that_kills_a_mutant(reference_cells, tmp_path):
    write_cells(reference_cells, tmp_path / "reference")
    assert check_cells(tmp_path / "reference", seed=3, rows="claim")[0] is True

    mutant = with_case(reference_cells, by_name("capacity-exact-match"))
    write_cells(mutant, tmp_path / "mutant")
    passed, line = check_cells(tmp_path / "mutant", seed=3, rows="claim")
    assert passed is False and line.startswith("KILLED BY capacity-bounded:")


@pytest.mark.slow
def test_cosmic_ray_mutants_of_requeue_are_killed_by_the_generation_row(tmp_path):
    report = mutation_score(only=("requeue",), rows="generation", workdir=tmp_path)
    assert report.mutants and {m.cell for m in report.mutants} == {"ch07_unit_b:requeue"}
    assert {m.outcome for m in report.mutants} <= {"killed", "survived"}
    # `changed > 1` lets requeue of pending work pass silently: second-generation must kill it.
    silent = [m for m in report.mutants if "+    if changed > 1:" in m.diff]
    assert len(silent) == 1 and silent[0].outcome == "killed" and silent[0].killed_by == "second-generation"
    assert json.loads(report.to_json())["killed"] == report.count("killed")


@pytest.mark.slow
def test_mutants_survive_rows_that_never_call_the_mutated_cell(tmp_path):
    report = mutation_score(only=("requeue",), rows="admission", workdir=tmp_path)
    assert report.count("killed") == 0 and len(report.survivors) == len(report.mutants) > 0
    assert "ch07_unit_b:requeue line" in report.survivor_listing()


def test_a_reference_that_already_fails_gives_no_score(reference_cells, tmp_path):
    broken = with_case(reference_cells, by_name("capacity-ignored"))
    with pytest.raises(BaselineFails, match="capacity-bounded"):
        mutation_score(cells=broken, only=("refusal",), rows="claim", workdir=tmp_path)


def test_unknown_or_logic_free_cells_are_refused_by_name(tmp_path):
    with pytest.raises(KeyError, match="no learner cell named nonsense"):
        mutation_score(only=("nonsense",), workdir=tmp_path)
    with pytest.raises(KeyError, match="nothing to mutate"):
        mutation_score(only=("imports",), workdir=tmp_path)


def test_the_score_counts_only_mutants_that_ran():
    report = MutationReport([Mutant("a:x", 1, "op", "killed", "row"), Mutant("a:x", 2, "op", "survived"),
                             Mutant("a:x", 3, "op", "incompetent")], cells=["a:x"])
    assert (report.scored, report.share_killed) == (2, 0.5)
    assert "1 of 2 mutants killed (50%)" in report.summary()
    assert report.cell_table().splitlines()[1].split() == ["a:x", "3", "1", "1"]


def test_mutant_outcomes_are_one_of_three_and_nothing_else():
    assert Mutant("a:x", 1, "op", "killed").outcome is MutantOutcome.KILLED
    with pytest.raises(ValueError):
        Mutant("a:x", 1, "op", "maimed")


def test_the_killers_table_counts_mutants_per_row_most_first():
    report = MutationReport([Mutant("a:x", n, "op", "killed", row) for n, row in enumerate(["one", "two", "two"])])
    assert [line.split() for line in report.killers().splitlines()] == [["row", "mutants"], ["two", "2"], ["one", "1"]]
    assert MutationReport([]).killers() == ""
