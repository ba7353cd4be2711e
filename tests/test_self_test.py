"""Self-test of the answer key through the real grader: solutions score 100, the unfilled release 0,
and every realistic wrong submission of autograder/authoring/wrong_fixtures.py loses points with feedback that
names its mistake (the fixture's declared `mistake` sentence).

Which cases each fixture passes is stored (autograder/fixtures/wrong_scores.json, written by
`python -m autograder wrong-scores --write`); its score is recomputed from those outcomes with the
manifest's points as they are, so moving points between exercises needs no regrade, while a changed
case list makes the entry stale."""

from __future__ import annotations

import copy
import dataclasses
import shutil
from pathlib import Path

import pytest

from autograder.authoring import wrong_scores
from autograder.authoring.wrong_fixtures import BY_NAME, FIXTURES
from autograder.core import manifest
from autograder.core.manifest import BY_ID, EXERCISES
from autograder.runtime import grader
from autograder.runtime.sandbox import runner

WRONG = [f.name for f in FIXTURES]
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
def test_answer_key_scores_100_and_unfilled_release_scores_0(graded, key_submission, stubs_submission, failed_cases):
    data = graded(key_submission)
    if abs(data["score"] - 100) >= SCORE_TOL:
        scores = {
            ex.id: sum(t["score"] for t in data["tests"] if t["name"].split(" ", 1)[0] == ex.id) for ex in EXERCISES
        }
        lost = [ex.id for ex in EXERCISES if scores[ex.id] < ex.points - SCORE_TOL]
        pytest.fail(
            f"the answer key scores {data['score']}, not 100; the cases it loses:\n"
            + "\n".join(failed_cases(key_submission, ex_id) for ex_id in lost)
        )
    data = graded(stubs_submission)
    assert data["score"] == 0, data["output"][-3000:]
    assert not [t for t in data["tests"] if t["name"].startswith("autograder failed")]


def test_the_corpus_has_at_least_15_realistic_mistakes_covering_every_exercise():
    assert len(WRONG) >= 15
    covered = {f.exercise for f in FIXTURES}
    assert covered == {e.id for e in EXERCISES}, f"exercises without a wrong fixture: {set(BY_ID) - covered}"


def test_every_declared_fixture_has_stored_outcomes():
    stored = wrong_scores.load()
    differ = sorted(set(stored) ^ set(WRONG))
    assert not differ, (
        f"autograder/fixtures/wrong_scores.json and autograder/authoring/wrong_fixtures.py differ on {differ}: "
        + wrong_scores.regrade_hint(BY_NAME[n].exercise if n in BY_NAME else stored[n]["exercise"] for n in differ)
    )


def test_stored_outcomes_fit_the_cases_and_every_fixture_loses_points_but_not_all():
    """The entries cover exactly today's case ids (else StaleEntry names the command that regrades), and
    under today's points every fixture keeps something and loses something, measured without grading."""
    for name, score in wrong_scores.stored_scores().items():
        points = BY_ID[BY_NAME[name].exercise].points
        assert 0 < score < points - 0.05, f"{name} scores {score} of {points} from its stored outcomes"


def _rounding_cents(payment, key) -> int:
    """An upper bound of |paid cents - exact proportional share| for one payment: a share is its exact
    value rounded up or down by less than a cent, and the errors of one side (public, hidden) add up to 0,
    so the paid cases of a side are off by less than min(#paid, #unpaid) cents."""
    bound = 0
    for side in (key.public, key.hidden):
        paid = sum(payment.pays[c.id] for c in side)
        bound += min(paid, len(side) - paid)
    return bound


def test_moving_points_never_forces_a_regrade(monkeypatch):
    """Two points move from ex02 to ex06 (the manifest still adds up to 100): every fixture's score is
    recomputed from the stored outcomes, nothing is graded, no entry is stale; ex02's and ex06's
    fixtures scale with their exercise's points (up to the rounding of shares to hundredths), the others
    keep their score to the cent."""
    before = wrong_scores.stored_scores()
    moved = {"ex02": BY_ID["ex02"].points - 2, "ex06": BY_ID["ex06"].points + 2}
    old = {ex_id: BY_ID[ex_id] for ex_id in moved}
    for ex_id, points in moved.items():
        monkeypatch.setitem(manifest.BY_ID, ex_id, dataclasses.replace(BY_ID[ex_id], points=points))
    monkeypatch.setattr(manifest, "EXERCISES", tuple(manifest.BY_ID[e.id] for e in EXERCISES))
    assert manifest.problems(manifest.EXERCISES) == [], "the moved points must still add up to 100"

    def no_grading(*args, **kwargs):
        raise AssertionError("moving points graded a fixture")

    monkeypatch.setattr(grader, "grade_exercise", no_grading)
    monkeypatch.setattr(runner, "run_exercise", no_grading)
    monkeypatch.setattr(wrong_scores, "grade", no_grading)
    after = wrong_scores.stored_scores()
    entries = wrong_scores.load()
    for ex_id in moved:
        key = wrong_scores.Key.load(ex_id)
        ratio = moved[ex_id] / old[ex_id].points
        for fixture in (f for f in FIXTURES if f.exercise == ex_id):
            name = fixture.name
            wrong_scores.check(name, entries[name], key)
            was = wrong_scores.pay(name, entries[name], key, old[ex_id])
            now = wrong_scores.pay(name, entries[name], key)
            assert now.pays == was.pays and now.live == was.live, f"{name}: which cases pay does not depend on points"
            assert round(now.cents / 100, 2) == after[name] != before[name] == round(was.cents / 100, 2)
            bound = (1 + ratio) * _rounding_cents(now, key)
            assert abs(now.cents - was.cents * ratio) <= bound, (
                f"{name}: {was.cents} cents of {old[ex_id].points} became {now.cents} of {moved[ex_id]}, "
                f"not in proportion (up to {bound} cents of rounding)"
            )
    assert {n: s for n, s in after.items() if n[:4] not in moved} == {
        n: s for n, s in before.items() if n[:4] not in moved
    }


def test_a_renamed_added_or_reclassified_case_makes_an_entry_stale():
    name = "ex02_gib_hbm"
    key = wrong_scores.Key.load("ex02")
    entry = wrong_scores.load()[name]
    wrong_scores.check(name, entry, key)
    hint = r"python -m autograder wrong-scores --exercises ex02 --write"

    renamed = copy.deepcopy(entry)
    group = next(iter(renamed["groups"].values()))
    case_id = sorted(group["hidden"])[0]
    group["hidden"][case_id + "_renamed"] = group["hidden"].pop(case_id)
    with pytest.raises(wrong_scores.StaleEntry, match=hint):
        wrong_scores.check(name, renamed, key)
    with pytest.raises(wrong_scores.StaleEntry, match=hint):
        wrong_scores.pay(name, renamed, key)  # scoring checks first

    extra = dataclasses.replace(key.hidden[0], id=key.hidden[0].id + "_added")
    added = wrong_scores.Key(key.public, [*key.hidden, extra], key.data)
    with pytest.raises(wrong_scores.StaleEntry, match="new .*_added"):
        wrong_scores.check(name, entry, added)

    flipped = copy.deepcopy(entry)
    first = sorted(flipped["groups"])[0]
    flipped["groups"][first]["computes"] = not flipped["groups"][first]["computes"]
    with pytest.raises(wrong_scores.StaleEntry, match="live-function rule"):
        wrong_scores.pay(name, flipped, key)


@pytest.mark.slow
@pytest.mark.parametrize("name", WRONG)
def test_wrong_submission_loses_points_and_feedback_names_the_mistake(name, wrong_dir, tmp_path):
    ex = BY_ID[BY_NAME[name].exercise]
    description = BY_NAME[name].mistake
    data = grader.grade_submission(copy_files(tmp_path / "sub", [wrong_dir / name / ex.filename]), exercises=[ex.id])
    score, max_score = exercise_points(data, ex.id)
    assert abs(max_score - ex.points) < SCORE_TOL
    assert score < ex.points - 0.05, f"{name} ({description}) kept {score:.2f} of {ex.points} points"
    stored = wrong_scores.stored_scores([name])[name]
    assert round(score, 2) == stored, (
        f"{name} now scores {score:.2f}, its stored outcomes {stored}: look at why, "
        f"then {wrong_scores.regrade_hint([ex.id])}"
    )
    assert score > 0, f"{name} has one mistake but scored 0: the cases cannot tell it from no answer"
    failed = [t["output"] for t in data["tests"] if t.get("status") == "failed" and t["max_score"] > 0]
    # a mistake that changes an argument in place is named by the check that sees it (hetero.checks' InputMutated)
    in_place = "in place" in description or "the caller's" in description
    assert any(description in out or (in_place and "changed its argument" in out) for out in failed), (
        f"{name}: no failed case names the mistake {description!r}; failed outputs:\n" + "\n".join(failed[:5])
    )


def test_wrong_scores_is_a_listed_command_that_rewrites_only_the_exercises_graded(monkeypatch, tmp_path, capsys):
    from autograder.__main__ import main as cli

    assert cli(["--help"]) == 0
    assert "wrong-scores " in capsys.readouterr().out
    entries = wrong_scores.load()
    planted = copy.deepcopy(entries)
    del planted["ex01_gib"]
    other = planted["ex02_gib_hbm"]["groups"]
    other[sorted(other)[0]]["public"] = {"ex02.renamed_case": "passed"}
    path = tmp_path / "wrong_scores.json"
    wrong_scores.dump(planted, path)
    monkeypatch.setattr(wrong_scores, "STORED", path)
    monkeypatch.setattr(wrong_scores, "grade", lambda name, key=None: copy.deepcopy(entries[name]))  # no sandbox

    assert cli(["wrong-scores", "--exercises", "ex01"]) == 1
    out = capsys.readouterr().out
    assert "stored: none" in out and "ex02" not in out, out
    assert wrong_scores.load(path) == planted
    assert cli(["wrong-scores", "--exercises", "ex01", "--write"]) == 0
    assert wrong_scores.load(path) == {**planted, "ex01_gib": entries["ex01_gib"]}, "ex02's stale entry is not ex01's"
    assert cli(["wrong-scores", "--stored", "--exercises", "ex02"]) == 1
    assert "python -m autograder wrong-scores --exercises ex02 --write" in capsys.readouterr().err
    assert cli(["wrong-scores", "--stored", "--exercises", "ex01"]) == 0
    score = wrong_scores.stored_scores(["ex01_gib"])["ex01_gib"]
    lines = [line.split() for line in capsys.readouterr().out.splitlines()]
    assert ["ex01_gib", f"{score:.2f}", "/", f"{BY_ID['ex01'].points:g}"] in lines, lines
