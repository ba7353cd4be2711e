"""The library, the grader, the benchmarks and the tests pass ruff (lint and format); the library and
the grader pass mypy; both with the settings in pyproject.toml.

Each tool runs from this interpreter's environment (pinned in the test extra) as a subprocess, and a
failure shows the tool's own report. mypy checks the whole configured tree: about 40 s without its
cache (a fresh clone), so it is marked slow.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
BIN = Path(sys.executable).parent
TREES = ["shared/hetero", "autograder", "benchmarks", "tests"]


def _run(tool: str, *args: str) -> None:
    exe = BIN / tool
    assert exe.exists(), f"{tool} is not installed in {BIN}: `make setup` installs the test extra"
    run = subprocess.run([str(exe), *args], cwd=ROOT, capture_output=True, text=True, timeout=600)
    if run.returncode != 0:
        pytest.fail(f"`{' '.join([tool, *args])}` failed:\n{run.stdout[-6000:]}\n{run.stderr[-2000:]}", pytrace=False)


def test_ruff_check():
    _run("ruff", "check", "--no-fix", *TREES)


def test_ruff_format():
    _run("ruff", "format", "--check", *TREES)


@pytest.mark.slow
def test_mypy():
    _run("mypy")
