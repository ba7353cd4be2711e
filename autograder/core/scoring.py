"""Points: exact decimal shares of each case, and the rule that decides which passed cases pay.

Every route that scores a submission (the native grader, the nbgrader and Otter test cells) uses this
module, so a submission earns the same points in all three.

Exact points. Each case's share is a whole number of hundredths of a point ("centipoints"). An
exercise's `points * public_share` is split over its public cases, the rest over its hidden cases, in
proportion to `Case.points`, by the largest-remainder method: the shares of a group add up exactly to
the group's total and the exercise totals add up to exactly 100, with no float residue.

Which passed cases pay (the "live function" rule). A submission that computes nothing must earn
nothing: a constant, a table of the released public answers, or raising the required exception for
every input. So a case pays only when it passes AND its group is live:
- a group is the cases of one exercise function (non-harness cases, by `Case.func`), or the cases of one
  harness (`Case.harness`: a `hetero` simulator driven by the submitted functions);
- a function whose hidden valid-input cases have at least two distinct answers (by the case's own
  tolerance) is live when the passed hidden valid-input cases show two distinct answers; a case whose
  answer equals one of its own arguments (an "echo" case: 1 cycle per instruction, a batch whose
  tokens all reach the shared expert) is no evidence, since returning the argument passes it; nor is a
  hidden case that is a "scaled twin" of a released public case (same function, one argument changed,
  answer equal to the public answer times that argument's ratio, its inverse or 1): scaling the copied
  public answer passes it;
- a function without two such answers (a validator returning None, an identity on valid input) is live
  when it passes at least one hidden valid-input case and at least one hidden invalid-input case;
- a harness group is live under the same two-answer rule, and only when every function it declares in
  `Case.uses` is live too (a simulator produces varied outputs even around a constant policy);
- a group some of whose hidden answers can be guessed without computing (a bool, or a whole number of
  magnitude at most GUESS_LIMIT: an index among a few instances, a count of deferred experts, a ratio
  of 1.0) must also pass `min_passed` hidden valid-input, non-echo cases: more than an input-blind guess
  of those answers would pass with probability above GUESS_ALPHA (`chance_threshold`). Two distinct
  answers alone are no evidence there: a coin flip is right on both a True and a False case of eight
  almost surely.
A constant passes cases of one answer only; a public-answer table fails the hidden cases (which it has
never seen); raising everywhere passes no valid-input case; guessing a bool or a small index passes
about as many cases as chance allows. Which rule applies to a group is decided from the answer key
when `python -m autograder expected` runs (`group_rules`), which refuses a case list under which the
answer key itself could not be live.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from hetero.checks import Case, compare, decode
from hetero.grading import CENTS, TWO_ANSWERS, UNPAID_NOTE, VALID_AND_INVALID, Rule, group_key, live_groups, paid

__all__ = [
    "CENTS",
    "GUESS_ALPHA",
    "GUESS_LIMIT",
    "TWO_ANSWERS",
    "UNPAID_NOTE",
    "VALID_AND_INVALID",
    "Rule",
    "group_key",
    "live_groups",
    "paid",
    "payment",
]
GUESS_LIMIT = 16  # whole numbers up to this magnitude (and bools) are answers a student can name blind
GUESS_ALPHA = 0.01  # a guess may make a group live with at most this probability


def split_cents(total_cents: int, weights: Sequence[float]) -> list[int]:
    """`total_cents` split in proportion to `weights` (largest remainder); the parts add up exactly."""
    if not weights:
        return []
    if any(w < 0 for w in weights) or sum(weights) <= 0:
        raise ValueError(f"case points must be >= 0 with a positive sum, got {list(weights)}")
    scale = total_cents / sum(weights)
    raw = [w * scale for w in weights]
    parts = [int(r) for r in raw]
    order = sorted(range(len(raw)), key=lambda i: (-(raw[i] - parts[i]), i))
    for i in order[: total_cents - sum(parts)]:
        parts[i] += 1
    return parts


def to_cents(points: float) -> int:
    cents = round(points * CENTS)
    if abs(cents - points * CENTS) > 1e-6:
        raise ValueError(f"{points} points is not a whole number of hundredths")
    return cents


def exercise_cents(points: float, public_share: float, has_public: bool) -> tuple[int, int]:
    """(public, hidden) centipoints of one exercise: `points * public_share` from its public cases (none
    when it has none), the rest from its hidden cases. The handout and the notebooks state this split."""
    total = to_cents(points)
    public_total = to_cents(points * public_share) if has_public else 0
    return public_total, total - public_total


def case_cents(points: float, public_share: float, public: Sequence[Case], hidden: Sequence[Case]) -> dict[str, int]:
    """Case id -> share in centipoints for one exercise (public share first, then hidden)."""
    public_total, hidden_total = exercise_cents(points, public_share, bool(public))
    shares: dict[str, int] = {}
    for group, cents in ((public, public_total), (hidden, hidden_total)):
        for case, part in zip(group, split_cents(cents, [c.points for c in group]), strict=False):
            shares[case.id] = part
    return shares


@dataclass(frozen=True)
class Payment:
    """What one exercise's case outcomes earn: each case's share, the live groups, the cases that pay."""

    shares: Mapping[str, int]  # case id -> centipoints (`case_cents`)
    live: frozenset[str]  # the groups shown to compute (`live_groups`)
    pays: Mapping[str, bool]  # case id -> passed and its group live (`paid`)

    @property
    def cents(self) -> int:
        return sum(self.shares[cid] for cid, ok in self.pays.items() if ok)


def payment(
    points: float,
    public_share: float,
    public: Sequence[Case],
    hidden: Sequence[Case],
    data: Mapping[str, Any],
    passed: Mapping[str, bool],
) -> Payment:
    """Which of one exercise's cases pay and what, from which passed (`passed`: case id -> bool).

    data: the exercise's stored answer key (`autograder/expected/exNN.json`: each case's answer class
    and echo flag, each group's rule). The grader pays a submission through this function, and the
    stored wrong-fixture outcomes are scored through it under any points (`autograder.authoring.wrong_scores`).
    """
    entries = data["cases"]
    rules = {key: rule_from_data(rule) for key, rule in data["rules"].items()}
    classes = {cid: entries[cid]["class"] for cid in entries}
    echo = {cid: bool(entries[cid].get("echo")) for cid in entries}
    live = live_groups(rules, hidden, classes, passed, echo)
    return Payment(
        case_cents(points, public_share, public, hidden), frozenset(live), paid([*public, *hidden], passed, live)
    )


def points_text(cents: int) -> str:
    """Centipoints as the decimal shown to people: 2.4, 0.37, 6."""
    whole, frac = divmod(cents, CENTS)
    return f"{whole}" if frac == 0 else f"{whole}.{frac:02d}".rstrip("0")


def cents_to_points(cents: int) -> float:
    """Centipoints as the float results.json carries; round() gives the shortest decimal repr."""
    return round(cents / CENTS, 2)


# ---------------------------------------------------------------------------------------------
# Answer classes and group rules (computed from the answer key by `python -m autograder expected`).


def answer_classes(cases: Sequence[Case], answers: Mapping[str, Any]) -> dict[str, int]:
    """Case id -> class number: cases of one group with the same answer share it.

    `answers[case_id]` is the encoded expected value, or None for a case that must raise. Raising
    cases get class -1 (one class: "raises"); values are compared with the case's tolerance.
    """
    classes: dict[str, int] = {}
    seen: dict[str, list[tuple[int, Any, Case]]] = {}
    for case in cases:
        if case.raises:
            classes[case.id] = -1
            continue
        value = decode(answers[case.id])
        reps = seen.setdefault(group_key(case), [])
        for number, other, other_case in reps:
            tol_r, tol_a = max(case.rel_tol, other_case.rel_tol), max(case.abs_tol, other_case.abs_tol)
            if _same(other, value, tol_r, tol_a):
                classes[case.id] = number
                break
        else:
            classes[case.id] = len(reps)
            reps.append((len(reps), value, case))
    return classes


def echoes(case: Case, answer: Any) -> bool:
    """Whether the encoded `answer` equals one of the case's own scalar arguments (returning it passes)."""
    if case.raises:
        return False
    value = decode(answer)
    if type(value) not in (int, float, bool, str):
        return False
    inputs = list(case.args) + list(case.kwargs.values())
    for arg in inputs:
        if type(arg) in (int, float) and type(value) in (int, float):  # 8 (an int batch) echoes as 8.0
            if math.isclose(arg, value, rel_tol=max(case.rel_tol, 1e-12), abs_tol=case.abs_tol):
                return True
        elif type(arg) is type(value) and arg == value:
            return True
    return False


def _number(value: Any) -> bool:
    return type(value) in (int, float) and math.isfinite(value) and value != 0


def scaled_twin(case: Case, answer: Any, public: Sequence[tuple[Case, Any]]) -> bool:
    """Whether the encoded `answer` of hidden `case` follows from a public case's answer by scaling.

    `public` holds (public case, encoded answer). A twin has the same function and keyword names and
    differs in exactly one positional or keyword argument, both numbers; the answer is the public
    answer times (hidden argument / public argument) ** e for e in -1, 0, 1.
    """
    if case.raises or case.harness:
        return False
    value = decode(answer)
    if not _number(value):
        return False
    here = list(case.args) + [case.kwargs[k] for k in sorted(case.kwargs)]
    for other, other_answer in public:
        if (
            other.func != case.func
            or other.harness
            or other.raises
            or len(other.args) != len(case.args)
            or sorted(other.kwargs) != sorted(case.kwargs)
        ):
            continue
        there = list(other.args) + [other.kwargs[k] for k in sorted(other.kwargs)]
        differ = [i for i, (a, b) in enumerate(zip(here, there, strict=False)) if type(a) is not type(b) or a != b]
        if len(differ) != 1 or not (_number(here[differ[0]]) and _number(there[differ[0]])):
            continue
        base = decode(other_answer)
        if not _number(base):
            continue
        ratio = here[differ[0]] / there[differ[0]]
        for scaled in (base * ratio, base / ratio, base):
            if math.isclose(scaled, value, rel_tol=max(case.rel_tol, 1e-12), abs_tol=case.abs_tol):
                return True
    return False


def _same(a: Any, b: Any, rel_tol: float, abs_tol: float) -> bool:
    try:
        return compare(a, b, rel_tol, abs_tol) is None and compare(b, a, rel_tol, abs_tol) is None
    except TypeError:
        return False


def guessable(answer: Any) -> bool:
    """Whether the encoded `answer` is one a guess can name without computing (a bool, a small whole number)."""
    value = decode(answer)
    if type(value) is bool:
        return True
    return (
        type(value) in (int, float) and math.isfinite(value) and float(value).is_integer() and abs(value) <= GUESS_LIMIT
    )


def _tail(probabilities: Sequence[float], at_least: int) -> float:
    """P(at least `at_least` successes) of independent trials with these success probabilities."""
    dist = [1.0]
    for p in probabilities:
        dist = [a * (1 - p) + b * p for a, b in zip(dist + [0.0], [0.0] + dist, strict=False)]
    return sum(dist[at_least:])


def chance_threshold(guess_classes: Sequence[int], alpha: float = GUESS_ALPHA) -> int:
    """How many passed cases a group needs so that an input-blind guess of its guessable answers reaches
    that many with probability at most `alpha`.

    `guess_classes` holds the answer class of each guessable hidden valid-input, non-echo case. The
    guesses modelled: the best constant (passes the largest class), an independent uniform pick among
    the guessable answers, and a pick in proportion to how often each occurs (the other cases, whose
    answers cannot be named blind, pass by chance with probability 0). 0 when nothing is guessable.
    """
    if not guess_classes:
        return 0
    counts = {c: guess_classes.count(c) for c in set(guess_classes)}
    models = ([1 / len(counts)] * len(guess_classes), [counts[c] / len(guess_classes) for c in guess_classes])
    need = max(counts.values()) + 1
    while any(_tail(m, need) > alpha for m in models):
        need += 1
    return need


class CaseListError(ValueError):
    """A case list under which even the answer key could not earn every point."""


def rule_from_data(data: Mapping[str, Any]) -> Rule:
    """A rule as `python -m autograder expected` stores it."""
    return Rule(data["rule"], tuple(data["uses"]), int(data.get("min_passed", 0)))


def group_rules(
    ex_id: str,
    hidden: Sequence[Case],
    classes: Mapping[str, int],
    all_cases: Sequence[Case],
    echo: Mapping[str, bool],
    guess: Mapping[str, bool] | None = None,
) -> dict[str, Rule]:
    """Group key -> rule for one exercise; raises CaseListError when a group could never be live.

    guess: case id -> whether its answer is `guessable` (default: none is).
    """
    rules: dict[str, Rule] = {}
    groups = sorted({group_key(c) for c in all_cases})
    for key in groups:
        valid = {classes[c.id] for c in hidden if group_key(c) == key and not c.raises and not echo[c.id]}
        invalid = [c for c in hidden if group_key(c) == key and c.raises]
        members = [c for c in all_cases if group_key(c) == key]
        uses = tuple(sorted({u for c in members for u in c.uses}))
        if key.startswith("harness:"):
            if not uses:
                raise CaseListError(
                    f"{ex_id}: harness cases {key[8:]} must declare the functions they drive (Case.uses)"
                )
            unknown = [u for u in uses if u not in groups]
            if unknown:
                raise CaseListError(f"{ex_id}: {key[8:]} uses {unknown}, which have no cases of their own")
        any_valid = [c for c in hidden if group_key(c) == key and not c.raises]
        evidence = [c for c in hidden if group_key(c) == key and not c.raises and not echo[c.id]]
        need = chance_threshold([classes[c.id] for c in evidence if guess and guess.get(c.id)])
        if len(valid) >= 2 and need > len(evidence):
            raise CaseListError(
                f"{ex_id}: {key} has {len(evidence)} hidden valid-input cases that are no echo, "
                f"but beating a guess of its guessable answers needs {need} passed"
            )
        if len(valid) >= 2:
            rules[key] = Rule(TWO_ANSWERS, uses, need)
        elif any_valid and invalid and not key.startswith("harness:"):
            rules[key] = Rule(VALID_AND_INVALID, uses)
        else:
            raise CaseListError(
                f"{ex_id}: {key} needs hidden valid-input cases with two different answers (or, "
                "for a function with a single answer, hidden valid and invalid cases): "
                f"it has {len(valid)} distinct hidden answer(s) and {len(invalid)} invalid case(s)"
            )
    return rules
