"""The stored answer-key values are fresh: recomputing them from solutions/ changes nothing."""

import re
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


def _solution_lines(text: str) -> list[str]:
    """Code lines inside the answer key's solution blocks, long enough to be recognisable."""
    lines, inside = [], False
    for line in text.splitlines():
        if "# BEGIN SOLUTION" in line or "# END SOLUTION" in line:
            inside = "BEGIN" in line
            continue
        stripped = line.strip()
        if inside and len(stripped) >= 16 and not stripped.startswith("#"):
            lines.append(re.sub(r"\s+", "", stripped))
    return lines


def test_hints_name_the_mistake_not_the_answer_code():
    from autograder.cases import hidden_cases, public_cases
    from autograder.manifest import EXERCISES

    quoted = []
    for ex in EXERCISES:
        answer = _solution_lines((ROOT / "solutions" / ex.filename).read_text(encoding="utf-8"))
        for case in public_cases(ex.id) + hidden_cases(ex.id):
            text = re.sub(r"\s+", "", case.hint + case.tol_note)
            quoted += [f"{case.id}: {line}" for line in answer if line in text]
    assert not quoted, "hints quote the answer key verbatim (say what is wrong instead):\n" + "\n".join(quoted[:10])
