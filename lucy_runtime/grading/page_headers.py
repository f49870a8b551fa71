"""What formgrader and Jupyter serve from a course is served so that no browser runs a learner's bytes.

A jupyter_server extension, enabled beside formgrader (``make formgrader`` does; a hub's formgrader
service adds the same entry)::

    c.ServerApp.jpserver_extensions = {"nbgrader.server_extensions.formgrader": True,
                                       "lucy_runtime.grading.page_headers": True}

It adds one output transform to the server's web application, which sets headers by what a
response is, whatever the file's name or type:

* a file a learner handed in (formgrader's ``/formgrader/submissions/<id>/<file>``, and Jupyter's
  ``/files/…`` below a ``submitted/``, ``autograded/`` or ``feedback/`` folder: ``generate_feedback``
  copies the files handed in beside the feedback page) gets ``Content-Security-Policy: sandbox``
  (a unique origin where no script runs, in an HTML, SVG, XHTML or any ``+xml`` page),
  ``X-Content-Type-Options: nosniff`` and ``Content-Disposition: attachment``: the browser saves it
  rather than opening it. JupyterLab still shows a feedback page in its own viewer (which runs no
  script of a page it did not make), through its contents API.
* formgrader's grading page (``/formgrader/submissions/<id>/``) gets a policy that runs only
  scripts from the server itself, MathJax's folder on cdnjs, and the inline scripts of formgrader's
  own template above the notebook, by their hash: an inline script or a ``javascript:`` link
  anywhere in the notebook does not run, and images load only from the server or as ``data:``.
"""

from __future__ import annotations

import base64
import hashlib
import re
from collections.abc import Iterable
from enum import Enum

from nbgrader.apps.baseapp import NbGrader
from nbgrader.coursedir import CourseDirectory
from tornado.httputil import HTTPHeaders, HTTPServerRequest
from tornado.web import OutputTransform

LEARNER_FOLDERS = ("submitted", "autograded", "feedback")
"""nbgrader's default folder names; the course's own names (``c.CourseDirectory.*_directory``) are added."""

MATHJAX = "https://cdnjs.cloudflare.com/ajax/libs/mathjax/"
NOTEBOOK_START = re.compile(rb'<div\s[^>]*\bid="notebook"')
"""Where formgrader's template ends and the notebook begins: only inline scripts above it are formgrader's.
(nbconvert writes the page out again, so the attributes may come in any order.)"""
OWN_HANDLERS = ("toggle_name(true);", "toggle_name(false);")
"""formgrader's two inline event handlers (show or hide the student's name)."""

SANDBOX = "sandbox; default-src 'none'; img-src data:; style-src 'unsafe-inline'; frame-ancestors 'none'"


class Served(Enum):
    GRADING_PAGE = "formgrader's grading page"
    LEARNER_FILE = "a file a learner handed in, or one of the feedback folder"
    OTHER = "anything else"


def _hash(script: bytes) -> str:
    return "'sha256-" + base64.b64encode(hashlib.sha256(script).digest()).decode() + "'"


_INLINE_SCRIPT = re.compile(rb"<script(?![^>]*\ssrc=)[^>]*>(.*?)</script>", re.DOTALL | re.IGNORECASE)


def grading_page_policy(body: bytes) -> str:
    """The page's policy: its own inline scripts (above the notebook) by hash, nothing inline below."""
    start = NOTEBOOK_START.search(body)
    top = body[:start.start()] if start else b""
    hashes = sorted({_hash(script) for script in _INLINE_SCRIPT.findall(top)})
    handlers = [_hash(handler.encode()) for handler in OWN_HANDLERS]
    scripts = " ".join(["'self'", MATHJAX, "'unsafe-eval'", "'unsafe-hashes'", *hashes, *handlers])
    # MathJax 2 evaluates its configuration block ('unsafe-eval'); nothing inline runs without a hash.
    return "; ".join([
        "default-src 'self'", f"script-src {scripts}", f"style-src 'self' 'unsafe-inline' {MATHJAX}",
        f"font-src 'self' data: {MATHJAX}", "img-src 'self' data:", "connect-src 'self'",
        "object-src 'none'", "base-uri 'none'", "form-action 'self'", "frame-ancestors 'self'"])


_NAVIGATION = {"next", "prev", "next_incorrect", "prev_incorrect"}


def classify(path: str, base_url: str, folders: Iterable[str] = LEARNER_FOLDERS) -> Served:
    """What the request for ``path`` (the URL's path) is served as."""
    if not path.startswith(base_url):
        return Served.OTHER
    parts = path[len(base_url):].strip("/").split("/")
    if parts[:2] == ["formgrader", "submissions"] and len(parts) >= 3 and parts[2] != "components":
        rest = [part for part in parts[3:] if part]
        if not rest:
            return Served.GRADING_PAGE
        if len(rest) == 1 and rest[0] in _NAVIGATION:
            return Served.OTHER
        return Served.LEARNER_FILE
    if parts[:1] == ["files"]:
        if set(parts[1:-1]) & set(folders):
            return Served.LEARNER_FILE
    return Served.OTHER


LEARNER_FILE_HEADERS = {"Content-Security-Policy": SANDBOX, "X-Content-Type-Options": "nosniff",
                        "Content-Disposition": "attachment"}


class PageHeaders(OutputTransform):
    """Sets the headers above on every response; the class attributes are set per web app."""

    base_url = "/"
    folders: tuple[str, ...] = LEARNER_FOLDERS

    def __init__(self, request: HTTPServerRequest) -> None:
        super().__init__(request)
        self.served = classify(request.path, self.base_url, self.folders)

    def transform_first_chunk(self, status_code: int, headers: HTTPHeaders, chunk: bytes,
                              finishing: bool) -> tuple[int, HTTPHeaders, bytes]:
        if self.served is Served.GRADING_PAGE:
            headers["Content-Security-Policy"] = grading_page_policy(chunk)
        elif self.served is Served.LEARNER_FILE:
            headers.update(LEARNER_FILE_HEADERS)
        return status_code, headers, chunk


def _course_folders() -> tuple[str, ...]:
    """The default folder names and the names the course's nbgrader configuration gives them."""
    app = NbGrader()
    app.load_config_file()
    course = CourseDirectory(config=app.config)
    named = (course.submitted_directory, course.autograded_directory, course.feedback_directory)
    return tuple(dict.fromkeys(LEARNER_FOLDERS + named))


def _jupyter_server_extension_points() -> list[dict[str, str]]:
    return [{"module": __name__}]


def _load_jupyter_server_extension(serverapp) -> None:
    webapp = serverapp.web_app
    transform = type("CoursePageHeaders", (PageHeaders,), {
        "base_url": webapp.settings.get("base_url", "/"), "folders": _course_folders()})
    # First, so it sees the page as written (before any compression).
    webapp.transforms.insert(0, transform)
    serverapp.log.info("Lucy: learner files served sandboxed, formgrader's grading page with a script policy")
