"""What a student is told about one case: the call and outcome of a public case, the fixed words of a
hidden case (the likely mistake, never its inputs or expected value), why a case has no result, and
exception names that carry nothing the student's code chose.

Every text here is built from the case store and fixed phrases; the student's own text is escaped
where it is shown (`autograder.core.safetext`). The grading pipeline (`autograder.runtime.grader`)
calls these once per case.
"""

from __future__ import annotations

import builtins
from collections.abc import Iterable, Sequence
from typing import Any

from autograder.core.manifest import Exercise
from autograder.core.scoring import group_key
from autograder.runtime.intake import MAX_FILE_BYTES, Found  # noqa: F401  (part of the grader's API)
from autograder.runtime.sandbox.limits import ChildReport
from hetero.checks import INPUT_MUTATED, Array, Case, Outcome, Verdict, decode, judge


def short_repr(value: Any, limit: int = 400) -> str:
    """repr(value), cut at `limit` characters with " ..." (staff views and messages quote values this way)."""
    text = repr(value)
    return text if len(text) <= limit else text[:limit] + " ..."


def call_text(case: Case) -> str:
    """The case's call as Python source, each argument cut short: `usd_per_gb(30000.0, 80.0)`."""
    args = ", ".join(
        [short_repr(a, 200) for a in case.args] + [f"{k}={short_repr(v, 200)}" for k, v in case.kwargs.items()]
    )
    call = f"{case.func}({args})"
    return f"{case.harness}(<your module>, {args})" if case.harness else call


def outcome_text(outcome: Outcome | None, reason: str) -> str:
    """What a call produced, in words: its value (cut short), the exception it raised, or `reason` for none."""
    if outcome is None:
        return reason
    if outcome.error_type:
        return f"raised {outcome.error_type}: {outcome.error_message}"
    try:
        return short_repr(decode(outcome.value))
    except Exception:  # a malformed value is reported, not fatal
        return "an unreadable value"


BUILTIN_EXCEPTIONS = frozenset(
    name for name, obj in vars(builtins).items() if isinstance(obj, type) and issubclass(obj, BaseException)
)


def exception_name(error_type: str | None, required: Iterable[str] = ()) -> str:
    """An exception's class name for hidden-case feedback, from a fixed vocabulary.

    Only the names the exercise itself requires (`required`: its cases' `raises`) are spelled out: any
    other name, builtin or not, was picked by the student's code, possibly after it saw the hidden input
    (sixty builtin classes carry six bits per case), so the others share one phrase.
    """
    if error_type == "EncodeError":
        return "a value that is not plain data"
    if error_type in BUILTIN_EXCEPTIONS and error_type in set(required):
        return str(error_type)
    if error_type in BUILTIN_EXCEPTIONS:
        return "an exception of another type (not shown for hidden cases)"
    return "an exception of a class defined in your file"


STOP_WORDS = {  # why a child stopped, in words that carry no number or name the student's code chose
    "exited": "the process exited before finishing (sys.exit, os._exit or a fatal error in your code?)",
    "signal": "the process was killed by a signal (crash, or memory exhausted)",
}


def stop_words(report: ChildReport, during_hidden: bool) -> str:
    """`report.detail`, without the exit status or signal name when the child stopped during a hidden case."""
    if during_hidden and report.ended in STOP_WORDS:
        return STOP_WORDS[report.ended]
    return report.detail


def _kind(value: Any) -> str:
    """The kind of a decoded value, in the fixed words of hidden-case feedback."""
    if isinstance(value, Array):
        return "a torch tensor" if value.tag == "tensor" else "a numpy array"
    names = {
        bool: "a bool",
        int: "an int",
        float: "a float",
        str: "a str",
        list: "a list",
        tuple: "a tuple",
        dict: "a dict",
        type(None): "None",
    }
    return names.get(type(value), "another type")


def mismatch_kind(expect_encoded: Any, outcome: Outcome) -> str:
    """Why a returned value is wrong, from a fixed set of phrases that depend on no hidden input."""
    try:
        expected, got = decode(expect_encoded), decode(outcome.value)
    except Exception:
        return "the returned value could not be read"
    want, have = _kind(expected), _kind(got)
    if want != have:
        return f"type mistake: {want} is expected"  # not which type came back: the student's code chose it
    if isinstance(expected, Array) and isinstance(got, Array):
        if expected.value.dtype != got.value.dtype or expected.torch_dtype != got.torch_dtype:
            return "type mistake: the array's dtype differs from the expected one"
        if expected.value.shape != got.value.shape:
            return "wrong shape"
    if isinstance(expected, dict) and set(expected) != set(got):
        return "wrong keys"
    if isinstance(expected, (list, tuple)) and len(expected) != len(got):
        return "wrong length"
    return "wrong value"


def shown_hints(cases: Sequence[Case]) -> dict[str, str]:
    """Case id -> the hint hidden-case feedback may show for it.

    A hint written for one case alone may state that case's input ("min_immediate = -1 must raise") or
    its answer ("instance 2"); so a hint with a numeral is shown only when two or more cases of the
    exercise share it (a general rule: "/ 8 bits per byte"). A case whose own hint is not shown gets its
    function's most frequent shown hint for the same kind of case (valid or invalid input), or none.
    """
    count: dict[str, int] = {}
    for case in cases:
        if case.hint:
            count[case.hint] = count.get(case.hint, 0) + (1 if any(ch.isdigit() for ch in case.hint) else 2)
    fallback: dict[tuple[str, bool], str] = {}
    for case in cases:
        key = (case.func, bool(case.raises))
        if case.hint and count[case.hint] >= 2 and count[case.hint] > count.get(fallback.get(key, ""), 0):
            fallback[key] = case.hint
    return {
        c.id: c.hint if c.hint and count[c.hint] >= 2 else fallback.get((c.func, bool(c.raises)), "") for c in cases
    }


def tolerance_text(case: Case, shown: set[tuple[str, str]] | None) -> str:
    """The tolerance part of a wrong value's hidden-case line, stated once per function.

    `shown` holds the (scoring group, tolerance note) pairs already stated in this grading (the grader
    passes one set per grading, its lines in entry order): the first failed case of a function states its
    tolerance and says it holds below; a later case with the same note states nothing, one with another
    note states its own. None: every line states its tolerance.
    """
    if shown is None:
        return f" (tolerance: {case.tol_note})"
    key = (group_key(case), case.tol_note)
    if key in shown:
        return ""
    first = not any(group == key[0] for group, _ in shown)
    shown.add(key)
    return f" (tolerance: {case.tol_note}" + ("; the same below unless a line says otherwise)" if first else ")")


def process_note(report: ChildReport) -> str:
    """The sentence about processes left running when the student's code was done, or "".

    `report.survivors_killed` counts every process of the sandbox uid found alive once a child's run was
    over, the student's own process included when the grader had to end it. So processes "started by
    your code" are named only when that process had ended by itself (it finished, no case was stopped,
    and its exit status came back: `returncode`); when every result was in but it did not exit, that is
    said instead; a stop (a time limit, a per-case stop, a crash) is explained by its own sentence.
    """
    if report.ended != "finished" or report.stopped_cases:
        return ""
    if report.returncode is None:
        return "Your code was still running after its last case (a thread or a process it started?); it was stopped."
    if report.survivors_killed:
        return "Processes started by your code were still running after it finished; they were killed."
    return ""


def hidden_message(
    case: Case,
    passed: bool,
    known_mistake: str,
    outcome: Outcome | None,
    reason: str,
    expect: Any,
    required: Iterable[str] = (),
    hint_text: str | None = None,
    shown_tolerances: set[tuple[str, str]] | None = None,
) -> str:
    """Feedback for one hidden case in fixed words: no input, no expected value, nothing the student chose.

    hint_text: the hint to show (`shown_hints`); None shows the case's own. shown_tolerances: one set per
    grading, so a function's tolerance is stated once (`tolerance_text`); None states it on every line.
    """
    unit = f" (unit: {case.unit})" if case.unit else ""
    hint_text = case.hint if hint_text is None else hint_text
    hint = f" Likely mistake: {hint_text}" if hint_text else ""
    if passed:
        return "passed."
    if outcome is None:
        return f"{reason}."
    if outcome.error_type == "NotImplementedError":
        return "not implemented yet."
    if outcome.error_type == INPUT_MUTATED:  # fixed words: the message names hidden inputs
        return (
            "your function changed one of its input arguments in place; inputs are read-only (work on a copy: "
            "sorted(x) instead of x.sort(), list(x), x.clone())."
        )
    known = f" {known_mistake}" if known_mistake else ""
    if case.raises:
        did = f"raised {exception_name(outcome.error_type, required)}" if outcome.error_type else "returned a value"
        return f"this input is invalid and must raise {case.raises}, but your function {did}.{known or hint}"
    if outcome.error_type:
        return (
            f"your function raised {exception_name(outcome.error_type, required)} (its message is not "
            f"shown: it may contain the hidden inputs)."
        )
    kind = mismatch_kind(expect, outcome)
    if kind.startswith("type mistake"):  # no formula hint when the type is what is wrong; a known mistake is named
        return f"{kind}{unit}.{known}"
    return f"{kind}{unit}{tolerance_text(case, shown_tolerances)}.{known or hint}"


def no_result_reason(
    found: Found | None, ex: Exercise, report: ChildReport | None, case_id: str, during_hidden: bool = False
) -> str:
    """Why a case has no result: the file is missing or unreadable, did not import, or its child stopped."""
    if found is None or found.path is None:
        return f"no result: {ex.filename} is not in your submission" if found is None else f"no result: {found.note}"
    assert report is not None
    if report.imported is False:
        return "no result: your file could not be imported (the error is shown with the first public case)"
    if case_id in report.refused:
        return f"no result: {report.refused[case_id]}"
    stage = "while your file was being imported" if report.imported is None else "before this case finished"
    return f"no result: {stop_words(report, during_hidden) or 'the process stopped'} {stage}"


def judge_case(case: Case, outcome: Outcome, expect: Any, mistakes: Any) -> Verdict:
    """The grader's verdict on one case: `hetero.checks.judge` with the case's stored known mistakes, the
    call the public tests make too (`hetero.publictest`, with the same public cases' mistakes shipped
    beside them), so a public case is worded alike in both (`hetero.checks.diagnosis`)."""
    try:
        return judge(case, outcome, expect, {k: tuple(v) for k, v in (mistakes or {}).items()})
    except Exception as exc:  # e.g. a returned value nested too deeply to decode
        return Verdict(False, f"{case.func}: {case.id}: the returned value could not be read ({type(exc).__name__}).")
