"""The release tool: stub generation, loud marker errors, and the drift check on the real tree."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from autograder.authoring.release import LIMITS_SLOT, MarkerError, case_limits_text, drift, strip_solutions
from autograder.core.manifest import EXERCISES

ROOT = Path(__file__).resolve().parents[1]

SOURCE = '''"""doc"""


def f(x: float) -> float:
    """Double x."""
    # BEGIN SOLUTION
    if x < 0:
        raise ValueError("x must be >= 0")
    return 2 * x
    # END SOLUTION


class K:
    def g(self) -> int:
        # BEGIN SOLUTION
        return 1
        # END SOLUTION
'''


def test_blocks_become_todo_and_raise():
    stub = strip_solutions(SOURCE, "ex07")
    assert '    # TODO(ex07): implement f\n    raise NotImplementedError("ex07: f")\n' in stub
    assert '        # TODO(ex07): implement g\n        raise NotImplementedError("ex07: g")\n' in stub
    assert "2 * x" not in stub and "BEGIN SOLUTION" not in stub and '"""Double x."""' in stub


@pytest.mark.parametrize(
    "text, problem",
    [
        ("def f():\n    # BEGIN SOLUTION\n    # BEGIN SOLUTION\n    return 1\n    # END SOLUTION\n", "nested"),
        ("def f():\n    # BEGIN SOLUTION\n    return 1\n", "unterminated"),
        ("def f():\n    return 1\n    # END SOLUTION\n", "without a matching"),
        ("# BEGIN SOLUTION\nx = 1\n# END SOLUTION\n", "outside any function"),
        ("def f():\n    return 1\n", "no '# BEGIN SOLUTION' block"),
    ],
)
def test_malformed_markers_fail_loudly(text, problem):
    with pytest.raises(MarkerError, match=problem):
        strip_solutions(text, "ex01", "bad.py")


def test_marker_error_names_file_and_line():
    with pytest.raises(MarkerError, match=r"bad\.py:2: nested|bad\.py:3: nested"):
        strip_solutions("def f():\n    # BEGIN SOLUTION\n    # BEGIN SOLUTION\n", "ex01", "bad.py")


def test_assignments_match_a_fresh_release():
    problems = drift(ROOT / "assignments")
    assert not problems, "assignments/ drifted from solutions/ (run `python -m autograder release`):\n" + "\n".join(
        problems
    )


def test_release_check_command_detects_drift(tmp_path, capsys):
    """`python -m autograder release [--check] --out DIR`, its entry point called in this process (the
    command line's own start is `make check`'s: it runs `release --check`)."""
    from autograder.authoring import release as release_tool

    out = tmp_path / "release"
    assert release_tool.main(["--out", str(out)]) == 0, capsys.readouterr()
    assert release_tool.main(["--out", str(out), "--check"]) == 0, capsys.readouterr()
    (out / "ex01_cost_per_gb.py").write_text("# edited by hand\n")
    capsys.readouterr()
    assert release_tool.main(["--out", str(out), "--check"]) == 1
    assert "ex01_cost_per_gb.py" in capsys.readouterr().err, "the drift check must name the edited file"


def test_handout_names_every_function_the_student_fills():
    """Every function with a solution block is listed, the private helpers too (ex03's _check_cluster)."""
    handout = (ROOT / "assignments" / "README.md").read_text(encoding="utf-8")
    for ex in EXERCISES:
        source = (ROOT / "solutions" / ex.filename).read_text(encoding="utf-8")
        current = None
        for line in source.splitlines():
            match = re.match(r"\s*def\s+(\w+)", line)
            if match:
                current = match.group(1)
            if line.strip() == "# BEGIN SOLUTION":
                assert f"def {current}(" in handout, f"{ex.filename}: the handout never names {current}, a stub"
        assert f"run `pytest assignments -m {ex.id}`" in handout, f"{ex.id}: the handout's command must name the folder"
    assert "Helper (optional, not graded on its own): `def _check_cluster(" in handout


def test_handout_quotes_the_released_models_training_run_and_its_deferral_figures():
    from autograder.authoring import reference_figures
    from hetero.moe.checkpoint import load_checkpoint

    handout = (ROOT / "assignments" / "README.md").read_text(encoding="utf-8")
    assert reference_figures.TRAINING_SLOT not in handout and reference_figures.DEFERRAL_SLOT not in handout
    meta = load_checkpoint(ROOT / "assignments" / "reference_moe.pt")[1]
    said = f"its {int(meta['steps']):,} steps took {float(meta['train_seconds']):.0f} s there"
    assert said in handout, f"the handout must quote the shipped model's own training run ({said!r})"


def test_handout_states_the_manifests_case_limits():
    handout = (ROOT / "assignments" / "README.md").read_text(encoding="utf-8")
    assert f"({case_limits_text()})" in handout and LIMITS_SLOT not in handout
    assert case_limits_text() == "10 s; ex05 20 s; ex10 30 s", case_limits_text()
    for ex in EXERCISES:
        assert f"Each case may run for at most {ex.case_timeout_s:g} s" in handout, ex.id


def test_a_failing_release_writes_nothing(tmp_path, monkeypatch):
    """`make release` is atomic: when anything fails (here the expected values, after the release was
    built in its temporary tree), the release folder and the stored files are left as they were, and the
    message names what to edit."""
    from autograder.authoring import release as release_tool

    out = tmp_path / "assignments"
    out.mkdir()
    (out / "sentinel.txt").write_text("before", encoding="utf-8")

    def failing(ids: list[str], jobs: int) -> dict[str, str]:
        raise release_tool.ReleaseError("autograder/tests/ex02_hidden.py or solutions/ex02_kv_capacity.py: boom")

    monkeypatch.setattr(release_tool, "due_exercises", lambda records, stored: ["ex02"])  # as if ex02's cases changed
    monkeypatch.setattr(release_tool, "_expected_texts", failing)
    stored = {p: p.stat().st_mtime_ns for p in (ROOT / "autograder" / "expected").glob("*.json")}
    with pytest.raises(release_tool.ReleaseError, match="ex02_hidden.py"):
        release_tool.release(out)
    assert [p.name for p in out.iterdir()] == ["sentinel.txt"], "the release folder was changed"
    assert stored == {p: p.stat().st_mtime_ns for p in stored}, "stored expected values were rewritten"
