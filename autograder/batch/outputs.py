"""What a batch writes per student and prints at the end: results.json, grader.log, feedback.md (what the
student may see now), feedback_instructor.md, and the per-exercise summary table.

Every student text is made inert where it is shown (`autograder.core.safetext`).
"""

from __future__ import annotations

import statistics
from collections import Counter
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from autograder.batch.gradebook import Record, exercise_scores, test_exercise
from autograder.core.manifest import EXERCISES
from autograder.core.safetext import clean_data, clean_text, markdown_fence, markdown_inline, terminal_text
from autograder.gradescope.fallback import readable_results
from autograder.runtime import results as res


def _visibility(test: dict[str, Any], results: dict[str, Any]) -> str:
    return str(test.get("visibility") or results.get("visibility") or "visible")


def feedback_markdown(student: str, results: dict[str, Any], instructor: bool) -> str:
    """Readable feedback: per-exercise score, then each failed test's message.

    Student-influenced text is inert Markdown (`autograder.core.safetext`): the student's name and the test
    names are escaped inline, the summary and every test's output are shown verbatim in code fences
    they cannot close, and control characters are escaped (the file is safe to print on a terminal).

    The student copy shows only tests whose visibility is "visible" (what Gradescope shows before
    the due date); the instructor copy shows every test and marks its visibility.
    """
    tests = [t for t in results.get("tests", []) if instructor or _visibility(t, results) == "visible"]
    hidden_count = len(results.get("tests", [])) - len(tests)
    shown = {"tests": tests}
    per_ex = exercise_scores(shown)
    score = sum(float(t.get("score") or 0.0) for t in tests)
    max_score = sum(float(t.get("max_score") or 0.0) for t in tests)
    title = "instructor copy" if instructor else "student copy"
    lines = [f"# Feedback for {markdown_inline(student)} ({title})", ""]
    if instructor and results.get("score") is not None:
        lines.append(f"**Total: {float(results['score']):.2f} / {max_score:.2f}**")
    else:
        lines.append(f"**Score in the tests shown: {score:.2f} / {max_score:.2f}**")
    if hidden_count:
        lines.append(
            f"\n{hidden_count} further test {'entry is' if hidden_count == 1 else 'entries are'} not visible to students "
            "yet (shown later, as the course set them, or to staff only)."
        )
    if results.get("output"):
        lines += ["", markdown_fence(results["output"])]
    lines += ["", "| exercise | score | max |", "|---|---:|---:|"]
    by_ex: dict[str, list[dict[str, Any]]] = {}
    other: list[dict[str, Any]] = []
    for test in tests:
        ex_id = test_exercise(test)
        (by_ex.setdefault(ex_id, []) if ex_id else other).append(test)
    for e in EXERCISES:
        if e.id in by_ex:
            s, m = per_ex[e.id]
            lines.append(f"| {e.id} {e.title} | {s:.2f} | {m:.2f} |")
    for group, label in [(by_ex.get(e.id, []), f"{e.id}: {e.title}") for e in EXERCISES] + [(other, "other")]:
        failed = [t for t in group if _failed(t)]
        if not failed:
            continue
        lines += ["", f"## {label}", ""]
        for test in failed:
            vis = f" _[{markdown_inline(_visibility(test, results))}]_" if instructor else ""
            output = str(test.get("output") or "").strip()
            lines.append(
                f"- **{markdown_inline(test.get('name', '?'))}** ({float(test.get('score') or 0):.2f} / "
                f"{float(test.get('max_score') or 0):.2f}){vis}" + (":" if output else "")
            )
            if output:  # a top-level fence: no list-item rule (a line indented too little) can end it early
                lines += ["", markdown_fence(output), ""]
    return terminal_text("\n".join(lines) + "\n", lines=True)


def _failed(test: dict[str, Any]) -> bool:
    if test.get("status") in ("failed", "passed"):
        return test["status"] == "failed"
    return float(test.get("score") or 0.0) < float(test.get("max_score") or 0.0)


def write_outputs(student_dir: Path, student: str, results: dict[str, Any]) -> None:
    """results.json (rewritten when what the grader wrote needed escaping) and the two feedback files."""
    results = clean_data(results)
    student_dir.mkdir(parents=True, exist_ok=True)
    results_path = student_dir / "results.json"
    if readable_results(results_path) != results:
        res.write(results, results_path)
    for name, instructor in (("feedback.md", False), ("feedback_instructor.md", True)):
        (student_dir / name).write_text(
            feedback_markdown(clean_text(student), results, instructor), encoding="utf-8", errors="backslashreplace"
        )


SCORE_EPS = 1e-6  # fraction of the maximum: scores are float sums of case points, off by rounding only


def _distribution(fractions: list[float]) -> str:
    """Counts of students at 0, below half, at least half, and full marks (fractions of the maximum)."""
    zero = sum(f <= SCORE_EPS for f in fractions)
    full = sum(f >= 1 - SCORE_EPS for f in fractions)
    low = sum(SCORE_EPS < f < 0.5 for f in fractions)
    high = len(fractions) - zero - full - low
    return f"{zero:>4} {low:>5} {high:>6} {full:>5}"


def summary_table(records: list[Record], exercises: Sequence[str] | None = None) -> str:
    """Per-exercise and total mean / median / min / max and distribution over `records`
    (rows for `exercises` only, when given: the ones a `--exercises` batch graded)."""
    if not records:
        return "no graded submissions"
    head = (
        f"{'exercise':<10}{'worth':>6}{'mean':>8}{'median':>8}{'min':>7}{'max':>7}   "
        f"{'=0':>4} {'<50%':>5} {'>=50%':>6} {'full':>5}"
    )
    lines = [head, "-" * len(head)]
    rows: list[tuple[str, float, list[float]]] = []
    for e in EXERCISES:
        if exercises is None or e.id in exercises:
            rows.append((e.id, float(e.points), [r.exercises.get(e.id, (0.0, 0.0))[0] for r in records]))
    rows.append(("total", max(r.max_score for r in records), [r.score for r in records]))
    for name, top, scores in rows:
        fractions = [s / top if top > 0 else 0.0 for s in scores]
        lines.append(
            f"{name:<10}{top:>6.1f}{statistics.fmean(scores):>8.2f}{statistics.median(scores):>8.2f}"
            f"{min(scores):>7.2f}{max(scores):>7.2f}   {_distribution(fractions)}"
        )
    failed = [terminal_text(r.student) for r in records if r.status == "grader_failed"]
    lines.append(
        f"{len(records)} submissions; grader failed on {len(failed)}" + (f": {', '.join(failed)}" if failed else "")
    )
    return "\n".join(lines)


ENVIRONMENT_TEST = "grading environment (staff only)"


def isolation_summary(results: Iterable[dict | None]) -> str:
    """Which isolation rung each exercise ran on across a batch, from each results.json's staff entry
    (lines "exNN: rung: NAME (...); ..."): one line per exercise and rung, with how many students."""
    counts: Counter[tuple[str, str]] = Counter()
    for data in results:
        for test in (data or {}).get("tests", []):
            if test.get("name") != ENVIRONMENT_TEST:
                continue
            for line in str(test.get("output", "")).splitlines():
                ex_id, _, rest = line.partition(": rung: ")
                if rest and ex_id != "every exercise":
                    counts[(ex_id, rest.split(" ", 1)[0])] += 1
    if not counts:
        return "isolation: no exercise ran student code"
    lines = ["isolation (rung each exercise's student code ran on; `python -m autograder sandbox` says why):"]
    for (ex_id, rung), n in sorted(counts.items()):
        lines.append(f"  {terminal_text(ex_id)}: {terminal_text(rung)} ({n} submission{'s' if n != 1 else ''})")
    return "\n".join(lines)
