"""Assemble, validate and write Gradescope's results.json from graded exercises.

Format: Gradescope's autograder specification (top-level score, execution_time, output,
output_format, visibility, stdout_visibility, tests[]), checked against
`autograder/schema/gradescope_results.schema.json`. Points come from `autograder.manifest`: an
exercise's `points * public_share` are split over its public cases in proportion to `Case.points`,
the rest over its hidden cases.

Per exercise the tests are: one entry per public case (visibility `public_visibility`; expected vs
got with units); one pass/fail entry per hidden case (visibility `hidden_visibility`; what was
checked and the likely mistake, never the inputs or the expected value); one zero-point entry
(visibility `hidden_detail_visibility`) with the hidden inputs, expected values and results. When
the grader itself fails, a visible "autograder failed" entry with a generic message and a hidden
entry with the traceback take the place of the tests it could not produce (as otter-grader does).
"""

from __future__ import annotations

import json
import os
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Optional, Sequence

from autograder.manifest import ROOT, Exercise

SCHEMA_PATH = ROOT / "autograder" / "schema" / "gradescope_results.schema.json"
OUTPUT_CHARS = 6000  # one test's output; student-controlled text (values, tracebacks) is clipped
GENERIC_FAILURE = ("The autograder failed while grading {what}. This is a problem with the grader, not a "
                   "verdict on your code; the course staff can see the details. Please tell them.")


@dataclass(frozen=True)
class CaseResult:
    case_id: str
    func: str
    hidden: bool
    max_score: float
    passed: bool
    message: str  # the pass/fail entry's text (hidden cases: without inputs or values)
    detail: str = ""  # hidden cases: inputs, expected and got, for the after-due-date entry


@dataclass(frozen=True)
class ExerciseResult:
    exercise: Exercise
    cases: Sequence[CaseResult] = ()
    note: str = ""  # visible sentence about the whole exercise (missing file, crash, time limit)
    output: str = ""  # what the student's code printed before the first hidden case
    hidden_output: str = ""  # everything it printed (shown with the hidden details)
    wall_s: float = 0.0
    failure: Optional[str] = None  # traceback when the grader failed on this exercise

    @property
    def score(self) -> float:
        return sum(c.max_score for c in self.cases if c.passed)


@dataclass
class Assembly:
    tests: list[dict[str, Any]] = field(default_factory=list)
    summary: list[str] = field(default_factory=list)


def split_points(total: float, weights: Sequence[float]) -> list[float]:
    """`total` split over cases in proportion to their weights (empty when there are no cases)."""
    if not weights:
        return []
    if any(w < 0 for w in weights) or sum(weights) <= 0:
        raise ValueError(f"case points must be >= 0 with a positive sum, got {list(weights)}")
    scale = total / sum(weights)
    return [w * scale for w in weights]


def clip(text: str, limit: int = OUTPUT_CHARS) -> str:
    return text if len(text) <= limit else text[:limit] + f"\n... ({len(text) - limit} more characters)"


def _points(x: float) -> float:
    return round(x, 9)


def exercise_tests(result: ExerciseResult, index: int) -> list[dict[str, Any]]:
    ex = result.exercise
    if result.failure is not None:
        return failure_tests(f"{ex.id} ({ex.filename})", ex.points, result.failure, f"{index}")
    tests = []
    for k, case in enumerate(result.cases, start=1):
        name = f"{ex.id} {case.case_id}" + (" (hidden)" if case.hidden else "")
        tests.append({
            "name": name,
            "number": f"{index}.{k}",
            "score": _points(case.max_score if case.passed else 0.0),
            "max_score": _points(case.max_score),
            "status": "passed" if case.passed else "failed",
            "output": clip(case.message),
            "output_format": "text",
            "visibility": ex.hidden_visibility if case.hidden else ex.public_visibility,
        })
    hidden = [c for c in result.cases if c.hidden]
    if hidden:
        lines = [f"{ex.id}: the hidden cases, their inputs, expected values and your results.", ""]
        lines += [c.detail for c in hidden]
        if result.hidden_output.strip():
            lines += ["", "Everything your code printed while the cases ran:", result.hidden_output]
        tests.append({
            "name": f"{ex.id} hidden cases: inputs, expected values and your results",
            "number": f"{index}.{len(result.cases) + 1}",
            "score": 0.0,
            "max_score": 0.0,
            "status": "passed" if all(c.passed for c in hidden) else "failed",
            "output": clip("\n".join(lines), 4 * OUTPUT_CHARS),
            "output_format": "text",
            "visibility": ex.hidden_detail_visibility,
        })
    return tests


def failure_tests(what: str, max_score: float, trace: str, number: str) -> list[dict[str, Any]]:
    """The visible 'autograder failed' entry and the hidden one holding the traceback."""
    return [
        {"name": f"autograder failed: {what}", "number": f"{number}.1", "score": 0.0,
         "max_score": _points(max_score), "status": "failed", "output": GENERIC_FAILURE.format(what=what),
         "output_format": "text", "visibility": "visible"},
        {"name": f"autograder failed: {what} (traceback, staff only)", "number": f"{number}.2", "score": 0.0,
         "max_score": 0.0, "status": "failed", "output": clip(trace, 4 * OUTPUT_CHARS),
         "output_format": "text", "visibility": "hidden"},
    ]


def summary_line(result: ExerciseResult) -> str:
    ex = result.exercise
    if result.failure is not None:
        return f"{ex.id} {ex.title}: autograder failed (0 / {ex.points:g})"
    public = [c for c in result.cases if not c.hidden]
    hidden = [c for c in result.cases if c.hidden]
    line = (f"{ex.id} {ex.title}: {result.score:.2f} / {ex.points:g} "
            f"(public {sum(c.passed for c in public)}/{len(public)}, hidden {sum(c.passed for c in hidden)}/{len(hidden)})")
    return line + (f"\n     {result.note}" if result.note else "")


def assemble(results: Sequence[ExerciseResult], execution_time: float, notes: Sequence[str] = ()) -> dict[str, Any]:
    tests: list[dict[str, Any]] = []
    for index, result in enumerate(results, start=1):
        tests.extend(exercise_tests(result, index))
    score = round(sum(t["score"] for t in tests), 6)
    max_score = round(sum(t["max_score"] for t in tests), 6)
    lines = [f"Score: {score:g} / {max_score:g}", ""] + [summary_line(r) for r in results]
    if notes:
        lines += ["", *notes]
    printed = [r for r in results if r.output.strip()]
    for r in printed:
        lines += ["", f"{r.exercise.id}: what your code printed before the hidden cases:", clip(r.output, 2000)]
    return {
        "score": score,
        "execution_time": round(execution_time, 3),
        "output": clip("\n".join(lines), 4 * OUTPUT_CHARS),
        "output_format": "text",
        "visibility": "visible",
        "stdout_visibility": "hidden",
        "tests": tests,
    }


def grader_failure(trace: str, max_score: float, execution_time: float = 0.0) -> dict[str, Any]:
    """Results for a run the grader could not complete at all."""
    return {
        "score": 0.0,
        "execution_time": round(execution_time, 3),
        "output": GENERIC_FAILURE.format(what="this submission"),
        "output_format": "text",
        "visibility": "visible",
        "stdout_visibility": "hidden",
        "tests": failure_tests("this submission", max_score, trace, "0"),
    }


def validate(results: dict[str, Any]) -> None:
    """Raise if `results` does not follow the schema (jsonschema when installed, else the essentials)."""
    schema = json.loads(SCHEMA_PATH.read_text(encoding="utf-8"))
    try:
        import jsonschema
    except ImportError:
        _validate_essentials(results, schema)
        return
    jsonschema.Draft202012Validator(schema).validate(results)


def _validate_essentials(results: dict[str, Any], schema: dict[str, Any]) -> None:
    unknown = set(results) - set(schema["properties"])
    if unknown:
        raise ValueError(f"results.json: unknown fields {sorted(unknown)}")
    if not isinstance(results.get("score"), (int, float)):
        raise ValueError("results.json: score must be a number")
    allowed = set(schema["$defs"]["test"]["properties"])
    visibility = set(schema["$defs"]["visibility"]["enum"])
    for test in results.get("tests", []):
        if set(test) - allowed or test.get("status") not in ("passed", "failed") \
                or test.get("visibility", "visible") not in visibility:
            raise ValueError(f"results.json: malformed test {test.get('name')!r}")


def write(results: dict[str, Any], out: Path) -> None:
    """Write atomically: a file or symlink planted at `out` is replaced, never followed or appended to."""
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=".results-", suffix=".json", dir=out.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            json.dump(results, handle, indent=2)
            handle.write("\n")
        os.chmod(tmp, 0o644)
        os.replace(tmp, out)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise
