# Two entry points (README Quick start): `make demo` and `make test`. Both create .venv if missing
# and install the package with its pinned dependencies in one pip call.
PYTHON ?= python3
VENV := .venv
VPY := $(VENV)/bin/python
STAMP := $(VENV)/.installed
export PATH := $(CURDIR)/$(VENV)/bin:$(PATH)

.PHONY: setup demo test test-fast mutation bench release pack autograder student-bundle grade-all clean

$(STAMP): pyproject.toml
	test -x $(VPY) || $(PYTHON) -m venv $(VENV)
	$(VPY) -m pip install -e ".[test,grading]"
	# rfc3987-syntax (pulled in by the Jupyter stack) adds ~3 s to every import of nbformat; nothing here needs it.
	$(VPY) -m pip uninstall -y rfc3987-syntax
	touch $(STAMP)

setup: $(STAMP)

demo: setup
	$(VPY) -m hetero.lecture all --impl solutions --plots out
	$(VPY) -m autograder.demo --out out

pack: setup
	$(VPY) -m autograder pack

autograder: setup
	$(VPY) -m autograder build --out dist/autograder.zip

student-bundle: setup
	$(VPY) -m autograder student-bundle --out dist/student

SUBMISSIONS ?= submissions
grade-all: setup
	$(VPY) -m autograder grade-all $(SUBMISSIONS) --csv out/grades.csv

test: setup
	$(VPY) -m pytest

# Everything not marked slow (no real tool runs, no fresh venvs): a few minutes on 2 cores.
test-fast: setup
	$(VPY) -m pytest -m "not slow"

mutation: setup
	$(VPY) -m autograder.mutation --report out/mutation.md

release: setup
	$(VPY) -m autograder release
	$(VPY) -m autograder expected

bench: setup
	for f in benchmarks/*.py; do echo "== $$f"; $(VPY) $$f || exit 1; done

clean:
	rm -rf out dist .pytest_cache
