"""The case format: plain-data encoding refuses objects, comparisons check types before values."""

from __future__ import annotations

import math
import subprocess
import sys

import numpy as np
import pytest
import torch

from hetero.checks import Array, Case, EncodeError, Gen, NumpyScalar, Outcome, compare, decode, encode, judge, run_call


class AlwaysEqual(float):
    def __eq__(self, other):
        return True


class Anything:
    def __eq__(self, other):
        return True


def roundtrip(value):
    return decode(encode(value))


def test_plain_values_roundtrip():
    value = {"a": [1, 2.5, True, None, "x"], "b": (3, float("inf"))}
    assert roundtrip(value) == value
    assert math.isnan(roundtrip(float("nan")))


def test_numpy_scalars_become_python_numbers():
    assert type(roundtrip(np.float64(2.5))) is float
    assert type(roundtrip(np.int64(3))) is int


@pytest.mark.parametrize("bad", [AlwaysEqual(1.0), Anything(), {1: 2}, object(), np.array(["a"])])
def test_objects_and_subclasses_are_refused(bad):
    with pytest.raises(EncodeError):
        encode(bad)


def test_encoding_plain_values_imports_neither_torch_nor_numpy():
    """A sandboxed child encodes what the student's function returned without importing torch (1-2 s) or
    numpy (0.1 s of CPU in every child of an exercise that uses neither): a tensor or a numpy value exists
    only once its library is imported, so the encoder looks in sys.modules. Refusing an object, too."""
    script = (
        "import sys\n"
        "from hetero.checks import EncodeError, decode, encode\n"
        "assert decode(encode([1, 2.5, float('inf'), {'a': (True, None, 'x')}])) == [1, 2.5, float('inf'), {'a': (True, None, 'x')}]\n"
        "try:\n"
        "    encode(object())\n"
        "except EncodeError:\n"
        "    pass\n"
        "print(sorted(m for m in ('torch', 'numpy') if m in sys.modules))\n"
    )
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert proc.stdout.strip() == "[]", (
        f"importing hetero.checks and encoding plain values imported {proc.stdout.strip()}: "
        "look the library up in sys.modules instead of importing it"
    )


def test_arrays_keep_kind_dtype_and_shape():
    arr = np.arange(6, dtype=np.float32).reshape(2, 3)
    back = roundtrip(arr)
    assert isinstance(back, Array) and back.tag == "ndarray"
    np.testing.assert_array_equal(back.value, arr)
    t = roundtrip(torch.ones(2, 2, dtype=torch.float64))
    assert t.tag == "tensor" and t.torch_dtype == "torch.float64" and t.value.shape == (2, 2)


def test_compare_types_before_values():
    assert compare(1.0, 1.0 + 1e-12, 1e-9, 0.0) is None
    assert "type mistake: expected a Python float" in compare(1.0, "1.0", 1e-9, 0.0)
    assert "type mistake: expected a Python int" in compare(159, 159.0, 1e-9, 0.0)
    assert "type mistake: expected a bool" in compare(True, 1, 1e-9, 0.0)
    assert "got nan" in compare(2.0, float("nan"), 1e-9, 0.0)
    assert "type mistake: expected a list" in compare([1], (1,), 1e-9, 0.0)
    assert "keys" in compare({"a": 1.0}, {"b": 1.0}, 1e-9, 0.0)
    # issue 31: `//` returning an int where a float is documented passed publicly and cost points hidden
    whole = compare(2048.0, 2048, 1e-9, 0.0)
    assert whole is not None and "expected a Python float (2048.0), got int 2048" in whole
    assert "the value is right, only its type is wrong" in whole and "`//`" in whole
    assert "the value differs too" in compare(33.333333333333336, 33, 1e-9, 0.0)
    # a tuple for the documented dict: its values in the key order are right, and the message says so
    as_tuple = compare({"a": 1.0, "b": 2.0}, (1.0, 2.0), 1e-9, 0.0)
    assert "the value is right" in as_tuple and "'a', 'b'" in as_tuple, as_tuple
    assert "the value differs too" in compare({"a": 1.0, "b": 2.0}, (2.0, 1.0), 1e-9, 0.0)


INF, NAN = float("inf"), float("nan")


@pytest.mark.parametrize(
    ("expected", "got"),
    [(INF, INF), (-INF, -INF), (NAN, NAN), ([1.0, INF], [1.0, INF]), ({"t": -INF}, {"t": -INF})],
)
def test_a_non_finite_value_matches_itself(expected, got):
    """compare's documented rule: a NaN agrees with a NaN, an infinity with the same infinity (ex11's key
    returned a correct inf and the grader said "expected inf, got inf")."""
    assert compare(expected, roundtrip(got), 1e-9, 0.0) is None, compare(expected, roundtrip(got), 1e-9, 0.0)


@pytest.mark.parametrize(
    ("expected", "got", "said"),
    [
        (INF, -INF, "expected inf, got -inf"),
        (INF, 1e308, "expected inf, got 1e+308"),
        (INF, NAN, "expected inf, got nan"),
        (2.0, INF, "expected 2, got inf"),
        (NAN, INF, "expected nan, got inf"),
        (-INF, 0.0, "expected -inf, got 0"),
    ],
)
def test_a_non_finite_value_takes_no_tolerance(expected, got, said):
    problem = compare(expected, got, 1e-9, 1e300)  # even a huge abs_tol does not reach an infinity
    assert problem == said, f"compare({expected!r}, {got!r}) said {problem!r}, expected {said!r}"


def test_arrays_follow_the_same_non_finite_rule():
    e = roundtrip(np.array([1.0, INF, NAN, -INF]))
    assert compare(e, roundtrip(np.array([1.0, INF, NAN, -INF])), 1e-9, 0.0) is None
    flipped = compare(e, roundtrip(np.array([1.0, -INF, NAN, -INF])), 1e-9, 0.0)
    assert flipped is not None and "first at index (1,)" in flipped, flipped
    assert "non-finite" in compare(roundtrip(np.array([1.0, 2.0])), roundtrip(np.array([1.0, INF])), 1e-9, 0.0)


def test_numpy_float32_keeps_its_type_and_float64_is_accepted():
    assert type(roundtrip(np.float64(2.5))) is float  # a float64 is a Python float (subclass, same precision)
    back = roundtrip(np.float32(229.376))
    assert isinstance(back, NumpyScalar) and back.dtype == "float32", back
    assert compare(229.376, roundtrip(np.float64(229.376)), 1e-9, 0.0) is None


# (what the student returns, what the case expects, words the message must hold)
TYPE_MISTAKES = [
    (lambda: np.float32(229.376), 229.376, "numpy.float32"),
    (lambda: np.float16(0.5), 0.5, "numpy.float16"),
    (lambda: 159.0, 159, "expected a Python int (159), got float 159.0"),
    (lambda: torch.tensor(2.5, dtype=torch.float64), 2.5, "0-d tensor 2.5"),
    (lambda: np.array(2.5), 2.5, "0-d ndarray 2.5"),
    (lambda: [1.0, 2.0], (1.0, 2.0), "expected a tuple, got a list"),
]


@pytest.mark.parametrize("returned, expect, words", TYPE_MISTAKES)
def test_type_mistakes_are_named_and_carry_no_formula_hint(returned, expect, words):
    class Student:
        f = staticmethod(returned)

    case = Case("ex99.f.types", "f", expect=expect, unit="GB", hint="multiply by the number of layers")
    verdict = judge(case, run_call(case, Student))
    assert not verdict.passed, f"{words}: a value of the wrong type must fail"
    assert "type mistake" in verdict.message and words in verdict.message, verdict.message
    assert "the value is right" in verdict.message, verdict.message
    assert "number of layers" not in verdict.message, (
        f"a right value of the wrong type got the formula hint, which points at a mistake that is not there: "
        f"{verdict.message}"
    )
    assert "expected 229.376, got 229.376" not in verdict.message


def test_wrong_value_of_the_wrong_type_keeps_the_hint():
    class Student:
        f = staticmethod(lambda: 159.55)

    case = Case("ex99.f.floor", "f", expect=159, unit="requests", hint="round down")
    verdict = judge(case, run_call(case, Student))
    assert "type mistake" in verdict.message and "the value differs too" in verdict.message
    assert "round down" in verdict.message, verdict.message


def test_values_that_print_alike_are_shown_in_full():
    message = compare(229.376, 229.37600708007812, 1e-9, 0.0)
    assert "229.37600708007812" in message and "expected 229.376," in message, message


def test_array_comparison_reports_first_difference():
    e = roundtrip(np.zeros((2, 2)))
    g = roundtrip(np.array([[0.0, 0.0], [0.0, 1.0]]))
    msg = compare(e, g, 1e-6, 1e-9)
    assert "1 of 4 elements differ" in msg and "(1, 1)" in msg
    assert "shape" in compare(e, roundtrip(np.zeros(4)), 1e-6, 0.0)
    assert "expected a tensor" in compare(roundtrip(torch.zeros(2)), roundtrip(np.zeros(2)), 1e-6, 0.0)


class _Module:
    @staticmethod
    def twice(x):
        return 2 * x

    @staticmethod
    def fails(x):
        raise NotImplementedError("ex99: fails")

    @staticmethod
    def liar(x):
        return AlwaysEqual(0.0)


def test_judge_passes_fails_and_names_mistakes():
    case = Case("ex99.twice.a", "twice", (2.0,), expect=4.0, unit="GB", hint="doubling")
    assert judge(case, run_call(case, _Module)).passed
    wrong = Outcome(encode(4.294967296))
    verdict = judge(case, wrong, mistakes={"gib": ("used GiB where GB is meant", encode(4.294967296))})
    assert not verdict.passed and "GiB" in verdict.message and "GB" in verdict.message


def test_judge_not_implemented_and_liars():
    case = Case("ex99.fails.a", "fails", (1,), expect=1.0)
    verdict = judge(case, run_call(case, _Module))
    assert verdict.not_implemented and not verdict.passed
    liar = Case("ex99.liar.a", "liar", (1,), expect=3.0)
    verdict = judge(liar, run_call(liar, _Module))
    assert not verdict.passed and "not plain data" in verdict.message


def test_judge_raises_cases():
    case = Case("ex99.twice.bad", "twice", (None,), raises="ValueError", hint="validate the input")
    verdict = judge(case, run_call(case, _Module))  # TypeError, not ValueError
    assert not verdict.passed and "ValueError" in verdict.message and "validate" in verdict.message
    # What came back instead, in the student's own terms (a public case: the value is theirs to see).
    assert "but it returned None (no `raise`" in judge(case, Outcome(None)).message
    assert "but it returned a value." in judge(case, Outcome(encode(3.0))).message


def test_a_type_fix_names_the_type_with_its_article():
    case = Case("ex99.count.x", "count", (), expect=3, unit="tokens")
    said = judge(case, Outcome(encode([3]))).message
    assert "return an int" in said and "return a int" not in said, said


def test_gen_specs_encode():
    spec = Gen("tiny", {"seed": 3})
    assert decode(encode(spec)) == spec


def test_a_verdict_carries_the_known_mistake_it_matches_as_a_field():
    case = Case(id="ex01.f.x", func="f", expect=2.0, unit="GB", hint="check the unit")
    mistakes = {"gib": ("GiB instead of GB", encode(1.862645149230957)), "other": ("something else", encode(7.0))}
    matched = judge(case, Outcome(encode(1.862645149230957)), None, mistakes)
    assert not matched.passed and matched.known_mistake == "Your result matches a known mistake: GiB instead of GB"
    assert matched.message.endswith(matched.known_mistake), "the message shows the named mistake"
    other = judge(case, Outcome(encode(3.0)), None, mistakes)
    assert other.known_mistake == "" and "Likely mistake: check the unit" in other.message, (
        "no match: no named mistake, the case's hint instead"
    )
    assert judge(case, Outcome(encode(2.0)), None, mistakes).known_mistake == ""
