"""Two feedback sentences that must say only what happened (issue 33 item 5).

- The processes sentence: "Processes started by your code were still running ... killed" only when the
  student's process had ended by itself and processes of its uid were still alive. A plain infinite loop
  starts none: the grader stops it, and the process it stops is the student's own (the sandbox counts it
  in `survivors_killed`), so the stop is explained and no process is blamed.
- A hidden entry states a function's tolerance once (the first failed line), not on every failed line;
  a line whose tolerance differs states its own.

The unit tests word every state of a `ChildReport`; the real gradings run the infinite-loop attack and a
wrong fixture through the grader.
"""

from __future__ import annotations

import re
import shutil

import pytest

from autograder.authoring.wrong_fixtures import materialise
from autograder.core.cases import hidden_cases
from autograder.core.manifest import ROOT
from autograder.runtime import grader
from autograder.runtime.feedback import hidden_message, process_note, tolerance_text
from autograder.runtime.sandbox.limits import ChildReport
from hetero.checks import Outcome, encode

STARTED = "Processes started by your code"
ADVERSARIAL = ROOT / "autograder" / "fixtures" / "adversarial"


@pytest.mark.parametrize(
    ("report", "want"),
    [
        (ChildReport(returncode=0, survivors_killed=2), STARTED),  # ended by itself, two left: it started them
        (ChildReport(returncode=0), ""),  # ended by itself, nothing left
        (ChildReport(ended="timeout", detail="x", survivors_killed=2), ""),  # the stopped process is its own
        (ChildReport(returncode=None, survivors_killed=1, stopped_cases=("ex02.f.a",)), ""),  # a per-case stop
        (ChildReport(returncode=None, survivors_killed=1), "still running after its last case"),  # never exited
        (ChildReport(ended="signal", detail="x", returncode=-9, survivors_killed=3), ""),
    ],
)
def test_process_sentence_only_when_processes_were_started(report, want):
    note = process_note(report)
    if want:
        assert want in note, f"{report}: expected a sentence containing {want!r}, got {note!r}"
    else:
        assert note == "", f"{report}: the grader stopped the student's own process; no process sentence, got {note!r}"
    if STARTED in want:
        assert "killed" in note


def test_tolerance_once_per_function_and_differing_ones_stated():
    cases = [c for c in hidden_cases("ex02") if c.func == "hbm_for_kv_bytes" and not c.raises]
    notes = {c.tol_note for c in cases}
    assert len(notes) >= 2, "this test needs a function whose hidden cases have differing tolerances"
    shown: set[tuple[str, str]] = set()
    wrong = Outcome(encode(-1.0))
    lines = [hidden_message(c, False, "", wrong, "", encode(1.0), (), "", shown) for c in cases]
    stated = [line for line in lines if "tolerance:" in line]
    assert len(stated) == len(notes), (
        f"each distinct tolerance of hbm_for_kv_bytes is stated once ({len(notes)}), got {len(stated)} lines: {stated}"
    )
    assert "the same below unless a line says otherwise" in lines[0], lines[0]
    assert all(c.tol_note in line for c, line in zip(cases, lines, strict=True) if "tolerance:" in line)
    assert tolerance_text(cases[0], None) == f" (tolerance: {cases[0].tol_note})", "None: every line states it"


def test_wrong_fixture_hidden_entry_states_its_tolerance_once(tmp_path):
    sub = tmp_path / "sub"
    materialise("ex04_bits_as_bytes", sub)
    data = grader.grade_submission(sub, tmp_path / "results.json", exercises=["ex04"])
    entry = next(t for t in data["tests"] if t["name"] == "ex04 line_rate_gb_per_s (hidden cases)")
    failed = [line for line in entry["output"].splitlines() if "wrong value" in line]
    assert len(failed) >= 5, f"the fixture fails most line_rate cases: {entry['output'][:800]}"
    assert sum("tolerance:" in line for line in failed) == 1, (
        f"the tolerance is stated once per function, not on each of the {len(failed)} failed lines:\n{entry['output']}"
    )
    assert "tolerance:" in failed[0] and all("known mistake" in line for line in failed)


@pytest.mark.slow
def test_infinite_loop_is_not_told_it_started_processes(tmp_path):
    sub = tmp_path / "loop"
    shutil.copytree(ADVERSARIAL / "infinite_loop", sub)
    data = grader.grade_submission(sub, tmp_path / "results.json", exercises=["ex02"], time_scale=0.25)
    summary = data["output"]
    assert re.search(r"time limit|CPU-time limit", summary), f"the stop is explained: {summary}"
    assert STARTED not in summary, f"a plain infinite loop starts no process: {summary}"
