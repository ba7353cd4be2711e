"""What a student gets: the unfilled release fails every public test with NotImplementedError and
prints the per-exercise summary; the same tests pass once the answer key's files are copied in."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from autograder.manifest import EXERCISES

ROOT = Path(__file__).resolve().parents[1]


def run_pytest(folder: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "pytest", str(folder), "-q", "-p", "no:cacheprovider",
                           "--rootdir", str(folder), "-o", "addopts=--import-mode=importlib"],
                          capture_output=True, text=True, cwd=folder, timeout=900,
                          env={**os.environ, "COLUMNS": "400"})  # wide enough that summary lines are not cut


@pytest.fixture(scope="module")
def release_copy(tmp_path_factory) -> Path:
    dest = tmp_path_factory.mktemp("student") / "assignments"
    shutil.copytree(ROOT / "assignments", dest, ignore=shutil.ignore_patterns("__pycache__", ".pytest_cache"))
    return dest


@pytest.mark.slow
def test_unfilled_release_fails_every_public_test_with_not_implemented(release_copy):
    result = run_pytest(release_copy)
    out = result.stdout
    assert result.returncode == 1, out[-3000:]
    assert " passed" not in out.splitlines()[-1], f"some public test passes on an unfilled stub:\n{out[-3000:]}"
    assert "ImportError" not in out and "ModuleNotFoundError" not in out, out[-3000:]
    failed = [line for line in out.splitlines() if line.startswith("FAILED")]
    assert failed and all("NotImplementedError" in line for line in failed), "\n".join(
        line for line in failed if "NotImplementedError" not in line)
    assert "per-exercise summary" in out
    for ex in EXERCISES:
        assert any(line.startswith(ex.id) and "FAILING" in line for line in out.splitlines()), ex.id


@pytest.mark.slow
def test_release_with_the_answer_key_passes(release_copy, tmp_path):
    filled = tmp_path / "filled"
    shutil.copytree(release_copy, filled)
    for ex in EXERCISES:
        shutil.copyfile(ROOT / "solutions" / ex.filename, filled / ex.filename)
    result = run_pytest(filled)
    assert result.returncode == 0, result.stdout[-3000:]
    assert "FAILING" not in result.stdout
