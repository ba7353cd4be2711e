"""Self-test of the answer key through the real grader: solutions score 100, the unfilled release 0,
and every realistic wrong submission in autograder/fixtures/wrong/ loses points with feedback that
names its mistake (the `MISTAKE:` sentence of the fixture)."""

from __future__ import annotations

import difflib
import json
import shutil
from pathlib import Path

import pytest

from autograder import grader
from autograder.expected import mistake_description
from autograder.manifest import BY_ID, EXERCISES, ROOT

WRONG = sorted(p for p in (ROOT / "autograder" / "fixtures" / "wrong").iterdir() if p.is_dir())
STORED_SCORES = ROOT / "autograder" / "fixtures" / "wrong_scores.json"
SCORE_TOL = 1e-6  # per-case points are floats that sum to the exercise total up to rounding


def exercise_points(data: dict, ex_id: str) -> tuple[float, float]:
    tests = [t for t in data["tests"] if t["name"].split(" ", 1)[0] == ex_id]
    return sum(t["score"] for t in tests), sum(t["max_score"] for t in tests)


def copy_files(folder: Path, files: list[Path]) -> Path:
    folder.mkdir(parents=True)
    for f in files:
        shutil.copyfile(f, folder / f.name)
    return folder


@pytest.mark.slow
def test_answer_key_scores_100_and_unfilled_release_scores_0(tmp_path):
    key = copy_files(tmp_path / "key", [ROOT / "solutions" / e.filename for e in EXERCISES])
    data = grader.grade_submission(key)
    assert abs(data["score"] - 100) < SCORE_TOL, data["output"][-3000:]
    stubs = copy_files(tmp_path / "stubs", [ROOT / "assignments" / e.filename for e in EXERCISES])
    data = grader.grade_submission(stubs)
    assert data["score"] == 0, data["output"][-3000:]
    assert not [t for t in data["tests"] if t["name"].startswith("autograder failed")]


def test_the_corpus_has_at_least_15_realistic_mistakes_covering_every_exercise():
    assert len(WRONG) >= 15
    covered = {p.name.split("_", 1)[0] for p in WRONG}
    assert covered == {e.id for e in EXERCISES}, f"exercises without a wrong fixture: {set(BY_ID) - covered}"


@pytest.mark.slow
@pytest.mark.parametrize("fixture", WRONG, ids=[p.name for p in WRONG])
def test_wrong_submission_loses_points_and_feedback_names_the_mistake(fixture, tmp_path):
    ex = BY_ID[fixture.name.split("_", 1)[0]]
    source = fixture / ex.filename
    description = mistake_description(source)
    data = grader.grade_submission(copy_files(tmp_path / "sub", [source]), exercises=[ex.id])
    score, max_score = exercise_points(data, ex.id)
    assert abs(max_score - ex.points) < SCORE_TOL
    assert score < ex.points - 0.05, f"{fixture.name} ({description}) kept {score:.2f} of {ex.points} points"
    stored = json.loads(STORED_SCORES.read_text())[fixture.name]
    assert round(score, 2) == stored, (f"{fixture.name} now scores {score:.2f}, stored {stored}: look at why, then "
                                       "`python -m autograder.wrong_scores --write`")
    assert score > 0, f"{fixture.name} has one mistake but scored 0: the cases cannot tell it from no answer"
    failed = [t["output"] for t in data["tests"] if t.get("status") == "failed" and t["max_score"] > 0]
    assert any(description in out for out in failed), (
        f"{fixture.name}: no failed case names the mistake {description!r}; failed outputs:\n" + "\n".join(failed[:5]))


MAX_CHANGED_LINES = 12  # the MISTAKE docstring lines plus the one mistake; measured today: 6 to 11


@pytest.mark.parametrize("fixture", WRONG, ids=[p.name for p in WRONG])
def test_wrong_submission_is_the_answer_key_with_one_mistake(fixture):
    """A fixture is a full copy of the answer key with one realistic mistake; when the key changes, a
    fixture that was not updated with it shows up here as a large difference."""
    ex = BY_ID[fixture.name.split("_", 1)[0]]
    key = [line for line in (ROOT / "solutions" / ex.filename).read_text(encoding="utf-8").splitlines()
           if line.strip() not in ("# BEGIN SOLUTION", "# END SOLUTION")]
    wrong = (fixture / ex.filename).read_text(encoding="utf-8").splitlines()
    changed = [line for line in difflib.unified_diff(key, wrong, lineterm="", n=0)
               if line[:1] in "+-" and not line.startswith(("+++", "---"))]
    assert 0 < len(changed) <= MAX_CHANGED_LINES, (
        f"{fixture.name} differs from solutions/{ex.filename} in {len(changed)} lines (at most {MAX_CHANGED_LINES}: "
        "update the fixture from the current answer key, keeping only its one mistake)")
