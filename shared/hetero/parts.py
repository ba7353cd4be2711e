"""The unit the lecture drivers run: one part of an experiment, the exercises it needs, how to show it.

Each simulator module exposes `PARTS: list[Part]`. `hetero.lecture` runs the parts of an experiment
in order. A part whose exercise is still a stub raises `hetero.impl.MissingExercise`; one whose exercise
does not import or raises anything else raises `hetero.impl.ExerciseError` (file:line and exception).
The driver reports either ("ex03 missing: ...", "ex03 failed at ex03_cache_pool.py:42: ...") and goes
on with the other parts; any other exception from a part with `needs` is reported the same way, since
it comes from a value that exercise returned. `run` calls exercise functions only through
`hetero.impl.exercise_function`, so every failure of a student's code arrives as one of these.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from hetero.reference import ABS_FLOOR, REL_GAP


@dataclass(frozen=True)
class Part:
    key: str  # top-level key in `--json` output, stable and documented ("cost", "deferral", ...)
    title: str  # heading printed above the part's table
    lecture: str  # lecture section it reproduces ("§1.2")
    needs: tuple[str, ...]  # exercise ids whose functions it calls
    run: Callable[[str], dict[str, Any]]  # impl -> JSON-able figures (floats, ints, lists, dicts)
    render: Callable[[dict[str, Any]], str]  # figures -> text table(s)
    plot: Callable[[dict[str, Any], Path], list[Path]]  # figures, dir -> PNGs written (every part has some)
    # The comparison with the answer key's figures (`hetero.reference`): the tolerance, and, for figures that
    # depend on more than the exercises (a trained model), why a run's figures cannot be compared (None: they can).
    rel_gap: float = REL_GAP
    abs_gap: float = ABS_FLOOR
    not_comparable: Callable[[dict[str, Any], dict[str, Any]], str | None] | None = None
