"""Which kinds of mistakes the public cases can show, next to the kinds the hidden cases grade.

A student whose code passes every public case must not lose points in grading for a *kind* of mistake the
public tests never exercised (issue 31: validating only the first argument, `round` for floor, `//` for
`/`, a tie rule an off-the-shelf routine breaks the other way all passed publicly and cost points hidden).
So every case has categories, and for each function every category of its hidden cases must be a category
of one of its public cases (tests/test_public_coverage.py); the hidden cases keep their distinctive
values, the public ones show the kind.

The categories of one case (`categories`):
- a valid input: "value" (every valid case also checks the return type exactly: an int where a float is
  documented is a type mistake, `hetero.checks`), "fractional" when the answer key returns a float that is
  not a whole number (integer division is caught only there), plus the case's declared `kind` when it
  isolates a documented edge ("tie", "rounding", "below one", ... `KINDS`);
- an invalid input: "invalid <argument>: <what is wrong with it> (<which check>)", computed by running the
  answer key: the argument is the parameter its ValueError names, what is wrong is the offending value's
  class (not finite, a bool, not an int, not a tensor, exactly at the limit its rule names (0 for "> 0",
  1 for "in [0, 1)"), else out of range), and the check is the answer
  key's `raise` statement that fired (its message with the values taken out), so a rule checked apart
  (a duplicate block id and a negative one) is a category of its own;
- a simulator (harness) case: none here. Its public counterpart is the lecture driver, which runs the same
  simulator on the lecture's configuration and flags any figure off the answer key's (`hetero.reference`).

`python -m autograder.authoring.coverage [--write]` prints the table per exercise (docs/public_coverage.md
holds it; `--write` rewrites that file, and the test checks it is current).
"""

from __future__ import annotations

import argparse
import inspect
import math
import re
import sys
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from autograder.core.cases import hidden_cases_from_source, public_cases
from autograder.core.manifest import BY_ID, EXERCISES, ROOT
from hetero.checks import Case
from hetero.harness import expand
from hetero.impl import load_module_from_path

DOC = ROOT / "docs" / "public_coverage.md"

# The declared kinds of valid cases (Case.kind), each a documented edge a plausible mistake gets wrong.
KINDS = {
    "below one": "a valid value in (0, 1): the rule is > 0, not >= 1",
    "smallest valid": "the documented minimum itself (a count of 1, 0 where >= 0 is allowed, the fewest samples)",
    "largest valid": "the documented maximum itself (k = K, deferred = active experts, exactly line rate)",
    "zero result": "an answer of 0 (nothing held, nothing to move, nothing measured)",
    "rounding": "a quotient whose floor differs from round() (fraction >= 0.5), or an exact multiple",
    "tie": "equal values ordered by the documented tie rule, where a library routine's own order differs",
    "tolerance": "values within a documented tolerance of each other, or where adding it changes nothing",
    "strict boundary": "a value exactly on a strict or non-strict comparison (< vs <=)",
    "dtype": "a float64 input whose dtype the result must keep",
    "default argument": "an optional argument left at its documented default",
    "infinity allowed": "an infinite value the docstring allows (free transfers)",
    "huge values": "finite values near the float maximum (a sum of them overflows)",
    "carry": "the deferred output carried from the previous layer",
    "last layer": "the model's last layer, which defers nothing",
    "mode": "a mode other than the one under study ('full', skip on the last layer)",
    "above one": "a ratio above 1 the docstring allows (a measurement above the peak)",
    "skip on the last layer": "skipping, which still applies on the last layer (only deferral cannot)",
}
FRACTIONAL = "fractional"  # computed, never declared: a float answer that is not a whole number


@dataclass(frozen=True)
class Row:
    """One function of one exercise: its hidden categories, which public ones cover them, which do not."""

    exercise: str
    function: str
    hidden: frozenset[str]
    public: frozenset[str]

    @property
    def missing(self) -> frozenset[str]:
        return self.hidden - self.public


def _key(ex_id: str) -> Any:
    return load_module_from_path(ROOT / "solutions" / BY_ID[ex_id].filename, f"_a2_coverage_key_{ex_id}")


def _flat(value: Any) -> Iterable[Any]:
    if isinstance(value, dict):
        for v in value.values():
            yield from _flat(v)
    elif isinstance(value, (list, tuple)):
        for v in value:
            yield from _flat(v)
    else:
        yield value


def _value_class(value: Any, annotation: str, rule: str) -> str:
    items = list(_flat(value))
    if any(isinstance(v, float) and not math.isfinite(v) for v in items):
        return "not finite"
    if any(isinstance(v, bool) for v in items) and "bool" not in annotation:
        return "a bool"
    if annotation == "int" and type(value) is float:
        return "not an int"
    if "Tensor" in annotation and type(value).__module__.split(".")[0] != "torch":
        return "not a tensor"
    limits = {float(x) for x in re.findall(r"(?<![\w.])-?\d+(?:\.\d+)?(?:e[+-]?\d+)?", rule)}
    if type(value) in (int, float) and float(value) in limits:
        return "at the limit"  # exactly the number the rule names: > 0 given 0, < 1 given 1
    return "out of range"


def _check_text(message: str, params: Iterable[str]) -> str:
    """The key's message with the values taken out: which check fired, in its own words."""
    text = message.split(", got ")[0].split(": check")[0]
    text = re.sub(r"\[[^\]]*\]", "[.]", text)  # indices and dict keys
    text = re.sub(r"-?\d[\d.e+-]*|\b(True|False|nan|inf)\b", "N", text)  # numbers
    text = re.sub(r"\([^)]*\)", "", text)  # values and shapes quoted in parentheses
    for name in sorted(params, key=len, reverse=True):
        text = re.sub(rf"\b{re.escape(name)}\b", "ARG", text)
    return " ".join(text.split())


def _invalid_category(case: Case, key: Any) -> str:
    func = getattr(key, case.func)
    args = tuple(expand(a) for a in case.args)
    kwargs = {k: expand(v) for k, v in case.kwargs.items()}
    try:
        func(*args, **kwargs)
    except ValueError as exc:
        message = str(exc)  # the check is named by its message: line numbers move with every edit of the key
    else:
        raise AssertionError(f"{case.id}: the answer key does not raise on this invalid input")
    signature = inspect.signature(func)
    params = list(signature.parameters)
    found = [(message.find(p), -len(p), p) for p in params if p in message]
    if not found:
        raise AssertionError(f"{case.id}: the answer key's message names no argument: {message!r}")
    param = min(found)[2]
    bound = signature.bind(*args, **kwargs)
    bound.apply_defaults()
    annotation = str(signature.parameters[param].annotation)
    value_class = _value_class(bound.arguments[param], annotation, message.split(", got ")[0])
    return f"invalid {param}: {value_class} ({_check_text(message, params)})"


def categories(case: Case, key: Any) -> frozenset[str]:
    """The categories of one case (module docstring); empty for a simulator case."""
    if case.harness:
        return frozenset()
    if case.raises:
        return frozenset({_invalid_category(case, key)})
    kinds = [k.strip() for k in case.kind.split(",") if k.strip()]
    unknown = [k for k in kinds if k not in KINDS]
    if unknown:
        raise ValueError(f"{case.id}: unknown kind {unknown[0]!r}; declare it in coverage.KINDS")
    found = {"value", *kinds}
    value = getattr(key, case.func)(*(expand(a) for a in case.args), **{k: expand(v) for k, v in case.kwargs.items()})
    if type(value) is float and math.isfinite(value) and not value.is_integer():
        found.add(FRACTIONAL)  # `//` (or a float of it) is wrong here and right on whole answers
    return frozenset(found)


def rows(ex_id: str) -> list[Row]:
    """Per function of the exercise: the categories of its hidden and of its public cases."""
    key = _key(ex_id)
    hidden: dict[str, set[str]] = {}
    public: dict[str, set[str]] = {}
    for case in hidden_cases_from_source(ex_id):
        if not case.harness:
            hidden.setdefault(case.func, set()).update(categories(case, key))
    for case in public_cases(ex_id):
        public.setdefault(case.func, set()).update(categories(case, key))
    return [
        Row(ex_id, func, frozenset(hidden.get(func, ())), frozenset(public.get(func, ())))
        for func in BY_ID[ex_id].functions
    ]


def render(all_rows: list[Row]) -> str:
    lines = [
        "# Public cases against hidden cases: the kinds of mistakes each can show",
        "",
        "Generated by `python -m autograder.authoring.coverage --write` (tests/test_public_coverage.py checks it",
        "is current). A category is what a case isolates: an ordinary valid value (its return type checked",
        "exactly), a non-whole float answer (*fractional*), a documented edge (`kind`: "
        + ", ".join(f"*{k}*" for k in KINDS)
        + "), or one invalid",
        "argument with the class of its value and the answer key's check it must trip. Simulator cases are",
        "left out: the lecture drivers run those simulators publicly and flag any figure off the answer key's.",
        "A category counts as covered when some public case of the same function has it; the hidden cases keep",
        "their own (distinctive) values.",
        "",
        "Before issue 31 (commit ebbdbe5: 81 public cases) the public cases showed 56 of the 221 hidden categories",
        "this table counts then (ex01 5 of 16, ex02 5 of 35, ex03 5 of 22, ex04 7 of 19, ex05 5 of 26, ex06 5 of 19,",
        "ex07 5 of 14, ex08 7 of 17, ex09 9 of 30, ex10 3 of 23): no invalid value of most arguments, no rounding,",
        "no tie the library routines break the other way, no k = 0 carry, no non-whole ratio.",
        "",
    ]
    for ex in EXERCISES:
        ex_rows = [r for r in all_rows if r.exercise == ex.id]
        if not ex_rows:
            continue
        hidden = sum(len(r.hidden) for r in ex_rows)
        covered = sum(len(r.hidden & r.public) for r in ex_rows)
        lines += [
            f"## {ex.id} ({covered} of {hidden} hidden categories shown by a public case)",
            "",
            "| function | hidden categories | covered by public | public only | edges (kinds) covered | invalid inputs covered |",
            "|---|---|---|---|---|---|",
        ]
        for r in ex_rows:
            kinds = sorted(c for c in r.hidden if c != "value" and not c.startswith("invalid "))
            invalid = sorted(c for c in r.hidden if c.startswith("invalid "))
            shown_kinds = ", ".join(k if k in r.public else f"**{k} (missing)**" for k in kinds) or "none"
            shown_invalid = (
                "; ".join(
                    (c.removeprefix("invalid ") if c in r.public else f"**{c.removeprefix('invalid ')} (missing)**")
                    for c in invalid
                )
                or "none"
            )
            lines.append(
                f"| `{r.function}` | {len(r.hidden)} | {len(r.hidden & r.public)} | {len(r.public - r.hidden)} "
                f"| {shown_kinds} | {shown_invalid} |"
            )
        lines.append("")
    return "\n".join(lines)


def all_rows() -> list[Row]:
    return [row for ex in EXERCISES for row in rows(ex.id)]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m autograder.authoring.coverage", description=__doc__.split("\n")[0])
    parser.add_argument("--write", action="store_true", help=f"rewrite {DOC.relative_to(ROOT)}")
    args = parser.parse_args(argv)
    table = all_rows()
    text = render(table)
    if args.write:
        DOC.write_text(text, encoding="utf-8")
        print(f"wrote {DOC}")
    else:
        print(text)
    missing = [(r.function, c) for r in table for c in sorted(r.missing)]
    for func, category in missing:
        print(f"NOT SHOWN BY ANY PUBLIC CASE: {func}: {category}", file=sys.stderr)
    return 1 if missing else 0


if __name__ == "__main__":
    sys.exit(main())
