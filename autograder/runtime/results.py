"""Assemble, validate and write Gradescope's results.json from graded exercises.

Format: Gradescope's autograder specification (top-level score, output, output_format, visibility,
stdout_visibility, tests[]), checked against
`autograder/schema/gradescope_results.schema.json`. Points are exact hundredths
(`autograder.core.scoring`): each test's score, and the total, is a two-decimal number and the exercise
totals add up to exactly 100.

Per exercise the tests are one entry per function and side: "exNN <function> (public cases)"
(visibility `public_visibility`; each case's call, expected vs got with units) and "exNN <function>
(hidden cases)" (visibility `hidden_visibility`; one line per hidden case in fixed words: passed,
the kind of mistake, the likely mistake; never an input, an expected value, a size that depends on
them, or text the student's code chose). A simulator driven by the student's functions has its own
pair of entries. Only when the manifest opts in (`hidden_detail_visibility`) is there a zero-point
entry with the hidden inputs, expected values and results; on Gradescope a results.json is handed to
later runs of the same student's submissions, so that entry exposes the hidden cases to any later
submission once its visibility level is reached. A staff-only entry records how each exercise's
child was isolated and how long grading took: the optional top-level `execution_time` is not written,
since the student's code steers it (a red-team submission slept a hidden input's value in 10 ms
steps and read it back to the millisecond). When the grader itself fails, a visible "autograder failed" entry with a generic
message and a hidden entry with the traceback take the place of the tests it could not produce (as
otter-grader does).
"""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from autograder.core import safetext, scoring
from autograder.core.manifest import ROOT, Exercise
from autograder.runtime.statedir import created_mode

SCHEMA_PATH = ROOT / "autograder" / "schema" / "gradescope_results.schema.json"
OUTPUT_CHARS = 6000  # one test's output; student-controlled text (values, tracebacks) is clipped
GENERIC_FAILURE = (
    "The autograder failed while grading {what}. This is a problem with the grader, not a "
    "verdict on your code; the course staff can see the details. Please tell them."
)


@dataclass(frozen=True)
class CaseResult:
    case_id: str
    func: str
    hidden: bool
    cents: int  # the case's share in hundredths of a point (autograder.core.scoring)
    passed: bool
    paid: bool  # passed and its group is live (autograder.core.scoring): the share counts
    message: str  # the case's feedback line (hidden cases: fixed words, no inputs or values)
    detail: str = ""  # hidden cases: inputs, expected and got, for the opt-in after-due-date entry
    group: str = ""  # scoring group: the function, or "harness:<module:function>"


@dataclass(frozen=True)
class ExerciseResult:
    exercise: Exercise
    cases: Sequence[CaseResult] = ()
    note: str = ""  # visible sentence about the whole exercise (missing file, crash, time limit)
    output: str = ""  # what the student's code printed before the first hidden case
    hidden_output: str = ""  # everything it printed (shown only in the opt-in hidden detail entry)
    wall_s: float = 0.0
    failure: str | None = None  # traceback when the grader failed on this exercise
    import_error: str = ""  # the student's traceback when the file could not be imported
    isolation: tuple[str, ...] = ()  # how the child was isolated (staff-only entry)

    @property
    def cents(self) -> int:
        return sum(c.cents for c in self.cases if c.paid)

    @property
    def score(self) -> float:
        return scoring.cents_to_points(self.cents)


def clip(text: str, limit: int = OUTPUT_CHARS) -> str:
    return text if len(text) <= limit else text[:limit] + f"\n... ({len(text) - limit} more characters)"


def _group_label(group: str) -> str:
    return f"simulator {group[len('harness:') :]}" if group.startswith("harness:") else group


def _entries(result: ExerciseResult) -> list[tuple[str, bool, list[CaseResult]]]:
    """(group, hidden, cases) in the order the cases come: one Gradescope test per function and side."""
    order: list[tuple[str, bool]] = []
    members: dict[tuple[str, bool], list[CaseResult]] = {}
    for case in result.cases:
        key = (case.group or case.func, case.hidden)
        if key not in members:
            order.append(key)
            members[key] = []
        members[key].append(case)
    return [(group, hidden, members[(group, hidden)]) for group, hidden in order]


def exercise_tests(result: ExerciseResult, index: int) -> list[dict[str, Any]]:
    ex = result.exercise
    if result.failure is not None:
        return failure_tests(f"{ex.id} ({ex.filename})", scoring.to_cents(ex.points), result.failure, f"{index}")
    tests = []
    first_public = True
    for k, (group, hidden, cases) in enumerate(_entries(result), start=1):
        earned = sum(c.cents for c in cases if c.paid)
        total = sum(c.cents for c in cases)
        lines = []
        if not hidden and first_public and result.import_error:
            lines += [f"Your file could not be imported:\n{result.import_error}", ""]
        if not hidden:
            first_public = False
            lines += [
                f"[{'passed' if c.passed else 'FAILED'}] ({scoring.points_text(c.cents)} pt) {c.message}" for c in cases
            ]
        else:
            lines += [
                f"hidden case {n} of {len(cases)} ({scoring.points_text(c.cents)} pt): {c.message}"
                for n, c in enumerate(cases, start=1)
            ]
        tests.append(
            {
                "name": f"{ex.id} {_group_label(group)} ({'hidden' if hidden else 'public'} cases)",
                "number": f"{index}.{k}",
                "score": scoring.cents_to_points(earned),
                "max_score": scoring.cents_to_points(total),
                "status": "passed" if earned == total else "failed",
                "output": clip("\n".join(lines)),
                "output_format": "text",
                "visibility": ex.hidden_visibility if hidden else ex.public_visibility,
            }
        )
    hidden_cases = [c for c in result.cases if c.hidden]
    if hidden_cases and ex.hidden_detail_visibility is not None:
        lines = [f"{ex.id}: the hidden cases, their inputs, expected values and your results.", ""]
        lines += [c.detail for c in hidden_cases]
        if result.hidden_output.strip():
            lines += ["", "Everything your code printed while the cases ran:", result.hidden_output]
        tests.append(
            {
                "name": f"{ex.id} hidden cases: inputs, expected values and your results",
                "number": f"{index}.{len(tests) + 1}",
                "score": 0.0,
                "max_score": 0.0,
                "status": "passed" if all(c.passed for c in hidden_cases) else "failed",
                "output": clip("\n".join(lines), 4 * OUTPUT_CHARS),
                "output_format": "text",
                "visibility": ex.hidden_detail_visibility,
            }
        )
    return tests


def failure_tests(what: str, max_cents: int, trace: str, number: str) -> list[dict[str, Any]]:
    """The visible 'autograder failed' entry and the hidden one holding the traceback."""
    return [
        {
            "name": f"autograder failed: {what}",
            "number": f"{number}.1",
            "score": 0.0,
            "max_score": scoring.cents_to_points(max_cents),
            "status": "failed",
            "output": GENERIC_FAILURE.format(what=what),
            "output_format": "text",
            "visibility": "visible",
        },
        {
            "name": f"autograder failed: {what} (traceback, staff only)",
            "number": f"{number}.2",
            "score": 0.0,
            "max_score": 0.0,
            "status": "failed",
            "output": clip(trace, 4 * OUTPUT_CHARS),
            "output_format": "text",
            "visibility": "hidden",
        },
    ]


def summary_line(result: ExerciseResult) -> str:
    ex = result.exercise
    if result.failure is not None:
        return f"{ex.id} {ex.title}: autograder failed (0 / {ex.points:g})"
    public = [c for c in result.cases if not c.hidden]
    hidden = [c for c in result.cases if c.hidden]
    line = (
        f"{ex.id} {ex.title}: {scoring.points_text(result.cents)} / {ex.points:g} "
        f"(public {sum(c.passed for c in public)}/{len(public)}, hidden {sum(c.passed for c in hidden)}/{len(hidden)} passed)"
    )
    return line + (f"\n     {result.note}" if result.note else "")


def environment_test(results: Sequence[ExerciseResult], number: str, execution_time: float) -> dict[str, Any]:
    """A staff-only entry: how each exercise's child was isolated (its rung and layers; the lines every
    exercise shares said once, then what differs per exercise, its uid), and the grading time (kept from
    the student: their code steers it)."""
    ran = [r for r in results if r.failure is None]
    notes = {r.exercise.id: list(r.isolation) for r in ran}
    shared = [
        line for line in next((n for n in notes.values() if n), []) if all(line in n for n in notes.values() if n)
    ]
    lines = [f"every exercise: {line}" for line in shared]
    for ex_id, own in notes.items():
        rest = [line for line in own if line not in shared]
        rung = next((line for line in own if line.startswith("rung: ")), "")
        lines.append(f"{ex_id}: " + ("; ".join([rung, *rest]) if own else "not run"))
    lines.append(f"grading took {execution_time:.1f} s")
    return {
        "name": "grading environment (staff only)",
        "number": number,
        "score": 0.0,
        "max_score": 0.0,
        "status": "passed",
        "output": clip("\n".join(lines)),
        "output_format": "text",
        "visibility": "hidden",
    }


def assemble(results: Sequence[ExerciseResult], execution_time: float, notes: Sequence[str] = ()) -> dict[str, Any]:
    tests: list[dict[str, Any]] = []
    for index, result in enumerate(results, start=1):
        tests.extend(exercise_tests(result, index))
    tests.append(environment_test(results, f"{len(results) + 1}.1", execution_time))
    total_cents = sum(r.cents for r in results if r.failure is None)
    max_cents = sum(scoring.to_cents(r.exercise.points) for r in results)
    score = scoring.cents_to_points(total_cents)
    lines = [f"Score: {scoring.points_text(total_cents)} / {scoring.points_text(max_cents)}", ""] + [
        summary_line(r) for r in results
    ]
    if notes:
        lines += ["", *notes]
    printed = [r for r in results if r.output.strip()]
    for r in printed:
        lines += ["", f"{r.exercise.id}: what your code printed before the hidden cases:", clip(r.output, 2000)]
    return {
        "score": score,
        "output": clip("\n".join(lines), 4 * OUTPUT_CHARS),
        "output_format": "text",
        "visibility": "visible",
        "stdout_visibility": "hidden",
        "tests": tests,
    }


def grader_failure(trace: str, max_score: float, execution_time: float = 0.0) -> dict[str, Any]:
    """Results for a run the grader could not complete at all (the time goes into the staff-only traceback)."""
    trace = f"{trace}\ngrading took {execution_time:.1f} s"
    return {
        "score": 0.0,
        "output": GENERIC_FAILURE.format(what="this submission"),
        "output_format": "text",
        "visibility": "visible",
        "stdout_visibility": "hidden",
        "tests": failure_tests("this submission", scoring.to_cents(max_score), trace, "0"),
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
        if (
            set(test) - allowed
            or test.get("status") not in ("passed", "failed")
            or test.get("visibility", "visible") not in visibility
        ):
            raise ValueError(f"results.json: malformed test {test.get('name')!r}")


def write(results: dict[str, Any], out: Path) -> None:
    """Write atomically: a file or symlink planted at `out` is replaced, never followed or appended to.
    Text that UTF-8 cannot encode (a lone surrogate in a student's exception message) is escaped."""
    results = safetext.clean_data(results)
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=".results-", suffix=".json", dir=out.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            json.dump(results, handle, indent=2)
            handle.write("\n")
        os.chmod(tmp, created_mode())
        os.replace(tmp, out)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise
