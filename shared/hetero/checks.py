"""Test cases as data, their plain-data encoding, and the comparison that grades them.

One format serves every place an exercise is checked:
- the public tests (`assignments/tests/`), which students run in-process with pytest;
- the autograder, which runs a case's call inside a sandboxed child process, receives only the
  *encoded* return value (JSON; arrays as raw bytes, never pickle) and compares it here, in the
  trusted parent, against an expected value computed from the answer key when the grader was built;
- the notebook exports, whose test cells call `check_call`.

A `Case` names an exercise function and its arguments. Arguments are plain data, or `Gen` specs
that `hetero.harness` expands into inputs (tensors, simulator scenarios) inside the process that
runs the call. A `harness` case calls a `hetero` function with the exercise module as its first
argument (e.g. the overload simulator driven by the student's admission rule).
"""

from __future__ import annotations

import base64
import copy
import inspect
import json
import math
import sys
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from hetero.harness import Gen, expand, resolve

if TYPE_CHECKING:
    import numpy as np

NO_EXPECT = "__no_expect__"  # sentinel: the expected value is filled in from the answer key


@dataclass(frozen=True)
class Case:
    """One checked call of an exercise function.

    id:        unique, "exNN.<function>.<what>"; it is the Gradescope test name's suffix.
    func:      function name in the exercise module (or the harness's label when `harness` is set).
    args/kwargs: plain data or `Gen` specs.
    expect:    the expected return value; NO_EXPECT in hidden cases (filled from the answer key).
    raises:    name of the exception class expected instead of a value ("ValueError").
    rel_tol/abs_tol: for floats and float arrays; `tol_note` says why that tolerance.
    unit:      unit of the returned value, shown in feedback ("GB", "tokens/s", "$ per GB/s").
    hint:      the likely mistake when the check fails.
    points:    relative weight of the case inside its exercise's public or hidden share.
    harness:   "<module>.<function>" in `hetero.harness`, called as harness(exercise_module, *args, **kwargs).
    uses:      harness cases: the exercise functions the harness drives (their cases must show the
               submission computes before the harness's cases pay; see `autograder.core.scoring`).
    kind:      the documented edge(s) the case isolates ("tie", "rounding", "below one", ...; several are
               separated by commas; "" for an ordinary value): every kind a hidden case of a function has,
               a public case of that function has too (`autograder.authoring.coverage`).
    """

    id: str
    func: str
    args: tuple = ()
    kwargs: Mapping[str, Any] = field(default_factory=dict)
    expect: Any = NO_EXPECT
    raises: str | None = None
    rel_tol: float = 1e-9
    abs_tol: float = 0.0
    tol_note: str = "exact up to float rounding"
    unit: str = ""
    hint: str = ""
    points: float = 1.0
    harness: str | None = None
    uses: tuple[str, ...] = ()
    kind: str = ""

    @property
    def ex_id(self) -> str:
        return self.id.split(".", 1)[0]

    def with_expect(self, value: Any) -> Case:
        return Case(**{**self.__dict__, "expect": value})


# ---------------------------------------------------------------------------------------------
# Plain-data encoding. The child encodes what the student's function returned; the parent decodes
# it without running any of the student's code. Only exact built-in types and numpy/torch arrays
# are accepted: a subclass (for instance a float whose __eq__ is always True) is refused.


class EncodeError(TypeError):
    """A returned value that is not plain data (wrong type, subclass, object)."""


def encode(value: Any) -> Any:
    """Encode a return value (or an argument) as JSON-safe plain data."""
    kind = type(value)
    if value is None or kind in (bool, int, str):
        return value
    if kind is float:
        return value if math.isfinite(value) else {"__float__": repr(value)}
    if kind in (list, tuple):
        items = [encode(v) for v in value]
        return items if kind is list else {"__tuple__": items}
    if kind is dict:
        if not all(type(k) is str for k in value):
            raise EncodeError("dict keys must be str")
        return {"__dict__": {k: encode(v) for k, v in value.items()}}
    if kind is Gen:
        return {"__gen__": value.name, "params": encode(dict(value.params))}
    # numpy is imported where an array is decoded or compared, not here: a sandboxed child whose exercise
    # uses no numpy saves its import (0.1 s of CPU per child); a numpy value exists only once numpy is imported
    numpy = sys.modules.get("numpy")
    if numpy is not None and isinstance(value, numpy.generic) and type(value).__module__ == "numpy":
        if isinstance(value, (numpy.bool_, numpy.integer, numpy.float64)):  # the same value as bool/int/float
            return encode(value.item())
        if isinstance(value, numpy.floating):  # float32/float16/longdouble: kept, so the type is named
            item = float(value)
            return {"__npscalar__": type(value).__name__, "value": item if math.isfinite(item) else repr(item)}
        raise EncodeError(f"returned a numpy.{type(value).__name__} scalar, which is not a plain number")
    if numpy is not None and kind is numpy.ndarray:
        return _encode_array(value, "ndarray")
    torch = sys.modules.get("torch")  # a tensor exists only once torch is imported: never import it here (1-2 s)
    if torch is not None and kind in (torch.Tensor, torch.nn.Parameter):
        return _encode_array(value.detach().cpu().contiguous().numpy(), "tensor", str(value.dtype))
    raise EncodeError(
        f"returned an object of type {kind.__module__}.{kind.__qualname__}, "
        "which is not plain data (float, int, bool, str, list, tuple, dict, ndarray, tensor)"
    )


def _encode_array(arr: np.ndarray, tag: str, torch_dtype: str | None = None) -> dict:
    import numpy as np

    arr = np.array(arr, order="C", copy=True)  # not ascontiguousarray: that turns a 0-d array into shape (1,)
    if arr.dtype.kind not in "biuf":
        raise EncodeError(f"array of dtype {arr.dtype} is not numeric")
    return {
        "__array__": tag,
        "dtype": arr.dtype.str,
        "shape": list(arr.shape),
        "torch_dtype": torch_dtype,
        "b64": base64.b64encode(arr.tobytes()).decode("ascii"),
    }


def decode(data: Any) -> Any:
    """Inverse of `encode`; arrays come back as numpy arrays wrapped in `Array` (keeps the tag)."""
    if isinstance(data, list):
        return [decode(v) for v in data]
    if isinstance(data, dict):
        if "__float__" in data:
            return float(data["__float__"])
        if "__tuple__" in data:
            return tuple(decode(v) for v in data["__tuple__"])
        if "__dict__" in data:
            return {k: decode(v) for k, v in data["__dict__"].items()}
        if "__npscalar__" in data:
            value = data["value"]
            return NumpyScalar(str(data["__npscalar__"]), float(value) if type(value) is str else value)
        if "__gen__" in data:
            return Gen(data["__gen__"], decode(data["params"]))
        if "__array__" in data:
            import numpy as np

            dtype = np.dtype(data["dtype"])
            if dtype.kind not in "biuf" or dtype.hasobject:
                raise EncodeError(f"refused array dtype {dtype}")
            raw = base64.b64decode(data["b64"])
            arr = np.frombuffer(raw, dtype=dtype).reshape(data["shape"]).copy()
            return Array(arr, data["__array__"], data.get("torch_dtype"))
        raise EncodeError(f"unknown encoded object with keys {sorted(data)}")
    return data


def unwrap(value: Any) -> Any:
    """Decoded arguments -> call arguments: each `Array` back to a numpy array or a torch tensor."""
    if isinstance(value, Array):
        if value.tag == "tensor":
            import torch

            return torch.from_numpy(value.value.copy())
        return value.value
    if isinstance(value, list):
        return [unwrap(v) for v in value]
    if isinstance(value, tuple):
        return tuple(unwrap(v) for v in value)
    if isinstance(value, dict):
        return {k: unwrap(v) for k, v in value.items()}
    if isinstance(value, Gen):
        return Gen(value.name, unwrap(dict(value.params)))
    return value


@dataclass(frozen=True)
class Array:
    """A decoded array plus where it came from ("ndarray" or "tensor", and the torch dtype)."""

    value: np.ndarray
    tag: str
    torch_dtype: str | None = None


@dataclass(frozen=True)
class NumpyScalar:
    """A decoded numpy float scalar other than float64 (float32, float16, longdouble): its type is kept so
    that feedback names it. numpy.float64 and numpy integer/bool scalars decode as float/int/bool."""

    dtype: str
    value: float


# ---------------------------------------------------------------------------------------------
# Comparison. `compare(expected, got)` returns None when they agree, else a sentence saying what
# differs. Both sides are *decoded* plain data.


def compare(expected: Any, got: Any, rel_tol: float, abs_tol: float, path: str = "") -> str | None:
    """None when `got` agrees with `expected`, else a sentence saying what differs.

    Numbers agree within `rel_tol`/`abs_tol` (`math.isclose`); non-finite values take no tolerance: a
    NaN agrees with a NaN only, an infinity with the same infinity only (inf with inf, -inf with -inf),
    and a finite expected value with no NaN or infinity. Arrays follow the same rule element by element.
    """
    return _compare(expected, got, rel_tol, abs_tol, path)[0]


TYPE_MISTAKE = "type mistake:"  # the start of every comparison sentence about a wrong type


def _type_mistake(wanted: str, where: str, got: Any, value_right: bool, fix: str) -> tuple[str, bool]:
    """(sentence, value_right) for a value of the wrong type; `value_right`: same value, wrong type only."""
    verdict = "the value is right, only its type is wrong" if value_right else "the value differs too"
    return f"{TYPE_MISTAKE} expected {wanted}{where}, got {_describe(got)} ({verdict}; {fix})", value_right


def _as_number(got: Any) -> float | None:
    """The number inside a numpy scalar or a 0-d array/tensor, or a plain int/float; else None."""
    if isinstance(got, NumpyScalar):
        return got.value
    if isinstance(got, Array) and got.value.shape == () and got.value.dtype.kind in "biuf":
        return got.value.item()
    if type(got) in (int, float):
        return got
    return None


def _number_fix(got: Any, target: str) -> str:
    if isinstance(got, NumpyScalar):
        return f"return {target}(...) of the result; numpy.{got.dtype} keeps fewer digits than a Python float"
    if isinstance(got, Array):
        return f"return {target}(x.item()) instead of the 0-d {got.tag}"
    if target == "int" and type(got) is float:
        return "a count of whole things is an int: round as the docstring says, then int(...)"
    return f"return {'an' if target[0] in 'aeiou' else 'a'} {target}"


def _compare(expected: Any, got: Any, rel_tol: float, abs_tol: float, path: str = "") -> tuple[str | None, bool]:
    """(problem or None, True when the only problem is the type of a right value)."""
    where = f" at {path}" if path else ""
    if isinstance(expected, bool):
        if type(got) is not bool:
            number = _as_number(got)
            return _type_mistake(
                "a bool", where, got, number is not None and number == expected, "return True or False"
            )
        return (None if got == expected else f"expected {expected}{where}, got {got}"), False
    if isinstance(expected, int):
        if type(got) is not int:
            number = _as_number(got)
            return _type_mistake(
                f"a Python int ({expected})",
                where,
                got,
                number is not None and number == expected,
                _number_fix(got, "int"),
            )
        return (None if got == expected else f"expected {expected}{where}, got {got}"), False
    if isinstance(expected, float):
        if type(got) is int:  # the docstring says float: `//` or int(...) where `/` was meant
            return _type_mistake(
                f"a Python float ({expected!r})",
                where,
                got,
                math.isclose(got, expected, rel_tol=max(rel_tol, 1e-6), abs_tol=abs_tol),
                "return a float: `/` gives one, `//` and int(...) give an int",
            )
        if type(got) is not float:
            number = _as_number(got)
            right = number is not None and math.isclose(number, expected, rel_tol=max(rel_tol, 1e-6), abs_tol=abs_tol)
            return _type_mistake(f"a Python float ({expected!r})", where, got, right, _number_fix(got, "float"))
        if math.isnan(expected):
            return (None if math.isnan(got) else f"expected nan{where}, got {_fmt(got)}"), False
        if math.isinf(expected) or not math.isfinite(got):  # no tolerance around inf or nan (`compare`)
            return (None if got == expected else f"expected {_fmt(expected)}{where}, got {_fmt(got)}"), False
        if math.isclose(got, expected, rel_tol=rel_tol, abs_tol=abs_tol):
            return None, False
        shown_e, shown_g = _fmt_pair(expected, float(got))
        return f"expected {shown_e}{where}, got {shown_g}", False
    if isinstance(expected, str):
        if type(got) is not str:
            return _type_mistake(f"a str ({expected!r})", where, got, False, "return a str")
        return (None if got == expected else f"expected {expected!r}{where}, got {got!r}"), False
    if expected is None:
        return (None if got is None else f"expected None{where}, got {_describe(got)}"), False
    if isinstance(expected, (list, tuple)):
        kind = type(expected).__name__
        if type(got) is not type(expected):
            right = (
                type(got) in (list, tuple)
                and len(got) == len(expected)
                and _compare(expected, type(expected)(got), rel_tol, abs_tol, path)[0] is None
            )
            return _type_mistake(f"a {kind}", where, got, right, f"return a {kind}, e.g. {kind}(...)")
        if len(got) != len(expected):
            return f"expected {len(expected)} items{where}, got {len(got)}", False
        for i, (e, g) in enumerate(zip(expected, got, strict=False)):
            problem = _compare(e, g, rel_tol, abs_tol, f"{path}[{i}]")
            if problem[0]:
                return problem
        return None, False
    if isinstance(expected, dict):
        if type(got) is not dict:
            return _type_mistake(
                "a dict",
                where,
                got,
                _dict_values_right(expected, got, rel_tol, abs_tol, path),
                f"return a dict with the keys {', '.join(repr(k) for k in expected)}",
            )
        if set(got) != set(expected):
            return f"expected keys {sorted(expected)}{where}, got {sorted(got)}", False
        for k in expected:
            problem = _compare(expected[k], got[k], rel_tol, abs_tol, f"{path}[{k!r}]")
            if problem[0]:
                return problem
        return None, False
    if isinstance(expected, Array):
        return _compare_arrays(expected, got, rel_tol, abs_tol, where), False
    raise TypeError(f"cannot compare against expected value of type {type(expected).__name__}")


def _dict_values_right(expected: dict, got: Any, rel_tol: float, abs_tol: float, path: str) -> bool:
    """True when `got` is a list or tuple holding the dict's values, in its key order (a tuple instead of
    the dict): the values are right, only the type is wrong."""
    return (
        type(got) in (list, tuple)
        and len(got) == len(expected)
        and all(_compare(e, g, rel_tol, abs_tol, path)[0] is None for e, g in zip(expected.values(), got, strict=True))
    )


def _compare_arrays(expected: Array, got: Any, rel_tol: float, abs_tol: float, where: str) -> str | None:
    if not isinstance(got, Array):
        return f"expected a {expected.tag}{where}, got {_describe(got)}"
    if got.tag != expected.tag:
        return f"expected a {expected.tag}{where}, got a {got.tag}"
    import numpy as np

    e, g = expected.value, got.value
    if expected.torch_dtype and got.torch_dtype != expected.torch_dtype:
        return f"expected dtype {expected.torch_dtype}{where}, got {got.torch_dtype}"
    if g.dtype.kind != e.dtype.kind:
        return f"expected dtype {e.dtype}{where}, got {g.dtype}"
    if g.shape != e.shape:
        return f"expected shape {tuple(e.shape)}{where}, got {tuple(g.shape)}"
    if e.dtype.kind in "biu":
        bad = np.argwhere(g != e)
    else:
        if not np.all(np.isfinite(g)) and np.all(np.isfinite(e)):
            return f"got non-finite values{where} (nan or inf)"
        close = np.isclose(g, e, rtol=rel_tol, atol=abs_tol, equal_nan=True)
        bad = np.argwhere(~close)
    if len(bad) == 0:
        return None
    idx = tuple(int(i) for i in bad[0])
    return (
        f"{len(bad)} of {e.size} elements differ{where}; first at index {idx}: "
        f"expected {_fmt(e[idx].item())}, got {_fmt(g[idx].item())}"
    )


def _fmt(x: Any) -> str:
    if isinstance(x, float):
        return f"{x:.6g}"
    return repr(x)


def _fmt_pair(expected: float, got: float) -> tuple[str, str]:
    """Both numbers, with every digit when six significant digits would print them the same."""
    if _fmt(expected) == _fmt(got):
        return repr(expected), repr(got)
    return _fmt(expected), _fmt(got)


def _describe(got: Any) -> str:
    if isinstance(got, NumpyScalar):
        return f"numpy.{got.dtype} {got.value!r}"
    if isinstance(got, Array):
        if got.value.shape == () and got.value.dtype.kind in "biuf":
            return f"a 0-d {got.tag} {got.value.item()!r}"
        return f"a {got.tag} of shape {tuple(got.value.shape)}"
    if isinstance(got, (list, tuple)):
        return f"a {type(got).__name__} of {len(got)} items"
    if isinstance(got, (int, float, str)):
        return f"{type(got).__name__} {got!r}"
    return type(got).__name__


# ---------------------------------------------------------------------------------------------
# Running a case in the current process (public tests, answer-key builds, the sandboxed child).


@dataclass(frozen=True)
class Outcome:
    """What a call produced, as plain data: a value, or an exception's class name and message."""

    value: Any = None  # encoded
    error_type: str | None = None
    error_message: str = ""

    def to_json(self) -> dict:
        return {"value": self.value, "error_type": self.error_type, "error_message": self.error_message}

    @staticmethod
    def from_json(data: Mapping[str, Any]) -> Outcome:
        return Outcome(data.get("value"), data.get("error_type"), str(data.get("error_message", ""))[:2000])


INPUT_MUTATED = "InputMutated"  # Outcome.error_type of a call that changed one of its arguments in place


class InputMutated(Exception):
    """The exercise function changed one of its arguments in place (the caller's list, dict, array or tensor).

    Every exercise function takes its inputs read-only (the handout, "Your inputs are read-only"): its callers,
    the simulators and the next layer of the model, still use them after the call."""


def _fingerprint(value: Any) -> str | None:
    """The exact content of an argument (order-sensitive, NaN-safe), or None when it is not plain data."""
    try:
        return json.dumps(encode(value))
    except (EncodeError, TypeError, ValueError, RecursionError):
        return None


def _argument_names(func: Any, args: tuple, kwargs: Mapping[str, Any]) -> list[str]:
    """The parameter name of each positional argument, then the keyword names (positions when unbindable)."""
    try:
        bound = inspect.signature(func).bind(*args, **kwargs)
        names = list(bound.arguments)
    except (TypeError, ValueError):
        names = []
    positional = names[: len(args)] if len(names) >= len(args) else [f"argument {i + 1}" for i in range(len(args))]
    return positional + list(kwargs)


def _shown(text: str, limit: int = 120) -> str:
    return text if len(text) <= limit else text[: limit - 3] + "..."


def call_with_read_only_inputs(func: Any, args: tuple, kwargs: Mapping[str, Any]) -> Any:
    """Call `func` on copies of the arguments and raise `InputMutated` naming the first one it changed.

    The copies keep the case's own arguments intact (a later case may share them); each copy's exact
    content (`encode`, order-sensitive: a dict re-ordered in place counts) is compared before and after.
    Only a call that returns is checked: one that raises has its exception judged instead."""
    originals = [*args, *kwargs.values()]
    args = copy.deepcopy(tuple(args))
    kwargs = copy.deepcopy(dict(kwargs))
    values = [*args, *kwargs.values()]
    before = [_fingerprint(v) for v in values]
    result = func(*args, **kwargs)
    names = _argument_names(func, args, kwargs)
    for name, original, value, old in zip(names, originals, values, before, strict=False):
        if old is not None and _fingerprint(value) != old:
            raise InputMutated(
                f"your function changed its argument {name} in place (it was {_shown(repr(original))}, after the "
                f"call it is {_shown(repr(value))}). Inputs are read-only: the caller still uses them after the "
                "call; work on a copy (sorted(x) instead of x.sort(), list(x), dict(x), x.clone())"
            )
    return result


def invoke(case: Case, module: Any) -> Any:
    """Expand the case's inputs and call its function on `module` with read-only inputs (a call that changes
    one raises `InputMutated`); exceptions propagate."""
    args = tuple(expand(a) for a in case.args)
    kwargs = {k: expand(v) for k, v in case.kwargs.items()}
    if case.harness:
        return resolve(case.harness)(module, *args, **kwargs)
    return call_with_read_only_inputs(getattr(module, case.func), args, kwargs)


def run_call(case: Case, module: Any) -> Outcome:
    """Call the case's function on `module` (an exercise module); never raises for student errors."""
    try:
        value = invoke(case, module)
    except Exception as exc:  # the student's exception is data here
        return Outcome(None, type(exc).__name__, str(exc)[:2000])
    try:
        return Outcome(encode(value))
    except EncodeError as exc:
        return Outcome(None, "EncodeError", str(exc))


@dataclass(frozen=True)
class Verdict:
    passed: bool
    message: str  # what was checked, expected vs got with units, then `advice`
    not_implemented: bool = False
    known_mistake: str = ""  # the sentence naming the known mistake the result matches ("" if none)
    advice: str = ""  # what `message` ends with: `diagnosis` of a failed case ("" if none applies)


def judge(
    case: Case, outcome: Outcome, expect_encoded: Any = None, mistakes: Mapping[str, tuple[str, Any]] | None = None
) -> Verdict:
    """Grade an outcome. `expect_encoded` overrides `case.expect` (hidden cases, from the answer key).

    `mistakes` maps a known-wrong implementation's name to (description, its encoded output on this
    case); when the student's output matches one, the feedback names that mistake.
    """
    unit = f" {case.unit}" if case.unit else ""
    what = f"{case.func}: {case.id}"
    if outcome.error_type == "NotImplementedError":
        return Verdict(False, f"{what}: not implemented yet ({outcome.error_message})", True)
    if outcome.error_type == INPUT_MUTATED:  # whatever it returned: the caller's data is damaged
        return Verdict(False, f"{what}: {outcome.error_message}.")
    if case.raises:
        if outcome.error_type == case.raises:
            return Verdict(True, f"{what}: raised {case.raises} as required")
        if outcome.error_type:
            got = f"raised {outcome.error_type}: {outcome.error_message}"
        else:
            got = "returned None (no `raise`, or a check that lets this input through?)"
            if outcome.value is not None:
                got = "returned a value"
        message = f"{what}: expected {case.raises} for this invalid input, but it {got}."
        return _failed(message, outcome, case, mistakes)
    if outcome.error_type:
        return Verdict(False, f"{what}: raised {outcome.error_type}: {outcome.error_message}")
    expected = decode(expect_encoded if expect_encoded is not None else encode(case.expect))
    try:
        got = decode(outcome.value)
    except (EncodeError, KeyError, ValueError, TypeError) as exc:
        return Verdict(False, f"{what}: returned value could not be read ({exc})")
    problem, type_only = _compare(expected, got, case.rel_tol, case.abs_tol)
    if problem is None:
        return Verdict(True, f"{what}: ok")
    if problem.startswith(TYPE_MISTAKE):
        message = f"{what}: {problem}."
        # a right value in the wrong type: no formula hint, it would point at a mistake that is not there, but
        # the known mistake whose output it is (a float count: "returns the fractional number of tokens");
        # a wrong value in the wrong type: the known mistake it matches, else the hint
        if type_only:
            known = known_mistake(outcome, case, mistakes)
            return Verdict(False, f"{message} {known}" if known else message, known_mistake=known, advice=known)
        return _failed(message, outcome, case, mistakes)
    message = f"{what}: {problem}{unit} (tolerance: {case.tol_note})."
    return _failed(message, outcome, case, mistakes)


def _failed(message: str, outcome: Outcome, case: Case, mistakes: Mapping[str, tuple[str, Any]] | None) -> Verdict:
    """A failed verdict ending with its `diagnosis`."""
    known = known_mistake(outcome, case, mistakes)
    advice = diagnosis(outcome, case, mistakes, known)
    return Verdict(False, f"{message} {advice}" if advice else message, known_mistake=known, advice=advice)


def diagnosis(
    outcome: Outcome, case: Case, mistakes: Mapping[str, tuple[str, Any]] | None, known: str | None = None
) -> str:
    """What the feedback on a failed case suggests: the one rule of the public tests, the grader and the
    notebooks alike (each calls `judge`, which calls this).

    A known mistake is named only when the returned value matches that mistake's own output on this very
    case (`mistakes`: {name: (description, encoded output)}, compared with the case's tolerance); else
    the case's hint ("Likely mistake: ..."); else "". Public cases' mistake outputs ship beside the public
    tests (`hetero.publictest.load_mistakes`), so a student's `pytest` names the same mistake as the grader.
    `known`: `known_mistake(outcome, case, mistakes)` when the caller has it already.
    """
    known = known_mistake(outcome, case, mistakes) if known is None else known
    if known:
        return known
    hint = case.hint
    return hint if not hint or "Likely mistake" in hint or hint.startswith("Your") else f"Likely mistake: {hint}"


def known_mistake(outcome: Outcome, case: Case, mistakes: Mapping[str, tuple[str, Any]] | None) -> str:
    """The sentence naming the known mistake(s) whose output on this case the returned value matches, or ""."""
    if outcome.error_type is None:
        try:
            got = decode(outcome.value)
        except (EncodeError, KeyError, ValueError, TypeError):
            got = None
        matched: list[str] = []
        for description, value in (mistakes or {}).values():
            try:
                if compare(decode(value), got, case.rel_tol, case.abs_tol) is None and description not in matched:
                    matched.append(description)
            except (EncodeError, TypeError):
                continue
        if len(matched) == 1:
            return f"Your result matches a known mistake: {matched[0]}"
        if matched:
            return "Your result matches a known mistake, one of: " + " | ".join(matched)
    return ""


def check_call(case: Case, module: Any) -> Verdict:
    """Run and judge a public case in this process (what the public tests do)."""
    return judge(case, run_call(case, module))
