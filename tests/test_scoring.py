"""Exact points and the live-function rule (autograder.core.scoring), by hand-checkable cases, and the
no-implementation corpus (autograder/fixtures/nothing/): each scores 0 through the native grader."""

from __future__ import annotations

import tempfile
from pathlib import Path

import pytest

from autograder.core import scoring
from autograder.core.manifest import EXERCISES
from autograder.fixtures import nothing
from autograder.runtime import feedback, grader
from hetero.checks import Case, encode


def test_split_cents_adds_up_exactly_and_follows_weights():
    assert scoring.split_cents(240, [1, 1, 2]) == [60, 60, 120]
    parts = scoring.split_cents(360, [1.0] * 7)  # 51.43 each: four get 52, three get 51
    assert sum(parts) == 360 and sorted(parts) == [51, 51, 51, 51, 52, 52, 52]
    assert scoring.split_cents(0, [1, 2]) == [0, 0]
    with pytest.raises(ValueError, match="positive sum"):
        scoring.split_cents(100, [0, 0])


def test_every_exercise_totals_exactly_its_points_and_all_total_100():
    from autograder.core.cases import hidden_cases, public_cases

    total = 0
    for ex in EXERCISES:
        cents = scoring.case_cents(ex.points, ex.public_share, public_cases(ex.id), hidden_cases(ex.id))
        assert sum(cents.values()) == scoring.to_cents(ex.points), ex.id
        total += sum(cents.values())
    assert total == 100 * scoring.CENTS


# (points, public_share, whether the exercise has public cases): a product that is inexact in floats, no
# public share, all public, no public cases at all, quarter points.
SPLIT_EDGES = [(7, 0.3, True), (10, 0.0, True), (10, 1.0, True), (6, 0.4, False), (2.5, 0.5, True)]


@pytest.mark.parametrize("points,share,has_public", SPLIT_EDGES)
def test_handout_and_notebook_state_the_split_the_grader_pays(points, share, has_public, tmp_path):
    """The one split (`scoring.exercise_cents`) is what case_cents pays and what the handout and the
    notebook intro say, also where a float product is inexact or the exercise has no public cases."""
    import dataclasses
    import shutil

    from autograder.authoring import release
    from autograder.core.manifest import BY_ID, ROOT, public_cases_in
    from autograder.exports import notebooks as nb

    ex = dataclasses.replace(BY_ID["ex01"], points=points, public_share=share)
    src = nb.load_sources("ex01")
    src = dataclasses.replace(src, exercise=ex, public=src.public if has_public else ())
    public_cents, hidden_cents = scoring.exercise_cents(points, share, has_public)
    cents = scoring.case_cents(points, share, src.public, src.hidden)
    assert sum(cents[c.id] for c in src.public) == public_cents
    assert sum(cents[c.id] for c in src.hidden) == hidden_cents == scoring.to_cents(points) - public_cents
    public_text, hidden_text = scoring.points_text(public_cents), scoring.points_text(hidden_cents)
    assert f"{public_text} from the public tests below, {hidden_text} from hidden tests." in nb.intro_markdown(src)
    solutions = tmp_path / "solutions"
    public_cases_in(solutions, ex.id).parent.mkdir(parents=True)
    shutil.copyfile(ROOT / "solutions" / ex.filename, solutions / ex.filename)
    if has_public:
        shutil.copyfile(public_cases_in(ROOT / "solutions", ex.id), public_cases_in(solutions, ex.id))
    else:
        public_cases_in(solutions, ex.id).write_text("CASES = []\n", encoding="utf-8")
    handout = release.exercise_section(ex, solutions)
    assert f"Grading: {public_text} points from the public cases below, {hidden_text} from hidden" in handout


def test_points_text_and_float_are_exact_decimals():
    assert scoring.points_text(240) == "2.4" and scoring.points_text(37) == "0.37" and scoring.points_text(600) == "6"
    assert scoring.cents_to_points(37) == 0.37 and repr(scoring.cents_to_points(10000)) == "100.0"
    with pytest.raises(ValueError, match="hundredths"):
        scoring.to_cents(0.001)


def _cases() -> tuple[list[Case], list[Case], dict[str, object]]:
    """f(x) = 2x: two hidden values, one hidden invalid case, one public case (answer 2.0)."""
    public = [Case("exA.f.one", "f", (1.0,), expect=2.0)]
    hidden = [
        Case("exA.f.three", "f", (3.0,)),
        Case("exA.f.five", "f", (5.0,)),
        Case("exA.f.bad", "f", (-1.0,), raises="ValueError"),
    ]
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
    hidden = [
        Case("exC.f.a", "f", (1.0,)),
        Case("exC.f.b", "f", (2.0,)),
        Case("exC.sim.a", "f", (1,), harness="hetero.x:sim", uses=("f",)),
        Case("exC.sim.b", "f", (2,), harness="hetero.x:sim", uses=("f",)),
    ]
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


def test_guessable_answers_are_bools_and_small_whole_numbers():
    assert scoring.guessable(encode(True)) and scoring.guessable(encode(3)) and scoring.guessable(encode(2.0))
    assert scoring.guessable(encode(-1)) and scoring.guessable(encode(float(scoring.GUESS_LIMIT)))
    assert not scoring.guessable(encode(scoring.GUESS_LIMIT + 1)) and not scoring.guessable(encode(0.5))
    assert not scoring.guessable(encode(float("inf"))) and not scoring.guessable(encode([1, 2]))


def test_chance_threshold_beats_a_constant_and_a_coin_at_one_percent():
    assert scoring.chance_threshold([]) == 0, "a group with nothing guessable keeps the two-answer rule alone"
    # Eight bool cases, five True and three False: a coin passes all eight with probability 1/256 (0.4 %),
    # seven or more with 9/256 (3.5 %), so only eight passes are evidence.
    assert scoring.chance_threshold([1] * 5 + [0] * 3) == 8
    # Two guessable cases among many (answers 1.0 and 2.0): a uniform pick passes both with probability
    # 1/4, never three (the other answers cannot be named blind): three passes are needed.
    assert scoring.chance_threshold([3, 4]) == 3
    # Threshold of a guess among three indices over eleven cases: P(Bin(11, 1/3) >= t) <= 1 %.
    t = scoring.chance_threshold([0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2])
    assert scoring._tail([1 / 3] * 11, t) <= scoring.GUESS_ALPHA < scoring._tail([1 / 3] * 11, t - 1), t


def test_a_guessable_group_needs_more_passes_than_a_guess():
    hidden = [Case(f"exE.b.{i}", "b", (float(i),)) for i in range(8)]
    answers = {c.id: encode(i % 3 != 0) for i, c in enumerate(hidden)}  # five True, three False
    classes = scoring.answer_classes(hidden, answers)
    echo = {c.id: False for c in hidden}
    guess = {c.id: scoring.guessable(answers[c.id]) for c in hidden}
    rules = scoring.group_rules("exE", hidden, classes, hidden, echo, guess)
    assert rules["b"].min_passed == 8
    lucky = {c.id: i in (0, 1, 2, 4, 5, 7) for i, c in enumerate(hidden)}  # a coin right on six, both answers
    assert scoring.live_groups(rules, hidden, classes, lucky, echo) == set(), (
        "six of eight bools right, True and False among them, is what a coin flip gets 14 % of the time"
    )
    assert scoring.live_groups(rules, hidden, classes, {c.id: True for c in hidden}, echo) == {"b"}
    few = hidden[:3]
    with pytest.raises(scoring.CaseListError, match="beating a guess"):
        scoring.group_rules("exE", few, classes, few, echo, guess)


def test_a_hidden_case_that_scales_a_public_answer_is_no_evidence():
    public = [(Case("exF.k.pub", "k", (80, 8, 2.0), expect=1280.0), encode(1280.0))]
    twin = Case("exF.k.twin", "k", (32, 8, 2.0))  # only the first argument changed: 1280 * 32 / 80
    assert scoring.scaled_twin(twin, encode(512.0), public)
    assert scoring.scaled_twin(twin, encode(1280.0), public), "an answer that ignores the changed argument"
    assert not scoring.scaled_twin(twin, encode(513.0), public)
    two_changed = Case("exF.k.two", "k", (32, 4, 2.0))
    assert not scoring.scaled_twin(two_changed, encode(256.0), public)
    assert not scoring.scaled_twin(Case("exF.k.bad", "k", (32, 8, 2.0), raises="ValueError"), None, public)


def _visible_text(data: dict) -> str:
    return "\n".join([data["output"]] + [t["output"] for t in data["tests"] if t.get("visibility") != "hidden"])


@pytest.mark.slow
def test_exit_status_exception_names_and_types_chosen_after_a_hidden_input_are_not_shown():
    from autograder.fixtures.nothing import exception_name_channel, type_channel

    with tempfile.TemporaryDirectory() as folder:
        texts = {
            attack: _visible_text(
                grader.grade_submission(nothing.build(attack, Path(folder) / attack), exercises=["ex01", "ex02"])
            )
            for attack in ("exit_status_signal", "exception_name_channel", "type_channel")
        }
    assert "status" not in texts["exit_status_signal"], (
        "the exit status was chosen by the student's code after it saw a hidden input (it encodes that input)"
    )
    shown = [n for n in exception_name_channel.NAMES if f"raised {n}" in texts["exception_name_channel"]]
    assert not shown, f"hidden-case feedback names exceptions the exercises do not require: {shown}"
    kinds = {type(v).__name__ for v in type_channel.VALUES}
    assert "your function returned a" not in texts["type_channel"].replace("returned a value", ""), (
        f"hidden-case feedback names the type the student's code picked (one of {sorted(kinds)})"
    )


@pytest.mark.slow
def test_output_shown_before_the_due_date_cannot_be_rewritten_during_hidden_cases():
    """The child's output reaches the grader through a pipe it drains: what was printed during the public
    cases cannot be truncated and written over with hidden arguments afterwards."""
    with tempfile.TemporaryDirectory() as folder:
        data = grader.grade_submission(
            nothing.build("rewrite_output", Path(folder) / "rewrite_output"), exercises=["ex01"]
        )
    assert "HIDDEN" not in _visible_text(data), "hidden arguments written during a hidden case are visible"


def test_hidden_feedback_shows_no_hint_written_for_one_case_with_a_number_in_it():
    cases = [
        Case("exG.f.a", "f", (1.0,), hint="divide by 8 bits per byte"),
        Case("exG.f.b", "f", (2.0,), hint="divide by 8 bits per byte"),
        Case("exG.f.neg", "f", (-1.0,), raises="ValueError", hint="x = -1 must raise ValueError naming x"),
        Case("exG.f.zero", "f", (0.0,), raises="ValueError", hint="check x and raise ValueError naming it"),
        Case("exG.f.inst", "f", (3.0,), hint="estimates 1.6, 1.4: instance 2"),
    ]
    shown = feedback.shown_hints(cases)
    assert shown["exG.f.a"] == shown["exG.f.b"] == "divide by 8 bits per byte", "a shared rule is shown"
    assert shown["exG.f.neg"] == "check x and raise ValueError naming it", (
        "a one-case hint that states the input ('x = -1') must give way to the function's general hint"
    )
    assert shown["exG.f.inst"] == "divide by 8 bits per byte", "a one-case hint that states the answer is not shown"
    assert shown["exG.f.zero"] == "check x and raise ValueError naming it", "a one-case hint without a numeral stays"


def test_no_hidden_case_hint_shown_states_one_of_its_own_inputs():
    import re

    from autograder.core.cases import hidden_cases, public_cases

    def numbers(value):
        if isinstance(value, (list, tuple)):
            return [n for v in value for n in numbers(v)]
        if isinstance(value, dict):
            return [n for v in value.values() for n in numbers(v)]
        return [value] if type(value) in (int, float) else []

    stated = []
    for ex in EXERCISES:
        cases = public_cases(ex.id) + hidden_cases(ex.id)
        count: dict[str, int] = {}
        for c in cases:
            count[c.hint] = count.get(c.hint, 0) + 1
        shown = feedback.shown_hints(cases)
        for case in hidden_cases(ex.id):
            text = shown[case.id]
            if not text or count.get(text, 0) >= 2:  # a rule shared by several cases singles out none of them
                continue
            inputs = numbers(list(case.args) + list(case.kwargs.values()))
            said = [float(n) for n in re.findall(r"(?<![\w.])-?\d+(?:\.\d+)?", text)]
            if any(abs(s - i) <= 1e-9 * max(1.0, abs(i)) for s in said for i in inputs):
                stated.append((case.id, text))
    assert not stated, f"hidden-case feedback would state the case's own input: {stated[:5]}"
