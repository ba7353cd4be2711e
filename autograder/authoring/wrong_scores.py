"""`python -m autograder wrong-scores [--exercises ex02 ...] [--write]`: which cases each wrong fixture
passes, stored, and what that scores under the manifest's points as they are now.

Each fixture of autograder/authoring/wrong_fixtures.py is materialised and graded alone (its one
exercise, through the sandboxed grader). What is stored in `autograder/fixtures/wrong_scores.json` is
what does not depend on points: per fixture, per scoring group (an exercise function, or a simulator
harness: `autograder.core.scoring.group_key`), whether each public and each hidden case passed (case
ids only, never an input or an expected value) and whether the group computes (is live, the rule of
`autograder.core.scoring`). A fixture's score is recomputed from those outcomes by
`autograder.core.scoring.payment`, the function the grader pays with, under whatever points and case
weights the manifest and the case files declare: moving points between exercises changes the scores
and needs no regrade.

An entry is stale when its exercise's cases are no longer the ones it was graded on (a case added,
removed, renamed or moved to another function or side) or when the live rule, applied to its stored
outcomes, no longer decides what it decided when graded (the answer key's classes or rules changed):
the test suite (tests/test_self_test.py) then names the command that regrades that exercise. A change
of the cases that moves a fixture's outcomes shows up as a diff of the file, to be looked at and
committed with `--write`, which rewrites only the entries of the exercises graded.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from autograder.authoring.wrong_fixtures import BY_NAME, FIXTURES, materialise
from autograder.core import scoring
from autograder.core.cases import hidden_cases, public_cases, stored
from autograder.core.manifest import BY_ID, ROOT, Exercise
from hetero.checks import Case

STORED = ROOT / "autograder" / "fixtures" / "wrong_scores.json"
COMMAND = "python -m autograder wrong-scores"
FORMAT = 2  # 1: {fixture: absolute exercise score}; 2: per-case outcomes (this module)
ABOUT = (
    "Which cases each wrong fixture passes and whether each function computes; its score under the "
    f"manifest's points is recomputed from these (`{COMMAND} --stored`). Written by `{COMMAND} --write`."
)
SIDES = ("public", "hidden")
# One fixture's entry: {"exercise": "exNN", "groups": {group: {"computes": bool,
# "public": {case id: "passed" | "failed"}, "hidden": {case id: "passed" | "failed"}}}}
Entry = dict[str, Any]


class StaleEntry(ValueError):
    """A stored entry that no longer fits the exercise's cases or rules: its exercise must be regraded."""


def regrade_hint(ex_ids: Iterable[str]) -> str:
    return f"`{COMMAND} --exercises {' '.join(sorted(set(ex_ids)))} --write`"


@dataclass(frozen=True)
class Key:
    """One exercise's cases and stored answer key (classes, echo flags, rules), as the grader loads them."""

    public: list[Case]
    hidden: list[Case]
    data: dict[str, Any]

    @classmethod
    def load(cls, ex_id: str, root: Path = ROOT) -> Key:
        return cls(public_cases(ex_id, root), hidden_cases(ex_id, root), stored(ex_id, root))

    def layout(self) -> dict[str, dict[str, list[str]]]:
        """Group -> side -> sorted case ids: what an entry's outcomes must cover."""
        out: dict[str, dict[str, list[str]]] = {}
        for side, cases in zip(SIDES, (self.public, self.hidden), strict=True):
            for case in cases:
                out.setdefault(scoring.group_key(case), {s: [] for s in SIDES})[side].append(case.id)
        return {group: {side: sorted(ids) for side, ids in sides.items()} for group, sides in out.items()}


def _shown(path: Path) -> str:
    return str(path.relative_to(ROOT)) if path.is_relative_to(ROOT) else str(path)


def load(path: Path | None = None) -> dict[str, Entry]:
    """The stored entries by fixture name ({} without a file; StaleEntry for an older format)."""
    path = path or STORED
    if not path.is_file():
        return {}
    data = json.loads(path.read_text(encoding="utf-8"))
    if not isinstance(data, dict) or data.get("format") != FORMAT:
        raise StaleEntry(f"{_shown(path)} is in an older format: {COMMAND} --write")
    fixtures: dict[str, Entry] = data["fixtures"]
    return fixtures


def dump(entries: Mapping[str, Entry], path: Path | None = None) -> None:
    """Write the entries, keys sorted, one case per line (a changed outcome is a one-line diff)."""
    path = path or STORED
    data = {"about": ABOUT, "format": FORMAT, "fixtures": dict(entries)}
    path.write_text(json.dumps(data, indent=1, sort_keys=True) + "\n", encoding="utf-8")


def entry_from(ex_id: str, key: Key, passed: Mapping[str, bool], live: Iterable[str]) -> Entry:
    """The stored form of one fixture's outcomes (`passed`: case id -> bool; `live`: the groups that compute)."""
    live = set(live)
    groups = {
        group: {
            "computes": group in live,
            **{side: {cid: "passed" if passed.get(cid) else "failed" for cid in ids} for side, ids in sides.items()},
        }
        for group, sides in key.layout().items()
    }
    return {"exercise": ex_id, "groups": groups}


def _differences(want: Sequence[str], have: Sequence[str]) -> str:
    new, gone = sorted(set(want) - set(have)), sorted(set(have) - set(want))
    return "; ".join(part for part in (f"new {new}" if new else "", f"gone {gone}" if gone else "") if part)


def check(name: str, entry: Entry, key: Key) -> None:
    """Raise StaleEntry unless `entry` covers exactly the exercise's cases now, group by group and side
    by side (case ids compared, nothing else)."""
    ex_id = BY_NAME[name].exercise
    if entry.get("exercise") != ex_id:
        raise StaleEntry(f"{name}: stored for {entry.get('exercise')!r}, declared for {ex_id}: {regrade_hint([ex_id])}")
    want, have = key.layout(), entry.get("groups", {})
    problems = []
    for group in sorted(set(want) | set(have)):
        if group not in have or group not in want:
            problems.append(f"group {group} is {'new' if group in want else 'gone'}")
            continue
        for side in SIDES:
            diff = _differences(want[group][side], sorted(have[group].get(side, {})))
            if diff:
                problems.append(f"{group} ({side} cases): {diff}")
    if problems:
        raise StaleEntry(
            f"{name}: the stored outcomes are not for the cases {ex_id} has now ({'; '.join(problems)}): "
            f"regrade with {regrade_hint([ex_id])}"
        )


def passed_of(entry: Entry) -> dict[str, bool]:
    return {cid: mark == "passed" for g in entry["groups"].values() for side in SIDES for cid, mark in g[side].items()}


def pay(name: str, entry: Entry, key: Key, exercise: Exercise | None = None) -> scoring.Payment:
    """What the stored outcomes of fixture `name` earn under `exercise`'s points (default: the manifest's
    entry now), through the grader's own `scoring.payment`; StaleEntry when the entry no longer fits."""
    check(name, entry, key)
    ex = exercise or BY_ID[entry["exercise"]]
    payment = scoring.payment(ex.points, ex.public_share, key.public, key.hidden, key.data, passed_of(entry))
    stored_live = {group for group, g in entry["groups"].items() if g["computes"]}
    if set(payment.live) != stored_live:
        changed = sorted(set(payment.live) ^ stored_live)
        raise StaleEntry(
            f"{name}: the live-function rule now decides differently for {changed} on the stored outcomes "
            f"(autograder/expected/{ex.id}.json changed?): regrade with {regrade_hint([ex.id])}"
        )
    return payment


def stored_scores(
    names: Iterable[str] | None = None, exercises: Mapping[str, Exercise] | None = None
) -> dict[str, float]:
    """Fixture name -> exercise score recomputed from the stored outcomes, without grading.

    exercises: exercise id -> Exercise whose points to use (default: the manifest's `BY_ID` now).
    """
    entries = load()
    chosen = list(names) if names is not None else [f.name for f in FIXTURES]
    missing = [n for n in chosen if n not in entries]
    if missing:
        raise StaleEntry(f"no stored outcomes for {missing}: {regrade_hint(BY_NAME[n].exercise for n in missing)}")
    by_id = exercises if exercises is not None else BY_ID
    keys: dict[str, Key] = {}
    scores = {}
    for name in chosen:
        ex_id = BY_NAME[name].exercise
        if ex_id not in keys:
            keys[ex_id] = Key.load(ex_id)
        key = keys[ex_id]
        scores[name] = scoring.cents_to_points(pay(name, entries[name], key, by_id[ex_id]).cents)
    return scores


def grade(name: str, key: Key | None = None) -> Entry:
    """Grade fixture `name` alone through the sandboxed grader; its outcomes as stored."""
    from autograder.runtime import grader

    ex = BY_ID[BY_NAME[name].exercise]
    key = key or Key.load(ex.id)
    with tempfile.TemporaryDirectory(prefix="a2wrong-") as tmp:
        submission = materialise(name, Path(tmp) / "submission").parent
        staging = Path(tmp) / "staging"
        staging.mkdir()
        found, _ = grader.locate(submission, [ex], staging)
        result = grader.grade_exercise(ex, found.get(ex.id))
    passed = {c.case_id: c.passed for c in result.cases}
    payment = scoring.payment(ex.points, ex.public_share, key.public, key.hidden, key.data, passed)
    if payment.cents != result.cents:  # one rule: the grader pays through scoring.payment too
        raise RuntimeError(f"{name}: the grader paid {result.cents} cents, the stored outcomes pay {payment.cents}")
    return entry_from(ex.id, key, passed, payment.live)


def _stored_text(name: str, entries: Mapping[str, Entry], keys: dict[str, Key]) -> str:
    if name not in entries:
        return "none"
    ex_id = BY_NAME[name].exercise
    try:
        return f"{scoring.cents_to_points(pay(name, entries[name], keys[ex_id]).cents):.2f}"
    except StaleEntry:
        return "stale"


def main(argv: Sequence[str]) -> int:
    parser = argparse.ArgumentParser(
        prog=COMMAND,
        description="Grade wrong fixtures, compare their case outcomes and scores with the stored ones.",
    )
    parser.add_argument(
        "--exercises", nargs="+", choices=sorted(BY_ID), metavar="EXNN", help="grade only these exercises' fixtures"
    )
    parser.add_argument("--write", action="store_true", help="store the outcomes of the fixtures graded")
    parser.add_argument(
        "--stored", action="store_true", help="grade nothing: the scores the stored outcomes give under today's points"
    )
    args = parser.parse_args(argv)
    if args.write and args.stored:
        parser.error("--write stores what was graded; --stored grades nothing")
    ex_ids = sorted(set(args.exercises or BY_ID))
    names = [f.name for f in FIXTURES if f.exercise in ex_ids]
    if args.stored:
        try:
            scores = stored_scores(names)
        except StaleEntry as err:
            print(err, file=sys.stderr)
            return 1
        for name, score in scores.items():
            print(f"{name:32s} {score:6.2f} / {BY_ID[BY_NAME[name].exercise].points:g}")
        return 0
    try:
        entries = load()
    except StaleEntry as err:
        print(f"{err}: every fixture is compared with nothing", file=sys.stderr)
        entries = {}
    keys = {ex_id: Key.load(ex_id) for ex_id in ex_ids}
    start = time.monotonic()
    fresh: dict[str, Entry] = {}
    for name in names:
        ex_id = BY_NAME[name].exercise
        fresh[name] = grade(name, keys[ex_id])
        score = scoring.cents_to_points(pay(name, fresh[name], keys[ex_id]).cents)
        mark = "" if entries.get(name) == fresh[name] else "   (outcomes differ from the stored ones)"
        print(
            f"{name:32s} {score:6.2f} / {BY_ID[ex_id].points:g}   stored: {_stored_text(name, entries, keys)}{mark}",
            flush=True,
        )
    print(f"graded {len(names)} fixtures of {' '.join(ex_ids)} in {time.monotonic() - start:.0f} s")
    gone = sorted(n for n, e in entries.items() if e.get("exercise") in ex_ids and n not in fresh)
    if gone:
        print(f"stored, but no longer declared in autograder/authoring/wrong_fixtures.py: {', '.join(gone)}")
    if args.write:
        kept = {n: e for n, e in entries.items() if e.get("exercise") not in ex_ids}
        dump({**kept, **fresh})
        print(f"wrote {_shown(STORED)} ({len(fresh)} entries of {len(kept) + len(fresh)} rewritten)")
        return 0
    return 0 if not gone and all(entries.get(n) == e for n, e in fresh.items()) else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
