"""The answer key's figures beside the student's: `assignments/reference_figures.json` and the comparison.

At release (`python -m autograder release`, `autograder.authoring.reference_figures`) every lecture-driver part is run on the answer key and its
figures are written, as aggregates, into `assignments/reference_figures.json`:
    {"01": {"cost": {figures}, ...}, "02": {...}, "03": {...}}
the figures `hetero.lecture --json` prints for `--impl solutions`, minus wall-clock timings
(`WALL_CLOCK_KEYS`) and minus plot series (lists longer than `MAX_LIST`, which no table prints). They
hold no case of the grader: every figure comes from the lecture's own configuration.

When the drivers run someone's exercises (`--impl` anything but `solutions`), `compare` walks that
part's figures and the reference's with the same keys and reports each number that differs by more
than the part's tolerance (relative to the larger magnitude) or whose sign differs, and each flag (bool)
that differs. Keys present on one side only are skipped, never an error.

Like is compared with like. Every part but one computes its figures in closed form, or by a seeded
simulation the exercises drive: correct code reproduces the answer key's to float rounding, so the
tolerance is `REL_GAP` = 1e-6 relative, and a unit slip (GB for GiB: 7.4%) or a wrong decision anywhere
is flagged. The deferral part (experiment 03) depends on a trained model, and training is not bit-for-bit
the same on two machines; its figures are compared only when they come from the same model as the
reference's (the release's checkpoint, shipped beside this file: `hetero.moe.experiment`), at the
tolerance of float32 evaluation (`Part.rel_gap`, `Part.abs_gap`).
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

REFERENCE_FILE = "reference_figures.json"
INPUTS_KEY = "inputs_sha256"  # the digest of what the figures were computed from (not a figure)
WALL_CLOCK_KEYS = frozenset({"train_seconds"})  # timings: differ run to run, never a figure to match
MAX_LIST = 64  # longer lists are plot series (e.g. 900 time steps), not figures a table prints
REL_GAP = 1e-6  # closed-form and seeded figures: correct code agrees to float rounding (~1e-15); 7% is a slip
ABS_FLOOR = 1e-9  # below this magnitude two numbers count as equal (both zero up to rounding)


@dataclass(frozen=True)
class Row:
    """One compared figure: its path in the part's figures, both values, and the gap if flagged."""

    path: str
    yours: Any
    reference: Any
    gap: str | None  # "+96.0%", "sign differs", "differs"; None within tolerance

    def as_json(self) -> dict[str, Any]:
        return {"path": self.path, "yours": self.yours, "reference": self.reference, "gap": self.gap}


def aggregates(figures: Any) -> Any:
    """`figures` without wall-clock timings and plot series (see the module docstring)."""
    if isinstance(figures, dict):
        return {
            k: aggregates(v)
            for k, v in figures.items()
            if k not in WALL_CLOCK_KEYS and not (isinstance(v, list) and len(v) > MAX_LIST)
        }
    if isinstance(figures, list):
        return [aggregates(v) for v in figures]
    return figures


def _is_number(x: Any) -> bool:
    return isinstance(x, (int, float)) and not isinstance(x, bool)


def number_gap(yours: float, reference: float, rel_gap: float = REL_GAP, abs_gap: float = ABS_FLOOR) -> str | None:
    """None when the two agree within `rel_gap` (or both lie within `abs_gap` of each other); else "sign differs"
    or the signed relative gap ("+7.4%", "+0.0021%": enough digits to show a gap above the tolerance)."""
    a, b = float(yours), float(reference)
    if math.isnan(a) or math.isnan(b):
        return None if math.isnan(a) and math.isnan(b) else "differs"
    if a == b or max(abs(a), abs(b)) <= ABS_FLOOR or abs(a - b) <= abs_gap:
        return None
    if math.isinf(a) or math.isinf(b):
        return "differs"
    if (a > abs_gap and b < -abs_gap) or (a < -abs_gap and b > abs_gap):
        return "sign differs"
    rel = abs(a - b) / max(abs(a), abs(b))
    if rel <= rel_gap:
        return None
    if b == 0:
        return "differs"
    percent = (a - b) / abs(b) * 100
    return f"{percent:+.1f}%" if abs(percent) >= 0.1 else f"{percent:+.2g}%"


def compare(
    yours: Any, reference: Any, path: str = "", rel_gap: float = REL_GAP, abs_gap: float = ABS_FLOOR
) -> list[Row]:
    """Every number and flag found at the same keys in both trees, with its gap (None within tolerance).
    Keys or list items present on one side only are skipped; strings are labels and not compared."""
    if isinstance(yours, dict) and isinstance(reference, dict):
        return [
            row
            for k in yours
            if k in reference and k not in WALL_CLOCK_KEYS
            for row in compare(yours[k], reference[k], f"{path}.{k}" if path else str(k), rel_gap, abs_gap)
        ]
    if isinstance(yours, list) and isinstance(reference, list):
        return [
            row
            for i, (x, y) in enumerate(zip(yours, reference, strict=False))
            for row in compare(x, y, f"{path}[{i}]", rel_gap, abs_gap)
        ]
    if isinstance(yours, bool) and isinstance(reference, bool):
        return [Row(path, yours, reference, None if yours == reference else "differs")]
    if _is_number(yours) and _is_number(reference):
        return [Row(path, yours, reference, number_gap(yours, reference, rel_gap, abs_gap))]
    return []


def _fmt(x: Any) -> str:
    if isinstance(x, float) and math.isfinite(x):
        return f"{x:.4g}"
    return str(x)


def tolerance_text(rel_gap: float = REL_GAP, abs_gap: float = ABS_FLOOR) -> str:
    text = f"{rel_gap:.0e} relative" if rel_gap < 0.01 else f"{rel_gap:.0%}"
    return text + (f" or {abs_gap:g} absolute" if abs_gap > ABS_FLOOR else "")


def _gap_text(gap: str) -> str:
    return "the sign differs from the reference's" if gap == "sign differs" else f"differs from the reference: {gap}"


def render_rows(rows: list[Row], rel_gap: float = REL_GAP, abs_gap: float = ABS_FLOOR, details: bool = False) -> str:
    """The lines printed under a part's table: how many figures were compared and at what tolerance, then
    "yours X, reference Y <- ..." for every figure off the reference (`details`: for every figure)."""
    gaps = [r for r in rows if r.gap]
    tolerance = tolerance_text(rel_gap, abs_gap)
    lines = [
        f"   vs the reference (answer key): {len(rows)} figures compared, "
        + (f"{len(gaps)} differ by more than {tolerance} (or in sign)" if gaps else f"all agree within {tolerance}")
    ]
    for r in rows:
        yours, reference = _fmt(r.yours), _fmt(r.reference)
        if yours == reference and r.yours != r.reference:  # a small gap: show the digits where they differ
            yours, reference = f"{r.yours:.10g}", f"{r.reference:.10g}"
        if r.gap:
            lines.append(f"   {r.path}: yours {yours}, reference {reference}  <- {_gap_text(r.gap)}")
        elif details:
            lines.append(f"   {r.path}: yours {yours}, reference {reference}")
    return "\n".join(lines)


def reference_path(impl_dir: str | Path) -> Path | None:
    """The reference file beside the exercise files, else in the `assignments/` folder found from the
    current directory upward; None when neither has one."""
    from hetero.impl import find_named_folder

    for folder in (Path(impl_dir), find_named_folder("assignments")):
        if folder is not None and (folder / REFERENCE_FILE).is_file():
            return folder / REFERENCE_FILE
    return None


def load_reference(impl_dir: str | Path) -> dict[str, Any] | None:
    """The reference figures ({experiment: {part: figures}}), or None when no file is found."""
    path = reference_path(impl_dir)
    if path is None:
        return None
    data = json.loads(path.read_text(encoding="utf-8"))
    return {k: v for k, v in data.items() if k != INPUTS_KEY} if isinstance(data, dict) else None


def dumps(reference: dict[str, Any]) -> str:
    """The file's text: sorted by experiment, indented, one trailing newline (same figures, same bytes)."""
    return json.dumps(reference, indent=1, ensure_ascii=False) + "\n"
