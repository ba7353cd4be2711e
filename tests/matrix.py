"""Which cells of a test matrix `make test-fast` runs: every row once, the columns in turn.

`make test` runs every (row, column) cell; `make test-fast` (`-m "not slow"`) runs row i in column
turns[i mod len(turns)] only, so the inner loop still sees every row (an attack, a wrapper) and every
column it takes in turn (a sandbox rung, a memory cap) at about 1/len(turns) of the cost. Columns outside
`turns` (default: all of them) and rows in `slow_rows` (they wait out a time limit) are slow in every cell.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import pytest


def each_row_once(
    rows: Iterable[str], columns: Sequence[str], slow_rows: Iterable[str] = (), turns: Sequence[str] | None = None
) -> list:
    """pytest params (row, column) for every cell; `slow` on the cells `make test-fast` leaves to `make test`."""
    slow = set(slow_rows)
    turns = list(columns) if turns is None else [c for c in columns if c in turns]
    return [
        pytest.param(row, column, marks=pytest.mark.slow)
        if row in slow or column != turns[i % len(turns)]
        else pytest.param(row, column)
        for i, row in enumerate(rows)
        for column in columns
    ]
