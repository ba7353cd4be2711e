"""Self-test of the answer key through the real grader: solutions score 100, the unfilled release 0,
and every realistic wrong submission of autograder/authoring/wrong_fixtures.py loses points with feedback that
names its mistake (the fixture's declared `mistake` sentence)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from autograder.authoring.wrong_fixtures import BY_NAME, FIXTURES
from autograder.core.manifest import BY_ID, EXERCISES, ROOT
from autograder.runtime import grader

WRONG = [f.name for f in FIXTURES]
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
def test_answer_key_scores_100_and_unfilled_release_scores_0(graded, key_submission, stubs_submission):
    data = graded(key_submission)
    assert abs(data["score"] - 100) < SCORE_TOL, data["output"][-3000:]
    data = graded(stubs_submission)
    assert data["score"] == 0, data["output"][-3000:]
    assert not [t for t in data["tests"] if t["name"].startswith("autograder failed")]


def test_the_corpus_has_at_least_15_realistic_mistakes_covering_every_exercise():
    assert len(WRONG) >= 15
    covered = {f.exercise for f in FIXTURES}
    assert covered == {e.id for e in EXERCISES}, f"exercises without a wrong fixture: {set(BY_ID) - covered}"


def test_every_declared_fixture_has_a_stored_score():
    assert sorted(json.loads(STORED_SCORES.read_text())) == sorted(WRONG), (
        "autograder/fixtures/wrong_scores.json and autograder/authoring/wrong_fixtures.py name different fixtures: "
        "`python -m autograder.authoring.wrong_scores --write`")


@pytest.mark.slow
@pytest.mark.parametrize("name", WRONG)
def test_wrong_submission_loses_points_and_feedback_names_the_mistake(name, wrong_dir, tmp_path):
    ex = BY_ID[BY_NAME[name].exercise]
    description = BY_NAME[name].mistake
    data = grader.grade_submission(copy_files(tmp_path / "sub", [wrong_dir / name / ex.filename]), exercises=[ex.id])
    score, max_score = exercise_points(data, ex.id)
    assert abs(max_score - ex.points) < SCORE_TOL
    assert score < ex.points - 0.05, f"{name} ({description}) kept {score:.2f} of {ex.points} points"
    stored = json.loads(STORED_SCORES.read_text())[name]
    assert round(score, 2) == stored, (f"{name} now scores {score:.2f}, stored {stored}: look at why, then "
                                       "`python -m autograder.authoring.wrong_scores --write`")
    assert score > 0, f"{name} has one mistake but scored 0: the cases cannot tell it from no answer"
    failed = [t["output"] for t in data["tests"] if t.get("status") == "failed" and t["max_score"] > 0]
    assert any(description in out for out in failed), (
        f"{name}: no failed case names the mistake {description!r}; failed outputs:\n" + "\n".join(failed[:5]))

