"""ex03's own checks (local vs global KV cache; the ones every exercise gets are in
tests/test_answer_keys.py and tests/test_wrong_fixtures.py):

- Every wrong fixture fails at least one case, where hidden expectations are the solution's outputs
  (as `python -m autograder expected` stores them), and the feedback then names the fixture's mistake.
- A student whose ttft_dispatch treats pool fetches as free fails a public case whose printed block
  names that mistake (issue 22: it used to pass every public case and every hidden unit case).
- The simulator-backed hidden cases (the global pool dispatched by the submitted ttft_dispatch) catch
  every dispatch mistake on their own: the harness is a real test, not decoration.
"""

from __future__ import annotations

import ast
import functools
from pathlib import Path

import pytest

from autograder.authoring.wrong_fixtures import for_exercise
from autograder.core.cases import hidden_cases, public_cases
from autograder.core.manifest import BY_ID, ROOT
from hetero.checks import check_call, judge, run_call
from hetero.impl import load_exercise
from hetero.publictest import run_public_case

FIXTURES = [f.name for f in for_exercise("ex03")]
DISPATCH_FIXTURES = (
    "ex03_ignores_queue",
    "ex03_ties_highest",
    "ex03_transfer_multiplied",
    "ex03_ignores_pool",
    "ex03_transfer_free",
)


def _key():
    return load_exercise("ex03", ROOT / "solutions")


@functools.cache
def _key_value(case_id: str):
    """The solution's encoded output on a hidden case (computed once per test session)."""
    case = next(c for c in hidden_cases("ex03") if c.id == case_id)
    return None if case.raises else run_call(case, _key()).value


def _mistake(path: Path) -> str:
    doc = ast.get_docstring(ast.parse((path / BY_ID["ex03"].filename).read_text(encoding="utf-8"))) or ""
    return doc.splitlines()[0] if doc else ""


def test_the_simulator_drives_hidden_cases():
    harness = [c.id for c in hidden_cases("ex03") if c.harness]
    assert len(harness) >= 2, f"expected simulator (harness) hidden cases of ex03, found {harness}"


@pytest.mark.parametrize("name", FIXTURES)
def test_wrong_fixture_fails_some_case_and_feedback_names_it(name, wrong_dir):
    path = wrong_dir / name
    mistake = _mistake(path)
    assert mistake.startswith("MISTAKE: "), f"{path}: the module docstring must start with 'MISTAKE: <sentence>'"
    wrong = load_exercise("ex03", path)
    caught = [c.id for c in public_cases("ex03") if not check_call(c, wrong).passed]
    # Cheap cases first; the simulator cases only when nothing else catches the mistake.
    for case in sorted(hidden_cases("ex03"), key=lambda c: c.harness is not None):
        if caught:
            break
        got = run_call(case, wrong)
        verdict = judge(
            case, got, _key_value(case.id), mistakes={name: (mistake, got.value)} if got.value is not None else None
        )
        if not verdict.passed:
            caught.append(case.id)
            if got.value is not None:
                assert mistake in verdict.message, f"feedback does not name the mistake: {verdict.message}"
    assert caught, f"{name} passes every public and hidden ex03 case; no case detects the mistake"


@pytest.mark.parametrize("name", DISPATCH_FIXTURES)
def test_simulator_cases_catch_dispatch_mistakes(name, wrong_dir):
    wrong = load_exercise("ex03", wrong_dir / name)
    harness = [c for c in hidden_cases("ex03") if c.harness == "kvcache.dispatch"]
    caught = [c.id for c in harness if not judge(c, run_call(c, wrong), _key_value(c.id)).passed]
    assert caught, (
        f"{name}: the simulator run with this dispatch reproduces the reference figures "
        "(hit rate, transfers, imbalance, TTFT) on every hidden workload; expected a difference"
    )


def test_free_transfers_fail_a_public_case_whose_hint_names_the_mistake(wrong_dir):
    folder = wrong_dir / "ex03_transfer_free"
    reports = [run_public_case(c, folder, 10.0) for c in public_cases("ex03")]
    failed = [r.text for r in reports if not r.passed]
    assert failed, "a ttft_dispatch without the transfer term passes every public ex03 case (the summary says ok)"
    assert any("likely mistake:" in text and "pool fetches are not free" in text for text in failed), failed
