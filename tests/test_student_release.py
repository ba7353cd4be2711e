"""What a student gets: the unfilled release fails every public test with NotImplementedError (said at the
top) and prints the per-exercise summary last; the same tests pass once the answer key's files are copied
in; a loop costs its case ("stopped after N s") and the later cases of its function ("not run"), the same
public cases the grader fails; a failure is one short block naming the call, the expected value with its
unit, what came back and, for an exception, the student's own file:line."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from autograder.core.manifest import BY_ID, EXERCISES
from autograder.runtime import grader
from hetero.impl import load_module_from_path

ROOT = Path(__file__).resolve().parents[1]
FAILURE_HEADER = re.compile(r"\n_{3,} test_public\[([^\]]+)\] _{3,}\n")


def run_pytest(folder: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            str(folder),
            "-q",
            "-p",
            "no:cacheprovider",
            "--rootdir",
            str(folder),
            "-o",
            "addopts=--import-mode=importlib",
            *args,
        ],
        capture_output=True,
        text=True,
        cwd=folder,
        timeout=900,
        env={**os.environ, "COLUMNS": "400"},
    )  # wide enough that summary lines are not cut


def failure_blocks(out: str) -> dict[str, str]:
    """{case id: its failure block} from pytest's output."""
    parts = FAILURE_HEADER.split(out)
    # a block ends where pytest's own lines start: "=== ... ===" or, with -q, "78 failed in 3.8s"
    return {
        parts[i]: re.split(r"\n(?:=|\d+ (?:failed|passed))", parts[i + 1])[0].strip()
        for i in range(1, len(parts) - 1, 2)
    }


@pytest.fixture(scope="module")
def release_copy(tmp_path_factory) -> Path:
    dest = tmp_path_factory.mktemp("student") / "assignments"
    shutil.copytree(ROOT / "assignments", dest, ignore=shutil.ignore_patterns("__pycache__", ".pytest_cache"))
    return dest


def test_released_listing_carries_the_manifests_limits():
    listing = json.loads((ROOT / "assignments" / "tests" / "exercises.json").read_text(encoding="utf-8"))
    limits = {e["id"]: e["case_timeout_s"] for e in listing}
    assert limits == {ex.id: ex.case_timeout_s for ex in EXERCISES}, (
        f"assignments/tests/exercises.json must carry each exercise's case_timeout_s (s), got {limits}"
    )


@pytest.mark.slow
def test_unfilled_release_fails_every_public_test_with_not_implemented(release_copy):
    result = run_pytest(release_copy)
    out = result.stdout
    assert result.returncode == 1, out[-3000:]
    head = out[: out.index("FAILURES")]
    assert "still stubs: ex01" in head and "NotImplementedError" in head, f"not said at the top:\n{head}"
    assert f"exercise files: {release_copy.resolve()}" in head
    assert "ImportError" not in out and "ModuleNotFoundError" not in out and "Traceback" not in out, out[-3000:]
    blocks = failure_blocks(out)
    wrong = {k: b for k, b in blocks.items() if not b.startswith("NotImplementedError: ex") or "\n" in b}
    assert blocks and not wrong, "each unfilled case must fail with one NotImplementedError line:\n" + "\n".join(
        f"{k}: {b}" for k, b in wrong.items()
    )
    assert "short test summary" not in out, "each message is printed once, in its block"
    summary = out[out.index("per-exercise summary") :]
    assert summary.rstrip().endswith("make up the rest."), "the per-exercise summary must be printed last"
    assert re.search(r"^exercise\s+passed\s+failed\s+passed / max\s+max\s+status$", summary, flags=re.M), summary
    for ex in EXERCISES:
        assert re.search(rf"^{ex.id}\s+0\s+[1-9]\d*\s+0 / [\d.]+\s+{ex.points:g}\s+FAILING$", summary, flags=re.M), (
            f"{ex.id}: no public points earned, the exercise's maximum, FAILING:\n{summary}"
        )
    assert "public points: what your passed public cases are worth / what all public cases give" in summary


@pytest.mark.slow
def test_release_with_the_answer_key_passes(release_copy, tmp_path):
    filled = tmp_path / "filled"
    shutil.copytree(release_copy, filled)
    for ex in EXERCISES:
        shutil.copyfile(ROOT / "solutions" / ex.filename, filled / ex.filename)
    result = run_pytest(filled)
    assert result.returncode == 0, result.stdout[-3000:]
    assert "FAILING" not in result.stdout and "still stubs" not in result.stdout


LOOP = "\n    while True:\n        pass\n"


@pytest.mark.slow
def test_a_loop_costs_its_functions_later_cases_as_in_grading_and_mistakes_are_one_block_each(release_copy, tmp_path):
    filled = tmp_path / "mistakes"
    shutil.copytree(release_copy, filled)
    for ex in EXERCISES[:3]:
        shutil.copyfile(ROOT / "solutions" / ex.filename, filled / ex.filename)
    ex01 = filled / "ex01_cost_per_gb.py"
    text = ex01.read_text(encoding="utf-8")
    head, sep, tail = text.partition("def usd_per_gb(")
    doc_end = tail.index('"""\n', tail.index('"""') + 3) + 4
    ex01.write_text(head + sep + tail[:doc_end] + LOOP + tail[doc_end:], encoding="utf-8")
    ex02 = filled / "ex02_kv_capacity.py"
    ex02.write_text(
        ex02.read_text(encoding="utf-8").replace(
            "    return 2.0 * num_layers * num_kv_heads * head_dim * bytes_per_elem",
            "    import numpy\n    return numpy.float32(2.0 * num_layers * num_kv_heads * head_dim * bytes_per_elem)",
        ),
        encoding="utf-8",
    )
    ex03 = filled / "ex03_cache_pool.py"
    ex03.write_text(
        ex03.read_text(encoding="utf-8").replace(
            "    return total / len(distinct)", "    return total / len(distinct_blocks)"
        ),
        encoding="utf-8",
    )
    listing_path = filled / "tests" / "exercises.json"
    listing = json.loads(listing_path.read_text(encoding="utf-8"))
    for entry in listing:  # 1 s keeps the test short; the mechanism is the one the 10 s limit uses
        entry["case_timeout_s"] = 1.0 if entry["id"] == "ex01" else entry["case_timeout_s"]
    listing_path.write_text(json.dumps(listing), encoding="utf-8")
    result = run_pytest(filled, "-m", "ex01 or ex02 or ex03")
    blocks = failure_blocks(result.stdout)
    looping = [c.id for c in load_module_from_path(filled / "tests" / "public_ex01.py", "_p01").CASES]
    looping = [c for c in looping if c.startswith("ex01.usd_per_gb.")]
    loops = {k for k, b in blocks.items() if "stopped after 1 s" in b}
    not_run = {k for k, b in blocks.items() if "no result: not run" in b}
    assert loops == set(looping[:1]) and not_run == set(looping[1:]), (
        f"the first usd_per_gb case ({looping[0]}) must stop after 1 s and its later cases not run, as in "
        f"grading; stopped: {sorted(loops)}, not run: {sorted(not_run)}"
    )
    assert "ran longer than the per-case time limit on an earlier case" in blocks[looping[-1]], blocks[looping[-1]]
    # The grader (its own 10 s limit) fails exactly the public cases pytest failed, and pays the public points
    # the summary shows (ex02: kv_bytes_per_token's value cases all fail, so its passed invalid-input cases
    # pay nothing).
    staging = tmp_path / "staging"
    staging.mkdir()
    found, _ = grader.locate(filled, [BY_ID["ex01"], BY_ID["ex02"]], staging)
    for ex_id in ("ex01", "ex02"):
        graded = grader.grade_exercise(BY_ID[ex_id], found.get(ex_id))
        graded_failed = {c.case_id for c in graded.cases if not c.hidden and not c.passed}
        pytest_failed = {k for k in blocks if k.startswith(f"{ex_id}.")}
        assert graded_failed == pytest_failed, (
            f"the public tests and the grader must fail the same public cases of {ex_id}; grader only: "
            f"{sorted(graded_failed - pytest_failed)}, pytest only: {sorted(pytest_failed - graded_failed)}"
        )
        paid = sum(c.cents for c in graded.cases if not c.hidden and c.paid) / 100
        shown = re.search(rf"^{ex_id}\s+\d+\s+\d+\s+([\d.]+) / ", result.stdout, flags=re.M)
        assert shown and abs(float(shown.group(1)) - paid) < 0.006, (
            f"{ex_id}: the summary's public points must be what grading pays for the public cases ({paid:.2f}); "
            f"shown: {shown.group(0) if shown else result.stdout[-1500:]}"
        )
    # columns: exercise, public cases passed, failed, public points passed / max, exercise max, status
    assert re.search(r"^ex01\s+[1-9]\d*\s+\d+\s+[1-9][\d.]* / 2\.4\s+6\s+FAILING$", result.stdout, flags=re.M), (
        "after the loop the other ex01 cases must still run and pass:\n" + result.stdout[-2000:]
    )
    f32 = blocks["ex02.kv_bytes_per_token.llama3_70b"]
    assert "type mistake" in f32 and "numpy.float32" in f32 and "expected: 327680.0 bytes per token" in f32, f32
    assert "likely mistake" not in f32, f"a right value of the wrong type must not get the formula hint:\n{f32}"
    name_error = blocks["ex03.duplication_factor.same_document_on_8"]
    assert "NameError" in name_error and re.search(r"ex03_cache_pool\.py:\d+", name_error), name_error
    assert "total / len(distinct_blocks)" in name_error, "the block must show the student's own line"
    for case_id, block in blocks.items():
        assert "hetero/" not in block and "Traceback" not in block, f"{case_id} shows harness source:\n{block}"
        assert block.startswith("call:"), f"{case_id}: a failure block starts with the call:\n{block}"
