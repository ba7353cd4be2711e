"""What a regrade would change: `python -m autograder grade-all SUBMISSIONS --out OUT --dry-run`.

The dry run grades every submission with the current grader into a temporary folder (removed
afterwards) and compares each student's new results with the latest grading stored in OUT's gradebook,
which it only reads: OUT's gradebook, results and feedback are never written. It prints, per student
whose grade moved, the old and the new score and each test whose points moved (old -> new), then how
many students changed. Scores and points are compared in hundredths (the grader's unit), so float
noise never counts as a change.

`moved_tests(old_results, new_results)` is the comparison of two results.json dicts (Gradescope
format); tests are matched by name (the n-th test of a repeated name with the n-th of the other side).

Every earlier grading stays readable after a real regrade: the gradebook's `history` table keeps each
graded version with its full results.json (`Gradebook.history(student)`; `version_results(student, n)`
returns version n's results, oldest first, -2 the one before the latest).
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import zipfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from autograder.batch.gradebook import Gradebook, test_exercise, total_score
from autograder.core.safetext import clean_text, terminal_text

CENTS_PER_POINT = 100  # scores are compared in hundredths of a point


@dataclass(frozen=True)
class MovedTest:
    """A test whose points differ between two gradings (None: the test is absent from that side)."""

    name: str
    old_points: float | None
    new_points: float | None


@dataclass(frozen=True)
class StudentDiff:
    """One student's stored grade against the dry run's (old_score None: never graded before)."""

    student: str
    old_score: float | None
    new_score: float
    moved: list[MovedTest]
    old_status: str = ""
    new_status: str = ""


def _cents(points: float) -> int:
    return round(float(points) * CENTS_PER_POINT)


def _points_by_test(results: dict[str, Any]) -> dict[str, float]:
    """{test name: points earned}; a repeated name's later tests become `name #2`, `name #3`, ..."""
    points: dict[str, float] = {}
    seen: dict[str, int] = {}
    for test in results.get("tests", []) or []:
        if not isinstance(test, dict):
            continue
        name = clean_text(test.get("name") or test.get("number") or "(unnamed test)")
        seen[name] = seen.get(name, 0) + 1
        key = name if seen[name] == 1 else f"{name} #{seen[name]}"
        points[key] = float(test.get("score") or 0.0)
    return points


def moved_tests(old: dict[str, Any], new: dict[str, Any]) -> list[MovedTest]:
    """The tests whose points differ (in hundredths) between two results dicts, in the new results'
    order, then the tests only the old results had."""
    before, after = _points_by_test(old), _points_by_test(new)
    moved = [
        MovedTest(name, before.get(name), points)
        for name, points in after.items()
        if name not in before or _cents(before[name]) != _cents(points)
    ]
    moved += [MovedTest(name, points, None) for name, points in before.items() if name not in after]
    return moved


def _points(value: float | None) -> str:
    return "absent" if value is None else f"{round(value, 2) + 0.0:.2f}"


def format_diff(diff: StudentDiff) -> list[str]:
    """Lines describing one student's change: the score, then each moved test."""
    old = "not graded before" if diff.old_score is None else _points(diff.old_score)
    status = (
        f" ({diff.old_status} -> {diff.new_status})"
        if diff.old_status and diff.new_status and diff.old_status != diff.new_status
        else ""
    )
    lines = [f"{terminal_text(diff.student)}: {old} -> {_points(diff.new_score)}{status}"]
    lines += [f"  {terminal_text(t.name)}: {_points(t.old_points)} -> {_points(t.new_points)}" for t in diff.moved]
    return lines


def only_exercises(results: dict[str, Any], exercises: Sequence[str] | None) -> dict[str, Any]:
    """`results` with only the tests of `exercises` (all when None), its score the sum of those tests."""
    if exercises is None:
        return results
    tests = [t for t in results.get("tests", []) or [] if isinstance(t, dict) and test_exercise(t) in exercises]
    return {"tests": tests, "score": sum(float(t.get("score") or 0.0) for t in tests)}


def compare(
    stored: Path, graded: Path, students: Sequence[str], exercises: Sequence[str] | None = None
) -> list[StudentDiff]:
    """The students of `students` whose dry-run grading (gradebook `graded`) differs from their latest
    stored one (gradebook `stored`, read only; missing: everyone is new); with `exercises`, only the
    tests of those exercises are compared (what an --exercises run grades)."""
    old_book = Gradebook(stored, read_only=True) if stored.is_file() else None
    diffs = []
    try:
        with Gradebook(graded, read_only=True) as new_book:
            for student in sorted(students):
                new = only_exercises(new_book.results(student) or {}, exercises)
                new_score = total_score(new)[0]
                new_status = new_book.status(student) or ""
                old = old_book.results(student) if old_book is not None else None
                if old is None or old_book is None:
                    diffs.append(StudentDiff(student, None, new_score, moved_tests({}, new), "", new_status))
                    continue
                old = only_exercises(old, exercises)
                old_status = old_book.status(student) or ""
                moved = moved_tests(old, new)
                old_score = total_score(old)[0]
                if moved or _cents(old_score) != _cents(new_score) or old_status != new_status:
                    diffs.append(StudentDiff(student, old_score, new_score, moved, old_status, new_status))
    finally:
        if old_book is not None:
            old_book.close()
    return diffs


def dry_run(
    submissions: Path,
    out: Path,
    workers: int | None = None,
    timeout_s: float | None = None,
    progress: bool = True,
    python: str = sys.executable,
    exercises: Sequence[str] | None = None,
    cluster: str | None = None,
) -> tuple[list[StudentDiff], int]:
    """Grade `submissions` into a temporary folder and compare with `out`'s gradebook; return the
    students whose grade would change and the number of students graded. Nothing under `out` is written."""
    from autograder.batch import bulk  # the batch runner (heavy imports), only when a dry run is asked for

    with tempfile.TemporaryDirectory(prefix="a2-dry-run-") as scratch:
        tmp_out = Path(scratch) / "graded"
        report = bulk.grade_all(
            submissions,
            tmp_out,
            workers,
            force=True,
            timeout_s=bulk.DEFAULT_TIMEOUT_S if timeout_s is None else timeout_s,
            progress=progress,
            python=python,
            exercises=exercises,
            not_submissions=[out],
            cluster=cluster,
        )
        for item in report.refused:
            print(f"refused {terminal_text(item.entry)}: {terminal_text(item.reason)}")
        students = [r.student for r in report.records]
        diffs = compare(out / bulk.GRADEBOOK_NAME, tmp_out / bulk.GRADEBOOK_NAME, students, exercises)
    return diffs, len(students)


def print_dry_run(diffs: Sequence[StudentDiff], graded: int, out: Path) -> None:
    """The dry run's report on stdout: each changed student, then the count."""
    for diff in diffs:
        print("\n".join(format_diff(diff)))
    new = sum(d.old_score is None for d in diffs)
    print(
        f"dry run: {len(diffs) - new} of {graded} students would change, {new} graded for the first time; "
        f"nothing was written to {out}"
    )


def dry_run_cli(args: argparse.Namespace) -> int:
    """`grade-all --dry-run` (its arguments parsed by `autograder.batch.bulk.main`): `dry_run`, then `print_dry_run`."""
    if args.csv is not None:
        print(
            "grade-all: --dry-run writes nothing: leave out --csv (it regrades everyone, as --force)", file=sys.stderr
        )
        return 2
    try:
        diffs, graded = dry_run(
            args.submissions,
            args.out,
            args.workers,
            args.timeout,
            not args.no_progress,
            args.python,
            args.exercises,
            args.cluster,
        )
    except (OSError, ValueError, zipfile.BadZipFile) as exc:
        print(f"grade-all: {clean_text(exc)}", file=sys.stderr)
        return 2
    print_dry_run(diffs, graded, args.out)
    return 0
