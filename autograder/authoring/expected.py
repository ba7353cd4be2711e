"""Compute the answer key's values for every case, once, and store them as data.

`python -m autograder expected` loads each exercise's hidden case file once (the only place Hypothesis
runs), stores every hidden case as data, runs the solution (`solutions/exNN_*.py`) on the public and
the stored hidden cases and writes `autograder/expected/exNN.json`:
    {"exercise": "exNN",
     "hidden": [<case as data: id, func, encoded args and kwargs, tolerances, hint, points, ...>],
     "cases": {case_id: {"expect": <encoded value> | null, "raises": "ValueError" | null,
                         "class": <answer class within its group>,
                         "mistakes": {fixture: [description, <encoded value>]}}},
     "rules": {group: {"rule": "two_answers" | "valid_and_invalid", "uses": [...], "min_passed": n}}}
`echo` marks a case that is no evidence that the submission computes (its answer equals one of its
arguments, or scales a public case's answer: `autograder.core.scoring`). `class`, `echo` and `rules` are
what `autograder.core.scoring` needs to decide which passed cases pay.
`mistakes` holds what each known-wrong submission (a fixture of `autograder.authoring.wrong_fixtures`, the
answer key with one declared mistake, keyed by its name with its `mistake` sentence) returns where
that differs from the answer key, so feedback can name the mistake (only where the returned value matches
that output: `hetero.checks.diagnosis`). The public cases' `mistakes` also ship to students, by the
release, as `assignments/tests/public_mistakes.json`; the hidden cases' never do. Grading reads only
these files: it never imports `solutions/`.

`--check` recomputes the exercises whose inputs changed since their values were written (the digests of
`autograder.authoring.digests`; `--full`: every exercise) and fails when a stored file is stale: any
difference but the last bits of a float (`drift`), which differ between CPUs' vector kernels (numpy's
power on AVX-512 and AVX2, torch's float32 matrix products: 1 ulp in ex01's generated inputs, 2.4e-7
absolute in ex10's float32 tensors), or inputs changed without their record. `python -m autograder
expected` itself writes what this machine computes, and records the inputs' digests. The build fails loudly when
the answer key contradicts a public case, raises where it should return (or the reverse), or when a
wrong fixture passes every case (it would test nothing).

The answer key is judged as the grader judges a student (`key_losses`): its outcome on every case, sent as
the grader's child sends it (JSON), goes through the grader's own verdict
(`autograder.runtime.feedback.judge_case`) against the values about to be stored (`--check`: against the
stored file too) and through the points rule (`autograder.core.scoring.payment`); a case it fails, or a
point it does not earn, stops this command and `make release`, naming the case, the stored value, what the
key returned and the verdict.
"""

from __future__ import annotations

import argparse
import concurrent.futures
import contextlib
import json
import math
import multiprocessing
import sys
import tempfile
from pathlib import Path
from typing import Any

import numpy as np

from autograder.authoring import digests
from autograder.authoring.wrong_fixtures import for_exercise, materialise
from autograder.core import scoring
from autograder.core.cases import case_from_data, case_to_data, hidden_cases_from_source, public_cases
from autograder.core.manifest import BY_ID, EXERCISES, ROOT, public_cases_in
from autograder.runtime.feedback import judge_case, short_repr
from hetero.checks import NO_EXPECT, Case, Outcome, decode, encode, judge, run_call
from hetero.impl import load_module_from_path

EXPECTED_DIR = ROOT / "autograder" / "expected"


class AnswerKeyError(RuntimeError):
    """The answer key and the cases disagree."""


def stored_hidden(ex_id: str, root: Path = ROOT) -> list[dict[str, Any]]:
    """The hidden cases as the data the grader will read (built from the case file, once)."""
    return [case_to_data(c) for c in hidden_cases_from_source(ex_id, root)]


def all_cases(ex_id: str, hidden_data: list[dict[str, Any]] | None = None, root: Path = ROOT) -> list[tuple[str, Case]]:
    """("public" | "hidden", case); hidden cases as read back from their stored data."""
    data = stored_hidden(ex_id, root) if hidden_data is None else hidden_data
    return [("public", c) for c in public_cases(ex_id, root)] + [("hidden", case_from_data(d)) for d in data]


def compute(ex_id: str, root: Path = ROOT) -> dict[str, Any]:
    """The content of `autograder/expected/<ex_id>.json`, computed from the answer key under `root`;
    AnswerKeyError when the key and the cases disagree or the grader would take a point from the key."""
    ex = BY_ID[ex_id]
    key = load_module_from_path(root / "solutions" / ex.filename, f"_a2_key_{ex_id}")
    hidden_data = json.loads(json.dumps(stored_hidden(ex_id, root)))  # exactly what the JSON file will hold
    cases = all_cases(ex_id, hidden_data, root)
    entries: dict[str, dict[str, Any]] = {}
    for kind, case in cases:
        outcome = run_call(case, key)
        if case.raises:
            if outcome.error_type != case.raises:
                raise AnswerKeyError(
                    f"{case.id}: the answer key should raise {case.raises}, got "
                    f"{outcome.error_type or 'a value'} {outcome.error_message}"
                )
            entries[case.id] = {"expect": None, "raises": case.raises, "mistakes": {}}
            continue
        if outcome.error_type:
            raise AnswerKeyError(f"{case.id}: the answer key raised {outcome.error_type}: {outcome.error_message}")
        if kind == "public" or case.expect is not NO_EXPECT:
            verdict = judge(case, outcome)
            if not verdict.passed:
                raise AnswerKeyError(f"{case.id}: the answer key fails its own case: {verdict.message}")
        entries[case.id] = {"expect": outcome.value, "raises": None, "mistakes": {}}
    as_json = json.loads(json.dumps(entries))  # what the grader reads, and what its child sends
    failures, _ = key_verdicts(cases, as_json, as_json)
    if failures:
        raise AnswerKeyError(_losses_text(ex_id, failures))
    plain = [c for _, c in cases]
    classes = scoring.answer_classes(plain, {cid: e["expect"] for cid, e in entries.items()})
    public = [(c, entries[c.id]["expect"]) for kind, c in cases if kind == "public"]
    echo = {
        c.id: scoring.echoes(c, entries[c.id]["expect"])
        or kind == "hidden"
        and scoring.scaled_twin(c, entries[c.id]["expect"], public)
        for kind, c in cases
    }
    guess = {c.id: not c.raises and scoring.guessable(entries[c.id]["expect"]) for c in plain}
    for cid, number in classes.items():
        entries[cid]["class"] = number
        entries[cid]["echo"] = echo[cid]
    try:
        rules = scoring.group_rules(ex_id, [c for kind, c in cases if kind == "hidden"], classes, plain, echo, guess)
    except scoring.CaseListError as exc:
        raise AnswerKeyError(str(exc)) from None
    with tempfile.TemporaryDirectory(prefix="a2wrong-") as tmp:
        for fixture in for_exercise(ex_id):
            path = materialise(fixture.name, Path(tmp) / fixture.name)
            module = load_module_from_path(path, f"_a2_wrong_{fixture.name}")
            caught = False
            for _, case in cases:
                entry = entries[case.id]
                outcome = run_call(case, module)
                verdict = judge_case(case, outcome, entry["expect"], None)  # the grader's verdict
                if verdict.passed:
                    continue
                caught = True
                if not outcome.error_type and outcome.value is not None:  # a wrong value, also where a raise was due
                    entry["mistakes"][fixture.name] = [fixture.mistake, outcome.value]
            if not caught:
                raise AnswerKeyError(
                    f"wrong fixture {fixture.name} passes every case of {ex_id}: no case detects its mistake"
                )
    data = {
        "exercise": ex_id,
        "hidden": hidden_data,
        "cases": entries,
        "rules": {k: {"rule": r.rule, "uses": list(r.uses), "min_passed": r.min_passed} for k, r in rules.items()},
    }
    as_stored = json.loads(render(data))
    losses = key_losses(ex_id, as_stored, as_stored, root)
    if losses:
        raise AnswerKeyError(_losses_text(ex_id, losses))
    return data


def key_outcome(entry: dict[str, Any]) -> Outcome:
    """The answer key's outcome on a case, as the grader's child reports it, from the case's entry of a
    freshly computed file (its value, or the exception class it raises)."""
    if entry["raises"]:
        return Outcome(None, entry["raises"], "raised by the answer key")
    return Outcome.from_json(json.loads(json.dumps(Outcome(entry["expect"]).to_json())))


def key_verdicts(
    cases: list[tuple[str, Case]], stored: dict[str, Any], fresh: dict[str, Any]
) -> tuple[list[str], dict[str, bool]]:
    """(failures, case id -> passed): the grader's verdict (`judge_case`) on the answer key's outcome on
    each ("public" | "hidden", case), taken from `fresh` (a freshly computed file's "cases": `key_outcome`),
    against `stored` (the "cases" the grader reads). A failure reads "case id: expected ..., the answer
    key returned ...: the verdict"."""
    failures: list[str] = []
    passed: dict[str, bool] = {}
    for kind, case in cases:
        if case.id not in stored or case.id not in fresh:
            failures.append(f"{case.id}: no stored value (run `python -m autograder expected {case.ex_id}`)")
            passed[case.id] = False
            continue
        entry = stored[case.id]
        outcome = key_outcome(fresh[case.id])
        expect = entry.get("expect") if kind == "hidden" else None
        verdict = judge_case(case, outcome, expect, entry.get("mistakes"))
        passed[case.id] = verdict.passed
        if not verdict.passed:
            want = f"raises {case.raises}" if case.raises else _shown(encode(case.expect) if expect is None else expect)
            got = f"raised {outcome.error_type}" if outcome.error_type else _shown(outcome.value)
            failures.append(f"{case.id}: expected {want}, the answer key returned {got}: {verdict.message}")
    return failures, passed


def key_losses(ex_id: str, stored: dict[str, Any], computed: dict[str, Any], root: Path = ROOT) -> list[str]:
    """Where the grader would take points from the answer key: the failures of `key_verdicts` (the key's
    outcomes from `computed`, a fresh file's content, against `stored`, the content the grader reads), or,
    when every case passes, the points the key still would not earn (`scoring.payment`)."""
    ex = BY_ID[ex_id]
    public = public_cases(ex_id, root)
    hidden = [case_from_data(d) for d in stored["hidden"]]
    cases = [("public", c) for c in public] + [("hidden", c) for c in hidden]
    losses, passed = key_verdicts(cases, stored["cases"], computed["cases"])
    if losses:
        return losses
    pay = scoring.payment(ex.points, ex.public_share, public, hidden, stored, passed)
    unpaid = sorted(cid for cid, ok in pay.pays.items() if not ok and pay.shares.get(cid))
    if unpaid:
        earned, total = scoring.points_text(pay.cents), scoring.points_text(sum(pay.shares.values()))
        losses.append(f"the answer key passes every case but earns {earned} of {total} points: unpaid {unpaid}")
    return losses


def _shown(encoded: Any) -> str:
    try:
        return short_repr(decode(encoded), 200)
    except (ValueError, TypeError, KeyError) as exc:
        return f"an unreadable value ({type(exc).__name__}: {exc})"


def _losses_text(ex_id: str, losses: list[str]) -> str:
    shown = "\n  ".join(losses[:10]) + (f"\n  (+{len(losses) - 10} more)" if len(losses) > 10 else "")
    return f"the grader would take points from the answer key of {ex_id}:\n  {shown}"


def render(data: dict[str, Any]) -> str:
    return json.dumps(data, indent=1) + "\n"  # no sort_keys: dict arguments keep their order


def available_exercises() -> list[str]:
    """Exercises whose solution, public cases and hidden cases all exist."""
    return [
        ex.id
        for ex in EXERCISES
        if (ROOT / "solutions" / ex.filename).is_file()
        and public_cases_in(ROOT / "solutions", ex.id).is_file()
        and ex.hidden_cases_path.is_file()
    ]


_SPAWN = multiprocessing.get_context("spawn")  # no fork of a parent that may hold torch's threads


# Drift tolerances, far below every case's own (hetero.checks): float64 rel 1e-9, float32 arrays rel 1e-5
# Measured between two x86_64 CPUs: float32 tensors 2.4e-7 absolute on values near 2.6 (a few ulps); ex10's
# float64 deferral deltas (differences of two float32-derived losses) 1.3e-12 relative.
F64_RTOL, F64_ATOL = 1e-9, 1e-12
F32_RTOL, F32_ATOL = 1e-5, 1e-6


def drift(stored: Any, computed: Any, path: str = "") -> list[str]:
    """Where two stored-value trees differ beyond floating-point noise (exact for everything but floats)."""
    if (
        isinstance(stored, bool)
        or isinstance(computed, bool)
        or not (isinstance(stored, (int, float)) and isinstance(computed, (int, float)))
    ):
        pass
    elif isinstance(stored, float) or isinstance(computed, float):
        a, b = float(stored), float(computed)
        same = (math.isnan(a) and math.isnan(b)) or a == b or math.isclose(a, b, rel_tol=F64_RTOL, abs_tol=F64_ATOL)
        return [] if same else [f"{path}: {stored!r} stored, {computed!r} now"]
    if isinstance(stored, dict) and isinstance(computed, dict):
        if "b64" in stored and "b64" in computed and stored.get("dtype") == computed.get("dtype"):
            return _array_drift(stored, computed, path)
        if list(stored) != list(computed):
            return [f"{path}: keys {sorted(set(stored) ^ set(computed)) or 'in another order'}"]
        return [d for k in stored for d in drift(stored[k], computed[k], f"{path}.{k}")]
    if isinstance(stored, list) and isinstance(computed, list):
        if len(stored) != len(computed):
            return [f"{path}: {len(stored)} items stored, {len(computed)} now"]
        return [d for i, (x, y) in enumerate(zip(stored, computed, strict=True)) for d in drift(x, y, f"{path}[{i}]")]
    return (
        []
        if stored == computed and type(stored) is type(computed)
        else [f"{path}: {stored!r} stored, {computed!r} now"]
    )


def _array_drift(stored: dict[str, Any], computed: dict[str, Any], path: str) -> list[str]:
    a, b = decode(stored).value, decode(computed).value
    meta = {k: v for k, v in stored.items() if k != "b64"} != {k: v for k, v in computed.items() if k != "b64"}
    if meta or a.shape != b.shape:
        return [f"{path}: array {stored.get('shape')} {stored.get('dtype')} stored, {computed.get('shape')} now"]
    if a.dtype.kind != "f":
        return [] if np.array_equal(a, b) else [f"{path}: array values differ"]
    rtol, atol = (F32_RTOL, F32_ATOL) if a.dtype.itemsize <= 4 else (F64_RTOL, F64_ATOL)
    ok = np.allclose(a.astype(np.float64), b.astype(np.float64), rtol=rtol, atol=atol, equal_nan=True)
    return [] if ok else [f"{path}: array values differ beyond rel {rtol}"]


def _rendered(ex_id: str, root: Path = ROOT) -> tuple[str, str]:
    """(the stored file's text for `ex_id`, "") or ("", why the answer key and the cases disagree)."""
    try:
        return render(compute(ex_id, root)), ""
    except AnswerKeyError as exc:
        return "", str(exc)


def rendered_all(ids: list[str], jobs: int = 1, root: Path = ROOT) -> dict[str, tuple[str, str]]:
    """{exercise id: (the stored file's text, "") or ("", why the answer key and the cases disagree)},
    `jobs` exercises at once, each in its own process; nothing is written."""
    roots = [root] * len(ids)
    with (
        concurrent.futures.ProcessPoolExecutor(jobs, mp_context=_SPAWN)
        if jobs > 1 and len(ids) > 1
        else contextlib.nullcontext() as pool
    ):
        computed = pool.map(_rendered, ids, roots) if pool else map(_rendered, ids, roots)
        return dict(zip(ids, computed, strict=True))


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="python -m autograder expected", description=__doc__.split("\n")[0])
    parser.add_argument("exercises", nargs="*", help="exercise ids (default: every exercise with cases)")
    parser.add_argument("--check", action="store_true", help="fail if a stored file is stale")
    parser.add_argument(
        "--full",
        action="store_true",
        help="with --check: recompute every exercise, also those whose inputs match their recorded digest",
    )
    parser.add_argument("--jobs", type=int, default=1, help="exercises computed at once, each in its own process")
    args = parser.parse_args(argv)
    if args.jobs < 1:
        parser.error(f"--jobs must be >= 1, got {args.jobs}")
    ids = args.exercises or available_exercises()
    records = digests.load()
    if args.check and not args.full:
        unchanged = [ex_id for ex_id in ids if _recorded(ex_id, records)]
        if unchanged:
            print(
                f"inputs unchanged since their values were computed and judged: {', '.join(unchanged)} (--full recomputes)"
            )
        ids = [ex_id for ex_id in ids if ex_id not in unchanged]
    stale = []
    for ex_id, (text, error) in rendered_all(ids, args.jobs).items():
        if error:
            print(f"expected values for {ex_id}: {error}", file=sys.stderr)
            return 1
        path = EXPECTED_DIR / f"{ex_id}.json"
        if args.check:
            old = json.loads(path.read_text(encoding="utf-8")) if path.is_file() else None
            problems = ["missing"] if old is None else drift(old, json.loads(text), ex_id)
            losses = [] if old is None or problems else key_losses(ex_id, old, json.loads(text))
            if losses:
                print(f"expected values for {ex_id}: {_losses_text(ex_id, losses)}", file=sys.stderr)
                return 1
            if not problems and not _recorded(ex_id, records):
                problems = [f"its inputs changed since {digests.RECORD_NAME} recorded them"]
            if problems:
                stale.append(f"{path.relative_to(ROOT)} ({'; '.join(problems[:3])})")
            continue
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
        records["expected"][ex_id] = {"inputs": digests.exercise_digest(ex_id), "stored": digests.file_sha256(path)}
        print(f"wrote {path.relative_to(ROOT)}")
    if not args.check:
        digests.RECORD.write_text(digests.render(records), encoding="utf-8")
    if stale:
        print("stale expected values (run `make release`): " + ", ".join(stale), file=sys.stderr)
        return 1
    return 0


def _recorded(ex_id: str, records: dict[str, dict[str, Any]]) -> bool:
    """Whether the stored file and the exercise's inputs are those recorded when the values were computed."""
    record = records["expected"].get(ex_id, {})
    return record.get("stored") == digests.file_sha256(EXPECTED_DIR / f"{ex_id}.json") and record.get(
        "inputs"
    ) == digests.exercise_digest(ex_id)
