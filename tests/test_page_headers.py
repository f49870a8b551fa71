"""Which headers the course's Jupyter server adds, by what a response is (page_headers.py). The browser
test (test_browser_safety.py) shows the same headers holding in Chromium."""

from __future__ import annotations

from tornado.httputil import HTTPHeaders, HTTPServerRequest, RequestStartLine

from lucy_runtime.grading.page_headers import PageHeaders, Served, classify, grading_page_policy

PAGE = (b'<html><head><script src="/formgrader/static/js/formgrade.js"></script>'
        b'<script type="text/javascript">var submission_id = "abc";</script></head><body>'
        b'<nav><script>$(".x").tooltip();</script></nav><div class="border-box-sizing" id="notebook">'
        b'<div class="cell"><script>top.lucyRan = 1</script></div></div></body></html>')


def test_a_file_a_learner_handed_in_is_a_learner_file_whatever_its_name():
    for name in ("page.html", "page.xhtml", "feed.atom", "archive.mht", "no-extension", "d/deeper/x.svgz"):
        assert classify(f"/formgrader/submissions/abc123/{name}", "/") is Served.LEARNER_FILE, name
        for folder in ("submitted", "autograded", "feedback"):
            assert classify(f"/files/{folder}/mallory/ch07_unit_a/{name}", "/") is Served.LEARNER_FILE


def test_formgraders_own_routes_keep_their_headers():
    assert classify("/formgrader/submissions/abc123/", "/") is Served.GRADING_PAGE
    assert classify("/prefix/formgrader/submissions/abc123", "/prefix/") is Served.GRADING_PAGE
    for path in ("/formgrader/submissions/abc123/next", "/formgrader/submissions/components/x.js",
                 "/formgrader/static/js/formgrade.js", "/files/source/ch07_unit_a/page.html", "/lab"):
        assert classify(path, "/") is Served.OTHER, path


def test_the_grading_page_runs_its_own_inline_scripts_and_none_in_the_notebook():
    policy = grading_page_policy(PAGE)
    scripts = next(part for part in policy.split("; ") if part.startswith("script-src"))
    assert "'unsafe-inline'" not in scripts and "*" not in scripts
    assert scripts.count("'sha256-") == 2 + 2, "the two inline scripts above the notebook and two handlers"
    without_learner = grading_page_policy(PAGE.replace(b"<script>top.lucyRan = 1</script>", b""))
    assert without_learner == policy, "a script in the notebook adds no hash"


def test_a_learner_file_response_gets_the_sandbox_nosniff_and_attachment():
    headers = HTTPHeaders({"Content-Type": "application/xhtml+xml", "Content-Security-Policy": "frame-ancestors 'self'"})
    request = HTTPServerRequest(start_line=RequestStartLine("GET", "/formgrader/submissions/abc/page.xhtml", "HTTP/1.1"),
                                headers=HTTPHeaders({"Host": "127.0.0.1"}))
    _, headers, _ = PageHeaders(request).transform_first_chunk(200, headers, b"<html/>", True)
    assert headers["Content-Security-Policy"].startswith("sandbox;")
    assert "allow-scripts" not in headers["Content-Security-Policy"]
    assert headers["X-Content-Type-Options"] == "nosniff" and headers["Content-Disposition"] == "attachment"
