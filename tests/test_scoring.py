"""Exact points and the live-function rule (autograder.scoring), by hand-checkable cases, and the
no-implementation corpus (autograder/fixtures/nothing/): each scores 0 through the native grader."""

from __future__ import annotations

import tempfile
from pathlib import Path

import pytest

from autograder import grader, scoring
from autograder.fixtures import nothing
from autograder.manifest import EXERCISES
from hetero.checks import Case, encode


def test_split_cents_adds_up_exactly_and_follows_weights():
    assert scoring.split_cents(240, [1, 1, 2]) == [60, 60, 120]
    parts = scoring.split_cents(360, [1.0] * 7)  # 51.43 each: four get 52, three get 51
    assert sum(parts) == 360 and sorted(parts) == [51, 51, 51, 51, 52, 52, 52]
    assert scoring.split_cents(0, [1, 2]) == [0, 0]
    with pytest.raises(ValueError, match="positive sum"):
        scoring.split_cents(100, [0, 0])


def test_every_exercise_totals_exactly_its_points_and_all_total_100():
    from autograder.cases import hidden_cases, public_cases

    total = 0
    for ex in EXERCISES:
        cents = scoring.case_cents(ex.points, ex.public_share, public_cases(ex.id), hidden_cases(ex.id))
        assert sum(cents.values()) == scoring.to_cents(ex.points), ex.id
        total += sum(cents.values())
    assert total == 100 * scoring.CENTS


def test_points_text_and_float_are_exact_decimals():
    assert scoring.points_text(240) == "2.4" and scoring.points_text(37) == "0.37" and scoring.points_text(600) == "6"
    assert scoring.cents_to_points(37) == 0.37 and repr(scoring.cents_to_points(10000)) == "100.0"
    with pytest.raises(ValueError, match="hundredths"):
        scoring.to_cents(0.001)


def _cases() -> tuple[list[Case], list[Case], dict[str, object]]:
    """f(x) = 2x: two hidden values, one hidden invalid case, one public case (answer 2.0)."""
    public = [Case("exA.f.one", "f", (1.0,), expect=2.0)]
    hidden = [Case("exA.f.three", "f", (3.0,)), Case("exA.f.five", "f", (5.0,)), Case("exA.f.bad", "f", (-1.0,),
                                                                                          raises="ValueError")]
    answers = {"exA.f.one": encode(2.0), "exA.f.three": encode(6.0), "exA.f.five": encode(10.0), "exA.f.bad": None}
    return public, hidden, answers


def test_a_function_is_live_only_with_two_distinct_passed_hidden_answers():
    public, hidden, answers = _cases()
    classes = scoring.answer_classes(public + hidden, answers)
    assert classes == {"exA.f.one": 0, "exA.f.three": 1, "exA.f.five": 2, "exA.f.bad": -1}
    echo = {c.id: False for c in public + hidden}
    rules = scoring.group_rules("exA", hidden, classes, public + hidden, echo)
    assert rules["f"].rule == scoring.TWO_ANSWERS
    everything = {c.id: True for c in public + hidden}
    assert scoring.live_groups(rules, hidden, classes, everything, echo) == {"f"}
    table_and_raise = {"exA.f.one": True, "exA.f.three": False, "exA.f.five": False, "exA.f.bad": True}
    assert scoring.live_groups(rules, hidden, classes, table_and_raise, echo) == set()
    one_hidden = {"exA.f.one": True, "exA.f.three": True, "exA.f.five": False, "exA.f.bad": True}
    assert scoring.live_groups(rules, hidden, classes, one_hidden, echo) == set()
    paid = scoring.paid(public + hidden, one_hidden, set())
    assert not any(paid.values()), "passed cases of a function that is not live pay nothing"


def test_echo_cases_are_no_evidence_and_identity_functions_need_invalid_input_too():
    hidden = [Case("exB.g.a", "g", (4,)), Case("exB.g.b", "g", (8,)), Case("exB.g.bad", "g", (0,), raises="ValueError")]
    answers = {"exB.g.a": encode(4.0), "exB.g.b": encode(8.0), "exB.g.bad": None}
    echo = {c.id: scoring.echoes(c, answers[c.id]) for c in hidden}
    assert echo == {"exB.g.a": True, "exB.g.b": True, "exB.g.bad": False}
    classes = scoring.answer_classes(hidden, answers)
    rules = scoring.group_rules("exB", hidden, classes, hidden, echo)
    assert rules["g"].rule == scoring.VALID_AND_INVALID
    returns_argument = {"exB.g.a": True, "exB.g.b": True, "exB.g.bad": False}
    assert scoring.live_groups(rules, hidden, classes, returns_argument, echo) == set()
    assert scoring.live_groups(rules, hidden, classes, {c.id: True for c in hidden}, echo) == {"g"}


def test_a_harness_pays_only_when_the_functions_it_drives_are_live():
    hidden = [Case("exC.f.a", "f", (1.0,)), Case("exC.f.b", "f", (2.0,)),
              Case("exC.sim.a", "f", (1,), harness="hetero.x:sim", uses=("f",)),
              Case("exC.sim.b", "f", (2,), harness="hetero.x:sim", uses=("f",))]
    answers = {"exC.f.a": encode(1.5), "exC.f.b": encode(2.5), "exC.sim.a": encode(10), "exC.sim.b": encode(20)}
    classes = scoring.answer_classes(hidden, answers)
    echo = {c.id: False for c in hidden}
    rules = scoring.group_rules("exC", hidden, classes, hidden, echo)
    only_simulator = {"exC.f.a": False, "exC.f.b": False, "exC.sim.a": True, "exC.sim.b": True}
    assert scoring.live_groups(rules, hidden, classes, only_simulator, echo) == set()
    with pytest.raises(scoring.CaseListError, match="must declare"):
        bare = [Case("exC.sim.c", "f", (3,), harness="hetero.x:sim")]
        scoring.group_rules("exC", bare, {"exC.sim.c": 0}, bare, {"exC.sim.c": False})


def test_a_case_list_the_answer_key_could_not_be_live_under_is_refused():
    hidden = [Case("exD.h.a", "h", (1.0,)), Case("exD.h.b", "h", (2.0,))]
    answers = {"exD.h.a": encode(True), "exD.h.b": encode(True)}
    classes = scoring.answer_classes(hidden, answers)
    with pytest.raises(scoring.CaseListError, match="two different answers"):
        scoring.group_rules("exD", hidden, classes, hidden, {c.id: False for c in hidden})


@pytest.mark.slow
@pytest.mark.parametrize("attack", nothing.ATTACKS)
def test_a_submission_that_computes_nothing_scores_zero(attack):
    with tempfile.TemporaryDirectory() as folder:
        data = grader.grade_submission(nothing.build(attack, Path(folder) / attack))
    earning = [(t["name"], t["score"]) for t in data["tests"] if t["score"] > 0]
    assert data["score"] == 0 and not earning, f"{attack} computes nothing but earned {data['score']}: {earning}"
    assert not [t for t in data["tests"] if t["name"].startswith("autograder failed")], data["output"][-2000:]
