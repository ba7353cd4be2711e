"""Which cells of a test matrix `make test-fast` runs: every row once, the columns in turn.

`make test` runs every (row, column) cell; `make test-fast` (`-m "not slow"`) runs row i in column
turns[i mod len(turns)] only, so the inner loop still sees every row (an attack, a wrapper, a test taking
a rung) and every column it takes in turn (a sandbox rung, a memory cap) at about 1/len(turns) of the cost.
Columns outside `turns` (default: all of them) and rows in `slow_rows` (they wait out a time limit) are slow
in every cell. A row may be a test of its own: `InTurn` hands each test of a module the next column.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import pytest


def each_row_once(
    rows: Iterable[str], columns: Sequence[str], slow_rows: Iterable[str] = (), turns: Sequence[str] | None = None
) -> list:
    """pytest params (row, column) for every cell; `slow` on the cells `make test-fast` leaves to `make test`."""
    slow = set(slow_rows)
    return [
        pytest.param(row, column, marks=pytest.mark.slow)
        if row in slow or column != _in_turn(i, columns, turns)
        else pytest.param(row, column)
        for i, row in enumerate(rows)
        for column in columns
    ]


class InTurn:
    """The tests of a module parametrised over the same columns, as the rows of one matrix: each call of
    `params()` (one per test, in the order the module declares them) runs the next column of `turns` in
    `make test-fast`, every column in `make test`."""

    def __init__(self, columns: Sequence[str], turns: Sequence[str] | None = None):
        self.columns, self.turns, self.rows = list(columns), turns, 0

    def params(self) -> list:
        """pytest params for one test's column (`@pytest.mark.parametrize("rung", TURNS.params())`)."""
        fast = _in_turn(self.rows, self.columns, self.turns)
        self.rows += 1
        return [c if c == fast else pytest.param(c, marks=pytest.mark.slow) for c in self.columns]


def _in_turn(row: int, columns: Sequence[str], turns: Sequence[str] | None) -> str:
    """The column `make test-fast` runs row `row` in: turns (default: every column) taken in turn."""
    taken = list(columns) if turns is None else [c for c in columns if c in turns]
    return taken[row % len(taken)]
