"""Load an exercise's public and hidden cases and the stored answer-key values (trusted side only).

Public cases live in `solutions/tests/public_exNN.py` (released unchanged to
`assignments/tests/public_exNN.py`, which is where the Gradescope zip keeps them); hidden cases in
`autograder/tests/exNN_hidden.py`; expected values for hidden cases, and the outputs of the known
wrong fixtures on them, in `autograder/expected/exNN.json` (written by `python -m autograder expected`).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from autograder.manifest import BY_ID, ROOT
from hetero.checks import Case
from hetero.impl import load_module_from_path

EXPECTED_DIR = ROOT / "autograder" / "expected"


def _checked(cases: Any, path: Path, ex_id: str) -> list[Case]:
    if not isinstance(cases, list) or not all(isinstance(c, Case) for c in cases):
        raise TypeError(f"{path}: CASES must be a list of hetero.checks.Case")
    ids = [c.id for c in cases]
    if len(set(ids)) != len(ids):
        raise ValueError(f"{path}: duplicate case ids")
    bad = [i for i in ids if not i.startswith(ex_id + ".")]
    if bad:
        raise ValueError(f"{path}: case ids must start with {ex_id}.: {bad}")
    return cases


def public_cases_path(ex_id: str, root: Path = ROOT) -> Path:
    for folder in ("solutions", "assignments"):
        path = root / folder / "tests" / f"public_{ex_id}.py"
        if path.is_file():
            return path
    raise FileNotFoundError(f"no public cases for {ex_id} under {root}")


def public_cases(ex_id: str, root: Path = ROOT) -> list[Case]:
    path = public_cases_path(ex_id, root)
    return _checked(load_module_from_path(path, f"_a2_public_{ex_id}").CASES, path, ex_id)


def hidden_cases(ex_id: str, root: Path = ROOT) -> list[Case]:
    path = root / "autograder" / "tests" / f"{ex_id}_hidden.py"
    return _checked(load_module_from_path(path, f"_a2_hidden_{ex_id}").CASES, path, ex_id)


def expected_values(ex_id: str, root: Path = ROOT) -> dict[str, Any]:
    """{case_id: {"expect": encoded, "mistakes": {fixture: [description, encoded]}}}."""
    path = root / "autograder" / "expected" / f"{ex_id}.json"
    data = json.loads(path.read_text(encoding="utf-8"))
    if data.get("exercise") != ex_id:
        raise ValueError(f"{path}: belongs to {data.get('exercise')!r}, not {ex_id}")
    return data["cases"]


def exercise_ids() -> list[str]:
    return list(BY_ID)
