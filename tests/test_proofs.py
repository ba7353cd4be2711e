"""The slow proofs' bookkeeping (tests/proofs.py): every proof declared and used, every committed record
consistent with itself, and a changed input makes its proof due again."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from autograder.core.manifest import EXERCISES, ROOT
from hetero.impl import load_module_from_path

proofs = load_module_from_path(Path(__file__).with_name("proofs.py"), "_a2_proofs")
TESTS = Path(__file__).parent
USED = {
    name
    for path in TESTS.glob("test_*.py")
    for name in re.findall(r'@pytest\.mark\.proof\("(\w+)"\)', path.read_text(encoding="utf-8"))
}


def test_every_proof_is_declared_and_used():
    assert USED <= set(proofs.PROOFS), f"undeclared proofs in the tests: {sorted(USED - set(proofs.PROOFS))}"
    assert set(proofs.PROOFS) <= USED, f"declared proofs no test carries: {sorted(set(proofs.PROOFS) - USED)}"
    for proof in proofs.PROOFS.values():
        files = proofs.input_files(proof)
        assert files, f"{proof.name}: its input patterns match no file"
        assert "tests/proofs.py" in files, f"{proof.name}: the proof machinery itself must be an input"


@pytest.mark.parametrize("name", sorted(proofs.PROOFS))
def test_a_committed_record_is_whole_and_consistent(name):
    record = proofs.read_record(name)
    if record is None:
        pytest.skip(f"no record yet for {name}: this run proves it (see the 'slow proofs' summary)")
    assert record["proof"] == name
    assert record["inputs_sha256"] == proofs.digest(record["input_files"], record["environment"]), (
        f"{proofs.record_path(name)}: its digest is not that of the inputs it lists (edited by hand?); "
        "re-prove it with `make proofs` instead"
    )
    assert record["tests"] and all(t["outcome"] == "passed" for t in record["tests"].values()), record["tests"]
    assert {"python", "platform"} <= set(record["ran_on"]) and record["proven_at"]


def test_a_changed_input_makes_its_proof_due(monkeypatch, tmp_path):
    monkeypatch.setattr(proofs, "RECORDS", tmp_path)
    proof = proofs.PROOFS["gradescope_layout"]
    first = proofs.status(proof, rerun=False)
    assert not first.holds and "no record" in first.reason
    proofs.write_record(first, {"tests/test_build.py::t": {"outcome": "passed", "duration_s": 1.0}}, ["measured"])
    again = proofs.status(proof, rerun=False)
    assert again.holds, again.reason
    assert proofs.status(proof, rerun=True).reason == f"{proofs.RERUN_ENV}=rerun"
    real = proofs.file_sha256
    # one file of each kind the Gradescope run executes or reads: imported, run by path, data, entry point
    for changed in (
        "autograder/runtime/feedback.py",
        "autograder/runtime/sandbox/child.py",
        "autograder/core/scoring.py",
        "shared/hetero/checks.py",
        "autograder/expected/ex01.json",
        "autograder/gradescope/setup.sh",
    ):
        monkeypatch.setattr(proofs, "file_sha256", lambda p, c=changed: "0" * 64 if p == ROOT / c else real(p))
        st = proofs.status(proof, rerun=False)
        assert not st.holds and changed in st.reason, f"changing {changed} must make gradescope_layout due: {st.reason}"
    record = json.loads((tmp_path / "gradescope_layout.json").read_text())
    assert record["output"] == ["measured"] and record["tests_s"] == 1.0


def test_every_file_the_gradescope_run_executes_is_an_input_of_its_proof():
    """The zip's members (the grader, its runtime whole, hetero, the cases and expected values, setup.sh),
    every file a grading runs or reads, and the submissions the proof grades: a change to any of them makes
    `gradescope_layout` due (the test above shows the mechanism)."""
    from autograder.packaging import build

    inputs = set(proofs.input_files(proofs.PROOFS["gradescope_layout"]))
    executed = {p.relative_to(ROOT).as_posix() for p in [*build.shipped_files().values(), *build.grader_files()]}
    executed |= {
        p.relative_to(ROOT).as_posix()
        for p in (ROOT / "autograder" / "runtime").rglob("*.py")
        if "__pycache__" not in p.parts
    }
    executed |= {f"{folder}/{ex.filename}" for ex in EXERCISES for folder in ("solutions", "assignments")}
    missing = sorted(executed - inputs)
    assert not missing, (
        f"files the Gradescope run executes or reads that gradescope_layout does not take as inputs: {missing}"
    )


@pytest.mark.parametrize("name", ["gradescope_layout", "real_exports", "report_browser"])
def test_a_proof_that_grades_has_the_graders_fingerprint_in_its_key(name):
    from autograder.packaging import build

    env = proofs.environment(proofs.PROOFS[name])
    assert env.get("grader") == build.fingerprint(build.grader_files()), (
        f"{name}: its key lacks the grader's fingerprint"
    )


def test_every_lock_and_the_setup_script_are_inputs_of_a_proof():
    """A change to setup.sh, run_autograder, a lock or the pins can never land unproven."""
    covered = set().union(*(proofs.input_files(p) for p in proofs.PROOFS.values()))
    for rel in (
        "autograder/gradescope/setup.sh",
        "autograder/gradescope/run_autograder",
        "locks/instructor.txt",
        "locks/gradescope.txt",
        "locks/excludes.txt",
        "pyproject.toml",
        "autograder/student_bundle/Makefile",
    ):
        assert rel in covered, f"{rel} is no proof's input"
