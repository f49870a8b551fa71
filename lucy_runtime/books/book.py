"""The chapter as a website: a Jupyter Book (Sphinx and MyST) in two editions.

``stage`` lays out one edition's sources in a scratch folder, ``build`` runs
``jupyter-book build`` on it. The learner edition has the manuscript, the Exercise
Book and the released notebooks (stubs, no solutions). The educator edition adds the
educator guide, the Solutions Book generated from ``source/`` and the reference
notebooks, executed so every experiment shows its output.

Mermaid diagrams are drawn in the reader's browser by mermaid.js, widgets by
ipywidgets' embed script (with require.js), formulas by MathJax: the build copies each
from its npm package into the site, so a built site needs no network (a course server
may be offline).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from enum import Enum
from pathlib import Path

from ..errors import BookBuildFailed
from .solutions import solutions_book, source_notebooks

MERMAID_VERSION = "11.12.1"
"""The mermaid.js that sphinxcontrib-mermaid 2.1 is made for; `make book` installs it from npm."""


class Edition(Enum):
    LEARNER = "learner"
    EDUCATOR = "educator"


@dataclass(frozen=True)
class BuiltBook:
    edition: Edition
    html: Path
    pages: tuple[str, ...]


CHAPTER = Path("chapters/ch07")
LEARNER_PAGES = ("manuscript.md", "exercise-book.md")
EDUCATOR_PAGES = ("educator-guide.md", "solutions-book.md")


WIDGET_SCRIPTS = ("widgets/require.js", "widgets/html-manager/embed-amd.js")
"""Under the site's _static, what myst-nb would fetch from a CDN: require.js, and ipywidgets'
embed script, which loads its chunks and fonts from beside itself."""
MATHJAX = "mathjax/es5"
"""MathJax 3's browser bundle in node_modules: tex-mml-chtml.js and the fonts it loads beside it."""


def default_mermaid() -> Path:
    """Where `make book` puts mermaid.js: beside the virtualenv that runs this code."""
    return Path(sys.prefix) / "node" / "node_modules" / "mermaid" / "dist"


def _notebooks(repo: Path, edition: Edition) -> list[Path]:
    folder = repo / ("source" if edition is Edition.EDUCATOR else "release")
    return source_notebooks(folder)


def _config(edition: Edition) -> str:
    config = {
        "title": f"Lucy, Chapter 7: durable work ({edition.value} edition)",
        "author": "The Lucy course",
        "only_build_toc_files": True,
        "exclude_patterns": ["_build", "**.ipynb_checkpoints"],
        "execute": {
            # The learner's notebooks are stubs that raise until written: shown, not run.
            "execute_notebooks": "force" if edition is Edition.EDUCATOR else "off",
            "timeout": 600,
            "allow_errors": False,
            "run_in_temp": False,
        },
        "parse": {"myst_enable_extensions": ["colon_fence", "deflist"]},
        "sphinx": {
            "extra_extensions": ["sphinxcontrib.mermaid"],
            "config": {
                "myst_fence_as_directive": ["mermaid"],
                "mermaid_use_local": "mermaid/mermaid.esm.min.mjs",
                # Paths under _static: myst-nb and Sphinx would fetch these from CDNs.
                "nb_ipywidgets_js": {site: {} for site in WIDGET_SCRIPTS},
                "mathjax_path": "mathjax/tex-mml-chtml.js",
                "mermaid_fullscreen": False,
                "html_static_path": ["_static"],
                "suppress_warnings": ["myst.header", "mystnb.unknown_mime_type"],
            },
        },
        "html": {"use_repository_button": False, "use_issues_button": False},
    }
    return json.dumps(config, indent=2)  # JSON is YAML


def _toc(edition: Edition, notebooks: list[Path], repo: Path) -> str:
    chapter = [{"file": str(CHAPTER / "exercise-book.md")}]
    chapter += [{"file": str(nb.relative_to(repo).with_suffix(""))} for nb in notebooks]
    if edition is Edition.EDUCATOR:
        chapter += [{"file": str(CHAPTER / Path(page).stem)} for page in EDUCATOR_PAGES]
    toc = {"format": "jb-book", "root": str(CHAPTER / "manuscript"),
           "parts": [{"caption": "Chapter 7", "chapters": chapter}]}
    return json.dumps(toc, indent=2)


def stage(repo: Path, edition: Edition, into: Path, mermaid_dist: Path | None = None) -> Path:
    """Write one edition's book sources into ``into`` (emptied first) and return it."""
    repo, into = Path(repo), Path(into)
    mermaid_dist = Path(mermaid_dist or default_mermaid())
    if not (mermaid_dist / "mermaid.esm.min.mjs").exists():
        raise BookBuildFailed(f"mermaid.js {MERMAID_VERSION} is not at {mermaid_dist}: run `make book`, "
                              f"which installs it with npm")
    if into.exists():
        shutil.rmtree(into)
    (into / CHAPTER).mkdir(parents=True)
    for page in LEARNER_PAGES + (EDUCATOR_PAGES[:1] if edition is Edition.EDUCATOR else ()):
        text = (repo / CHAPTER / page).read_text(encoding="utf-8")
        if edition is Edition.LEARNER:
            text = text.replace("../../source/", "../../release/")  # links go to the released notebooks
        (into / CHAPTER / page).write_text(text, encoding="utf-8")
    if edition is Edition.EDUCATOR:
        (into / CHAPTER / "solutions-book.md").write_text(solutions_book(repo / "source"), encoding="utf-8")
    notebooks = _notebooks(repo, edition)
    for notebook in notebooks:
        target = into / notebook.relative_to(repo)
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(notebook, target)
    static = into / "_static" / "mermaid"
    static.mkdir(parents=True)
    shutil.copy2(mermaid_dist / "mermaid.esm.min.mjs", static)
    shutil.copytree(mermaid_dist / "chunks" / "mermaid.esm.min", static / "chunks" / "mermaid.esm.min")
    modules = mermaid_dist.parent.parent  # node_modules
    for needed in ("requirejs/require.js", "@jupyter-widgets/html-manager/dist/embed-amd.js"):
        if not (modules / needed).exists():
            raise BookBuildFailed(f"{needed} is not in {modules}: run `make book`, which installs it with npm")
    (into / "_static" / "widgets").mkdir()
    shutil.copy2(modules / "requirejs" / "require.js", into / "_static" / "widgets" / "require.js")
    shutil.copytree(modules / "@jupyter-widgets" / "html-manager" / "dist", into / "_static" / "widgets" / "html-manager",
                    ignore=shutil.ignore_patterns("*.map"))
    if not (modules / MATHJAX / "tex-mml-chtml.js").exists():
        raise BookBuildFailed(f"MathJax is not in {modules}: run `make book`, which installs it with npm")
    mathjax = into / "_static" / "mathjax"
    mathjax.mkdir()
    shutil.copy2(modules / MATHJAX / "tex-mml-chtml.js", mathjax)
    shutil.copytree(modules / MATHJAX / "output" / "chtml" / "fonts", mathjax / "output" / "chtml" / "fonts")
    (into / "_config.yml").write_text(_config(edition), encoding="utf-8")
    (into / "_toc.yml").write_text(_toc(edition, notebooks, repo), encoding="utf-8")
    return into


def build(repo: Path, edition: Edition, out: Path, mermaid_dist: Path | None = None,
          run=subprocess.run) -> BuiltBook:
    """Stage and build one edition; the site is ``out/<edition>/_build/html``."""
    staged = stage(repo, edition, Path(out) / edition.value, mermaid_dist)
    command = [str(Path(sys.executable).parent / "jupyter-book"), "build", str(staged), "--builder", "html", "--all"]
    # The educator edition runs the notebooks; each makes a workspace in the temporary folder.
    with tempfile.TemporaryDirectory(prefix="lucy-book-", ignore_cleanup_errors=True) as scratch:
        done = run(command, cwd=staged, capture_output=True, text=True, env={**os.environ, "TMPDIR": scratch})
    html = staged / "_build" / "html"
    if done.returncode != 0 or not (html / "index.html").exists():
        raise BookBuildFailed(f"jupyter-book build of the {edition.value} edition failed:\n"
                              f"{done.stdout[-4000:]}\n{done.stderr[-4000:]}")
    pages = tuple(sorted(str(p.relative_to(html)) for p in html.rglob("*.html") if "_static" not in p.parts))
    return BuiltBook(edition, html, pages)
