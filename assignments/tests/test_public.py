"""Public tests: the lecture's own answers and small hand-checkable cases, one test per case.

Run them with `pytest assignments` (or `pytest assignments -m ex02` for one exercise). The cases are in
`public_exNN.py` beside this file; each says what is expected, in which unit, and the likely mistake
when it fails. The exercise files are loaded from the folder above `tests/`.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

from hetero.checks import invoke, judge, run_call
from hetero.impl import EXERCISES, load_exercise

HERE = Path(__file__).resolve().parent
IMPL_DIR = HERE.parent


def _public_cases() -> list:
    params = []
    for ex_id in EXERCISES:
        path = HERE / f"public_{ex_id}.py"
        if not path.is_file():
            continue
        spec = importlib.util.spec_from_file_location(f"_public_{ex_id}", path)
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        for case in module.CASES:
            params.append(pytest.param(case, id=case.id, marks=getattr(pytest.mark, ex_id)))
    return params


@pytest.mark.parametrize("case", _public_cases())
def test_public(case):
    module = load_exercise(case.ex_id, IMPL_DIR)
    outcome = run_call(case, module)
    if outcome.error_type == "NotImplementedError":
        raise NotImplementedError(outcome.error_message)
    if outcome.error_type and case.raises is None:
        invoke(case, module)  # call again without catching, so pytest shows your code's traceback
    verdict = judge(case, outcome)
    assert verdict.passed, verdict.message
