"""What a regrade would change: `python -m autograder grade-all SUBMISSIONS --out OUT --dry-run`.

The dry run grades every submission with the current grader into a temporary folder (removed
afterwards) and compares each student's new results with the latest grading stored in OUT's gradebook,
which it only reads: OUT's gradebook, results and feedback are never written. It prints, per student
whose points would change, the old and the new score and each test whose points moved (old -> new);
then how many students would change: those whose points change (the total, an exercise's score, or a
test's points), never a wording change. The students whose points stay the same but whose feedback
differs (a test's text, a test renamed or added without points, the summary, the grading status) are
listed apart, after the count, with what differs. Scores and points are compared in hundredths (the
grader's unit), so float noise never counts as a change; the staff-only environment entry (it holds
the grading time) is never compared.

`moved_tests(old_results, new_results)` is the comparison of two results.json dicts (Gradescope
format); tests are matched by name (the n-th test of a repeated name with the n-th of the other side).

Every earlier grading stays readable after a real regrade: the gradebook's `history` table keeps each
graded version with its full results.json (`Gradebook.history(student)`; `version_results(student, n)`
returns version n's results, oldest first, -2 the one before the latest).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from autograder.batch.gradebook import Gradebook, exercise_scores, test_exercise, total_score
from autograder.core.safetext import clean_text, terminal_text

CENTS_PER_POINT = 100  # scores are compared in hundredths of a point
STAFF_ENTRY = "grading environment (staff only)"  # results.environment_test: its text holds the grading time


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
    points: bool = True  # the points change (False: only the wording, names or status)
    reworded: tuple[str, ...] = ()  # what differs besides the points: tests whose text changed, the summary


def _cents(points: float) -> int:
    return round(float(points) * CENTS_PER_POINT)


def _named_tests(results: dict[str, Any]) -> list[tuple[str, str, dict[str, Any]]]:
    """(key, name, test entry) per test, in order: the key is the name, but a repeated name's later tests
    become `name #2`, `name #3`, ..."""
    named: list[tuple[str, str, dict[str, Any]]] = []
    seen: dict[str, int] = {}
    for test in results.get("tests", []) or []:
        if not isinstance(test, dict):
            continue
        name = clean_text(test.get("name") or test.get("number") or "(unnamed test)")
        seen[name] = seen.get(name, 0) + 1
        named.append((name if seen[name] == 1 else f"{name} #{seen[name]}", name, test))
    return named


def _points_by_test(results: dict[str, Any]) -> dict[str, float]:
    """{test name (as in `_named_tests`): points earned}."""
    return {key: float(test.get("score") or 0.0) for key, _, test in _named_tests(results)}


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


def _texts_by_test(results: dict[str, Any]) -> dict[str, str]:
    """{test name (as in `_named_tests`): its output text}, without the staff-only environment entry."""
    return {
        key: clean_text(test.get("output") or "") for key, name, test in _named_tests(results) if name != STAFF_ENTRY
    }


def points_change(old: dict[str, Any], new: dict[str, Any]) -> bool:
    """Whether the points differ (in hundredths): the total, an exercise's score, or a test present in both.

    A test renamed with its points, or one added or dropped without points, changes no exercise's score
    and is not a points change; points moved between two tests of one exercise are."""
    if _cents(total_score(old)[0]) != _cents(total_score(new)[0]):
        return True
    before, after = exercise_scores(old), exercise_scores(new)
    if any(_cents(before[ex][0]) != _cents(after[ex][0]) for ex in before):
        return True
    old_points, new_points = _points_by_test(old), _points_by_test(new)
    return any(_cents(old_points[n]) != _cents(p) for n, p in new_points.items() if n in old_points)


def reworded(old: dict[str, Any], new: dict[str, Any]) -> list[str]:
    """What differs besides the points: each test whose text changed, each test only one side has (with
    its points), and the summary (results.json's top-level output)."""
    before, after = _texts_by_test(old), _texts_by_test(new)
    found = [
        f"{name}: feedback text changed" for name, text in after.items() if name in before and before[name] != text
    ]
    old_points, new_points = _points_by_test(old), _points_by_test(new)
    found += [f"{name}: new test ({_points(new_points.get(name))} points)" for name in after if name not in before]
    found += [f"{name}: test gone ({_points(old_points.get(name))} points)" for name in before if name not in after]
    if clean_text(old.get("output") or "") != clean_text(new.get("output") or ""):
        found.append("the summary (top-level output) changed")
    return found


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
    if not diff.points:
        return lines + [f"  {terminal_text(what)}" for what in diff.reworded]
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
    stored one (gradebook `stored`, read only; missing: everyone is new): in points (`points` True), or
    only in wording, test names or status (`points` False, `reworded` says what); with `exercises`, only
    the tests of those exercises are compared (what an --exercises run grades)."""
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
                if points_change(old, new):
                    diffs.append(StudentDiff(student, old_score, new_score, moved, old_status, new_status))
                    continue
                other = reworded(old, new)
                if old_status != new_status:
                    other.insert(0, f"grading status: {old_status} -> {new_status}")
                if other:
                    diffs.append(
                        StudentDiff(student, old_score, new_score, moved, old_status, new_status, False, tuple(other))
                    )
    finally:
        if old_book is not None:
            old_book.close()
    return diffs


def print_dry_run(diffs: Sequence[StudentDiff], graded: int, out: Path) -> None:
    """The dry run's report on stdout: each student whose points change (or who is new), the count, then
    the students whose points stay and whose feedback differs, each with what differs."""
    changed = [d for d in diffs if d.points]
    worded = [d for d in diffs if not d.points]
    for diff in changed:
        print("\n".join(format_diff(diff)))
    new = sum(d.old_score is None for d in changed)
    print(
        f"dry run: {len(changed) - new} of {graded} students would change (their points), {new} graded for the "
        f"first time; {len(worded)} more keep their points but their feedback differs"
        f"{' (below)' if worded else ''}; nothing was written to {out}"
    )
    if worded:
        print("same points, other feedback:")
        for diff in worded:
            print("\n".join("  " + line for line in format_diff(diff)))
