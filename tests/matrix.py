"""Which cells of a test matrix `make test-fast` runs: every row once, the columns in turn.

`make test` runs every (row, column) cell; `make test-fast` (`-m "not slow"`) runs row i in column
i mod len(columns) only, so the inner loop still sees every row (an attack, a wrapper) and every column
(a sandbox rung, a memory cap) at about 1/len(columns) of the cost. Rows in `slow_rows` are slow in every
column (they wait out a time limit).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import pytest


def each_row_once(rows: Iterable[str], columns: Sequence[str], slow_rows: Iterable[str] = ()) -> list:
    """pytest params (row, column) for every cell; `slow` on the cells `make test-fast` leaves to `make test`."""
    slow = set(slow_rows)
    return [
        pytest.param(row, column, marks=pytest.mark.slow)
        if row in slow or column != columns[i % len(columns)]
        else pytest.param(row, column)
        for i, row in enumerate(rows)
        for column in columns
    ]
