# Two entry points (README Quick start): `make demo` and `make test`. Both create .venv if missing
# and install the package with the dependencies locked in locks/instructor.txt (plain pip; torch first,
# from PyTorch's CPU index on Linux: shared/hetero/install_torch.py). PYTHON picks the venv's interpreter.
PYTHON ?= python3
VENV := .venv
VPY := $(VENV)/bin/python
STAMP := $(VENV)/.installed
LOCK := locks/instructor.txt
export PATH := $(CURDIR)/$(VENV)/bin:$(PATH)

.PHONY: setup lock demo test test-fast check proofs mutation bench release pack autograder student-bundle grade-all clean

$(STAMP): pyproject.toml $(LOCK)
	test -x $(VPY) || $(PYTHON) -m venv $(VENV)
	# torch first, alone: its CPU build from PyTorch's CPU index on Linux, PyPI's wheel on macOS and Windows;
	# A2_TORCH_INDEX_URL overrides the index (README, "How torch is installed").
	$(VPY) shared/hetero/install_torch.py --rerun "make setup" --other-python "rm -rf $(VENV) && make setup PYTHON=python{v}" $(LOCK)
	# The lock as it stands, unresolved: what it leaves out (locks/excludes.txt) stays out. The torch
	# just installed satisfies its pin and is kept.
	$(VPY) -m pip install --no-deps -r $(LOCK)
	# torch once more, resolved: adds the libraries its platform's wheel needs (none for the CPU build).
	$(VPY) -m pip install "$$(grep '^torch==' $(LOCK))"
	$(VPY) -m pip install --no-deps -e .
	touch $(STAMP)

# The grader's sandbox needs nothing installed system-wide: its layers come with the venv
# (autograder/runtime/sandbox/ladder.py says which one works here: `python -m autograder sandbox`).
setup: $(STAMP)

# Regenerate locks/*.txt from pyproject.toml's pins with uv (asks PyPI; existing versions are kept where they fit).
lock: setup
	$(VPY) -m autograder lock

demo: setup
	$(VPY) -m hetero.lecture all --impl solutions --plots out
	$(VPY) -m autograder.selftest.demo --out out

pack: setup
	$(VPY) -m autograder pack

autograder: setup
	$(VPY) -m autograder build --out dist/autograder.zip

student-bundle: setup
	$(VPY) -m autograder student-bundle --out dist/student

SUBMISSIONS ?= submissions
grade-all: setup
	$(VPY) -m autograder grade-all $(SUBMISSIONS) --csv out/grades.csv

# Tests run in parallel, one pytest-xdist worker per core. loadgroup would keep a proof's tests on one worker
# (its module fixtures built once); with pytest 9.2 xdist's grouping does not take effect (pytest-xdist issue
# 1386), which costs time only: no test relies on it (the page-cache relay tests take a lock of their own).
# A slow proof (tests/proofs.py) whose committed record matches its inputs is checked, not re-run.
XDIST := -n auto --dist loadgroup
test: setup
	$(VPY) -m pytest $(XDIST)

# Everything not marked slow (no real tool runs, no fresh venvs, no whole-key gradings). loadscope keeps each
# module's tests on one worker, so a module fixture (a graded class, a Dask cluster) is built once, not once per
# worker: measured back to back on 2 cores, 187 s wall and 287 s of CPU against loadgroup's 195 s and 300 s.
# One worker more than the cores: a quarter of two workers' core time was idle (2 x 190 s wall against 287 s of
# CPU: tests waiting out time limits, sandboxed children starting), and a third worker fills it (165-168 s wall on
# 2026-12-04: README, "Which command when").
FAST_WORKERS = $(shell $(PYTHON) -c "import os; print(len(os.sched_getaffinity(0)) + 1 if hasattr(os, 'sched_getaffinity') else (os.cpu_count() or 1) + 1)")
test-fast: setup
	$(VPY) -m pytest -n $(FAST_WORKERS) --dist loadscope -m "not slow"

# The inner loop: lint, format, types (mypy's cache in .cache/mypy), release and expected-value drift,
# manifest consistency.
check: setup
	$(VPY) -m ruff check --no-fix shared/hetero autograder benchmarks tests
	$(VPY) -m ruff format --check shared/hetero autograder benchmarks tests
	$(VPY) -m mypy --cache-dir .cache/mypy
	$(VPY) -m autograder release --check
	$(VPY) -m autograder expected --check --jobs 2
	$(VPY) -m pytest -q -p no:cacheprovider tests/test_manifest.py tests/test_proofs.py

# Every slow proof in full, whatever its record says; rewrites tests/proofs/*.json (commit them).
proofs: setup
	A2_PROOFS=rerun $(VPY) -m pytest $(XDIST) -m proof

mutation: setup
	$(VPY) -m autograder.authoring.mutation --report out/mutation.md

# Atomic: assignments/, the stored expected values and the files derived from the manifest, or nothing.
release: setup
	$(VPY) -m autograder release

bench: setup
	for f in benchmarks/*.py; do echo "== $$f"; $(VPY) $$f || exit 1; done

clean:
	rm -rf out dist .pytest_cache
