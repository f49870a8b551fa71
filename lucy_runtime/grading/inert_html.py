"""Inert HTML: nothing a learner hands in runs in a page an educator opens.

formgrader's manual grading page and nbgrader's feedback page render the autograded
notebook as HTML inside the educator's authenticated Jupyter origin. nbconvert emits a
Markdown cell's HTML, a raw ``text/html`` cell, an HTML output and an
``application/javascript`` output as they are, so a written answer with a ``<script>``
(or an ``onerror``, an SVG with script, a ``javascript:`` link) would run as the
educator: it could save scores through formgrader's API. This preprocessor runs last
in autograde, after the kernel and the sealed verdict have produced every output and
nbgrader has scored the cells, and rewrites what formgrader and feedback show:

* a Markdown cell is rendered once, by nbconvert's own Markdown renderer (the one
  formgrader and feedback use), its raster attachments embedded, then the HTML is cleaned
  with nh3 (the Ammonia sanitizer) and stored as the cell's source on ONE line behind an
  HTML comment: Markdown's rule for a block that starts with ``<!--`` passes the whole
  line through as it is, so the page shows exactly the cleaned HTML and no parser splits
  it again (newlines are kept as character references). Text, tables, code and formulas
  (``$…$`` stays text for MathJax) read as before. A Markdown output is stored the same way.
* a raw cell's text is cleaned the same way (nbconvert emits raw cells verbatim).
* an output keeps plain text, LaTeX and PNG/JPEG/GIF images given as base64; HTML and
  Markdown are cleaned; everything else (JavaScript, SVG, widget views, PDF, JSON ...)
  is dropped, and a plain line says which types were.
* attachments and the notebook's widget state are removed, and each cell keeps only its
  ``nbgrader`` metadata (``transient``, ``jupyter.source_hidden``, tags or a raw cell's
  MIME type would hide the cell from the educator).

Cleaning keeps a fixed set of tags (no script, style, iframe, object, form, svg or
math), no event handler, style or id attribute, only the class names of a DataFrame's
table and of highlighted code (none of which can place anything over formgrader's
controls), links only to http(s) and mailto,
and images only as embedded PNG, JPEG or GIF. Relative links are dropped: formgrader
serves the files of a submission from the educator's origin. nbconvert's own
``SanitizeHTML`` (bleach) was not enough: it keeps Markdown links to ``javascript:`` and
every attachment, and it escapes the Markdown source as if it were HTML, so ``$a<b$``
shows as ``a&lt;b``, a ``> quote`` as text, and a DataFrame's table as its markup.
"""

from __future__ import annotations

import base64
import binascii
import re

import nh3
from nbconvert.filters.markdown_mistune import InvalidNotebook, IPythonRenderer, MarkdownWithMath
from nbconvert.preprocessors import Preprocessor
from nbformat import NotebookNode
from pygments.token import STANDARD_TYPES
from traitlets import Bool

RASTER = ("image/png", "image/jpeg", "image/gif")
KEPT_AS_IS = ("text/plain", "text/latex")
CLEANED = ("text/html", "text/markdown")

_TAGS = set(nh3.ALLOWED_TAGS) - {"area", "map"}
_ATTRIBUTES = {tag: set(names) for tag, names in nh3.ALLOWED_ATTRIBUTES.items()}
_ATTRIBUTES["*"] = {"title", "align"}
# Class names a page's style sheets give no position: a DataFrame's table, and Pygments' token classes
# inside a highlighted code block. Anything else (navbar-fixed-top, modal, alert ...) is dropped.
_CLASSES = {"table": {"dataframe"}, "div": {"highlight"}, "span": set(STANDARD_TYPES.values()) - {""}}
_ATTRIBUTES["table"] = _ATTRIBUTES.get("table", set()) | {"border"}
_DATA_IMAGE = re.compile(r"data:image/(png|jpeg|gif);base64,[A-Za-z0-9+/=\s]*", re.IGNORECASE)
_LINK = re.compile(r"(https?|mailto):", re.IGNORECASE)


def _attribute(tag: str, name: str, value: str) -> str | None:
    """Links only to http(s) and mailto; image sources only embedded raster images."""
    if name == "href":
        return value if _LINK.match(value.strip()) else None
    if name == "src":
        return value if tag == "img" and _DATA_IMAGE.fullmatch(value.strip()) else None
    return value


def clean_html(html: str) -> str:
    """``html`` with nothing left that can run: nh3 with the allowlist above."""
    return nh3.clean(
        html,
        tags=_TAGS,
        clean_content_tags={"script", "style", "template", "textarea", "title", "noscript", "iframe", "object", "svg", "math"},
        attributes=_ATTRIBUTES,
        attribute_filter=_attribute,
        url_schemes={"http", "https", "mailto", "data"},
        url_relative="deny",
        allowed_classes=_CLASSES,
    )


MARKER = "<!-- rendered and cleaned by InertHTML -->"
_LINE_BREAKS = str.maketrans({"\n": "&#10;", "\r": "&#13;", "\t": "&#9;", "\f": "&#12;"})


def as_markdown(html: str) -> str:
    """``html`` as Markdown that renders back to exactly it: one line that starts with an HTML
    comment, which CommonMark (and mistune) pass through whole. Line breaks, tabs and form feeds
    become character references, which read the same in HTML (also inside ``<pre>``)."""
    return MARKER + html.translate(_LINE_BREAKS)


def _raster(bundle: dict) -> dict:
    """The PNG, JPEG and GIF entries of a MIME bundle whose data is base64."""
    kept = {}
    for mime in RASTER:
        data = bundle.get(mime)
        if isinstance(data, str):
            try:
                base64.b64decode(data.replace("\n", ""), validate=True)
            except (binascii.Error, ValueError):
                continue
            kept[mime] = data
    return kept


def render_markdown(source: str, attachments: dict | None = None) -> str:
    """Markdown rendered as formgrader renders it, then cleaned; raster attachments embedded."""
    # An attachment that is no raster image becomes a data URL the cleaner then drops.
    images = {name: _raster(bundle) or {"text/plain": ""} for name, bundle in (attachments or {}).items()}
    renderer = IPythonRenderer(escape=False, attachments=images, exclude_anchor_links=True)
    try:
        html = MarkdownWithMath(renderer=renderer).render(source)
    except InvalidNotebook:  # it names an attachment that is missing or not an image: show the text
        html = "<pre>" + nh3.clean_text(source) + "</pre>"
    return clean_html(html)


def inert_output(output: dict) -> dict:
    """One output with nothing that can run; a plain line names the types dropped."""
    if output.get("output_type") not in ("display_data", "execute_result"):
        return output  # stream and error text is escaped by every template
    data = output.get("data", {})
    kept = {mime: data[mime] for mime in KEPT_AS_IS if isinstance(data.get(mime), str)}
    kept.update(_raster(data))
    if isinstance(data.get("text/html"), str):
        kept["text/html"] = clean_html(data["text/html"])
    if isinstance(data.get("text/markdown"), str):
        kept["text/markdown"] = as_markdown(render_markdown(data["text/markdown"]))
    dropped = sorted(set(data) - set(kept))
    if dropped and "text/plain" not in kept:
        kept["text/plain"] = "(not shown to the educator: " + ", ".join(dropped) + ")"
    output["data"] = NotebookNode(kept)
    output["metadata"] = NotebookNode()
    return output


def inert_cell(cell: dict) -> dict:
    """One cell as formgrader and feedback may show it: nothing that runs, nothing hidden."""
    kept = {"nbgrader": cell["metadata"]["nbgrader"]} if "nbgrader" in cell.get("metadata", {}) else {}
    if cell.get("cell_type") == "markdown":
        cell["source"] = as_markdown(render_markdown(cell.get("source", ""), cell.get("attachments")))
    elif cell.get("cell_type") == "raw":
        cell["source"] = clean_html(cell.get("source", ""))
        kept["raw_mimetype"] = "text/html"  # shown as cleaned HTML: another type would leave it out of the page
    elif cell.get("cell_type") == "code":
        cell["outputs"] = [inert_output(output) for output in cell.get("outputs", [])]
    cell.pop("attachments", None)
    cell["metadata"] = NotebookNode(kept)
    return cell


class InertHTML(Preprocessor):
    """The last autograde step: every learner-controlled piece of HTML in the notebook made inert.
    The files handed in beside it stay as they are: formgrader serves them sandboxed (page_headers.py)."""

    enabled = Bool(True, help="nbconvert runs a preprocessor only when it is enabled; this one always is").tag(config=True)

    def preprocess(self, nb, resources):
        nb.metadata.pop("widgets", None)
        nb.cells = [inert_cell(cell) for cell in nb.cells]
        return nb, resources
