# Lucy, Chapter 7: durable work.
# `make demo` and `make test` set themselves up: they create .venv and install the
# project from this folder's own files before they run.

PYTHON ?= $(shell command -v python3.11 || command -v python3)
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed
COURSE_STAMP := $(VENV)/.course
BROWSER := $(VENV)/.browser
SANDBOX := $(VENV)/.sandbox
# Two pytest workers, one test module each at a time (modules share one nbgrader course per module),
# the longest modules first (tests/conftest.py: LONGEST_FIRST). Three workers were tried on 2026-12-01:
# fresh clones took 16.8 and 17.9 minutes against about 16 with two, because the verify, the
# longest module, then gets less of the two cores.
PYTEST_JOBS ?= -n 2 --dist loadfile --no-loadscope-reorder
# make test-fast has no verify; its longest modules are the row checks, and there three workers
# were faster: 2 min 55 s and 3 min 27 s against 3 min 47 s with two (2026-12-01).
FAST_JOBS ?= -n 3 --dist loadfile --no-loadscope-reorder
POSTGRES := $(VENV)/.postgres
# What the book's pages run in the reader's browser, from npm, copied into the site so it works
# offline: mermaid.js for the diagrams (pinned to what sphinxcontrib-mermaid 2.1 expects),
# ipywidgets' embed script and require.js (what myst-nb expects), MathJax 3.
MERMAID := $(VENV)/node/.book-assets

HUB := $(VENV)/.hub

.PHONY: bytecode course demo test test-fast test-changed lab formgrader release check mutation bench book clean help hub

help:
	@echo "make course         an educator's set-up: the environment, bubblewrap, and what grading isolation this"
	@echo "                    machine gives (then the README's educator block)"
	@echo "make demo           regenerate release/, autograde reference, blank release and educator cases,"
	@echo "                    then generate feedback and export grades"
	@echo "make test           run the whole test suite (ruff and mypy included)"
	@echo "make test-fast      the suite without the real-nbgrader, slow and browser tests (needs only .venv)"
	@echo "make test-changed   the fast tests that what you changed touches (BASE=main: since main)"
	@echo "make lab            JupyterLab on release/ with this project's kernel"
	@echo "make formgrader     JupyterLab on this course folder with nbgrader's formgrader (127.0.0.1):"
	@echo "                    Nbgrader > Formgrader > Manual Grading scores the written answers"
	@echo "make release        regenerate release/ from source/ with nbgrader"
	@echo "make check          run every acceptance row against the reference in source/"
	@echo "make mutation       the grader's mutation score: cosmic-ray mutants of the reference vs the rows"
	@echo "make bench          ratios from one run: rows, autograde, class grading --jobs 2, the class report for"
	@echo "                    300 learners, the queue, and the"
	@echo "                    contributors' loop (make test-fast, test, demo against their goals; artifacts/bench.json)"
	@echo "make book           the chapter as a website, learner and educator editions, in build/book/"
	@echo "make hub            (root) the class on JupyterHub at 127.0.0.1:8000: the grader's and learners' accounts"
	@echo "                    (lucy hub add-learner NAME first), formgrader as the grader's service, the exchange"

# What a course needs (the runtime, nbgrader, JupyterLab, the kernel); the contributors' tools on top.
$(COURSE_STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --disable-pip-version-check --upgrade pip
	$(BIN)/python -m pip install --quiet --disable-pip-version-check -e .
	$(BIN)/python -m ipykernel install --sys-prefix --name python3 --display-name "Python 3 (Lucy ch07)" >/dev/null
	touch $(COURSE_STAMP)

$(STAMP): $(COURSE_STAMP)
	$(BIN)/python -m pip install --quiet --disable-pip-version-check -e '.[dev]'
	touch $(STAMP)

# The browser test drives Debian's chromium (Playwright cannot download a browser here).
$(BROWSER): $(STAMP)
	@command -v chromium >/dev/null 2>&1 || { \
	  if [ "$$(id -u)" = 0 ]; then apt-get update -qq && apt-get install -y -qq chromium >/dev/null; \
	  else echo "The browser test needs Debian's chromium: sudo apt-get install -y chromium"; exit 1; fi; }
	touch $(BROWSER)

# Grading runs learner code in a bubblewrap sandbox (lucy_runtime/grading/sandbox.py): as root,
# install Debian's bubblewrap; otherwise say what grading gets without it.
$(SANDBOX): $(COURSE_STAMP)
	@command -v bwrap >/dev/null 2>&1 || { \
	  if [ "$$(id -u)" = 0 ]; then apt-get update -qq && apt-get install -y -qq bubblewrap >/dev/null; \
	  else echo "Without bubblewrap, learner code is graded unsandboxed: sudo apt-get install -y bubblewrap"; fi; }
	touch $(SANDBOX)

# The PostgreSQL gradebook test starts Debian's postgresql on loopback in a temporary folder.
$(POSTGRES): $(STAMP)
	@ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1 || command -v initdb >/dev/null 2>&1 || { \
	  if [ "$$(id -u)" = 0 ]; then apt-get update -qq && apt-get install -y -qq postgresql >/dev/null; \
	  else echo "The PostgreSQL gradebook test needs Debian's postgresql: sudo apt-get install -y postgresql"; exit 1; fi; }
	touch $(POSTGRES)

# The class on JupyterHub (lucy_runtime/hub/): JupyterHub in .venv, configurable-http-proxy
# from npm in the venv's node folder, and Debian's Python with venv for the learners' environment
# (every account can run it; the course's own Python may sit in a folder only root opens).
$(HUB): $(COURSE_STAMP)
	$(BIN)/python -m pip install --quiet --disable-pip-version-check -e '.[hub]'
	@command -v npm >/dev/null 2>&1 && /usr/bin/python3.11 -c 'import ensurepip' 2>/dev/null || { \
	  if [ "$$(id -u)" = 0 ]; then apt-get update -qq && apt-get install -y -qq nodejs npm python3.11-venv >/dev/null; \
	  else echo "The hub needs npm and Debian's python3.11-venv: sudo apt-get install -y nodejs npm python3.11-venv"; exit 1; fi; }
	npm install --prefix $(VENV)/node --no-audit --no-fund --silent configurable-http-proxy@5.3.0
	touch $(HUB)

$(MERMAID): $(STAMP)
	@command -v npm >/dev/null 2>&1 || { \
	  if [ "$$(id -u)" = 0 ]; then apt-get update -qq && apt-get install -y -qq nodejs npm >/dev/null; \
	  else echo "The book's diagrams need npm: sudo apt-get install -y nodejs npm"; exit 1; fi; }
	npm install --prefix $(VENV)/node --no-audit --no-fund --silent mermaid@11.12.1 requirejs@2.3.7 \
	  @jupyter-widgets/html-manager@1.0.6 mathjax@3.2.2
	touch $(MERMAID)

# Bytecode for this package, written before a run. pip writes it for what it installs, but
# lucy_runtime is installed in place; where PYTHONDONTWRITEBYTECODE is set (CI machines often
# set it), every kernel, sandbox and nbgrader process would compile it again (0.16 s each).
# compileall writes only what changed since the last time.
# (Earlier versions wrote a startup file into .venv's site-packages; it goes.)
bytecode: $(COURSE_STAMP)
	@$(BIN)/python -m compileall -q lucy_runtime >/dev/null
	@rm -f $(VENV)/lib/python*/site-packages/lucy_leave_out_unused_imports.pth $(VENV)/.fast-start

# An educator's first command: nbgrader, JupyterLab and the runtime in .venv, bubblewrap for the
# grading sandbox, and one line on the isolation this machine gives (README: Grading isolation).
course: $(COURSE_STAMP) $(SANDBOX) bytecode
	@$(BIN)/python -m lucy_runtime.grading.sandbox

demo: $(STAMP) $(SANDBOX) bytecode
	$(BIN)/lucy demo

# --durations: the slowest tests, printed at the end of every run, for whoever makes the suite faster.
test: $(STAMP) $(BROWSER) $(SANDBOX) $(MERMAID) $(POSTGRES) $(HUB) bytecode
	$(BIN)/python -m pytest $(PYTEST_JOBS) --durations=25

# Nothing beyond the Python environment: a test that needs bubblewrap, chromium or PostgreSQL is
# skipped where the tool is missing (and fails under CI: tests/conftest.py, need).
FAST_MARKS := not nbgrader and not slow and not browser
test-fast: $(STAMP) bytecode
	$(BIN)/python -m pytest $(FAST_JOBS) -m "$(FAST_MARKS)"

# The fast tests a change touches (tests/changed.py): what differs from BASE (default HEAD, what is not
# committed yet), e.g. `make test-changed BASE=main` for a whole branch. CHANGED_MARKS= runs the slow ones too.
BASE ?= HEAD
CHANGED_MARKS ?= $(FAST_MARKS)
test-changed: $(STAMP) bytecode
	@tests="$$($(BIN)/python -m tests.changed --base $(BASE))"; \
	if [ -z "$$tests" ]; then echo "no test module touches what differs from $(BASE)"; exit 0; fi; \
	echo $$tests | tr ' ' '\n' | sed 's/^/  /'; \
	jobs=$$( [ $$(echo $$tests | wc -w) -gt 4 ] && echo '$(FAST_JOBS)' ); \
	$(BIN)/python -m pytest -q $$jobs $(if $(CHANGED_MARKS),-m "$(CHANGED_MARKS)") $$tests || [ $$? = 5 ]

lab: $(COURSE_STAMP)
	$(BIN)/jupyter lab --ip=127.0.0.1 --notebook-dir=release $$( [ "$$(id -u)" = 0 ] && echo --allow-root )

# The course folder is the server's root: formgrader reads nbgrader_config.py and gradebook.db here.
formgrader: $(COURSE_STAMP)
	$(BIN)/jupyter lab --ip=127.0.0.1 --ServerApp.root_dir=. \
	  --ServerApp.jpserver_extensions=nbgrader.server_extensions.formgrader=True \
	  --ServerApp.jpserver_extensions=lucy_runtime.grading.page_headers=True \
	  $$( [ "$$(id -u)" = 0 ] && echo --allow-root )

# As root, from the course folder: the accounts, the course folder given to the grader's group, the
# exchange and the learners' environment (lucy hub setup), then the hub in the foreground.
hub: $(HUB) $(SANDBOX) bytecode
	@[ "$$(id -u)" = 0 ] || { echo "make hub creates system accounts and starts their servers: run it as root"; exit 1; }
	$(BIN)/lucy hub setup
	$(BIN)/lucy hub start

release: $(COURSE_STAMP)
	$(BIN)/lucy release

check: $(STAMP)
	$(BIN)/lucy check source

mutation: $(STAMP)
	$(BIN)/lucy mutation-score --json artifacts/mutation-score.json

bench: $(STAMP)
	$(BIN)/lucy bench --json artifacts/bench.json

# Two separate builds: build/book/learner/_build/html has no solutions, build/book/educator/... has them.
book: $(STAMP) $(MERMAID)
	$(BIN)/lucy book --out build/book

clean:
	rm -rf $(VENV) .pytest_cache .hypothesis .mypy_cache .ruff_cache
	find lucy_runtime -name __pycache__ -type d -prune -exec rm -rf {} +
