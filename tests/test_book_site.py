"""The book as a reader sees it: two editions, built by Jupyter Book, opened in headless Chromium.

The site is served on 127.0.0.1 (mermaid.js is an ES module, which a browser will not
load from file://). Screenshots land in artifacts/.
"""

from __future__ import annotations

import re
import functools
import threading
from contextlib import contextmanager
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from lucy_runtime.books.book import Edition, build, stage

from .conftest import REPO, temporary_folder_at
from .lab import ARTIFACTS, CHROMIUM, FLAGS, need_chromium

REFERENCE_LINE = "return Admission(Outcome.DUPLICATE, known["  # the reference admit; no stub or page has it


def stand_in_assets(folder: Path) -> Path:
    """A node_modules with empty files where `make book` puts npm's mermaid.js, require.js, the widget
    embed script and MathJax: enough to stage an edition (what goes in it), nothing to draw with."""
    for name in ("mermaid/dist/mermaid.esm.min.mjs", "mermaid/dist/chunks/mermaid.esm.min/chunk.mjs",
                 "requirejs/require.js", "@jupyter-widgets/html-manager/dist/embed-amd.js",
                 "mathjax/es5/tex-mml-chtml.js", "mathjax/es5/output/chtml/fonts/font.woff"):
        (folder / name).parent.mkdir(parents=True, exist_ok=True)
        (folder / name).write_text("")
    return folder / "mermaid" / "dist"


def test_the_learner_edition_holds_no_solution_and_the_educator_edition_holds_them(tmp_path):
    assets = stand_in_assets(tmp_path / "node_modules")
    learner = stage(REPO, Edition.LEARNER, tmp_path / "learner", assets)
    educator = stage(REPO, Edition.EDUCATOR, tmp_path / "educator", assets)
    learner_text = "\n".join(p.read_text(errors="replace") for p in learner.rglob("*") if p.suffix in (".md", ".ipynb", ".yml"))
    assert REFERENCE_LINE not in learner_text and "BEGIN SOLUTION" not in learner_text
    assert not (learner / "chapters/ch07/solutions-book.md").exists()
    assert not (learner / "chapters/ch07/educator-guide.md").exists()
    assert "../../release/ch07_unit_a/ch07_unit_a.ipynb" in (learner / "chapters/ch07/manuscript.md").read_text()
    assert REFERENCE_LINE in (educator / "chapters/ch07/solutions-book.md").read_text()
    assert "educator-guide" in (educator / "_toc.yml").read_text()


def test_a_learner_edition_made_from_source_would_leak_the_reference(tmp_path, monkeypatch):
    # The known-bad arrangement the first test guards against: notebooks taken from source/.
    import lucy_runtime.books.book as book

    monkeypatch.setattr(book, "_notebooks", lambda repo, edition: book.source_notebooks(repo / "source"))
    leaked = stage(REPO, Edition.LEARNER, tmp_path / "leaky", stand_in_assets(tmp_path / "node_modules"))
    assert any(REFERENCE_LINE in p.read_text() for p in leaked.rglob("*.ipynb"))


@contextmanager
def served(folder):
    class Quiet(SimpleHTTPRequestHandler):
        def log_message(self, *args):
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(Quiet, directory=str(folder)))
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_port}"
    finally:
        server.shutdown()
        server.server_close()


@pytest.fixture(scope="module")
def book(tmp_path_factory):
    """Both editions built, and what the build left in the temporary folder."""
    """Both editions built as `make book` builds them (`lucy book --out` a path relative to the
    checkout: a fresh clone once failed there), and what the build left in the temporary folder."""
    import os

    from lucy_runtime.cli.main import main

    out, tmp = tmp_path_factory.mktemp("book"), tmp_path_factory.mktemp("tmp")
    with pytest.MonkeyPatch.context() as patch:
        temporary_folder_at(patch, tmp)
        patch.chdir(REPO)
        assert main(["book", "--out", os.path.relpath(out, REPO)]) == 0
    built = {edition: stage_built(out, edition) for edition in Edition}
    return built, sorted(p.name for p in tmp.iterdir())


def stage_built(out, edition):
    """What `lucy book` built for ``edition`` under ``out``, as ``build`` returns it."""
    from lucy_runtime.books.book import BuiltBook

    html = out / edition.value / "_build" / "html"
    assert html.is_dir(), f"no {edition.value} edition under {out}"
    return BuiltBook(edition, html, tuple(sorted(str(p.relative_to(html)) for p in html.rglob("*.html")
                                                 if "_static" not in p.parts)))


@pytest.fixture(scope="module")
def sites(book):
    return book[0]


@pytest.mark.slow
def test_no_page_of_either_edition_loads_anything_from_outside_the_site(sites):
    """Widget scripts, require.js and MathJax come from the site's own _static, like mermaid.js."""
    for built in sites.values():
        pages = [p for p in built.html.rglob("*.html") if "_static" not in p.parts]
        outside = {f"{p.relative_to(built.html)}: {m}" for p in pages
                   for m in re.findall(r'(?:src|href)="(https?://[^"]+\.(?:js|mjs|css)[^"]*)"', p.read_text())}
        assert outside == set(), sorted(outside)[:5]
        assert (built.html / "_static" / "widgets" / "html-manager" / "embed-amd.js").exists()
        assert (built.html / "_static" / "mathjax" / "tex-mml-chtml.js").exists()


@pytest.mark.slow  # builds both editions (the educator's runs the notebooks) with npm's assets
def test_building_the_book_leaves_no_notebook_workspace_in_the_temporary_folder(book):
    assert book[1] == []


OUTSIDE: list[str] = []
"""Every request a page of the built book made to anywhere but the test's own server."""


def open_page(browser, url, shot):
    page = browser.new_page(viewport={"width": 1200, "height": 900})
    base = url.split("/", 3)[:3]
    page.on("request", lambda r: OUTSIDE.append(r.url) if r.url.split("/", 3)[:3] != base
            and not r.url.startswith(("data:", "blob:")) else None)
    page.goto(url)
    page.wait_for_load_state("networkidle")
    page.screenshot(path=str(ARTIFACTS / shot))
    return page


@pytest.mark.browser
@pytest.mark.slow
def test_both_editions_open_in_a_browser_with_their_pages_diagrams_and_notebooks(sites):
    from playwright.sync_api import sync_playwright

    need_chromium()
    ARTIFACTS.mkdir(exist_ok=True)
    learner, educator = sites[Edition.LEARNER], sites[Edition.EDUCATOR]
    assert "chapters/ch07/solutions-book.html" not in learner.pages
    assert "chapters/ch07/solutions-book.html" in educator.pages
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, headless=True, args=FLAGS)
        with served(learner.html) as base:
            page = open_page(browser, f"{base}/chapters/ch07/manuscript.html", "book-learner-manuscript.png")
            assert "Why Lucy needs this chapter" in page.locator("main").inner_text()
            diagram = page.locator(".mermaid svg").first
            diagram.wait_for(timeout=30_000)  # drawn by mermaid.js in the page, from the site's own copy
            assert "pending" in diagram.text_content() and "running" in diagram.text_content()
            page.wait_for_function("document.querySelectorAll('.mermaid svg').length"
                                   " === document.querySelectorAll('.mermaid').length", timeout=30_000)
            assert page.locator(".mermaid").count() >= 2
            assert "Syntax error" not in page.locator("main").inner_text()  # how mermaid draws a diagram it cannot read
            diagram.scroll_into_view_if_needed()
            page.screenshot(path=str(ARTIFACTS / "book-learner-diagram.png"))
            page = open_page(browser, f"{base}/release/ch07_unit_a/ch07_unit_a.html", "book-learner-notebook.png")
            text = page.locator("main").inner_text()
            assert "def admit(queue, source_id, session_id, text)" in text and REFERENCE_LINE not in text
        with served(educator.html) as base:
            page = open_page(browser, f"{base}/source/ch07_unit_a/ch07_unit_a.html", "book-educator-notebook.png")
            assert REFERENCE_LINE in page.locator("main").inner_text()
            assert page.locator(".cell_output").count() > 0  # executed: the experiments show their output
            page = open_page(browser, f"{base}/chapters/ch07/solutions-book.html", "book-educator-solutions.png")
            assert "deliver_one" in page.locator("main").inner_text()
        browser.close()
    assert OUTSIDE == [], "an offline course server serves every script, style and font the book needs"
