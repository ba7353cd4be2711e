"""Every exercise's answer key against its cases, one test per exercise of the manifest (a new exercise
gets them all without a line here).

- The key passes every public case, judged as the public tests judge it; the public cases are 4-8 (a
  documented few more where a formula needs them), one of them invalid input, each with a hint, each
  value case with a unit, a tolerance note and a literal expected value.
- Hidden cases carry no literal expected value; the key returns where a value is expected and raises
  where `raises` is set; every declared function has at least 5 hidden cases that call it directly.
- The key imports only the standard library, numpy, torch and hetero.
- Every exercise has at least 2 wrong fixtures. What each fixture must fail, and how it is marked, is
  checked per fixture in tests/test_wrong_fixtures.py.
"""

from __future__ import annotations

import ast
import functools
import sys
from collections import Counter

import pytest

from autograder.authoring.wrong_fixtures import for_exercise
from autograder.core.cases import hidden_cases, public_cases
from autograder.core.manifest import BY_ID, EXERCISES, ROOT
from hetero.checks import NO_EXPECT, Outcome, check_call, run_call
from hetero.impl import load_module_from_path

IDS = [ex.id for ex in EXERCISES]
MIN_HIDDEN_PER_FUNCTION = 5
MIN_FIXTURES = 2
ALLOWED_IMPORTS = {"numpy", "torch", "hetero"}  # and the standard library


@functools.cache
def _key(ex_id: str):
    return load_module_from_path(ROOT / "solutions" / BY_ID[ex_id].filename, f"_a2_key_test_{ex_id}")


@pytest.mark.parametrize("ex_id", IDS)
def test_key_passes_every_public_case(ex_id):
    failures = [v.message for v in (check_call(c, _key(ex_id)) for c in public_cases(ex_id)) if not v.passed]
    assert not failures, f"the answer key solutions/{BY_ID[ex_id].filename} fails its public cases:\n" + "\n".join(
        failures
    )


@pytest.mark.parametrize("ex_id", IDS)
def test_public_cases_are_complete(ex_id):
    cases = public_cases(ex_id)
    where = f"solutions/tests/public_{ex_id}.py"
    assert len(cases) >= 4, f"{where}: expected at least 4 public cases, found {len(cases)}"
    untested = sorted(set(BY_ID[ex_id].functions) - {c.func for c in cases})
    assert not untested, f"{where}: no public case calls {untested}"
    assert any(c.raises == "ValueError" for c in cases), f"{where}: no invalid-input case (raises='ValueError')"
    problems = [f"{c.id}: no hint naming the likely mistake" for c in cases if not c.hint]
    problems += [
        f"{c.id}: a value case needs a unit and a tol_note"
        for c in cases
        if not c.raises and not (c.unit and c.tol_note)
    ]
    problems += [f"{c.id}: no literal expected value" for c in cases if not c.raises and c.expect is NO_EXPECT]
    assert not problems, f"{where}:\n" + "\n".join(problems)


def _outcome_problem(case, outcome: Outcome) -> str | None:
    if case.raises and outcome.error_type != case.raises:
        return f"{case.id}: the answer key should raise {case.raises}, got {outcome.error_type or 'a value'} {outcome.error_message}"
    if not case.raises and outcome.error_type:
        return f"{case.id}: the answer key raised {outcome.error_type}: {outcome.error_message}"
    return None


@pytest.mark.parametrize("ex_id", IDS)
def test_key_runs_every_hidden_case(ex_id):
    cases = hidden_cases(ex_id)
    where = f"autograder/tests/{ex_id}_hidden.py"
    literal = [c.id for c in cases if c.expect is not NO_EXPECT]
    assert not literal, f"{where}: hidden cases take their expected values from the key, not literally: {literal}"
    problems = [p for c in cases if (p := _outcome_problem(c, run_call(c, _key(ex_id))))]
    assert not problems, f"{where}, answer key solutions/{BY_ID[ex_id].filename}:\n" + "\n".join(problems)
    direct = Counter(c.func for c in cases if not c.harness)
    thin = {f: direct[f] for f in BY_ID[ex_id].functions if direct[f] < MIN_HIDDEN_PER_FUNCTION}
    assert not thin, f"{where}: fewer than {MIN_HIDDEN_PER_FUNCTION} hidden cases calling {thin} directly"


def _imports(path) -> set[str]:
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            names |= {a.name.split(".")[0] for a in node.names}
        elif isinstance(node, ast.ImportFrom):
            names.add((node.module or "").split(".")[0])
    return names


@pytest.mark.parametrize("ex_id", IDS)
def test_key_imports_only_allowed_modules(ex_id):
    path = ROOT / "solutions" / BY_ID[ex_id].filename
    other = sorted(n for n in _imports(path) - ALLOWED_IMPORTS if n not in sys.stdlib_module_names)
    assert not other, (
        f"{path.relative_to(ROOT)} imports {other}: students have only the standard library, numpy, torch and hetero"
    )


@pytest.mark.parametrize("ex_id", IDS)
def test_every_exercise_has_wrong_fixtures(ex_id):
    names = [f.name for f in for_exercise(ex_id)]
    assert len(names) >= MIN_FIXTURES, (
        f"{ex_id} has {len(names)} wrong fixtures ({names}); declare at least {MIN_FIXTURES} realistic mistakes in "
        "autograder/authoring/wrong_fixtures.py"
    )
