"""The stored answer-key values are fresh: recomputing them from solutions/ changes nothing."""

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_expected_values_are_fresh():
    result = subprocess.run([sys.executable, "-m", "autograder", "expected", "--check"],
                            capture_output=True, text=True, cwd=ROOT, timeout=600)
    assert result.returncode == 0, result.stderr[-3000:]


def test_every_exercise_has_stored_values():
    from autograder.manifest import EXERCISES

    missing = [ex.id for ex in EXERCISES if not (ROOT / "autograder" / "expected" / f"{ex.id}.json").is_file()]
    assert not missing, f"no stored answer-key values for {missing}: run `python -m autograder expected`"
