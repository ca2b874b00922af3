# The two set-up commands of the README: `make book` (main job) and `make test` (tests).
# Both create .venv on first use and install everything from requirements.lock (exact versions + hashes).
# requirements.txt names the direct dependencies with loose bounds; `make lock` compiles it into requirements.lock.
SHELL := /bin/bash
VENV ?= .venv
PY := $(VENV)/bin/python
PROFILE ?= cpu
# FROM=reference: render the book from the recorded results in reference/ (no training; see README)
FROM ?=
# MODEL=folder-or-hub-id: build every chapter for that encoder instead of the profile's (medibio book --model)
MODEL ?=
PYTEST_ARGS ?=
STAMP := $(VENV)/.medibio-installed

.PHONY: install lock book test test-fast lint lab clean-book gpu-check study

# The locked install runs uv (pinned below, the tool `make lock` uses): it fetches, unpacks and byte-compiles the
# ~200 locked packages in parallel, 36 s against pip's 123 s on a fresh clone here. --compile-bytecode as pip
# does: where PYTHONDONTWRITEBYTECODE is set (it is on the development machine) nothing writes .pyc files later,
# and every process (each chapter's kernel) compiled torch, transformers and pandas again (9.8 s to import them
# uncompiled, 3.4 s compiled).
# torch comes from TORCH_WHEELS (the CPU wheel) when that folder exists. Extra options, e.g. where it is absent:
#   make install PIP_LOCK_ARGS="--extra-index-url https://download.pytorch.org/whl/cpu"
UV_VERSION ?= 0.13.9
TORCH_WHEELS ?= /opt/wheels
PIP_LOCK_ARGS ?=
UV := $(VENV)/bin/uv

$(STAMP): requirements.lock pyproject.toml
	test -x $(PY) || python3 -m venv $(VENV)
	test -x $(UV) || $(PY) -m pip install -q uv==$(UV_VERSION)
	$(UV) pip install -q --python $(PY) --require-hashes --no-deps --compile-bytecode -r requirements.lock \
		$(if $(wildcard $(TORCH_WHEELS)),--find-links $(TORCH_WHEELS)) $(PIP_LOCK_ARGS)
	$(UV) pip install -q --python $(PY) --no-deps -e .
	$(PY) -m medibio.book.assets
	touch $@

install: $(STAMP)

# Regenerate requirements.lock from requirements.txt (developers only; tests/test_lock.py checks the two agree).
# uv keeps the lock's current pins where requirements.txt still admits them; LOCK_UPGRADE=1 moves every package
# to the newest version allowed. torch resolves to the CPU wheel in TORCH_WHEELS (never PyPI's CUDA build).
LOCK_VENV ?= $(VENV)/lock-tools
LOCK_UPGRADE ?=
# rfc3987-syntax (and lark, which only it needs) is left out: jsonschema imports it where installed to check the
# "iri" format, which nothing here validates, and it builds a grammar at import, 2.4 s in every process that
# imports jsonschema (each chapter's kernel, through myst-nb's glue and nbformat; papermill; jupyter-book).
LOCK_CMD = uv pip compile requirements.txt --generate-hashes --no-header --find-links $(TORCH_WHEELS) \
	--no-emit-package rfc3987-syntax --no-emit-package lark \
	--python-version 3.11.5 --python-platform x86_64-manylinux_2_28$(if $(LOCK_UPGRADE), --upgrade) -o requirements.lock
lock:
	test -x $(LOCK_VENV)/bin/uv || { python3 -m venv $(LOCK_VENV) && $(LOCK_VENV)/bin/pip install -q uv==$(UV_VERSION); }
	$(LOCK_VENV)/bin/$(LOCK_CMD)
	{ echo "# requirements.lock: every package that \`make install\` installs, exact versions with sha256 hashes"; \
	  echo "# (Python 3.11.5+ on Linux x86_64; pip install --require-hashes --no-deps -r requirements.lock)."; \
	  echo "# compiled from requirements.txt sha256=$$(sha256sum requirements.txt | cut -d' ' -f1)"; \
	  echo "# Do not edit by hand. Regenerate after editing requirements.txt with: make lock"; \
	  echo "# which runs (uv $(UV_VERSION)): $(LOCK_CMD)"; \
	  echo "# torch==2.13.0+cpu is the CPU wheel torch-2.13.0+cpu-cp311-cp311-manylinux_2_28_x86_64.whl from $(TORCH_WHEELS)"; \
	  echo "# (pip finds it there through PIP_FIND_LINKS); it is not on PyPI: elsewhere get the same file from"; \
	  echo "# https://download.pytorch.org/whl/cpu (make install PIP_LOCK_ARGS=\"--extra-index-url https://download.pytorch.org/whl/cpu\")."; \
	  grep -v '^# ' requirements.lock; } > requirements.lock.tmp
	mv requirements.lock.tmp requirements.lock

book: install
	$(PY) -m medibio book --profile $(PROFILE) --keep-going$(if $(FROM), --from $(FROM))$(if $(MODEL), --model $(MODEL))

# JupyterLab on the chapter notebooks, with this project's environment as the kernel; results and data
# locations are the same as `make book`'s, so a notebook run there writes the same run records.
LAB_ARGS ?=
AS_ROOT := $(if $(filter 0,$(shell id -u)),--allow-root,)
lab: install
	$(VENV)/bin/jupyter lab --notebook-dir=notebooks $(AS_ROOT) $(LAB_ARGS)

# The whole suite in two workers, a test file each (--dist loadfile keeps a module's fixtures in one process);
# much of it waits on launched processes and notebook kernels, so two workers keep both cores busy. Files go
# out in collection order (--no-loadscope-reorder; xdist would send the files with most tests first), which
# starts the modules that build for minutes first (tests/conftest.py). The 25 slowest tests close the report.
TEST_WORKERS ?= 2
test: install
	$(PY) -m pytest -n $(TEST_WORKERS) --dist loadfile --no-loadscope-reorder --durations=25 $(PYTEST_ARGS)

# The fast tier: no data root, no training beyond a few tiny steps (the edit loop; `make test` is the full suite).
test-fast: install
	$(PY) -m pytest -m "not slow and not realdata" -n 2 -q $(PYTEST_ARGS)

lint: install
	$(VENV)/bin/ruff check medibio tests benchmarks
	$(VENV)/bin/lint-imports

# The GPU check (docs/gpu-check.md): .gpu-check/, a folder of at most 58 MiB (model, wheels, source, data, run.py)
# that runs the gpu profile on a bare GPU machine without network: python3 .gpu-check/run.py --out DIR
gpu-check: install
	$(PY) -m benchmarks.gpu_check.pack

# The Table 5 study (docs/pretraining.md): both queues in the background, one per core, each in a session of its
# own whose scheduling group takes nice 10 (medibio.core.launch.yield_to_interactive_work: a plain nice value does
# not yield to another session's work), with logs in logs/ of the study root the queues see (the settings'
# study_root: $MEDIBIO_STUDY_ROOT, else its default); a queue already running is left alone. The end of a session stops them: run it again (each queue goes on from its last checkpoint). Each unit
# runs the checkout's code as it starts: when editing meanwhile, start the queues from a clean clone.
study: install
	logs=$$($(PY) -c 'from medibio.core.settings import Settings; print(Settings.from_env().study_root / "logs")') && \
	mkdir -p "$$logs" && \
	for q in a b; do \
	  if pgrep -f "medibio study queue $$q" > /dev/null; then echo "queue $$q: already running"; else \
	    setsid nohup nice -n 10 $(PY) -m medibio study queue $$q >> "$$logs/queue-$$q.log" 2>&1 < /dev/null & \
	    echo "queue $$q: started, log $$logs/queue-$$q.log"; fi; \
	done

clean-book:
	rm -rf _build && find book -maxdepth 1 -type f ! -name README.md -delete
