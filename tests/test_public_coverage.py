"""The public cases show every kind of mistake the hidden cases grade, and their hints are true (issue 31).

- Every category of every function's hidden cases (an invalid argument with the class of its value and the
  check it trips, a documented edge, a non-whole answer: `autograder.authoring.coverage`) is a category of
  one of that function's public cases, and docs/public_coverage.md is the current table of it.
- No surprise in grading: a declared mistake (a wrong fixture) that fails any hidden case of a function
  fails a public case of that function too.
- Hints that are true: a failed public case names a known mistake only when that mistake's output on the
  case is what was returned (by construction, `hetero.checks.known_mistake`); here, every declared mistake is
  named ALONE by at least one public case it fails, so the public tests can tell each one from the others,
  and no public case names a mistake the fixture failing it does not have.
- Inputs are read-only: a submission that changes its caller's list fails, publicly and in grading.
"""

from __future__ import annotations

import pytest

from autograder.authoring import coverage
from autograder.authoring.wrong_fixtures import BY_NAME, FIXTURES
from autograder.core.cases import expected_values, hidden_cases, public_cases
from autograder.core.manifest import EXERCISES
from hetero.checks import INPUT_MUTATED, judge, run_call
from hetero.impl import load_module_from_path

NAMES = [f.name for f in FIXTURES]
# Mistakes that no input of their function tells apart from another declared one, each with the reason.
INDISTINGUISHABLE = {
    "ex08_largest_best": "the layer time never increases with d, so the largest d with the minimal time is always "
    "active_experts - min_immediate, which is also ex08_deferred_free's answer (its layer time falls with every "
    "deferred expert); best_deferred cases name both, and ex08_deferred_free is told apart on layer_time_s",
}


@pytest.fixture(scope="module")
def table():
    return coverage.all_rows()


def test_every_hidden_category_has_a_public_case(table):
    missing = [f"{r.exercise}.{r.function}: {c}" for r in table for c in sorted(r.missing)]
    assert not missing, (
        "kinds of mistakes only hidden cases show (add a public case of the same function and category to "
        "solutions/tests/public_exNN.py):\n" + "\n".join(missing)
    )


def test_every_function_has_hidden_and_public_categories(table):
    assert {(r.exercise, r.function) for r in table} == {(e.id, f) for e in EXERCISES for f in e.functions}
    empty = [f"{r.exercise}.{r.function}" for r in table if not r.hidden or not r.public]
    assert not empty, f"functions without hidden or public categories: {empty}"
    invalid = [f"{r.exercise}.{r.function}" for r in table if not any(c.startswith("invalid ") for c in r.hidden)]
    assert not invalid, f"functions whose hidden cases never check invalid input: {invalid}"


def test_the_docs_table_is_current(table):
    stored = coverage.DOC.read_text(encoding="utf-8")
    assert stored == coverage.render(table), (
        f"{coverage.DOC} is stale: run `python -m autograder.authoring.coverage --write`"
    )


def test_categories_of_invalid_inputs_name_the_argument_and_the_check():
    key = coverage._key("ex01")
    by_id = {c.id: c for c in hidden_cases("ex01")}
    nan = coverage.categories(by_id["ex01.usd_per_gb.invalid_capacity_nan"], key)
    zero = coverage.categories(by_id["ex01.usd_per_gb.invalid_price_zero"], key)
    assert nan == {"invalid capacity_gb: not finite (ARG must be a finite number > N)"}, nan
    assert zero == {"invalid price_usd: at the limit (ARG must be a finite number > N)"}, zero
    negative = coverage.categories(by_id["ex01.usd_per_gb.invalid_capacity_negative"], key)
    assert negative == {"invalid capacity_gb: out of range (ARG must be a finite number > N)"}, negative
    key3 = coverage._key("ex03")
    cases3 = {c.id: c for c in hidden_cases("ex03")}
    duplicate = coverage.categories(cases3["ex03.effective_capacity_blocks.duplicate_in_one_instance"], key3)
    negative = coverage.categories(cases3["ex03.effective_capacity_blocks.negative_id"], key3)
    assert duplicate != negative, "two checks of one argument are two categories"


def test_an_unknown_kind_is_refused():
    from dataclasses import replace

    case = replace(public_cases("ex01")[0], kind="sideways")
    with pytest.raises(ValueError, match="unknown kind 'sideways'"):
        coverage.categories(case, coverage._key("ex01"))


def _module(name, wrong_dir):
    fixture = BY_NAME[name]
    return load_module_from_path(wrong_dir / name / fixture.filename, f"_a2_coverage_{name}")


def _failed(cases, module, stored):
    return [
        (c, v)
        for c in cases
        if not (
            v := judge(
                c,
                run_call(c, module),
                None if c.raises else stored[c.id]["expect"],
                {k: tuple(x) for k, x in stored[c.id]["mistakes"].items()},
            )
        ).passed
    ]


@pytest.mark.parametrize("name", NAMES)
def test_no_mistake_is_caught_only_in_grading(name, wrong_dir):
    """Each function whose hidden cases the mistake fails (simulator cases aside) has a public case it fails."""
    fixture = BY_NAME[name]
    module, stored = _module(name, wrong_dir), expected_values(fixture.exercise)
    hidden = [c for c in hidden_cases(fixture.exercise) if not c.harness]
    surprised = sorted({c.func for c, _ in _failed(hidden, module, stored)})
    public = public_cases(fixture.exercise)
    unseen = [f for f in surprised if not _failed([c for c in public if c.func == f], module, stored)]
    assert not unseen, f"{name} loses points on hidden cases of {unseen} but passes all their public cases"


@pytest.mark.parametrize("name", NAMES)
def test_the_public_tests_name_each_mistake_alone_somewhere(name, wrong_dir):
    fixture = BY_NAME[name]
    module, stored = _module(name, wrong_dir), expected_values(fixture.exercise)
    failed = _failed(public_cases(fixture.exercise), module, stored)
    assert failed, f"{name} passes every public case"
    wrong_names = [
        (c.id, v.known_mistake) for c, v in failed if v.known_mistake and fixture.mistake not in v.known_mistake
    ]
    assert not wrong_names, f"{name}: public cases name a mistake it does not have: {wrong_names}"
    alone = [c.id for c, v in failed if v.known_mistake == f"Your result matches a known mistake: {fixture.mistake}"]
    type_only = [c.id for c, v in failed if "only its type is wrong" in v.message]
    mutated = [c.id for c, v in failed if "in place" in v.message]
    if name in INDISTINGUISHABLE:
        assert not (alone or type_only or mutated), f"{name} is now named alone: drop it from INDISTINGUISHABLE"
        return
    assert alone or type_only or mutated, (
        f"{name}: no public case it fails names it alone (each names it among others, or gives the hint: "
        f"{[(c.id, v.advice[:80]) for c, v in failed][:4]}); add a case where its output differs from every "
        "other declared mistake's"
    )


def test_a_tuple_for_the_documented_dict_says_the_values_are_right(wrong_dir):
    module = _module("ex01_tuple_not_dict", wrong_dir)
    case = next(c for c in public_cases("ex01") if c.id == "ex01.per_thousand_usd.a100")
    verdict = judge(case, run_call(case, module))
    assert not verdict.passed and "the value is right, only its type is wrong" in verdict.message, verdict.message
    assert "'tflops', 'bandwidth_gb_per_s', 'capacity_gb'" in verdict.message and "differs too" not in verdict.message


def test_integer_division_where_a_float_is_documented_fails_publicly(wrong_dir):
    module = _module("ex09_integer_division", wrong_dir)
    case = next(c for c in public_cases("ex09") if c.id == "ex09.ops_per_cycle_per_core.amx")
    verdict = judge(case, run_call(case, module))
    assert not verdict.passed and "expected a Python float (2048.0), got int 2048" in verdict.message, verdict.message
    assert "the value is right, only its type is wrong" in verdict.message and "`//`" in verdict.message


@pytest.mark.parametrize("name", ["ex03_sorts_in_place", "ex03_writes_hit_blocks"])
def test_a_changed_input_fails_in_public_and_in_grading(name, wrong_dir):
    module = _module(name, wrong_dir)
    for kind, cases in (("public", public_cases("ex03")), ("hidden", hidden_cases("ex03"))):
        outcomes = [run_call(c, module) for c in cases if not c.harness]
        assert any(o.error_type == INPUT_MUTATED for o in outcomes), f"{name}: no {kind} case sees the change"
    case = next(c for c in public_cases("ex03") if c.id == "ex03.ttft_dispatch.global_pool_tie")
    if name == "ex03_writes_hit_blocks":
        verdict = judge(case, run_call(case, module))
        assert "changed its argument hit_blocks in place (it was [0, 8, 0, 0], after the call it is [8, 8, 8, 8])" in (
            verdict.message
        ), verdict.message
        assert case.args[0] == [0, 8, 0, 0], "the case's own arguments are never the ones the function receives"


@pytest.mark.parametrize("ex_id", [e.id for e in EXERCISES])
def test_public_and_hidden_case_ids_are_distinct(ex_id):
    """One id names one case: the stored values and known mistakes are keyed by it."""
    from autograder.core.cases import hidden_cases_from_source

    shared = {c.id for c in public_cases(ex_id)} & {c.id for c in hidden_cases_from_source(ex_id)}
    assert not shared, f"ids of both a public and a hidden case: {sorted(shared)}"


def test_hidden_feedback_on_a_changed_input_is_fixed_words():
    """The child's message names the hidden arguments' values: hidden-case feedback shows none of it."""
    from autograder.runtime.feedback import hidden_message
    from hetero.checks import Outcome

    case = next(c for c in hidden_cases("ex03") if c.id == "ex03.duplication_factor.unsorted_lists")
    outcome = Outcome(
        None, INPUT_MUTATED, "your function changed its argument instance_blocks in place (it was [[9, 2, 5]]"
    )
    text = hidden_message(case, False, "", outcome, "", None)
    assert text.startswith("your function changed one of its input arguments in place") and "9, 2, 5" not in text


@pytest.mark.parametrize("ex_id", [e.id for e in EXERCISES])
def test_no_hidden_case_takes_a_public_cases_inputs(ex_id):
    """A hidden case with a public case's inputs is answered by a table of the public answers (the
    `public_table_*` submissions of autograder/fixtures/nothing/), trivial answers included; and a hidden
    id inside a public one would show the hidden case's name to students."""
    import json

    from autograder.core.cases import hidden_cases_from_source
    from hetero.checks import encode

    def key(c):
        return json.dumps([c.func, encode(tuple(c.args)), encode(dict(c.kwargs))])

    public = {key(c): c.id for c in public_cases(ex_id)}
    hidden = hidden_cases_from_source(ex_id)
    shared = [f"{c.id} = {public[key(c)]}" for c in hidden if not c.raises and key(c) in public]
    assert not shared, f"hidden cases with a public case's inputs: {shared}"
    inside = [(p.id, h.id) for p in public_cases(ex_id) for h in hidden if h.id in p.id]
    assert not inside, f"public ids that contain a hidden id: {inside}"
