"""Which passed cases pay, and scoring one function's cases inside a notebook kernel.

The "live function" rule (the full statement is in `autograder.core.scoring`, which builds the rules from
the answer key): a passed case pays only when its group (one exercise function, or one harness) has
shown on hidden inputs that the submission computes. It lives here, in `hetero`, because the nbgrader
and Otter test cells run in a notebook kernel that has `hetero` and not the grader; the native grader
imports the same functions, so all three routes pay the same cases.

`score_cases` is what an exported test cell calls: it runs each case in this process under a per-case
time limit (SIGALRM: a loop costs that case, "stopped after N s", and the cell goes on), judges it with
`hetero.checks.judge`, applies the rule and returns the points earned in hundredths.
"""

from __future__ import annotations

import contextlib
import signal
import sys
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from hetero.checks import Case, Outcome, judge, run_call

CENTS = 100
UNPAID_NOTE = (
    "(Passed, but not paid yet: this function's points count once it also returns enough correct, "
    "different answers on the hidden inputs.)"
)
TWO_ANSWERS = "two_answers"
VALID_AND_INVALID = "valid_and_invalid"


def group_key(case: Case) -> str:
    """The group a case's payment depends on: its harness, else its function."""
    return f"harness:{case.harness}" if case.harness else case.func


def live_groups(
    rules: Mapping[str, Any],
    hidden: Iterable[Case],
    classes: Mapping[str, int],
    passed: Mapping[str, bool],
    echo: Mapping[str, bool],
) -> set[str]:
    """The groups whose passed hidden cases show the submission computes.

    rules: group -> object with `.rule` (TWO_ANSWERS | VALID_AND_INVALID), `.uses` (groups that must
    be live too) and `.min_passed` (how many hidden valid-input, non-echo cases must pass: more than a
    guess reaches, for a group whose answers can be guessed); classes: case id -> answer class (-1 for a case that must raise); echo: case id ->
    whether its answer equals one of its arguments (no evidence).
    """
    evidence: dict[str, set[int]] = {key: set() for key in rules}
    passed_valid = {key: False for key in rules}
    passed_invalid = {key: False for key in rules}
    counted = {key: 0 for key in rules}
    for case in hidden:
        if not passed.get(case.id):
            continue
        key = group_key(case)
        if case.raises:
            passed_invalid[key] = True
            continue
        passed_valid[key] = True
        if not echo.get(case.id):
            evidence.setdefault(key, set()).add(classes[case.id])
            counted[key] = counted.get(key, 0) + 1
    live = set()
    for key, rule in rules.items():
        if rule.rule == TWO_ANSWERS:
            enough = counted.get(key, 0) >= getattr(rule, "min_passed", 0)
            ok = len(evidence.get(key, set())) >= 2 and enough
        else:
            ok = passed_valid.get(key, False) and passed_invalid.get(key, False)
        if ok:
            live.add(key)
    return {key for key in live if all(u in live for u in rules[key].uses)}


def paid(cases: Iterable[Case], passed: Mapping[str, bool], live: set[str]) -> dict[str, bool]:
    """Case id -> whether its share is paid: it passed and its group is live."""
    return {c.id: bool(passed.get(c.id)) and group_key(c) in live for c in cases}


# ---------------------------------------------------------------------------------------------
# Scoring in a notebook kernel.


@dataclass(frozen=True)
class Rule:
    rule: str
    uses: tuple[str, ...] = ()
    min_passed: int = 0  # passed hidden valid-input, non-echo cases needed (autograder.core.scoring.chance_threshold)


@dataclass(frozen=True)
class Entry:
    """One case of an exported test cell, with what the grader stored for it."""

    case: Case
    hidden: bool
    cents: int  # its share (0 for a case present only to decide whether a used group is live)
    answer_class: int
    echo: bool = False
    expect: Any = None  # encoded answer-key value (hidden cases); public cases carry `case.expect`
    mistakes: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class CellScore:
    cents: int
    max_cents: int
    lines: tuple[str, ...]
    paid_ids: frozenset[str] = frozenset()

    @property
    def points(self) -> float:
        return round(self.cents / CENTS, 2)


_PAID: dict[str, frozenset[str]] = {}  # "exNN:group" -> paid case ids, kept for the tests that follow


def remember_paid(token: str, ids: frozenset[str]) -> None:
    """Keep the paid case ids of one scored group in this process (Otter runs each test in a fresh copy
    of the notebook's globals, so the tests after the one that scored the group find them here)."""
    _PAID[token] = frozenset(ids)


def recall_paid(token: str) -> frozenset[str] | None:
    """The paid case ids a test earlier in this process left for `token`, or None."""
    return _PAID.get(token)


class _CaseTimeout(Exception):
    pass


def run_limited(case: Case, module: Any, timeout_s: float) -> Outcome:
    """`run_call` under a wall-clock limit (SIGALRM; main thread only, as in a notebook kernel)."""

    def stop(signum, frame):
        raise _CaseTimeout()

    previous = signal.signal(signal.SIGALRM, stop)
    signal.setitimer(signal.ITIMER_REAL, timeout_s)
    try:
        return run_call(case, module)
    except _CaseTimeout:
        return Outcome(None, "TimeoutError", f"stopped after {timeout_s:g} s (the per-case time limit)")
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def score_cases(
    module: Any, entries: Sequence[Entry], rules: Mapping[str, Rule], timeout_s: float, show_hidden: bool = False
) -> CellScore:
    """Run, judge and pay `entries` on `module`; lines say what passed (hidden cases in fixed words)."""
    with contextlib.redirect_stderr(sys.stdout):  # nbgrader scores a cell that writes to stderr 0
        return _score(module, entries, rules, timeout_s, show_hidden)


def _score(
    module: Any, entries: Sequence[Entry], rules: Mapping[str, Rule], timeout_s: float, show_hidden: bool
) -> CellScore:
    passed: dict[str, bool] = {}
    lines: list[str] = []
    for n, entry in enumerate(entries, start=1):
        outcome = run_limited(entry.case, module, timeout_s)
        verdict = judge(
            entry.case,
            outcome,
            entry.expect if entry.hidden else None,
            {k: tuple(v) for k, v in entry.mistakes.items()},
        )
        passed[entry.case.id] = verdict.passed
        if entry.cents == 0:
            continue
        if not entry.hidden or show_hidden:
            lines.append(f"[{'passed' if verdict.passed else 'FAILED'}] {verdict.message}")
        else:
            state = "passed" if verdict.passed else ("not implemented yet" if verdict.not_implemented else "failed")
            lines.append(f"hidden case {n} of {len(entries)}: {state}")
    hidden_cases = [e.case for e in entries if e.hidden]
    live = live_groups(
        rules, hidden_cases, {e.case.id: e.answer_class for e in entries}, passed, {e.case.id: e.echo for e in entries}
    )
    pays = paid([e.case for e in entries], passed, live)
    cents = sum(e.cents for e in entries if pays[e.case.id])
    if any(passed[e.case.id] and not pays[e.case.id] and e.cents for e in entries):
        lines.append(UNPAID_NOTE)
    return CellScore(
        cents, sum(e.cents for e in entries), tuple(lines), frozenset(cid for cid, ok in pays.items() if ok)
    )
