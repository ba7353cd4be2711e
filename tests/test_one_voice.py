"""One voice in feedback (issue 22 item 4): for a public case, the public tests a student runs (`pytest
assignments`, `hetero.publictest` with the shipped `tests/public_mistakes.json`) and the grader
(`autograder.runtime.feedback.judge_case` with the stored `autograder/expected/exNN.json`) give the same
diagnosis (`hetero.checks.diagnosis`): a known mistake is named only when the returned value matches
that mistake's output on that very case, and any other wrong value gets the case's hint.

Every wrong fixture (`autograder.authoring.wrong_fixtures`) is run on every public case of its exercise
(in this process, as the grader's child runs a case: `hetero.checks.run_call`); each case it fails is
worded by both sides and compared. Then the same fixture's value, changed into some other wrong value
(a fixture-like submission with another slip), must name no mistake on either side.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from autograder.authoring.wrong_fixtures import BY_NAME, FIXTURES, materialise
from autograder.core.cases import public_cases
from autograder.core.manifest import BY_ID, EXERCISES, ROOT
from autograder.packaging.bundle import _mistake_table_problems
from autograder.runtime.feedback import judge_case
from hetero.checks import Array, Case, Outcome, compare, decode, diagnosis, encode, run_call
from hetero.impl import load_module_from_path
from hetero.publictest import MISTAKES_FILE, load_mistakes, report_outcome, run_public_case

SHIPPED = ROOT / "assignments" / "tests"
KNOWN = "Your result matches a known mistake"


def _stored(ex_id: str) -> dict[str, Any]:
    return json.loads((ROOT / "autograder" / "expected" / f"{ex_id}.json").read_text(encoding="utf-8"))["cases"]


def _matching(case: Case, value: Any, mistakes: dict[str, Any]) -> list[str]:
    """The oracle: the stored mistakes whose output equals `value` within the case's tolerance."""
    got = decode(value)
    return [desc for desc, out in mistakes.values() if compare(decode(out), got, case.rel_tol, case.abs_tol) is None]


def _other(value: Any) -> Any:
    """A different wrong value of the same shape and type (None where none exists: a bool)."""
    if isinstance(value, bool) or value is None:
        return None
    if isinstance(value, int):
        return value + 7919
    if isinstance(value, float):
        return value * 1.37 + 0.731 if math.isfinite(value) else None
    if isinstance(value, str):
        return value + " (other)"
    if isinstance(value, (list, tuple)):
        items = [_other(v) for v in value]
        if all(v is None for v in items):
            return None
        changed = [o if o is not None else v for o, v in zip(items, value, strict=True)]
        return changed if isinstance(value, list) else tuple(changed)
    if isinstance(value, dict):
        changed = {k: _other(v) for k, v in value.items()}
        if all(v is None for v in changed.values()):
            return None
        return {k: changed[k] if changed[k] is not None else v for k, v in value.items()}
    if isinstance(value, Array) and value.value.dtype.kind in "fiu":
        arr = (value.value * 1.37 + 0.731 if value.value.dtype.kind == "f" else value.value + 7).astype(
            value.value.dtype
        )
        if value.tag != "tensor":
            return arr
        import torch

        return torch.from_numpy(np.ascontiguousarray(arr)).to(getattr(torch, str(value.torch_dtype).split(".")[-1]))
    return None


@pytest.fixture(scope="module")
def fixture_runs(tmp_path_factory) -> list[tuple[str, Case, Path, Outcome]]:
    """(fixture name, public case, fixture folder, outcome) for every public case a fixture fails."""
    base = tmp_path_factory.mktemp("one_voice")
    runs = []
    for fixture in FIXTURES:
        path = materialise(fixture.name, base / fixture.name)
        module = load_module_from_path(path, f"_one_voice_{fixture.name}")
        stored = _stored(fixture.exercise)
        for case in public_cases(fixture.exercise):
            outcome = run_call(case, module)
            if not judge_case(case, outcome, None, stored[case.id]["mistakes"]).passed:
                runs.append((fixture.name, case, path.parent, outcome))
    return runs


def test_the_shipped_mistakes_are_the_stored_ones_of_public_cases_only():
    shipped = load_mistakes(SHIPPED)
    assert shipped, f"{SHIPPED / MISTAKES_FILE} is missing or empty: run `python -m autograder release`"
    want = {}
    for ex in EXERCISES:
        stored = _stored(ex.id)
        want.update({c.id: stored[c.id]["mistakes"] for c in public_cases(ex.id) if stored[c.id]["mistakes"]})
    assert {cid: {k: list(v) for k, v in t.items()} for cid, t in shipped.items()} == want


def test_the_student_copy_refuses_a_hidden_case_in_the_mistake_table():
    hidden_id = json.loads((ROOT / "autograder" / "expected" / "ex09.json").read_text())["hidden"][0]["id"]
    table = {"ex09.prefill_expert_time_s.avx512_1k": {"x": ["d", 1.0]}, hidden_id: {"x": ["d", 2.0]}}
    members = {"assignments/tests/public_mistakes.json": json.dumps(table).encode()}
    assert _mistake_table_problems(members, ROOT) == [
        f"assignments/tests/public_mistakes.json: {hidden_id} is not a public case"
    ]


def test_every_fixture_gets_the_same_diagnosis_from_the_public_tests_and_the_grader(fixture_runs):
    shipped = load_mistakes(SHIPPED)
    named_own = 0
    assert len({name for name, *_ in fixture_runs}) == len(FIXTURES), "a fixture fails no public case"
    for name, case, folder, outcome in fixture_runs:
        stored = _stored(case.ex_id)[case.id]["mistakes"]
        grader = judge_case(case, outcome, None, stored)
        public = run_public_case(case, folder, BY_ID[case.ex_id].case_timeout_s, shipped.get(case.id))
        where = f"{name} on {case.id}"
        assert not public.passed, f"{where}: the grader fails it, the public test passes it"
        assert public.advice == grader.advice, f"{where}:\n public: {public.advice!r}\n grader: {grader.advice!r}"
        if grader.advice:
            shown = grader.advice.removeprefix("Likely mistake: ")  # the block's label says it: "likely mistake:"
            assert grader.message.endswith(grader.advice) and public.text.endswith(shown), (where, public.text)
        value = outcome.value if outcome.error_type is None else None
        matches = _matching(case, value, stored) if value is not None else []
        assert (KNOWN in grader.advice) == bool(matches), f"{where}: named {grader.advice!r}, matches {matches}"
        if value is not None:  # its own output on this case is stored: its own mistake is named
            assert BY_NAME[name].mistake in grader.advice, f"{where}: {grader.advice!r}"
            named_own += 1
    assert named_own >= len(FIXTURES) // 2, f"only {named_own} failed cases returned a value"


def test_another_wrong_value_names_no_mistake_on_either_side(fixture_runs):
    shipped = load_mistakes(SHIPPED)
    tried = 0
    for name, case, _, outcome in fixture_runs:
        if outcome.error_type is not None or outcome.value is None:
            continue
        other = _other(decode(outcome.value))
        if other is None:
            continue
        wrong = Outcome(encode(other))
        stored = _stored(case.ex_id)[case.id]
        if _matching(case, wrong.value, stored["mistakes"]):
            continue  # by chance another mistake's output: not "some other value"
        grader = judge_case(case, wrong, None, stored["mistakes"])
        public = report_outcome(case, wrong, shipped.get(case.id))
        where = f"{name} on {case.id}, returning {str(other)[:60]}"
        assert not grader.passed and not public.passed, where
        assert KNOWN not in grader.advice and KNOWN not in public.text, f"{where}: {grader.advice!r}"
        assert public.advice == grader.advice == diagnosis(wrong, case, None), where
        tried += 1
    assert tried >= 40, f"only {tried} fixture values could be changed into another wrong value"


def test_the_issue_case_code_that_never_removes_a_decoder():
    """ex05.predicted_decode_load.boundaries: counting the decoder whose end equals enter_decode_s returns 2,
    exactly what the `>=` mistake returns there; both sides name it. 5 matches nothing: both give the hint."""
    case = next(c for c in public_cases("ex05") if c.id == "ex05.predicted_decode_load.boundaries")
    stored = _stored("ex05")[case.id]["mistakes"]
    shipped = load_mistakes(SHIPPED).get(case.id)
    for value, named in ((2, True), (5, False)):
        outcome = Outcome(encode(value))
        grader, public = judge_case(case, outcome, None, stored), report_outcome(case, outcome, shipped)
        assert grader.advice == public.advice and (KNOWN in public.text) == named, (value, public.text)
        assert named or public.advice == f"Likely mistake: {case.hint}"
