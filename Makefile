# The two set-up commands of the README: `make book` (main job) and `make test` (tests).
# Both create .venv on first use and install everything from requirements.txt.
SHELL := /bin/bash
VENV ?= .venv
PY := $(VENV)/bin/python
PROFILE ?= cpu
PYTEST_ARGS ?=
STAMP := $(VENV)/.medibio-installed

.PHONY: install book test lint clean-book

$(STAMP): requirements.txt pyproject.toml
	test -x $(PY) || python3 -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -r requirements.txt
	$(PY) -m pip install -q --no-deps -e .
	$(PY) -m medibio.book.assets
	touch $@

install: $(STAMP)

book: install
	$(PY) -m medibio book --profile $(PROFILE)

test: install
	$(PY) -m pytest $(PYTEST_ARGS)

lint: install
	$(VENV)/bin/ruff check medibio tests benchmarks

clean-book:
	rm -rf _build && find book -maxdepth 1 -type f ! -name README.md -delete
