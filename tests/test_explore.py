"""The explorer widget runs the learner's own functions and shows what a fresh reader finds."""

from __future__ import annotations

import ipywidgets as w
import pytest

from lucy_runtime.errors import ExperimentFailed
from lucy_runtime.explore import Explorer, after_restart, tables_html

from .conftest import learner_with


def all_widgets(widget) -> list:
    found = [widget]
    for child in getattr(widget, "children", ()):
        found += all_widgets(child)
    return found


def test_admit_shows_the_stored_request_in_the_tables(reference_cells, tmp_path):
    explorer = Explorer(learner_with(reference_cells).namespace(), tmp_path / "explorer")
    assert "no database file yet" in explorer.tables.value
    explorer.text.value = "brief HOOLI <5> days"
    explorer._run(explorer._admit)
    assert "Admission(" in explorer.message.value and "ACCEPTED" in explorer.message.value.upper()
    assert "brief HOOLI &lt;5&gt; days" in explorer.tables.value and "pending" in explorer.tables.value
    assert "Model calls so far: 0" in explorer.tables.value


def test_the_explorer_has_no_output_widget_so_a_headless_run_never_waits_for_its_reply(reference_cells, tmp_path):
    # nbclient answers output sent into an Output widget on the shell channel, and can then miss
    # the cell's own reply until the cell timeout (jupyter/nbclient#312). An HTML widget sends nothing back.
    explorer = Explorer(learner_with(reference_cells).namespace(), tmp_path / "explorer")
    kinds = {type(x) for x in all_widgets(explorer.widget)}
    assert w.Output not in kinds and w.HTML in kinds


def test_a_crash_in_finish_is_reported_and_the_tables_show_the_running_work(reference_cells, tmp_path):
    explorer = Explorer(learner_with(reference_cells).namespace(), tmp_path / "explorer")
    explorer._run(explorer._admit)
    explorer._run(explorer._crash_finish)
    assert "stopped at the crash point" in explorer.message.value
    assert "running" in explorer.tables.value  # finish is atomic: nothing of it is on disk


def test_tables_html_escapes_what_it_shows(tmp_path, reference_cells):
    explorer = Explorer(learner_with(reference_cells).namespace(), tmp_path / "x")
    explorer.text.value = "<script>alert(1)</script>"
    explorer._run(explorer._admit)
    page = tables_html(explorer.db)
    assert "<script>" not in page and "&lt;script&gt;" in page


def test_an_experiment_child_can_open_a_file_the_kernel_holds_open(tmp_path):
    # A notebook keeps Store objects open while its experiments fork: the child must still work.
    from lucy_runtime.explore import after_restart
    from lucy_runtime.store import Store

    held = Store(tmp_path / "held.sqlite3")
    with held.transaction() as tx:
        tx.execute("CREATE TABLE t (n INTEGER)")

    def work():
        with Store(tmp_path / "held.sqlite3").transaction() as tx:
            tx.execute("INSERT INTO t VALUES (1)")

    seen = after_restart(work, lambda: [r[0] for r in Store(tmp_path / "held.sqlite3").query("SELECT n FROM t")],
                         timeout=10)
    assert seen == [1]
    held.close()


def test_a_restart_experiment_whose_first_process_fails_says_so():
    with pytest.raises(ExperimentFailed, match="the first process failed before it died: ZeroDivisionError"):
        after_restart(lambda: 1 / 0, lambda: None)


def test_what_a_restart_experiment_sees_is_what_the_second_process_returned():
    assert after_restart(lambda: None, lambda: "seen after") == "seen after"
