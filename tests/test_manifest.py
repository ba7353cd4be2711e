"""The manifest: one keyword entry per exercise, validated when loaded, and everything derived from it.

A bad table stops every command with the manifest's file and line (release and build included); the
files it names must exist and agree (functions, public and hidden cases); hetero's exercise list and
the counts in the prose are derived by the release; `new-exercise` writes an exercise that passes lint,
types and the answer key's grading as it stands.
"""

from __future__ import annotations

import dataclasses
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from autograder.authoring import derived, new_exercise
from autograder.core import manifest
from autograder.core.cases import check_files
from autograder.core.manifest import EXERCISES, ROOT, Exercise, problems
from hetero.checks import check_call
from hetero.impl import EXERCISES as LOADER
from hetero.impl import load_module_from_path


def test_manifest_is_consistent():
    assert problems(EXERCISES) == [] and check_files() == []
    assert [e.id for e in EXERCISES] == list(LOADER), "hetero's list is stale: run `python -m autograder release`"
    assert [e.module for e in EXERCISES] == list(LOADER.values())


def test_entries_are_keywords_only():
    with pytest.raises(TypeError):
        Exercise("ex01", "ex01_x", ("f",), "t", "§1", 6, 0.4, 20, 20, 2048)  # type: ignore[misc]


def _replace(ex_id: str, **changes) -> tuple[Exercise, ...]:
    return tuple(dataclasses.replace(e, **changes) if e.id == ex_id else e for e in EXERCISES)


@pytest.mark.parametrize(
    ("changes", "said"),
    [
        ({"points": 11}, "add up to 101, not 100"),
        ({"timeout_s": 0}, "timeout_s must be positive"),
        ({"case_timeout_s": 99}, "exceeds timeout_s"),
        ({"module": "ex03_cache_pool"}, "must be ex02_<slug>"),
        ({"public_share": 1.5}, "public_share must lie in [0, 1]"),
        ({"hidden_visibility": "sometimes"}, "unknown visibility"),
        ({"functions": ()}, "functions must name each exercise function once"),
    ],
)
def test_a_bad_entry_is_named_with_the_manifest_file_and_line(changes, said):
    found = problems(_replace("ex02", **changes))
    assert any(said in p for p in found), f"expected a problem saying {said!r}, got {found}"
    line = manifest.entry_line("ex02")
    where = f"autograder/core/manifest.py:{line}" if "add up" not in said else f"ex02 11 (line {line})"
    assert any(where in p for p in found), f"the problem should name {where}: {found}"


def _copy_package(tmp_path: Path) -> Path:
    """A copy of the grader's Python package (no data) under tmp_path, importable as `autograder`."""
    shutil.copytree(
        ROOT / "autograder", tmp_path / "autograder", ignore=shutil.ignore_patterns("fixtures", "__pycache__")
    )
    return tmp_path


@pytest.mark.parametrize("command", ["release", "build", "grade"])
def test_a_101_point_manifest_stops_release_build_and_grade(tmp_path, command):
    root = _copy_package(tmp_path)
    path = root / "autograder" / "core" / "manifest.py"
    text = path.read_text(encoding="utf-8")
    line = text.index('id="ex02"')
    at = text.index("points=10,", line)
    path.write_text(text[:at] + "points=11," + text[at + len("points=10,") :], encoding="utf-8")
    proc = subprocess.run(
        [sys.executable, "-m", "autograder", command, "--help"],
        cwd=root,
        capture_output=True,
        text=True,
        env={"PYTHONPATH": str(root), "PATH": "/usr/bin:/bin"},
    )
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert "autograder/core/manifest.py" in proc.stderr and "add up to 101, not 100" in proc.stderr, proc.stderr
    assert "Traceback" not in proc.stderr, "a bad manifest is a message, not a crash"


def test_files_the_entry_names_must_exist_and_agree(tmp_path):
    for rel in ("solutions", "autograder/tests"):
        shutil.copytree(ROOT / rel, tmp_path / rel)
    assert check_files(tmp_path) == [], "the copied answer key and case files must agree with the manifest"
    ex = manifest.BY_ID["ex04"]
    solution = tmp_path / "solutions" / ex.filename
    solution.write_text(
        solution.read_text(encoding="utf-8").replace("def link_efficiency(", "def link_eff("), encoding="utf-8"
    )
    found = check_files(tmp_path)
    assert any("no function link_efficiency" in p for p in found), found
    (tmp_path / "autograder" / "tests" / "ex06_hidden.py").unlink()
    found = check_files(tmp_path)
    assert any("ex06_hidden.py, which does not exist" in p for p in found), (
        f"a missing hidden case file must be named (check_files said {found})"
    )
    renamed = _replace("ex07", functions=("tokens_per_routed_expert", "tokens_per_shared_expert", "offload_plan"))
    found = check_files(tmp_path, renamed)
    assert any("public_ex07.py: public cases cover" in p for p in found), found


def test_a_function_hetero_calls_by_name_must_be_declared():
    """The rename story (issue 30): ex04's link_efficiency renamed in the manifest (and the key), not in the
    driver that calls it by name: the release's first check names the caller's file:line and the entry,
    before anything runs, instead of a traceback minutes later."""
    from autograder.core import hetero_calls

    assert hetero_calls.problems() == []
    renamed = _replace(
        "ex04", functions=("line_rate_gb_per_s", "link_eff", "transfer_time_s", "speedup_over_recompute")
    )
    found = hetero_calls.problems(exercises=renamed)
    assert any(p.startswith("shared/hetero/transfer.py:") and "ex04.link_efficiency" in p for p in found), found
    assert all(manifest.where("ex04") in p for p in found if "ex04" in p), found
    renamed = _replace(
        "ex05", functions=("predicted_decode_load", "admit", "antiphase_correlation", "dominant_period_s")
    )
    found = hetero_calls.problems(exercises=renamed)
    assert any(p.startswith("shared/hetero/harness/overload.py:") and "module.admit_predictive" in p for p in found), (
        f"a harness reading a renamed function off the exercise module must be named: {found}"
    )


def test_derived_files_are_current():
    assert derived.drift() == [], "run `python -m autograder release`"
    values = derived.span_values()
    assert (
        values["count"]
        == ["zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten", "eleven", "twelve"][
            len(EXERCISES)
        ]
    )
    assert values["files"].startswith(f"`{EXERCISES[0].filename}`") and values["files"].endswith(
        f"`{EXERCISES[-1].filename}`"
    )


def test_the_handout_says_when_hidden_inputs_are_shown_as_the_manifest_sets_it():
    """Gradescope shows a hidden case's inputs and expected values only through the opt-in entry
    (`hidden_detail_visibility`); the handout's sentence follows the manifest, whatever it is."""
    handout = (ROOT / "assignments" / "README.md").read_text(encoding="utf-8")
    assert f"<!-- a2:hidden_detail -->{derived.hidden_detail_text()}<!-- /a2 -->" in handout
    with_level = lambda level: tuple(dataclasses.replace(e, hidden_detail_visibility=level) for e in EXERCISES)  # noqa: E731
    assert derived.hidden_detail_text(with_level(None)).endswith(
        "are not shown unless your instructor chooses to release them"
    )
    assert derived.hidden_detail_text(with_level("after_due_date")).endswith("are shown after the due date")
    mixed = (dataclasses.replace(EXERCISES[0], hidden_detail_visibility="visible"), *EXERCISES[1:])
    assert "depends on the exercise" in derived.hidden_detail_text(with_level(None)[:1] + mixed[:1])
    for level in manifest.VISIBILITY_LEVELS:
        assert derived.hidden_detail_text(with_level(level)), level


def test_spans_are_filled_and_unknown_keys_named():
    values = {"count": "eleven"}
    assert derived.fill_spans("in <!-- a2:count -->ten<!-- /a2 --> files", "X.md", values) == (
        "in <!-- a2:count -->eleven<!-- /a2 --> files"
    )
    with pytest.raises(derived.DerivedError, match=r"X.md:2: unknown span a2:colour"):
        derived.fill_spans("a\n<!-- a2:colour -->red<!-- /a2 -->", "X.md", values)


def test_new_exercise_writes_an_entry_and_three_files_that_pass_lint_types_and_the_key(tmp_path):
    for rel in ("solutions", "autograder/tests"):
        shutil.copytree(ROOT / rel, tmp_path / rel, ignore=shutil.ignore_patterns("__pycache__"))
    (tmp_path / "autograder" / "core").mkdir(parents=True)
    shutil.copy(ROOT / "autograder" / "core" / "manifest.py", tmp_path / "autograder" / "core" / "manifest.py")
    (tmp_path / "autograder" / "authoring").mkdir(parents=True)
    shutil.copy(ROOT / "autograder" / "authoring" / "wrong_fixtures.py", tmp_path / "autograder" / "authoring")
    new_id = next(f"ex{n:02d}" for n in range(11, 100) if f"ex{n:02d}" not in manifest.BY_ID)
    touched = new_exercise.write(f"{new_id}_break_even", 5, "§2.4", "Fetch vs recompute", tmp_path)
    assert len(touched) == 5, touched
    assert f'"{new_id}_zero_time"' in touched[4].read_text(encoding="utf-8"), "a template wrong fixture"
    with pytest.raises(ValueError, match="declared already"):
        new_exercise.write(f"{new_id}_other", 5, "§2.4", "again", tmp_path)
    with pytest.raises(ValueError, match="exNN_slug"):
        new_exercise.write("ex12-Bad", 5, "§2.4", "bad", tmp_path)
    files = [str(p) for p in touched[:3]]
    fmt = subprocess.run(
        [sys.executable, "-m", "ruff", "format", "--check", "--config", str(ROOT / "pyproject.toml"), *files],
        capture_output=True,
        text=True,
    )
    assert fmt.returncode == 0, fmt.stdout + fmt.stderr
    lint = subprocess.run(
        [sys.executable, "-m", "ruff", "check", "--no-fix", "--config", str(ROOT / "pyproject.toml"), *files],
        capture_output=True,
        text=True,
    )
    assert lint.returncode == 0, lint.stdout
    types = subprocess.run(
        [sys.executable, "-m", "mypy", "--no-incremental", "--ignore-missing-imports", touched[0].as_posix()],
        capture_output=True,
        text=True,
        cwd=ROOT,
    )
    assert types.returncode == 0, types.stdout
    # The appended entry loads (as a module of its own) and, once 5 points are taken elsewhere, holds.
    with pytest.raises(ValueError, match="add up to 105, not 100"):
        load_module_from_path(touched[3], "_a2_manifest_with_ex11")
    table = tmp_path / "table.py"  # the same source without its import-time validation
    table.write_text(
        touched[3].read_text(encoding="utf-8").split("_problems = problems(EXERCISES)")[0], encoding="utf-8"
    )
    entries = load_module_from_path(table, "_a2_manifest_table").EXERCISES
    ex11 = next(e for e in entries if e.id == new_id)
    fixed = tuple(dataclasses.replace(e, points=e.points - 5) if e.id == "ex10" else e for e in entries)
    assert problems(fixed) == []
    assert check_files(tmp_path, (ex11,)) == [], "the templates' function, public and hidden cases agree"
    solution = load_module_from_path(touched[0], f"_a2_new_{new_id}")
    public = load_module_from_path(touched[1], f"_a2_new_{new_id}_public")
    for case in public.CASES:
        verdict = check_call(case, solution)
        assert verdict.passed, f"the answer key must pass its own public case {case.id}: {verdict.message}"


@pytest.mark.slow
def test_one_release_after_new_exercise_leaves_nothing_stale(tmp_path):
    """README, "Adding an exercise": new-exercise, points taken from another entry, one `make release`; then
    the release and the expected values hold (before: hetero's exercise list was written after the digests
    that read it, and a second release was needed)."""
    root = tmp_path / "course"
    skip = shutil.ignore_patterns(".git", ".venv", "out", "dist", "__pycache__", ".pytest_cache", ".mypy_cache")
    shutil.copytree(ROOT, root, ignore=skip, symlinks=True)
    env = {**os.environ, "PYTHONPATH": f"{root}{os.pathsep}{root / 'shared'}", "A2_CACHE_DIR": str(tmp_path / "moe")}
    new_id = next(f"ex{n:02d}" for n in range(11, 100) if f"ex{n:02d}" not in manifest.BY_ID)

    def run(*args: str) -> subprocess.CompletedProcess:
        done = subprocess.run(
            [sys.executable, "-m", "autograder", *args], cwd=root, env=env, capture_output=True, text=True, timeout=1200
        )
        assert done.returncode == 0, f"{args}: {done.stdout[-2000:]}{done.stderr[-2000:]}"
        return done

    run("new-exercise", f"{new_id}_kv_offload", "--points", "5")
    path = root / "autograder" / "core" / "manifest.py"
    text = path.read_text(encoding="utf-8")
    at = text.index("points=", text.index(f'id="{EXERCISES[-1].id}"'))
    old = text[at : text.index(",", at)]
    path.write_text(text[:at] + f"points={float(old.split('=')[1]) - 5:g}" + text[at + len(old) :], encoding="utf-8")
    said = run("release").stdout
    assert "the release runs once more" in said, said[-2000:]
    run("release", "--check")
    run("expected", "--check", "--jobs", "2")
