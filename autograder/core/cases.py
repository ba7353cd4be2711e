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

import ast
import json
from pathlib import Path
from typing import Any

from autograder.core import hetero_calls
from autograder.core.manifest import BEGIN, EXERCISES, ROOT, Exercise, public_cases_in, where
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


def _defined(path: Path) -> dict[str, bool]:
    """{top-level function: whether it holds a solution block} of a solution file."""
    source = path.read_text(encoding="utf-8")
    return {
        node.name: BEGIN in (ast.get_source_segment(source, node) or "")
        for node in ast.parse(source, filename=str(path)).body
        if isinstance(node, ast.FunctionDef)
    }


def check_files(root: Path = ROOT, exercises: tuple[Exercise, ...] | None = None) -> list[str]:
    """What is wrong between the table and the answer key's files (needs solutions/; empty: nothing).

    Each exercise needs solutions/<module>.py defining every declared function with a solution block,
    solutions/tests/public_<id>.py with public cases of exactly those functions, and
    autograder/tests/<id>_hidden.py with hidden cases of each (simulator checks may add other names);
    every exercise function `hetero` calls by name must be declared (`autograder.core.hetero_calls`).
    """
    found: list[str] = []
    for e in EXERCISES if exercises is None else exercises:
        here = where(e.id)
        solution = root / "solutions" / e.filename
        public = public_cases_in(root / "solutions", e.id)
        hidden = root / "autograder" / "tests" / f"{e.id}_hidden.py"
        missing = [p for p in (solution, public, hidden) if not p.is_file()]
        for path in missing:
            found.append(f"{here}: {e.id} names {path.relative_to(root)}, which does not exist")
        if missing:
            continue
        defined = _defined(solution)
        for name in e.functions:
            if name not in defined:
                found.append(f"{solution.relative_to(root)}: no function {name} (declared at {here})")
            elif not defined[name]:
                found.append(f"{solution.relative_to(root)}: {name} has no solution block ({BEGIN} ...)")
        try:
            public_funcs = {c.func for c in public_cases(e.id, root)}
            hidden_funcs = {c.func for c in hidden_cases_from_source(e.id, root)}
        except Exception as exc:  # noqa: BLE001 - a broken case file is reported, with its name
            found.append(f"{e.id}: its case files do not load: {type(exc).__name__}: {exc}")
            continue
        declared = set(e.functions)
        if public_funcs != declared:
            found.append(
                f"{public.relative_to(root)}: public cases cover {sorted(public_funcs)}, the entry at {here} "
                f"declares {sorted(declared)}"
            )
        if declared - hidden_funcs:
            found.append(f"{hidden.relative_to(root)}: no hidden cases of {sorted(declared - hidden_funcs)} ({here})")
    return found + hetero_calls.problems(root, EXERCISES if exercises is None else exercises)
