# nbgrader configuration for Lucy, Chapter 7. This folder is the course directory:
# source/ holds the notebooks with solutions and hidden tests, release/ what learners get.
import os
import sys

c = get_config()  # noqa: F821  (nbgrader provides get_config)

# nbgrader runs `alembic` by name when it creates or upgrades the gradebook. The course's own
# interpreter folder comes first on PATH, so `.venv/bin/nbgrader ...` works from any shell.
_bin = os.path.dirname(sys.executable)
if _bin not in os.environ.get("PATH", "").split(os.pathsep):
    os.environ["PATH"] = _bin + os.pathsep + os.environ.get("PATH", "")

# `generate_assignment --force` deletes release/<assignment> before it converts: a run that
# fails puts release/ and gradebook.db back as they were (lucy_runtime/grading/unchanged_on_failure.py).
from lucy_runtime.grading.patches import guard_generate_assignment  # noqa: E402

guard_generate_assignment()

c.CourseDirectory.course_id = "lucy-ch07"
c.CourseDirectory.root = os.path.dirname(os.path.abspath(__file__))
# The course's exchange, private between learners (lucy_runtime/grading/exchange.py): at
# /srv/nbgrader/exchange, or the folder $LUCY_EXCHANGE names. formgrader, the Assignments tab and
# every command use it with nothing typed; `lucy exchange create` and `lucy exchange add` make it.
from lucy_runtime.grading.exchange import configure as configure_exchange  # noqa: E402

configure_exchange(c)

# The gradebook is gradebook.db in this folder. For a large class on a server, keep it in
# PostgreSQL instead (README: "A class on a server"):
# c.CourseDirectory.db_url = "postgresql+psycopg://lucy@127.0.0.1:5432/lucy_ch07"

# `lucy autograde --jobs N` runs several nbgrader processes on one gradebook: a SQLite
# writer waits for the others instead of failing after 5 s (lucy_runtime/grading/gradebook.py).
from lucy_runtime.grading.gradebook import wait_for_sqlite_writers  # noqa: E402

wait_for_sqlite_writers()

# nbgrader checks each cell's metadata with jsonschema.validate, which re-checks the schema
# itself every time: check it once per process (lucy_runtime/grading/patches.py).
from lucy_runtime.grading.patches import check_metadata_schema_once  # noqa: E402

check_metadata_schema_once()
# The jupytext Markdown pairs in source/ hold the reference solution: never release them.
c.CourseDirectory.ignore = [".ipynb_checkpoints", "*.pyc", "__pycache__", "feedback", "*.md", "*.sqlite3*", "*.log"]

# A release stub that says what to do.
c.ClearSolutions.code_stub = {"python": "# YOUR CODE HERE\nraise NotImplementedError(\"write this function, then run the cell\")"}
c.ClearSolutions.text_stub = "YOUR ANSWER HERE"

# Autograde: a stuck learner function is stopped by the checker's own timeouts first;
# this is the ceiling for a whole cell.
c.Execute.timeout = 120
c.Execute.interrupt_on_timeout = True

# Deleted or edited test cells come back from the source at autograde. OverwriteCellsAsReleased is
# nbgrader's OverwriteCells, quiet about a test cell that is exactly as released (its hidden tests
# are not in the release): nbgrader otherwise warns for every test cell of every submission.
from nbgrader.preprocessors import CheckCellMetadata, ClearOutput, DeduplicateIds, OverwriteKernelspec  # noqa: E402

from lucy_runtime.grading.released_cells import OverwriteCellsAsReleased  # noqa: E402

c.OverwriteCells.add_missing_cells = True
c.CheckCellMetadata.enabled = True
c.Autograde.sanitize_preprocessors = [ClearOutput, DeduplicateIds, OverwriteKernelspec, OverwriteCellsAsReleased,
                                      CheckCellMetadata]

# After the kernel has run the hidden tests, re-check every graded row outside the
# kernel (see lucy_runtime/grading/sealed.py): a learner cell that tampers with grade() in
# the kernel cannot change the grade.
from nbconvert.preprocessors import ClearMetadataPreprocessor  # noqa: E402
from nbconvert.preprocessors import CSSHTMLHeaderPreprocessor  # noqa: E402
from nbgrader.preprocessors import (  # noqa: E402
    AssignLatePenalties, ClearHiddenTests, GetGrades, IgnorePattern, LimitOutput,
    SaveAutoGrades,
)

from lucy_runtime.grading.kernel import SandboxedExecute  # noqa: E402
from lucy_runtime.grading.inert_html import InertHTML  # noqa: E402
from lucy_runtime.grading.sealed import SealedVerdicts  # noqa: E402

# Learner code runs in a sandbox (lucy_runtime/grading/sandbox.py): the kernel and the sealed
# re-check's children see only that submission, never source/, the gradebook or other
# students. SandboxedExecute is nbgrader's Execute with the kernel started in it
# (nbgrader ignores c.Execute.kernel_manager_class: it passes its own as a keyword).
#
# InertHTML comes last (lucy_runtime/grading/inert_html.py): once the kernel, the sealed verdict and
# nbgrader's scoring are done, every learner-controlled piece of HTML in the autograded notebook
# (Markdown, raw cells, outputs, attachments, widget state) is cleaned with nh3, so nothing a
# learner hands in runs in formgrader's grading page or in the feedback page.
c.Autograde.autograde_preprocessors = [
    SandboxedExecute, SealedVerdicts, IgnorePattern, ClearMetadataPreprocessor, LimitOutput, SaveAutoGrades,
    AssignLatePenalties, CheckCellMetadata, InertHTML,
]

# Feedback shows each row's verdict and hint, never the hidden part of a test cell; InertHTML
# again, for notebooks autograded before it was in the list above.
c.GenerateFeedback.preprocessors = [GetGrades, ClearHiddenTests, InertHTML, CSSHTMLHeaderPreprocessor]
