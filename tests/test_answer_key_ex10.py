"""The ex10 answer key against its cases, and every ex10 wrong fixture against the same cases.

- The solution passes every public case (judged exactly as students see it); 4-8 of them, one invalid.
- Hidden cases carry no literal expectations: the answer key must return where a value is expected and
  raise where `raises` is set; each function group has at least 5 hidden cases, and the harness
  `moe.deferral_table` (hetero.harness.moe) is among them.
- Every wrong fixture fails at least one public case and one tensor case against the answer key's
  outputs computed here; its docstring starts with `MISTAKE:` and its code differs from the solution.
  (slow) The harness case alone catches every fixture whose mistake changes a real forward pass.
- The solution file imports only stdlib, numpy, torch and hetero.
"""

from __future__ import annotations

import ast

import pytest

from autograder.authoring.wrong_fixtures import for_exercise
from autograder.core.cases import hidden_cases, public_cases
from autograder.core.manifest import BY_ID, ROOT
from hetero.checks import check_call, judge, run_call
from hetero.impl import load_module_from_path

EX = "ex10"
SOLUTION = ROOT / "solutions" / BY_ID[EX].filename
FIXTURES = [f.name for f in for_exercise(EX)]
ALLOWED_IMPORTS = {"__future__", "typing", "torch"}
HARNESS_ID = "ex10.deferral_table.seed0"
# Tie-breaking only matters when weights are exactly equal, which a trained router never produces,
# so this fixture is caught by the tie cases but not by a real forward pass.
INVISIBLE_IN_FORWARD = {"ex10_ties_lower_index"}


def _tensor_cases():
    return [c for c in public_cases(EX) + hidden_cases(EX) if not c.harness]


@pytest.fixture(scope="module")
def key():
    return load_module_from_path(SOLUTION, "_key_test_ex10")


@pytest.fixture(scope="module")
def key_outcomes(key):
    """The answer key's outcome on every non-harness case (what `autograder expected` stores)."""
    return {c.id: run_call(c, key) for c in _tensor_cases()}


def test_solution_passes_every_public_case(key):
    cases = public_cases(EX)
    assert 4 <= len(cases) <= 8, f"expected 4-8 public cases, found {len(cases)}"
    assert any(c.raises == "ValueError" for c in cases), "no public invalid-input case"
    failures = [v.message for v in (check_call(c, key) for c in cases) if not v.passed]
    assert not failures, "the answer key fails its public cases:\n" + "\n".join(failures)


def test_solution_runs_every_hidden_case(key, key_outcomes):
    per_func: dict[str, int] = {}
    for case in hidden_cases(EX):
        per_func[case.func] = per_func.get(case.func, 0) + 1
        if case.harness:
            continue
        outcome = key_outcomes[case.id]
        if case.raises:
            assert outcome.error_type == case.raises, (
                f"{case.id}: expected the answer key to raise {case.raises}, got "
                f"{outcome.error_type or 'a value'} {outcome.error_message}")
        else:
            assert outcome.error_type is None, f"{case.id}: the answer key raised {outcome.error_type}: {outcome.error_message}"
    expected_funcs = {"lowest_k_mask", "split_topk_weights", "moe_residual_update", "deferral_table"}
    assert set(per_func) == expected_funcs, f"hidden cases cover {sorted(per_func)}, expected {sorted(expected_funcs)}"
    thin = {f: n for f, n in per_func.items() if n < 5 and f != "deferral_table"}
    assert not thin, f"fewer than 5 hidden cases for {thin}"


def test_solution_imports_only_allowed_modules():
    tree = ast.parse(SOLUTION.read_text(encoding="utf-8"))
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names |= {a.name.split(".")[0] for a in node.names}
        elif isinstance(node, ast.ImportFrom):
            names.add((node.module or "").split(".")[0])
    assert names <= ALLOWED_IMPORTS, f"the solution imports {sorted(names - ALLOWED_IMPORTS)}; only stdlib, numpy, torch, hetero"


def test_there_are_enough_fixtures():
    assert len(FIXTURES) >= 4, f"expected at least 4 ex10 wrong fixtures, found {FIXTURES}"


@pytest.mark.parametrize("name", FIXTURES)
def test_wrong_fixture_fails_some_case(name, key_outcomes, wrong_dir):
    folder = wrong_dir / name
    path = folder / BY_ID[EX].filename
    assert sorted(p.name for p in folder.iterdir() if p.suffix == ".py") == [path.name], (
        f"{folder}: a fixture folder holds only {path.name}")
    text = path.read_text(encoding="utf-8")
    doc = ast.get_docstring(ast.parse(text)) or ""
    assert doc.startswith("MISTAKE: "), f"{path}: the module docstring must start with 'MISTAKE: <sentence>'"
    assert "# BEGIN SOLUTION" not in text, f"{path}: fixtures carry no solution markers"
    key_code = [ast.dump(n) for n in ast.parse(SOLUTION.read_text(encoding="utf-8")).body[1:]]
    assert [ast.dump(n) for n in ast.parse(text).body[1:]] != key_code, f"{path}: differs from the solution only in text"
    wrong = load_module_from_path(path, f"_wrong_{name}")
    public_failed = [c.id for c in public_cases(EX) if not check_call(c, wrong).passed]
    assert public_failed, f"{name}: passes every public case; a student would get no signal from them"
    hidden_failed = []
    for case in hidden_cases(EX):
        if case.harness:
            continue
        expect = None if case.raises else key_outcomes[case.id].value
        if not judge(case, run_call(case, wrong), expect).passed:
            hidden_failed.append(case.id)
    assert hidden_failed, f"{name}: passes every hidden tensor case, so they cannot detect this mistake"


@pytest.mark.slow
def test_harness_case_catches_forward_mistakes(key, wrong_dir):
    """The tiny-model loss table (about 1 s per run) differs from the key's for every forward mistake."""
    case = next(c for c in hidden_cases(EX) if c.id == HARNESS_ID)
    expect = run_call(case, key)
    assert expect.error_type is None, f"the answer key raised {expect.error_type}: {expect.error_message}"
    assert judge(case, run_call(case, key), expect.value).passed, "the harness is not reproducible in one process"
    missed = []
    for name in FIXTURES:
        if name in INVISIBLE_IN_FORWARD:
            continue
        wrong = load_module_from_path(wrong_dir / name / BY_ID[EX].filename, f"_wrong_h_{name}")
        if judge(case, run_call(case, wrong), expect.value).passed:
            missed.append(name)
    assert not missed, f"{HARNESS_ID} passes these wrong fixtures: {missed} (expected every forward mistake to show)"
