"""The answer key of ex01, ex02, ex04 against its cases, and every wrong fixture against the same cases.

- The solutions pass every public case (the literal lecture values), judged exactly as students see it.
- Hidden cases carry no literal expectations, so the answer key must at least run on them: return a
  value where a value is expected, raise where `raises` is set.
- Every wrong fixture fails at least one public or hidden case, where the hidden expectation is what
  the solution returns on that case in this process (as `python -m autograder expected` stores it).
- Each fixture's docstring starts with `MISTAKE:` and differs from the solution in code, not only text.
"""

from __future__ import annotations

import ast

import pytest

from autograder.authoring.wrong_fixtures import FIXTURES
from autograder.core.cases import hidden_cases, public_cases
from autograder.core.manifest import BY_ID, ROOT
from hetero.checks import check_call, judge, run_call
from hetero.impl import load_module_from_path

EXERCISES = ("ex01", "ex02", "ex04")


def _solution(ex_id: str):
    return load_module_from_path(ROOT / "solutions" / BY_ID[ex_id].filename, f"_key_test_{ex_id}")


def _fixtures() -> list[tuple[str, str]]:
    """(exercise, fixture name) of every wrong fixture of these exercises."""
    return [(f.exercise, f.name) for f in FIXTURES if f.exercise in EXERCISES]


@pytest.mark.parametrize("ex_id", EXERCISES)
def test_solution_passes_every_public_case(ex_id):
    module = _solution(ex_id)
    cases = public_cases(ex_id)
    assert 4 <= len(cases) <= 8, f"{ex_id}: expected 4-8 public cases, found {len(cases)}"
    assert any(c.raises == "ValueError" for c in cases), f"{ex_id}: no public invalid-input case"
    failures = [v.message for v in (check_call(c, module) for c in cases) if not v.passed]
    assert not failures, f"{ex_id}: the answer key fails its public cases:\n" + "\n".join(failures)


@pytest.mark.parametrize("ex_id", EXERCISES)
def test_solution_runs_every_hidden_case(ex_id):
    module = _solution(ex_id)
    cases = hidden_cases(ex_id)
    per_func: dict[str, int] = {}
    for case in cases:
        per_func[case.func] = per_func.get(case.func, 0) + 1
        outcome = run_call(case, module)
        if case.raises:
            assert outcome.error_type == case.raises, (
                f"{case.id}: expected the answer key to raise {case.raises}, got "
                f"{outcome.error_type or 'a value'} {outcome.error_message}")
        else:
            assert outcome.error_type is None, (
                f"{case.id}: the answer key raised {outcome.error_type}: {outcome.error_message}")
    thin = {f: n for f, n in per_func.items() if n < 5}
    assert not thin, f"{ex_id}: fewer than 5 hidden cases for {thin}"


@pytest.mark.parametrize("ex_id,name", _fixtures(), ids=[name for _, name in _fixtures()])
def test_wrong_fixture_fails_some_case(ex_id, name, wrong_dir):
    path = wrong_dir / name / BY_ID[ex_id].filename
    doc = ast.get_docstring(ast.parse(path.read_text(encoding="utf-8"))) or ""
    assert doc.startswith("MISTAKE: "), f"{path}: the module docstring must start with 'MISTAKE: <sentence>'"
    key = _solution(ex_id)
    wrong = load_module_from_path(path, f"_wrong_{name}")
    caught = [c.id for c in public_cases(ex_id) if not check_call(c, wrong).passed]
    for case in hidden_cases(ex_id):
        expect = None if case.raises else run_call(case, key).value
        if not judge(case, run_call(case, wrong), expect).passed:
            caught.append(case.id)
    assert caught, f"{name}: passes every public and hidden case of {ex_id}; no case detects the mistake"


def test_every_exercise_has_at_least_two_wrong_fixtures():
    counts = {ex_id: sum(1 for e, _ in _fixtures() if e == ex_id) for ex_id in EXERCISES}
    assert all(n >= 2 for n in counts.values()), f"wrong fixtures per exercise: {counts} (need >= 2 each)"
