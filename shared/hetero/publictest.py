"""The public tests' runner: one case in this process, under its time limit, told in one short block.

`tests/test_public.py` (in `assignments/` and in the student bundle) calls `run_public_case` once per
public case. The result is a `CaseReport`: passed, or a short text the test prints as its only failure
output (no harness source, no traceback into `hetero`):

    call:     kv_capacity_tokens(449100000000.0, 327680.0)
    expected: 1370544 tokens
    got:      1370544.0
    problem:  type mistake: expected a Python int (1370544), got float 1370544.0 (...)

An exception from the student's code is shown as the exception and the student's own `file:line` and
source line. A call that does not return within the exercise's per-case limit (`case_timeout_s`, the
same limit each case has in Gradescope grading) is stopped with "stopped after N s"; as in grading, the
later cases of that function are then not run (they fail, saying so), and other functions' cases go on.
The limit uses SIGALRM, so it holds on Linux and macOS; where SIGALRM does not
exist (Windows) only pytest-timeout's global limit applies.

The per-exercise limits and points come from `exercises.json` beside the public tests, which the release
tool writes from the manifest, so the student's copy needs no grader code. `public_mistakes.json`, also
written by the release, holds what each known mistake returns on each public case (public inputs only):
a failed case's last line is `hetero.checks.diagnosis`, the same words the grader gives that case
(the known mistake whose output the returned value matches, else the case's hint).
"""

from __future__ import annotations

import json
import linecache
import signal
import threading
import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from hetero.checks import INPUT_MUTATED, Case, EncodeError, InputMutated, Outcome, decode, encode, invoke, judge
from hetero.impl import EXERCISES, MissingExercise, load_exercise, student_location

DEFAULT_CASE_TIMEOUT_S = 10.0
MISTAKES_FILE = "public_mistakes.json"  # {public case id: {mistake: [description, encoded output]}}
_UNLOADABLE: dict[tuple[str, str], str] = {}  # (exercise, folder) -> why its file could not be loaded
_TIMED_OUT: dict[tuple[str, str, str], str] = {}  # (exercise, function, folder) -> the case that ran out of time


@dataclass(frozen=True)
class ExerciseInfo:
    """What the public tests need to know of one exercise (from exercises.json or the manifest)."""

    id: str
    title: str
    points: float
    case_timeout_s: float
    public_points: float = 0.0  # what all its public cases give together
    case_points: Mapping[str, float] = field(default_factory=dict)  # public case id -> its share


def load_listing(tests_dir: Path) -> dict[str, ExerciseInfo]:
    """Per-exercise points and limits from `tests_dir/exercises.json` (written by the release tool).

    Without that file (the answer key's own `solutions/tests/`, which is never run by students) every
    exercise gets the default limit and no points."""
    listing = Path(tests_dir) / "exercises.json"
    if not listing.is_file():
        return {ex_id: ExerciseInfo(ex_id, module, 0.0, DEFAULT_CASE_TIMEOUT_S) for ex_id, module in EXERCISES.items()}
    entries = json.loads(listing.read_text(encoding="utf-8"))
    return {
        e["id"]: ExerciseInfo(
            e["id"],
            e["title"],
            float(e["points"]),
            float(e.get("case_timeout_s", DEFAULT_CASE_TIMEOUT_S)),
            float(e.get("public_points", 0.0)),
            {k: float(v) for k, v in e.get("public_case_points", {}).items()},
        )
        for e in entries
    }


def load_mistakes(tests_dir: Path) -> dict[str, dict[str, tuple[str, Any]]]:
    """Public case id -> {mistake: (description, its encoded output on that case)}, from
    `tests_dir/public_mistakes.json` (written by the release tool; none without it)."""
    path = Path(tests_dir) / MISTAKES_FILE
    if not path.is_file():
        return {}
    data = json.loads(path.read_text(encoding="utf-8"))
    return {case_id: {k: (v[0], v[1]) for k, v in table.items()} for case_id, table in data.items()}


class CaseTimeout(BaseException):
    """Raised inside a call that ran past its limit. A BaseException, so that `except Exception` in the
    student's loop does not swallow it (and it is raised again every second until the call gives up)."""


@contextmanager
def time_limit(seconds: float) -> Iterator[None]:
    """Raise CaseTimeout in this (main) thread after `seconds` of wall-clock time (and every second after,
    until the call gives up). An outer SIGALRM timer (pytest-timeout's signal method) is suspended
    meanwhile and restored, less the time spent, afterwards."""
    usable = hasattr(signal, "SIGALRM") and threading.current_thread() is threading.main_thread()
    if not usable or seconds <= 0:
        yield
        return

    def on_alarm(signum: int, frame: Any) -> None:
        raise CaseTimeout()

    outer_delay_s, outer_interval_s = signal.getitimer(signal.ITIMER_REAL)  # pytest-timeout's, if any
    previous = signal.signal(signal.SIGALRM, on_alarm)
    start = time.monotonic()
    signal.setitimer(signal.ITIMER_REAL, seconds, 1.0)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
        if outer_delay_s > 0:  # give the outer timer back what is left of it
            signal.setitimer(
                signal.ITIMER_REAL, max(outer_delay_s - (time.monotonic() - start), 1e-3), outer_interval_s
            )


@dataclass(frozen=True)
class CaseReport:
    passed: bool
    text: str  # empty when passed; else the block the test prints
    advice: str = ""  # its last line's words: `hetero.checks.diagnosis`, as the grader words the case


def _short(value: Any, limit: int = 160) -> str:
    text = repr(value)
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _call_text(case: Case) -> str:
    args = [_short(a) for a in case.args] + [f"{k}={_short(v)}" for k, v in dict(case.kwargs).items()]
    call = f"{case.func}({', '.join(args)})"
    if case.harness:
        call += f"  [run by {case.harness} with your module]"
    return call


def _expected_text(case: Case) -> str:
    if case.raises:
        return f"raises {case.raises}"
    unit = f" {case.unit}" if case.unit else ""
    return f"{_short(case.expect)}{unit}"


def _exception_text(exc: BaseException, path: str) -> str:
    where = student_location(exc, path)
    message = " ".join(str(exc).split())[:300]
    text = f"raised {type(exc).__name__}" + (f": {message}" if message else "") + f"  (at {where})"
    if ":" in where:
        line = linecache.getline(path, int(where.rsplit(":", 1)[1])).strip()
        if line:
            text += f"\n          {line}"
    return text


def _block(case: Case, got: str, problem: str, advice: str = "") -> str:
    lines = [f"call:     {_call_text(case)}", f"expected: {_expected_text(case)}", f"got:      {got}"]
    lines.append(f"problem:  {problem}")
    if advice.startswith("Likely mistake: "):
        lines.append(f"likely mistake: {advice.removeprefix('Likely mistake: ')}")
    elif advice:
        lines.append(f"mistake:  {advice}")
    return "\n".join(lines)


def run_public_case(
    case: Case, impl_dir: Path, limit_s: float, mistakes: Mapping[str, tuple[str, Any]] | None = None
) -> CaseReport:
    """Load the exercise from `impl_dir`, run one public case under `limit_s`, judge it.

    mistakes: the case's known mistakes and their outputs (`load_mistakes(tests_dir)[case.id]`)."""
    filename = f"{EXERCISES[case.ex_id]}.py"
    key = (case.ex_id, str(Path(impl_dir).resolve()))
    if key in _UNLOADABLE:  # imported once already and failed: the same reason, without running it again
        return CaseReport(False, _UNLOADABLE[key])
    try:
        with time_limit(limit_s):
            module = load_exercise(case.ex_id, impl_dir)
    except MissingExercise as exc:  # the file is missing or does not import
        _UNLOADABLE[key] = f"{filename} could not be loaded: {exc}"
    except CaseTimeout:
        _UNLOADABLE[key] = (
            f"{filename} could not be loaded: importing it did not finish within {limit_s:g} s "
            f"(stopped after {limit_s:g} s); look for code that runs at import"
        )
    except SystemExit as exc:
        _UNLOADABLE[key] = (
            f"{filename} could not be loaded: it calls exit ({exc.code!r}) while being "
            "imported; a file of functions must not exit"
        )
    if key in _UNLOADABLE:
        return CaseReport(False, _UNLOADABLE[key])
    path = str(getattr(module, "__file__", "") or Path(impl_dir) / filename)
    timed_out = (case.ex_id, case.func, key[1])
    if timed_out in _TIMED_OUT:  # the grader's rule: a function that ran out of time runs no later case
        return CaseReport(
            False,
            _block(
                case,
                "no result: not run",
                (
                    f"{case.func} already ran longer than the per-case time limit on an earlier case "
                    f"({_TIMED_OUT[timed_out]}); Gradescope grading does not run the later cases of such a "
                    "function either, public or hidden (they score 0). Make that case return in time first."
                ),
            ),
        )
    error: BaseException | None = None
    try:
        with time_limit(limit_s):
            value = invoke(case, module)
    except CaseTimeout:
        _TIMED_OUT[timed_out] = case.id
        return CaseReport(
            False,
            _block(
                case,
                f"no result: stopped after {limit_s:g} s",
                (
                    f"{case.func} did not return within this exercise's per-case limit of {limit_s:g} s (Gradescope "
                    f"stops each case at the same limit, and then runs no later case of {case.func}). Look for a "
                    "loop whose condition never changes, or work that grows much faster than the input."
                ),
            ),
        )
    except SystemExit as exc:
        return CaseReport(
            False,
            _block(
                case,
                f"no result: the call exited ({exc.code!r})",
                "your function calls exit(); return the value instead",
            ),
        )
    except InputMutated as exc:  # it returned, but changed the caller's data
        return report_outcome(
            case, Outcome(None, INPUT_MUTATED, str(exc)), mistakes, "a value, after changing its input"
        )
    except Exception as exc:  # the student's exception is data here
        error = exc
        outcome = Outcome(None, type(exc).__name__, str(exc)[:2000])
    else:
        try:
            outcome = Outcome(encode(value))
        except EncodeError as exc:
            outcome = Outcome(None, "EncodeError", str(exc))
    got = _exception_text(error, path) if error is not None else _short(value)
    return report_outcome(case, outcome, mistakes, got, filename)


def report_outcome(
    case: Case,
    outcome: Outcome,
    mistakes: Mapping[str, tuple[str, Any]] | None = None,
    got: str | None = None,
    filename: str = "",
) -> CaseReport:
    """The public test's report of one call's outcome, judged as the grader judges it (`judge` with the
    case's known mistakes). got: how the returned value or exception is shown (default: the value)."""
    if outcome.error_type == "NotImplementedError":
        where = f"; fill it in {filename}" if filename else ""
        return CaseReport(False, f"NotImplementedError: {outcome.error_message} is not implemented yet{where}")
    verdict = judge(case, outcome, None, mistakes)
    if verdict.passed:
        return CaseReport(True, "")
    if outcome.error_type == "EncodeError":
        got = f"a value that is not plain data ({outcome.error_message})"
    elif got is None:
        got = f"raised {outcome.error_type}: {outcome.error_message}" if outcome.error_type else _shown(outcome)
    prefix = f"{case.func}: {case.id}: "
    problem = verdict.message[len(prefix) :] if verdict.message.startswith(prefix) else verdict.message
    if verdict.advice and problem.endswith(f" {verdict.advice}"):
        problem = problem[: -len(verdict.advice) - 1]
    if outcome.error_type and outcome.error_type not in ("EncodeError", INPUT_MUTATED) and not case.raises:
        problem = "your function raised an exception instead of returning a value (see the line above)"
    return CaseReport(False, _block(case, got, problem, verdict.advice), verdict.advice)


def _shown(outcome: Outcome) -> str:
    try:
        return _short(decode(outcome.value))
    except Exception:  # a malformed value is reported, not fatal
        return "a value that could not be read"
