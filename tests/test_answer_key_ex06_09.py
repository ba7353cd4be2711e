"""The answer key for ex06-ex09 passes its public cases, and every wrong fixture is caught.

A wrong fixture (autograder/authoring/wrong_fixtures.py, materialised by the `wrong_dir` fixture) is the
solution file with one realistic mistake. It must fail at least one public or hidden case; hidden expected values are
computed here, in-process, from the solution module, and judged with `hetero.checks.judge` exactly as
the grader does with the stored values.
"""

from __future__ import annotations

import ast
from collections import Counter
from pathlib import Path

import pytest

from autograder.authoring.wrong_fixtures import FIXTURES as DECLARED
from autograder.core.cases import hidden_cases, public_cases
from hetero.checks import NO_EXPECT, check_call, judge, run_call
from hetero.impl import EXERCISES, load_exercise

ROOT = Path(__file__).resolve().parents[1]
OWN = ("ex06", "ex07", "ex08", "ex09")
FIXTURES = [f.name for f in DECLARED if f.exercise in OWN]


@pytest.mark.parametrize("ex_id", OWN)
def test_solution_passes_public_cases(ex_id):
    module = load_exercise(ex_id, "solutions")
    failures = [v.message for c in public_cases(ex_id) if not (v := check_call(c, module)).passed]
    assert not failures, f"the answer key fails its own public cases: {failures}"


@pytest.mark.parametrize("ex_id", OWN)
def test_public_cases_are_complete(ex_id):
    cases = public_cases(ex_id)
    # 4-8, and ex08 one more: deferral_speedup's ratio needs a case where a product differs (issue 22)
    most = 9 if ex_id == "ex08" else 8
    assert 4 <= len(cases) <= most, f"{ex_id}: expected 4-{most} public cases, found {len(cases)}"
    assert any(c.raises == "ValueError" for c in cases), f"{ex_id}: no invalid-input public case"
    for c in cases:
        assert c.hint, f"{c.id}: every public case needs a hint naming the likely mistake"
        if not c.raises:
            assert c.unit and c.tol_note, f"{c.id}: a value case needs a unit and a tol_note"
            assert c.expect is not NO_EXPECT, f"{c.id}: public cases carry literal expected values"


@pytest.mark.parametrize("ex_id", OWN)
def test_hidden_cases_cover_every_function(ex_id):
    cases = hidden_cases(ex_id)
    assert all(c.expect is NO_EXPECT for c in cases), f"{ex_id}: hidden cases must not carry expected values"
    module = load_exercise(ex_id, "solutions")
    tree = ast.parse(Path(module.__file__).read_text())
    functions = [n.name for n in tree.body if isinstance(n, ast.FunctionDef)]
    counts = Counter(c.func for c in cases)
    thin = {f: counts[f] for f in functions if counts[f] < 5}
    assert not thin, f"{ex_id}: fewer than 5 hidden cases for {thin}"
    for c in cases:
        outcome = run_call(c, module)
        if c.raises:
            assert outcome.error_type == c.raises, f"{c.id}: expected {c.raises}, the answer key gave {outcome}"
        else:
            assert outcome.error_type is None, f"{c.id}: the answer key raised {outcome.error_type}"


def test_every_exercise_has_two_fixtures():
    counts = Counter(name.split("_", 1)[0] for name in FIXTURES)
    assert all(counts[ex] >= 2 for ex in OWN), f"fewer than 2 wrong fixtures for some of {OWN}: {dict(counts)}"


@pytest.mark.parametrize("name", FIXTURES)
def test_wrong_fixture_fails_a_case(name, wrong_dir):
    fixture = wrong_dir / name
    ex_id = name.split("_", 1)[0]
    files = sorted(fixture.glob("*.py"))
    assert [f.name for f in files] == [f"{EXERCISES[ex_id]}.py"], f"{fixture}: must hold only that exercise's file"
    doc = ast.get_docstring(ast.parse(files[0].read_text()))
    assert doc and doc.startswith("MISTAKE: "), f"{files[0]}: the docstring must start with 'MISTAKE: '"
    assert "BEGIN SOLUTION" not in files[0].read_text(), f"{files[0]}: fixtures carry no solution markers"

    solution = load_exercise(ex_id, "solutions")
    wrong = load_exercise(ex_id, fixture)
    caught = [c.id for c in public_cases(ex_id) if not check_call(c, wrong).passed]
    for c in hidden_cases(ex_id):
        expect = run_call(c, solution)
        if not judge(c, run_call(c, wrong), expect.value if not c.raises else None).passed:
            caught.append(c.id)
    assert caught, f"{name} ({doc.splitlines()[0]}) passes every public and hidden case: the cases cannot see it"
