"""The lecture driver: one JSON object on stdout, missing exercises named, other parts still run."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def lecture(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "hetero.lecture", *args], capture_output=True, text=True,
                          cwd=ROOT, timeout=600)


@pytest.mark.parametrize("exp", ["01", "02", "03"])
def test_json_on_stubs_names_missing_exercises(exp):
    result = lecture(exp, "--impl", "assignments", "--json")
    assert result.returncode == 0, result.stderr[-2000:]
    data = json.loads(result.stdout)  # exactly one JSON object: progress went to stderr
    assert data["experiment"] == exp and data["parts"]
    assert data["missing"], "with unfilled stubs some part must report a missing exercise"
    for key, message in data["missing"].items():
        assert "not implemented yet" in message and "ex" in message
        assert key not in data
    ran = [k for k in data["parts"] if k not in data["missing"]]
    for key in ran:
        assert isinstance(data[key], dict)


def test_unknown_impl_folder_is_a_clear_error():
    result = lecture("01", "--impl", "no/such/folder")
    assert result.returncode != 0 and "no such folder" in result.stderr


def test_text_mode_prints_tables_and_missing_note():
    result = lecture("01", "--impl", "assignments")
    assert result.returncode == 0, result.stderr[-2000:]
    assert "Experiment 01" in result.stdout and "missing" in result.stdout
