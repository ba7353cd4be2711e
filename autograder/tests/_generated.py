"""Hypothesis-generated INPUTS for the hidden cases, identical on every run and every machine.

The hidden cases of the arithmetic exercises (ex01, ex02, ex04, ex06-ex09) add a few calls whose
arguments come from Hypothesis strategies instead of a hand-written table: strategies reach values a
person writing a table tends not to pick (a bandwidth of 0.0013 GB/s next to one of 9.7e3, the exact
lower boundary a docstring allows, a dict whose values tie).

Why `derandomize=True` (and `database=None`, `phases=[Phase.generate]`):
- the hidden case list must be the same list wherever it is loaded: `python -m autograder expected`
  computes each case's expected value once and stores it by case id in `autograder/expected/exNN.json`;
  the grader, on another machine and another day, loads the same case file again and compares the
  student's value with the stored one. A different input under the same id would grade a correct
  submission as wrong. Derandomized Hypothesis seeds its generator from the collector's source, so
  with the pinned version (hypothesis==6.170.15 in pyproject.toml's test extras) the examples are
  the same on every run; `examples` refuses any other version rather than grade against inputs that
  may have moved.
- no example database (nothing is read from or written to `.hypothesis/`, which could replay a
  different example first), and only the generate phase: there is no failing test to shrink or
  explain, the collector just records what was generated.
- health checks are off and there is no deadline: they are timing-based, and a slow grading machine
  must not change (or abort) the case list.
- no constants from the code around: Hypothesis also mixes into its draws literal numbers and strings it
  finds in the project's modules that happen to be imported (`sys.modules`), so the same derandomized
  strategy gave different inputs under pytest than under `python -m autograder expected`. `examples`
  switches that source off while it collects (`_without_local_constants`), which makes the inputs depend
  only on the strategy and the Hypothesis version. This reaches into Hypothesis's internals, which is
  why the version is checked exactly.

Why only the inputs: Hypothesis here chooses arguments, never answers. The expected values still come
from the answer key (`solutions/`) through `python -m autograder expected`, exactly as for every other
hidden case, and are stored as data; the case files never compute an expected value.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import hypothesis
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st
from hypothesis.internal.conjecture import providers

PINNED_VERSION = "6.170.15"  # must equal the pin in pyproject.toml: another version may generate other inputs
DRAWS_PER_EXAMPLE = 10  # examples generated per example kept: room for duplicates, and for spreading the picks


def examples(strategy: st.SearchStrategy, count: int) -> list[Any]:
    """`count` distinct examples derandomized Hypothesis generates from `strategy`, in generation order.

    Hypothesis generates DRAWS_PER_EXAMPLE x `count` examples; the picks are spread evenly over the
    distinct ones, from the first (Hypothesis starts with the simplest example, usually the lower
    boundaries of the ranges) to the last (its later examples vary most); a single pick is the last.
    The same strategy gives the same list on every call, run and machine (for the pinned Hypothesis).
    Raises RuntimeError if the installed Hypothesis is not the pinned version, or if the strategy
    yields fewer than `count` distinct examples.
    """
    if hypothesis.__version__ != PINNED_VERSION:
        raise RuntimeError(f"hypothesis {hypothesis.__version__} is installed; the hidden cases need exactly "
                           f"hypothesis=={PINNED_VERSION} (derandomized inputs differ between versions)")
    drawn: list[Any] = []

    @settings(derandomize=True, database=None, max_examples=DRAWS_PER_EXAMPLE * count,
              phases=[Phase.generate], deadline=None, suppress_health_check=list(HealthCheck))
    @given(strategy)
    def collect(example: Any) -> None:
        drawn.append(example)

    with _without_local_constants():
        collect()
    distinct: list[Any] = []
    for example in drawn:
        if repr(example) not in {repr(seen) for seen in distinct}:
            distinct.append(example)
    if len(distinct) < count:
        raise RuntimeError(f"the strategy yielded {len(distinct)} distinct examples, {count} were asked for")
    if count == 1:
        return distinct[-1:]
    last = len(distinct) - 1
    return [distinct[round(j * last / (count - 1))] for j in range(count)]


@contextmanager
def _without_local_constants() -> Iterator[None]:
    """Generate without the constants Hypothesis collects from imported project modules (see the module doc)."""
    original = providers._get_local_constants
    providers._get_local_constants = providers.Constants
    providers.CONSTANTS_CACHE.cache.clear()  # it may hold allowed constants computed with the local ones
    try:
        yield
    finally:
        providers._get_local_constants = original
        providers.CONSTANTS_CACHE.cache.clear()


def finite_floats(low: float, high: float) -> st.SearchStrategy:
    """Finite floats in [low, high], no nan, no infinity, no subnormals; low and high included."""
    return st.floats(min_value=low, max_value=high, allow_nan=False, allow_infinity=False, allow_subnormal=False)


def magnitudes(low_exponent: int, high_exponent: int) -> st.SearchStrategy:
    """Floats m x 10**e with m in [1, 10) and e in [low_exponent, high_exponent]: every decade is as likely.

    Plain `st.floats(low, high)` spends almost all examples in the top decade; sizes in these exercises
    span many (a 0.28 GB/s disk and a 5,300 GB/s HBM stack). 10**low_exponent itself comes first.
    """
    return st.builds(lambda m, e: m * 10.0 ** e, finite_floats(1.0, 9.999), st.integers(low_exponent, high_exponent))
