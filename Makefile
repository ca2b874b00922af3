# The two set-up commands of the README: `make book` (main job) and `make test` (tests).
# Both create .venv on first use and install everything from requirements.txt.
SHELL := /bin/bash
VENV ?= .venv
PY := $(VENV)/bin/python
PROFILE ?= cpu
PYTEST_ARGS ?=
STAMP := $(VENV)/.medibio-installed

.PHONY: install book test lint lab clean-book

$(STAMP): requirements.txt pyproject.toml
	test -x $(PY) || python3 -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -r requirements.txt
	$(PY) -m pip install -q --no-deps -e .
	$(PY) -m medibio.book.assets
	touch $@

install: $(STAMP)

book: install
	$(PY) -m medibio book --profile $(PROFILE) --keep-going

# JupyterLab on the chapter notebooks, with this project's environment as the kernel; results and data
# locations are the same as `make book`'s, so a notebook run there writes the same run records.
LAB_ARGS ?=
AS_ROOT := $(if $(filter 0,$(shell id -u)),--allow-root,)
lab: install
	$(VENV)/bin/jupyter lab --notebook-dir=notebooks $(AS_ROOT) $(LAB_ARGS)

test: install
	$(PY) -m pytest $(PYTEST_ARGS)

lint: install
	$(VENV)/bin/ruff check medibio tests benchmarks

clean-book:
	rm -rf _build && find book -maxdepth 1 -type f ! -name README.md -delete
