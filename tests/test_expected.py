"""The stored answer-key values are fresh: recomputing them from solutions/ changes nothing."""

import os
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[1]


from autograder.authoring.expected import available_exercises  # noqa: E402


def _expected_check(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "autograder", "expected", "--check", *args],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=600,
    )


def test_expected_values_are_recorded_fresh():
    """Every exercise whose inputs changed since its values were computed and judged is computed again and
    compared (`make check` runs the same); the others are current by their recorded digests."""
    result = _expected_check("--jobs", "2")
    assert result.returncode == 0, result.stderr[-3000:]


@pytest.mark.slow  # every exercise computed again: what another CPU or a nondeterministic key would change
@pytest.mark.parametrize("ex_id", available_exercises())  # one test per exercise: xdist spreads them
def test_expected_values_are_fresh(ex_id):
    result = _expected_check("--full", ex_id)
    assert result.returncode == 0, result.stderr[-3000:]


def test_drift_ignores_float_noise_and_nothing_else():
    from autograder.authoring.expected import drift
    from hetero.checks import encode

    stored = {"a": 1.0, "b": [1, "x", True], "t": encode(np.array([2.651827, 0.5], dtype=np.float32))}
    noisy = {"a": 1.0 + 2e-16, "b": [1, "x", True], "t": encode(np.array([2.6518273, 0.5], dtype=np.float32))}
    assert drift(stored, noisy) == [], "last-bit float differences between CPUs are not drift"
    for changed in (
        {**stored, "a": 1.0001},
        {**stored, "b": [1, "y", True]},
        {**stored, "b": [1, "x", 1]},
        {"b": stored["b"], "a": 1.0, "t": stored["t"]},
        {**stored, "t": encode(np.array([2.66, 0.5], dtype=np.float32))},
        {**stored, "t": encode(np.array([2.651827, 0.5, 1.0], dtype=np.float32))},
    ):
        assert drift(stored, changed), f"a real change must be drift: {changed}"


def test_every_exercise_has_stored_values():
    from autograder.core.manifest import EXERCISES

    missing = [ex.id for ex in EXERCISES if not (ROOT / "autograder" / "expected" / f"{ex.id}.json").is_file()]
    assert not missing, f"no stored answer-key values for {missing}: run `python -m autograder expected`"


def _solution_lines(text: str) -> list[str]:
    """Code lines inside the answer key's solution blocks, long enough to be recognisable."""
    lines, inside = [], False
    for line in text.splitlines():
        if "# BEGIN SOLUTION" in line or "# END SOLUTION" in line:
            inside = "BEGIN" in line
            continue
        stripped = line.strip()
        if inside and len(stripped) >= 16 and not stripped.startswith("#"):
            lines.append(re.sub(r"\s+", "", stripped))
    return lines


def test_hints_name_the_mistake_not_the_answer_code():
    from autograder.core.cases import hidden_cases, public_cases
    from autograder.core.manifest import EXERCISES

    quoted = []
    for ex in EXERCISES:
        answer = _solution_lines((ROOT / "solutions" / ex.filename).read_text(encoding="utf-8"))
        for case in public_cases(ex.id) + hidden_cases(ex.id):
            text = re.sub(r"\s+", "", case.hint + case.tol_note)
            quoted += [f"{case.id}: {line}" for line in answer if line in text]
    assert not quoted, "hints quote the answer key verbatim (say what is wrong instead):\n" + "\n".join(quoted[:10])


def _trivial(encoded) -> bool:
    """An answer a guess names anyway: None, a bool, a small whole number (0, 1, an instance index, a
    count; the grader's `scoring.guessable`): a hidden case cannot avoid sharing those with a public one."""
    from autograder.core.scoring import guessable

    return encoded is None or guessable(encoded)


@pytest.mark.parametrize("ex_id", available_exercises())
def test_no_hidden_case_expects_a_public_answer(ex_id):
    """A hidden case whose answer is exactly a public case's (same function), or a known mistake's output on
    a public case (shipped in public_mistakes.json), is passed by a table of what students can read; its
    inputs must change. Exact equality of the stored values; raising cases and trivial
    answers (None, bools, whole numbers up to the grader's guess limit, 0 and 1 among them) aside."""
    import json

    from autograder.authoring.reference_figures import distinctive
    from autograder.core.cases import public_cases

    data = json.loads((ROOT / "autograder" / "expected" / f"{ex_id}.json").read_text(encoding="utf-8"))
    entries = data["cases"]
    public: dict[str, list[tuple[str, object]]] = {}
    for case in public_cases(ex_id):
        entry = entries[case.id]
        if entry["raises"] is None and not _trivial(entry["expect"]):
            public.setdefault(case.func, []).append((case.id, entry["expect"]))
    # A known mistake's output on a public case ships to students too (assignments/tests/public_mistakes.json)
    for case in public_cases(ex_id):
        for fixture, (_, value) in entries[case.id].get("mistakes", {}).items():
            # a wrong value of a public case betrays a hidden one only when it is distinctive (not 16384 = 2 x 8192)
            if isinstance(value, float) and distinctive(value):
                public.setdefault(case.func, []).append((f"{case.id} as {fixture} answers it", value))
    repeats = [
        f"{hidden['id']} expects {json.dumps(entries[hidden['id']]['expect'])[:80]}, the answer of {pid}"
        for hidden in data["hidden"]
        if entries[hidden["id"]]["raises"] is None
        for pid, value in public.get(hidden["func"], [])
        if entries[hidden["id"]]["expect"] == value
    ]
    assert not repeats, "hidden cases expecting a public answer (change their inputs):\n" + "\n".join(repeats)


def test_trivial_answers_are_only_guessable_ones():
    from hetero.checks import encode

    assert _trivial(None) and _trivial(encode(True)) and _trivial(encode(0)) and _trivial(encode(1.0))
    assert _trivial(encode(3)), "an instance index or a count is named by a guess"
    assert not _trivial(encode(16.7400645328896)) and not _trivial(encode(44_040_192))
    assert not _trivial(encode(["routed experts", "shared expert", "attention"])) and not _trivial(encode(100.0))


# ---------------------------------------------------------------------------------------------
# The release judges the key: a planted hidden case on which the grader would take a point from the
# answer key stops `expected` (and so `make release` and `make check`), naming the case.

PLANTED_ID = "ex01.usd_per_gb.planted"


def _planted_copy(tmp_path: Path, key_line: str, args: tuple) -> Path:
    """A copy of the repository's sources (no venv) with one hidden case of ex01 added (`usd_per_gb` on
    `args`) and the key's `return price_usd / capacity_gb` replaced by `key_line`."""
    import shutil

    for folder in ("autograder", "solutions", "assignments", "shared/hetero", "locks"):
        shutil.copytree(ROOT / folder, tmp_path / folder, ignore=shutil.ignore_patterns("__pycache__", ".pytest_cache"))
    for name in ("README.md", "pyproject.toml"):  # prose with derived counts, pins
        shutil.copyfile(ROOT / name, tmp_path / name)
    key = tmp_path / "solutions" / "ex01_cost_per_gb.py"
    old = "    return price_usd / capacity_gb\n"
    text = key.read_text(encoding="utf-8")
    assert text.count(old) == 1, f"{key}: the planted edit needs exactly one {old.strip()!r}"
    key.write_text(text.replace(old, key_line), encoding="utf-8")
    hidden = tmp_path / "autograder" / "tests" / "ex01_hidden.py"
    hidden.write_text(
        hidden.read_text(encoding="utf-8")
        + f'\nCASES.append(Case("{PLANTED_ID}", "usd_per_gb", {args!r}, unit="$ per GB", points=0.5))\n',
        encoding="utf-8",
    )
    return tmp_path


def test_a_correct_infinity_is_the_keys_and_passes(tmp_path):
    """ex11's story: a key that returns inf (here 15000 $ over a subnormal capacity) earns its point."""
    from autograder.authoring.expected import compute

    root = _planted_copy(tmp_path, "    return price_usd / capacity_gb\n", (15000.0, 1e-320))
    data = compute("ex01", root)
    assert data["cases"][PLANTED_ID]["expect"] == {"__float__": "inf"}, data["cases"][PLANTED_ID]


def test_a_key_that_loses_a_point_stops_expected_naming_the_case(tmp_path):
    """The key returns a numpy.float32 on one hidden input: the grader's judge cannot read it back as a
    plain number, so the key would lose that case's points; `expected` (what `make release` and `make
    check` run) must stop and say which case, what was stored, what the key returned and the verdict."""
    from autograder.authoring.expected import AnswerKeyError, compute

    plant = (
        "    if capacity_gb == 7.25:\n"
        "        import numpy\n"
        "        return numpy.float32(price_usd / capacity_gb)\n"
        "    return price_usd / capacity_gb\n"
    )
    root = _planted_copy(tmp_path, plant, (1000.0, 7.25))
    with pytest.raises(AnswerKeyError) as caught:
        compute("ex01", root)
    said = str(caught.value)
    for part in (PLANTED_ID, "expected NumpyScalar(dtype='float32'", "the answer key returned", "could not be read"):
        assert part in said, f"the error should name {part!r}:\n{said}"
    before = {p: p.read_bytes() for p in (root / "autograder" / "expected").glob("*.json")}
    for command in (["expected", "--check"], ["release"]):  # what `make check` and `make release` run
        run = subprocess.run(
            [sys.executable, "-m", "autograder", *command],
            capture_output=True,
            text=True,
            cwd=root,
            timeout=600,
            env={**os.environ, "PYTHONPATH": str(root)},
        )
        assert run.returncode == 1, (
            f"`{' '.join(command)}` must fail on a key that loses a point:\n{run.stdout}{run.stderr[-2000:]}"
        )
        assert PLANTED_ID in run.stderr and "Traceback" not in run.stderr, run.stderr[-2000:]
    after = {p: p.read_bytes() for p in (root / "autograder" / "expected").glob("*.json")}
    assert after == before, "a release that stops writes nothing"
