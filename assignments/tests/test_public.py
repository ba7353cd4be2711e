"""Public tests: the lecture's own answers and small hand-checkable cases, one test per case.

Run them from the folder that holds `assignments/`: `pytest assignments` (or `pytest assignments -m ex02`
for one exercise). The cases are in `public_exNN.py` beside this file; a failing case prints one block:
the call, the expected value with its unit, what your code returned, and the likely mistake (or, when
your value is exactly what a known mistake returns on that case, that mistake: `public_mistakes.json`,
the same words Gradescope gives the case). The exercise files are loaded from the folder above `tests/`;
each case has the time limit of its exercise (`exercises.json`, the same limit Gradescope grading uses).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from hetero.impl import EXERCISES, load_module_from_path
from hetero.publictest import load_listing, load_mistakes, run_public_case

HERE = Path(__file__).resolve().parent
IMPL_DIR = HERE.parent
LISTING = load_listing(HERE)
MISTAKES = load_mistakes(HERE)


def _public_cases() -> list:
    params = []
    for ex_id in EXERCISES:
        path = HERE / f"public_{ex_id}.py"
        if not path.is_file():
            continue  # reported by test_public_cases_are_present
        for case in load_module_from_path(path, f"_public_{ex_id}").CASES:
            params.append(pytest.param(case, id=case.id, marks=getattr(pytest.mark, ex_id)))
    return params


@pytest.mark.parametrize("case", _public_cases())
def test_public(case):
    report = run_public_case(case, IMPL_DIR, LISTING[case.ex_id].case_timeout_s, MISTAKES.get(case.id))
    if not report.passed:
        pytest.fail(report.text, pytrace=False)


@pytest.mark.parametrize("ex_id", [pytest.param(e, marks=getattr(pytest.mark, e)) for e in EXERCISES])
def test_public_cases_are_present(ex_id):
    path = HERE / f"public_{ex_id}.py"
    if not path.is_file():
        pytest.fail(f"{path} is missing: its public cases cannot run. Copy it back from the assignment's "
                    "download (never edit or delete files under tests/).", pytrace=False)
