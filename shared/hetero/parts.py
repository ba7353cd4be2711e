"""The unit the lecture drivers run: one part of an experiment, the exercises it needs, how to show it.

Each simulator module exposes `PARTS: list[Part]`. `hetero.lecture` runs the parts of an experiment
in order; a part whose exercise is still a stub raises `hetero.impl.MissingExercise`, which the driver
reports ("ex03 missing: ...") before going on with the other parts.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Optional


@dataclass(frozen=True)
class Part:
    key: str  # top-level key in `--json` output, stable and documented ("cost", "deferral", ...)
    title: str  # heading printed above the part's table
    lecture: str  # lecture section it reproduces ("§1.2")
    needs: tuple[str, ...]  # exercise ids whose functions it calls
    run: Callable[[str], dict[str, Any]]  # impl -> JSON-able figures (floats, ints, lists, dicts)
    render: Callable[[dict[str, Any]], str]  # figures -> text table(s)
    plot: Optional[Callable[[dict[str, Any], Path], list[Path]]] = None  # figures, dir -> PNGs written
