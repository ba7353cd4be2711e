"""Load an exercise's public and hidden cases and the stored answer-key values (trusted side only).

Public cases live in `solutions/tests/public_exNN.py` (released unchanged to
`assignments/tests/public_exNN.py`, which is where the Gradescope zip keeps them). Hidden cases are
written in `autograder/tests/exNN_hidden.py` (some of their inputs drawn by Hypothesis), but grading
never runs those files: `python -m autograder expected` loads them once (`hidden_cases_from_source`)
and stores every hidden case as data, with its inputs, tolerances and expected value, in
`autograder/expected/exNN.json`; `hidden_cases` reads them back from there. So the grader needs
neither Hypothesis nor the case files, and the inputs it grades with are exactly the inputs the
expected values were computed from (`expected --check` fails when the stored ones are stale).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from autograder.core.manifest import ROOT, public_cases_in
from hetero.checks import Case, decode, encode, unwrap
from hetero.impl import load_module_from_path


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
    """The answer key's public cases, else the release's (the Gradescope zip has only `assignments/`)."""
    for folder in ("solutions", "assignments"):
        path = public_cases_in(root / folder, ex_id)
        if path.is_file():
            return path
    raise FileNotFoundError(f"no public cases for {ex_id} under {root}")


def public_cases(ex_id: str, root: Path = ROOT) -> list[Case]:
    path = public_cases_path(ex_id, root)
    return _checked(load_module_from_path(path, f"_a2_public_{ex_id}").CASES, path, ex_id)


def hidden_cases_from_source(ex_id: str, root: Path = ROOT) -> list[Case]:
    """The hidden cases as their case file builds them (instructor side: may need Hypothesis)."""
    path = root / "autograder" / "tests" / f"{ex_id}_hidden.py"
    return _checked(load_module_from_path(path, f"_a2_hidden_{ex_id}").CASES, path, ex_id)


CASE_FIELDS = ("id", "func", "raises", "rel_tol", "abs_tol", "tol_note", "unit", "hint", "points", "harness")


def case_to_data(case: Case) -> dict[str, Any]:
    """A hidden case as JSON data (no expected value: that is stored beside it)."""
    data = {name: getattr(case, name) for name in CASE_FIELDS}
    data.update(args=encode(tuple(case.args)), kwargs=encode(dict(case.kwargs)), uses=list(case.uses))
    return data


def case_from_data(data: dict[str, Any]) -> Case:
    fields = {name: data[name] for name in CASE_FIELDS}
    return Case(
        args=tuple(unwrap(decode(data["args"]))),
        kwargs=unwrap(decode(data["kwargs"])),
        uses=tuple(data.get("uses", ())),
        **fields,
    )


def stored(ex_id: str, root: Path = ROOT) -> dict[str, Any]:
    """The whole `autograder/expected/exNN.json` of one exercise."""
    path = root / "autograder" / "expected" / f"{ex_id}.json"
    data = json.loads(path.read_text(encoding="utf-8"))
    if data.get("exercise") != ex_id:
        raise ValueError(f"{path}: belongs to {data.get('exercise')!r}, not {ex_id}")
    if "hidden" not in data or "rules" not in data:
        raise ValueError(f"{path}: written by an older `python -m autograder expected`; run it again")
    return data


def hidden_cases(ex_id: str, root: Path = ROOT) -> list[Case]:
    """The hidden cases as stored with their expected values (what the grader grades with)."""
    path = root / "autograder" / "expected" / f"{ex_id}.json"
    return _checked([case_from_data(c) for c in stored(ex_id, root)["hidden"]], path, ex_id)


def expected_values(ex_id: str, root: Path = ROOT) -> dict[str, Any]:
    """{case_id: {"expect": encoded, "raises": str | None, "class": int, "mistakes": {fixture: [description, encoded]}}}."""
    return stored(ex_id, root)["cases"]
