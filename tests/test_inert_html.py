"""What the last autograde step leaves of learner HTML, rendered by nbconvert as formgrader and
feedback render it: nothing that can run, and the answer still readable. The browser test
(test_browser_safety.py) shows the same in a real formgrader page."""

from __future__ import annotations

import base64
import re

import nbformat
from nbconvert import HTMLExporter
from nbconvert.filters.markdown_mistune import markdown2html_mistune
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook, new_output, new_raw_cell

from lucy_runtime.proof.hostile_answers import HOSTILE_ANSWER
from lucy_runtime.grading.inert_html import InertHTML, as_markdown, render_markdown

PNG = base64.b64encode(b"\x89PNG\r\n\x1a\n" + b"\0" * 16).decode()
SVG_WITH_SCRIPT = base64.b64encode(b"<svg xmlns='http://www.w3.org/2000/svg'><script>top.lucyRan=1</script></svg>").decode()
TABLE = '<style scoped>.dataframe tbody tr th {vertical-align: top}</style><table border="1" class="dataframe">' \
        '<thead><tr><th>state</th></tr></thead><tbody><tr><td>running</td></tr></tbody></table>'
ACTIVE = re.compile(r"<script|onerror|onload|ontoggle|javascript:|<iframe|srcdoc|"
                    r"<svg|data:image/svg|data:text/html|lucyRan", re.IGNORECASE)


TRACKER = "https://tracker.example/pixel.png"
SPLIT_AFTER_CLEANING = f"A code block the cleaner keeps as text:\n\n```\nshown as code\n\x0c\n![tracker]({TRACKER})\n" \
    "[click](https://tracker.example/click)\n```\n"
"""A form-feed line is blank to Markdown but not to an HTML block's own rule: cleaned HTML stored as a Markdown
HTML block that a later parser reads again would end there and turn the rest into an image from any address."""
FAKE_CONTROLS = ('<div class="navbar navbar-fixed-top" id="statusmessage" style="position:fixed;top:0;z-index:9999">'
                 'Full credit saved. Sign in again.</div>'
                 '<span class="btn btn-success full-credit pull-right modal">Next</span>')
HIDING = [{"transient": {"remove_source": True}}, {"jupyter": {"source_hidden": True, "outputs_hidden": True}},
          {"tags": ["remove_cell", "remove_input", "hide"]}]


def hostile_notebook():
    nb = new_notebook(cells=[
        new_markdown_cell(HOSTILE_ANSWER + "\n\n![drawing](attachment:drawing.svg) [page](attachment:page.html)",
                          attachments={"drawing.svg": {"image/svg+xml": SVG_WITH_SCRIPT},
                                       "page.html": {"text/html": base64.b64encode(b"<script>top.lucyRan=1</script>").decode()}}),
        new_raw_cell("<script>top.lucyRan=['raw']</script>", metadata={"raw_mimetype": "text/html"}),
        new_raw_cell("<img src=x onerror=\"top.lucyRan=['raw-plain']\">"),
        new_code_cell("show()", outputs=[
            new_output("display_data", data={"text/html": "<script>top.lucyRan=1</script><b>bold</b>", "text/plain": "x"}),
            new_output("display_data", data={"application/javascript": "top.lucyRan=1"}),
            new_output("display_data", data={"image/svg+xml": "<svg><script>top.lucyRan=1</script></svg>"}),
            new_output("display_data", data={"text/markdown": "<img src=x onerror='top.lucyRan=1'> [m](javascript:top.lucyRan=1)"}),
            new_output("display_data", data={"application/vnd.jupyter.widget-view+json": {"model_id": "m", "version_major": 2,
                                                                                             "version_minor": 0}}),
            new_output("display_data", data={"image/png": '"><script>top.lucyRan=1</script>'}),
        ]),
    ])
    nb.metadata["widgets"] = {"application/vnd.jupyter.widget-state+json": {
        "state": {"m": {"model_name": "HTMLModel", "state": {"value": "<script>top.lucyRan=1</script>"}}}}}
    return nb


def honest_notebook():
    return new_notebook(cells=[
        new_markdown_cell("The row stays `running` and **nothing** replays it: $a < b$ and\n\n$$x = \\frac{1}{2}$$\n\n"
                          "| state | meaning |\n|---|---|\n| running | claimed |\n\n```python\ndef f():\n\n    return 1\n```\n\n"
                          "See [the docs](https://sqlite.org/lang_transaction.html). ![plot](attachment:plot.png)",
                          attachments={"plot.png": {"image/png": PNG}}),
        new_code_cell("df", outputs=[
            new_output("execute_result", data={"text/html": TABLE, "text/plain": "state\nrunning"}, execution_count=1),
            new_output("display_data", data={"image/png": PNG, "text/plain": "<Figure>"}),
            new_output("display_data", data={"text/latex": "$x^2$", "text/plain": "x^2"}),
            new_output("stream", name="stdout", text="<script>printed, not run</script>\n"),
        ]),
    ])


def rendered(nb) -> str:
    nb, _ = InertHTML()(nbformat.from_dict(nb), {})  # as nbgrader calls it
    nbformat.validate(nb)
    html, _ = HTMLExporter(template_name="classic").from_notebook_node(nb)
    return html


def body(html: str) -> str:
    """The cells of a page, without the template's own head (its MathJax and require.js scripts)."""
    return html[html.index('<div class="border-box-sizing" id="notebook"'):]


def test_nothing_in_a_hostile_notebook_can_run_once_it_is_rendered():
    html = body(rendered(hostile_notebook()))
    assert ACTIVE.findall(html) == []
    assert "widget-state" not in html, "no widget state for a widget manager to render"
    assert "(not shown to the educator: application/vnd.jupyter.widget-view+json)" in html


def test_a_hostile_written_answer_keeps_its_words():
    html = body(rendered(hostile_notebook()))
    assert "nothing replays it" in html and "a link to click" in html and "a Markdown link to click" in html
    assert "(not shown to the educator: application/javascript)" in html
    assert "(not shown to the educator: image/svg+xml)" in html


def test_an_honest_notebook_stays_readable_text_tables_formulas_images_and_links():
    html = body(rendered(honest_notebook()))
    assert "<strong>nothing</strong>" in html and "<code>running</code>" in html
    assert "$a &lt; b$" in html and "$$x = \\frac{1}{2}$$" in html, "formulas stay text for MathJax"
    assert html.count('<table') == 2 and "<td>running</td>" in html and 'class="dataframe"' in html
    assert "vertical-align" not in html, "a table's style sheet goes, the table stays"
    assert html.count(f"data:image/png;base64,{PNG}") == 2, "an attachment and an output image"
    assert 'href="https://sqlite.org/lang_transaction.html"' in html
    assert "&lt;script&gt;printed, not run&lt;/script&gt;" in html, "printed text is shown as text"
    assert "$x^2$" in html


def test_a_written_answer_left_as_the_stub_still_reads_as_the_stub():
    html = body(rendered(new_notebook(cells=[new_markdown_cell("YOUR ANSWER HERE")])))
    assert "<p>YOUR ANSWER HERE</p>" in html


def test_cleaning_twice_changes_nothing_more():
    once, _ = InertHTML()(nbformat.from_dict(honest_notebook()), {})
    twice, _ = InertHTML()(nbformat.from_dict(once), {})
    assert HTMLExporter(template_name="classic").from_notebook_node(twice)[0].count("running") == \
        HTMLExporter(template_name="classic").from_notebook_node(once)[0].count("running")


def test_a_markdown_cell_is_stored_as_html_that_markdown_renders_back_to_exactly_itself():
    for text in (HOSTILE_ANSWER, SPLIT_AFTER_CLEANING, FAKE_CONTROLS, honest_notebook().cells[0].source):
        stored = as_markdown(render_markdown(text))
        assert markdown2html_mistune(stored).strip() == stored, text[:40]


def test_markdown_split_after_cleaning_loads_no_image_and_shows_the_text():
    nb = new_notebook(cells=[new_markdown_cell(SPLIT_AFTER_CLEANING), new_code_cell("x", outputs=[
        new_output("display_data", data={"text/markdown": SPLIT_AFTER_CLEANING, "text/plain": "x"})])])
    html = body(rendered(nb))
    assert f'src="{TRACKER}"' not in html and 'href="https://tracker.example/click"' not in html
    assert html.count(f"![tracker]({TRACKER})") == 2, "shown as the code it is, in the cell and in the output"


def test_learner_class_id_and_style_cannot_dress_as_formgrader():
    html = body(rendered(new_notebook(cells=[new_markdown_cell(FAKE_CONTROLS)])))
    assert "Full credit saved. Sign in again." in html and "Next" in html
    for name in ("navbar", "full-credit", "pull-right", "modal", "btn", 'id="statusmessage"', "position:fixed"):
        assert name not in html, name


def test_an_honest_notebook_keeps_its_table_and_highlighted_code_classes():
    html = body(rendered(honest_notebook()))
    assert 'class="dataframe"' in html and '<div class="highlight">' in html and '<span class="k">def</span>' in html


def test_cell_metadata_hides_no_learner_cell_from_the_educator():
    cells = [new_code_cell(f"hidden_code_{i} = 1", metadata=meta) for i, meta in enumerate(HIDING)]
    cells += [new_markdown_cell(f"hidden words {i}", metadata=meta) for i, meta in enumerate(HIDING)]
    cells += [new_raw_cell("hidden raw", metadata={"raw_mimetype": "text/latex"})]
    nb = new_notebook(cells=cells)
    for cell in nb.cells[:3]:
        cell.metadata["nbgrader"] = {"grade": False, "solution": True, "grade_id": "x", "locked": False}
    html = body(rendered(nb))
    for i in range(len(HIDING)):
        assert f"hidden_code_{i}" in html and f"hidden words {i}" in html
    assert "hidden raw" in html
    cleaned, _ = InertHTML()(nbformat.from_dict(nb), {})
    assert [sorted(c.metadata) for c in cleaned.cells[:3]] == [["nbgrader"]] * 3
