"""ex10's own checks (the ones every exercise gets are in tests/test_answer_keys.py and
tests/test_wrong_fixtures.py): the forward-pass harness `moe.deferral_table` (hetero.harness.moe) is a
hidden case, and (slow) it alone catches every wrong fixture whose mistake changes a real forward pass.
"""

from __future__ import annotations

import pytest

from autograder.authoring.wrong_fixtures import for_exercise
from autograder.core.cases import hidden_cases
from autograder.core.manifest import BY_ID, ROOT
from hetero.checks import judge, run_call
from hetero.impl import load_module_from_path

EX = "ex10"
SOLUTION = ROOT / "solutions" / BY_ID[EX].filename
FIXTURES = [f.name for f in for_exercise(EX)]
HARNESS_ID = "ex10.deferral_table.seed0"
# Tie-breaking only matters when weights are exactly equal, which a trained router never produces,
# so this fixture is caught by the tie cases but not by a real forward pass.
# Mistakes a forward pass of the trained tiny model cannot show, each caught by its own cases instead: exact ties
# among routing weights do not occur in it (two tie rules), and its table defers 1-3 experts, never k = 0.
INVISIBLE_IN_FORWARD = {"ex10_ties_lower_index", "ex10_topk_largest_false", "ex10_defer_k0_no_carry"}


@pytest.fixture(scope="module")
def key():
    return load_module_from_path(SOLUTION, "_key_test_ex10")


def test_the_forward_pass_harness_is_a_hidden_case():
    harness = [c.id for c in hidden_cases(EX) if c.harness == "moe.deferral_table"]
    assert HARNESS_ID in harness, f"{HARNESS_ID} (moe.deferral_table) is not among ex10's hidden cases: {harness}"


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
