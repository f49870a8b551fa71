"""The class report's parts that need no nbgrader: prediction rules, evidence files, runs, matching, scrubbing."""

from __future__ import annotations

import json

import pytest

from lucy_runtime.educator.cases import CASES
from lucy_runtime.educator.practice_cases import PRACTICE_CASES
from lucy_runtime.course.history import record_run
from lucy_runtime.educator.predictions import KEYS, Prompt, judge, prompts, read_evidence
from lucy_runtime.report.report import MISCONCEPTION_OF, attribute, guide_notes
from lucy_runtime.report.report_html import _Scrub
from lucy_runtime.proof.signatures import Signatures, load, unit_rows

from .conftest import REPO

UNIT = "ch07_unit_a"


def test_the_case_signatures_are_measured_from_the_cases_reference_and_rows_of_this_checkout():
    signatures = load()
    assert signatures is not None and not signatures.stale, \
        "the cases, source/ or the rows changed: run `lucy report --refresh-cases` and commit the file"
    assert set(signatures.failing) == {c.name for c in CASES + PRACTICE_CASES}
    assert signatures.failing["finish-two-transactions"] == {"finish-atomic"}


def test_every_misconception_a_case_is_tied_to_is_in_the_educator_guide():
    notes = guide_notes()
    assert set(MISCONCEPTION_OF.values()) <= set(notes), set(MISCONCEPTION_OF.values()) - set(notes)
    assert set(MISCONCEPTION_OF) <= {c.name for c in CASES} | {n for n in MISCONCEPTION_OF if n.startswith("practice-")}


def test_every_keyed_prompt_is_asked_by_a_unit_notebook():
    asked = {p.block for unit in ("ch07_unit_a", "ch07_unit_b") for p in prompts(REPO / "release" / unit / f"{unit}.ipynb")}
    assert set(KEYS) <= asked
    first = prompts(REPO / "release" / UNIT / f"{UNIT}.ipynb")[0]
    assert first.block == "0-5 restart" and first.question.startswith("A process admits all three requests")


@pytest.mark.parametrize("block, prediction, observations, verdict", [
    ("0-5 restart", "Nothing: it died with the process", {"admitted": 3, "survived": 0}, "right"),
    ("0-5 restart", "All three are still in the list", {"admitted": 3, "survived": 0}, "wrong"),
    ("0-5 restart", "I am not sure", {"admitted": 3, "survived": 0}, "unclear"),
    ("5-15 schema", "It finds the row, it was committed", {"persisted_sample": [{"work_id": 1}]}, "right"),
    ("15-30 admission", "ACCEPTED, DUPLICATE, CONFLICT, ACCEPTED",
     {"dispositions": [{"outcome": o} for o in ("accepted", "duplicate", "conflict", "accepted")]}, "right"),
    ("15-30 admission", "accepted, accepted, conflict, accepted",
     {"dispositions": [{"outcome": o} for o in ("accepted", "duplicate", "conflict", "accepted")]}, "wrong"),
    ("55-80 loop and report", "The model is called once; the second returns None",
     {"trace": [{"step": "model calls", "value": 1}]}, "right"),
    ("55-80 loop and report", "two model calls", {"trace": [{"step": "model calls", "value": 1}]}, "wrong"),
])
def test_a_keyed_prediction_is_judged_against_the_learners_own_observation(tmp_path, block, prediction, observations,
                                                                          verdict):
    path = tmp_path / "e.json"
    path.write_text(json.dumps({"blocks": {block: {"prediction": prediction, "observations": observations}}}))
    result = judge(Prompt(block, ""), [read_evidence("s", path)], KEYS[block])
    assert {"right": result.right, "wrong": result.wrong, "unclear": result.unclear}[verdict] == 1


@pytest.mark.parametrize("content, status", [
    (None, "missing"), ("{", "malformed: not JSON"), ("[1, 2]", "malformed: no \"blocks\" object"),
    ('{"blocks": {"0-5 restart": 3}}', "malformed: a block is not an object"), (b"\xff\xfe", "malformed: not UTF-8"),
    ('{"blocks": {}}', "ok"),
])
def test_a_missing_or_malformed_evidence_file_is_a_status_never_an_exception(tmp_path, content, status):
    path = tmp_path / "e.json"
    if isinstance(content, bytes):
        path.write_bytes(content)
    elif content is not None:
        path.write_text(content)
    assert read_evidence("s", path).status.startswith(status)


def test_a_run_is_added_only_when_the_gradebook_changed_and_movement_compares_the_last_two(tmp_path):
    history = tmp_path / "history.json"
    runs, moved = record_run(history, UNIT, {"a": (10.0, "t1"), "b": (5.0, "t1")})
    assert len(runs) == 1 and moved is None
    runs, moved = record_run(history, UNIT, {"a": (10.0, "t1"), "b": (5.0, "t1")})
    assert len(runs) == 1, "an unchanged gradebook is not a new run"
    runs, moved = record_run(history, UNIT, {"a": (10.0, "t1"), "b": (9.0, "t2"), "c": (1.0, "t2")})
    assert len(runs) == 2 and moved is not None
    assert (moved.up, moved.down, moved.same, moved.new, moved.gone) == (1, 0, 1, 1, 0)
    assert json.loads(history.read_text())["runs"][UNIT][1]["scores"] == {"a": 10.0, "b": 9.0, "c": 1.0}


def test_an_unreadable_history_file_starts_the_history_again(tmp_path):
    history = tmp_path / "history.json"
    history.write_text("not json")
    runs, moved = record_run(history, UNIT, {"a": (1.0, "t")})
    assert len(runs) == 1 and moved is None


def test_matching_names_exact_cases_keeps_the_rest_apart_and_offers_a_close_case_only_when_close():
    every = frozenset(unit_rows(UNIT))
    signatures = Signatures({"finish-two-transactions": frozenset({"finish-atomic"}),
                             "noop-finish": frozenset({"finish-atomic", "finish-durable", "integrated-path",
                                                       "finish-misuse", "finish-fenced"})}, "")
    groups = {g.label: g for g in attribute({
        "a": (), "b": ("finish-atomic",), "c": tuple(every), "d": ("claim-one", "empty-poll", "schema-columns"),
        "e": ("finish-atomic", "finish-durable", "integrated-path", "finish-misuse", "finish-fenced", "claim-one"),
    }, UNIT, signatures)}
    assert groups["passes every row"].students == ("a",)
    assert groups["finish-two-transactions"].students == ("b",)
    assert groups["fails every row"].students == ("c",)
    unmatched = groups["matches no known case"]
    assert unmatched.students == ("d", "e")
    assert unmatched.closest == (("e", "noop-finish", "also fails claim-one"),)


def test_scrubbing_replaces_every_roster_name_and_address():
    scrub = _Scrub(("ada_k", "Ada", "Lovelace", "ada@example.org"), on=True)
    assert scrub("Ada Lovelace (ada_k, ada@example.org, @ada99) thinks so") == \
        "[a learner] [a learner] ([a learner], [a learner], [a learner]) thinks so"
    assert _Scrub(("ada",), on=False)("ada") == "ada"


def test_a_checkpoint_record_gives_the_status_of_the_learner_its_folder_names(tmp_path):
    from lucy_runtime.report.report import checkpoint_status

    records = tmp_path / "records"
    records.mkdir()
    for stamp, folder, ready in (("20261201T090000Z", "submitted/ada", False), ("20261202T090000Z", "submitted/ada", True),
                                 ("20261202T100000Z", "/home/bea/ch07", False)):
        (records / f"ch07-{stamp}.json").write_text(json.dumps({"notebooks": folder, "ready": ready}))
    (records / "ch07-20261203T000000Z.json").write_text("{broken")
    assert checkpoint_status(records, ["ada", "bea", "cal"]) == {"ada": "ready", "bea": "not ready"}


def test_lucy_report_without_a_course_or_an_assignment_says_so_and_exits_2(tmp_path, capsys):
    from lucy_runtime.cli.main import main

    assert main(["report", "ch07_unit_a", "--course", str(tmp_path)]) == 2
    assert "has no nbgrader_config.py" in capsys.readouterr().err
    assert main(["report", "--course", str(tmp_path)]) == 2
    assert "name one ASSIGNMENT, or --all" in capsys.readouterr().err


def test_a_learner_whose_rows_fail_like_a_tamper_is_said_to_fail_like_the_honest_case_never_the_trick():
    # The measured signatures: tamper-with-checker fails exactly the rows noop-finish and finish-bare-pass fail.
    signatures = load()
    assert signatures is not None
    rows = tuple(sorted(signatures.failing["noop-finish"]))
    assert signatures.failing["tamper-with-checker"] == signatures.failing["noop-finish"]
    (group,) = [g for g in attribute({"honest": rows}, UNIT, signatures) if g.kind == "case"]
    assert "noop-finish" in group.cases and not any(c.startswith("tamper") for c in group.cases), group.cases
    assert "tamper" not in group.description + group.label


def test_a_report_names_the_course_by_its_id_counts_its_headlines_and_its_row_bars_count_failures():
    from lucy_runtime.report.report import ClassReport, Part, RowShare
    from lucy_runtime.report.report_html import render

    part = Part(UNIT, (RowShare("finish-atomic", passed=1, graded=4, observations=()),
                       RowShare("claim-one", passed=4, graded=4, observations=())),
                (), (), (), (), (), (), None, ())
    page = render(ClassReport("lucy-ch07", (part,), (), False), anonymized=False)
    assert "<title>What the class did: lucy-ch07</title>" in page
    said = page.split('<section class="say">', 1)[1].split("</section>", 1)[0]
    assert said.count("<li>") == 1 and "One thing to say" in said, said
    assert "Three things" not in page
    bars = page.split('id="rows-', 1)[1].split("</svg>", 1)[0]
    assert "failed each row" in bars and "passed each row" not in bars
    assert "3 of 4 failed" in bars and "0 of 4 failed" in bars


def test_a_tamper_is_named_only_for_a_submission_that_holds_its_trick(tmp_path):
    import nbformat

    from lucy_runtime.educator.cases import by_name
    from lucy_runtime.report.report import tricks_shown
    from lucy_runtime.proof.verify import filled

    release = nbformat.read(str(REPO / "release" / UNIT / f"{UNIT}.ipynb"), as_version=4)
    source = nbformat.read(str(REPO / "source" / UNIT / f"{UNIT}.ipynb"), as_version=4)
    signatures = load()
    assert signatures is not None
    for student, case in (("honest", "noop-finish"), ("bare", "finish-bare-pass"), ("trick", "tamper-with-checker")):
        folder = tmp_path / "submitted" / student / UNIT
        folder.mkdir(parents=True)
        nbformat.write(filled(release, source, by_name(case)), str(folder / f"{UNIT}.ipynb"))
    rows = tuple(sorted(signatures.failing["noop-finish"]))
    found = tricks_shown(tmp_path, UNIT, {"honest": rows, "bare": rows, "trick": rows}, signatures)
    assert found == {"trick": ("tamper-with-checker",)}
