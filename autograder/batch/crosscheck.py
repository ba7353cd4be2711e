"""The points of a tool route (Otter's `otter-grade`, nbgrader's `nbgrader-autograde`) checked against the
native grader's on the same notebooks, and the table and CSV those commands print and write.

Otter and nbgrader run their checks inside the student's kernel, beside the student's code: a notebook can
patch them, or rewrite the results the tool leaves, so the tool's points are only as honest as the student
(docs/instructors_nbgrader_otter.md, "Which isolation each route has"). The native grader reads the same
notebooks' exercise cells (`autograder.runtime.notebook_code`) and judges outside the student's process.
So each route command grades every student both ways and reports the NATIVE points by default; the tool's
points are kept beside them as a check, and every exercise where the two differ is flagged for that student:
above the native points, "more than its code earns" (the notebook may have patched the tool's checks);
below them, the tool's run lost points (a crash, a timeout: its log says). `--tool-points` reports the
tool's points instead (students you trust); the flags stay. `--native` skips the tool altogether.
"""

from __future__ import annotations

import argparse
import csv
import math
import os
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from autograder.core.manifest import BY_ID, EXERCISES
from autograder.core.safetext import csv_cell, terminal_text
from autograder.runtime.statedir import created_mode

Table = dict[str, dict[str, tuple[float, str]]]  # {student: {exercise id: (points, "" or why 0)}}

POINTS_DECIMALS = 2  # points are exact hundredths in every route (autograder.core.scoring)


def native_table(
    submissions: Path,
    out: Path,
    workers: int = 2,
    exercises: list[str] | None = None,
    students: list[str] | None = None,
) -> Table:
    """`grade-all` on `submissions` (one folder per student holding exNN_<name>.ipynb files, read by the
    notebook reader and graded in sealed sandboxed children) into `out`; {student: {exercise: (points, why)}}
    for `exercises` (default: all), of `students` (default: every one in the gradebook)."""
    from autograder.batch import bulk

    ids = exercises or [ex.id for ex in EXERCISES]
    report = bulk.grade_all(submissions, out, workers, progress=False, exercises=ids)
    table: Table = {}
    for record in report.records:
        if students is not None and record.student not in students:
            continue
        why = "" if record.status == "graded" else record.status
        table[record.student] = {e: (record.exercises.get(e, (0.0, 0.0))[0], why) for e in ids}
    return table


@dataclass
class Checked:
    """What a route command reports: `reported` (native, or the tool's with --tool-points), both tables
    (`tool` is None with --native) and, per student, one flag per exercise where the two differ."""

    reported: Table
    native: Table | None
    tool: Table | None
    tool_name: str
    source: str  # "native" | "tool": whose points `reported` holds
    flags: dict[str, list[str]] = field(default_factory=dict)


def _cell(table: Table | None, student: str, ex_id: str) -> tuple[float, str]:
    if table is None:
        return 0.0, "not graded"
    return table.get(student, {}).get(ex_id, (0.0, "missing"))


def valid_points(table: Table | None, tool_name: str) -> tuple[Table | None, dict[str, dict[str, str]]]:
    """`table` with every cell that is not a score of its exercise (a finite number from 0 to the exercise's
    points: a tool's results are the student's code to rewrite, NaN and 1e300 included) counted 0 with the
    reason, and those cells' reasons by student and exercise."""
    if table is None:
        return None, {}
    clean: Table = {}
    invalid: dict[str, dict[str, str]] = {}
    for student, row in table.items():
        clean[student] = {}
        for e, (points, why) in row.items():
            most = BY_ID[e].points if e in BY_ID else 0.0
            if isinstance(points, (int, float)) and math.isfinite(points) and -0.005 <= points <= most + 0.005:
                clean[student][e] = (float(points), why)
                continue
            reason = f"{tool_name} reported {points!r}, not a score from 0 to {most:g}"
            clean[student][e] = (0.0, reason)
            invalid.setdefault(student, {})[e] = reason
    return clean, invalid


def cross_check(tool: Table | None, native: Table | None, tool_name: str, source: str = "native") -> Checked:
    """Compare `tool` with `native` per student and exercise (hundredths) and pick the reported points. The
    tool's cells go through `valid_points` first: a cell that is not a score is flagged as such, not compared."""
    if source not in ("native", "tool"):
        raise ValueError(f"source must be 'native' or 'tool', not {source!r}")
    tool, invalid = valid_points(tool, tool_name)
    chosen = native if source == "native" else tool
    if chosen is None:
        raise ValueError(f"the {source} points were not computed")
    students = sorted({*(tool or {}), *(native or {})})
    ids = [ex.id for ex in EXERCISES if any(ex.id in row for t in (tool, native) if t for row in t.values())]
    checked = Checked({}, native, tool, tool_name, source)
    for student in students:
        checked.reported[student] = {e: _cell(chosen, student, e) for e in ids}
        not_scores = invalid.get(student, {})
        for e, reason in not_scores.items():
            checked.flags.setdefault(student, []).append(
                f"{e}: {reason} (the notebook may have rewritten its results; counted 0)"
            )
        if tool is None or native is None:
            continue
        for e in ids:
            if e in not_scores:
                continue
            (t, t_why), (n, n_why) = _cell(tool, student, e), _cell(native, student, e)
            t, n = round(t, POINTS_DECIMALS), round(n, POINTS_DECIMALS)
            if t > n:
                checked.flags.setdefault(student, []).append(
                    f"{e}: {tool_name} {t:.2f} > native {n:.2f}, more than its code earns (the notebook may "
                    f"have patched {tool_name}'s checks or rewritten its results; "
                    f"{'native' if source == 'native' else tool_name} points reported)"
                )
            elif t < n:
                why = f": {t_why}" if t_why else ""
                checked.flags.setdefault(student, []).append(
                    f"{e}: {tool_name} {t:.2f} < native {n:.2f} ({tool_name}'s run lost points{why})"
                )
            elif n_why:
                checked.flags.setdefault(student, []).append(f"{e}: native grading {n_why}")
    return checked


def lines(checked: Checked) -> list[str]:
    """One line per student (points per exercise, total, the tool's total) and one per flag, for the terminal."""
    out: list[str] = []
    other = checked.tool if checked.source == "native" else checked.native
    other_name = checked.tool_name if checked.source == "native" else "native"
    for student, row in checked.reported.items():
        cells = [f"{e} {p:.2f}" + (f" ({terminal_text(why)})" if why else "") for e, (p, why) in row.items()]
        total = sum(p for p, _ in row.values())
        beside = ""
        if other is not None:
            beside = f"  [{other_name} {sum(p for p, _ in other.get(student, {}).values()):.2f}]"
        out.append(f"{terminal_text(student)}: {total:.2f}{beside}  " + ", ".join(cells))
        out += [f"  ! {terminal_text(student)}: {terminal_text(flag)}" for flag in checked.flags.get(student, [])]
    flagged = len(checked.flags)
    if checked.tool is not None and checked.native is not None:
        out.append(
            f"points reported: {checked.source}; {flagged} student(s) where {checked.tool_name} and the native "
            "grader differ (flagged with !)"
        )
    return out


def write_csv(checked: Checked, path: Path) -> None:
    """student, the reported points per exercise, total, and (when both ran) the other route's total and the
    flags joined by "; "; names and flags as CSV cells (no formula)."""
    ids = [e for e in (ex.id for ex in EXERCISES) if any(e in row for row in checked.reported.values())]
    other = checked.tool if checked.source == "native" else checked.native
    other_name = checked.tool_name if checked.source == "native" else "native"
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", newline="", encoding="utf-8") as handle:
        os.fchmod(handle.fileno(), created_mode())  # a file written before keeps its mode otherwise
        writer = csv.writer(handle)
        writer.writerow(["student", *ids, "total", *([f"{other_name}_total", "check"] if other is not None else [])])
        for student, row in checked.reported.items():
            points = [row.get(e, (0.0, "missing"))[0] for e in ids]
            extra = []
            if other is not None:
                theirs = sum(p for p, _ in other.get(student, {}).values())
                extra = [f"{theirs:.2f}", csv_cell("; ".join(checked.flags.get(student, [])))]
            writer.writerow([csv_cell(student), *(f"{p:.2f}" for p in points), f"{sum(points):.2f}", *extra])


def add_route_options(parser: argparse.ArgumentParser, tool_name: str) -> None:
    """The options every route command has: --csv, --workers and the choice of points (--native, --tool-points)."""
    parser.add_argument("--csv", type=Path, help="write one row per student: points per exercise, total, the check")
    parser.add_argument("--workers", type=int, default=2, help="students graded at once")
    choice = parser.add_mutually_exclusive_group()
    choice.add_argument("--native", action="store_true", help="grade the notebooks with the native grader only")
    choice.add_argument(
        "--tool-points",
        action="store_true",
        help=f"report {tool_name}'s points, not the native grader's (trusted students)",
    )


def run_route(
    args: argparse.Namespace,
    prog: str,
    tool_name: str,
    residual_risk: str,
    grade_tool: Callable[[], Table],
    grade_native: Callable[[Table | None], Table],
) -> int:
    """A route command after its arguments: the tool's run (unless --native; `residual_risk` printed first),
    the native grading (`grade_native` gets the tool's table, or None), the cross-check printed and, with
    --csv, written. Exit status 2 where the sandbox refuses (no rung here), 1 for a missing file or a failed
    run, 0 otherwise; every message escaped for the terminal."""
    from autograder.runtime.sandbox import ladder

    tool = None
    try:
        if not args.native:
            print(residual_risk, file=sys.stderr)
            tool = grade_tool()
        native = grade_native(tool)
    except ladder.Refused as exc:
        print(
            f"{prog}: {terminal_text(str(exc), lines=True)}\n(--native grades the same notebooks here)",
            file=sys.stderr,
        )
        return 2
    except (FileNotFoundError, RuntimeError) as exc:
        print(f"{prog}: {terminal_text(str(exc))}", file=sys.stderr)
        return 1
    checked = cross_check(tool, native, tool_name, "tool" if args.tool_points else "native")
    print("\n".join(lines(checked)))
    if args.csv:
        write_csv(checked, args.csv)
        print(f"wrote {args.csv}")
    return 0
