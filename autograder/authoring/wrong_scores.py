"""`python -m autograder.authoring.wrong_scores [--write]`: what each wrong fixture scores, stored and checked.

Each fixture of autograder/authoring/wrong_fixtures.py is materialised and graded alone (its one exercise,
through the sandboxed grader), and its exercise score is compared with `autograder/fixtures/wrong_scores.json`, which the
test suite also checks (tests/test_self_test.py). A change of the cases or of the points rule that
moves a fixture's score shows up as a diff of that file, to be looked at and committed with
`--write`.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path

from autograder.authoring.wrong_fixtures import BY_NAME, FIXTURES, materialise
from autograder.core.manifest import BY_ID, ROOT

STORED = ROOT / "autograder" / "fixtures" / "wrong_scores.json"


def fixture_score(name: str) -> float:
    """The exercise score of one wrong fixture, graded alone."""
    from autograder.runtime import grader

    ex = BY_ID[BY_NAME[name].exercise]
    with tempfile.TemporaryDirectory(prefix="a2wrong-") as tmp:
        submission = materialise(name, Path(tmp) / "submission").parent
        data = grader.grade_submission(submission, exercises=[ex.id])
    return round(sum(t["score"] for t in data["tests"] if t["name"].split(" ", 1)[0] == ex.id), 2)


def compute() -> dict[str, float]:
    return {f.name: fixture_score(f.name) for f in FIXTURES}


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m autograder.authoring.wrong_scores", description=__doc__.splitlines()[0]
    )
    parser.add_argument("--write", action="store_true", help="store the measured scores")
    args = parser.parse_args(argv)
    scores = compute()
    stored = json.loads(STORED.read_text(encoding="utf-8")) if STORED.is_file() else {}
    for name, score in scores.items():
        mark = "" if stored.get(name) == score else f"   (stored: {stored.get(name)})"
        print(f"{name:32s} {score:6.2f} / {BY_ID[BY_NAME[name].exercise].points:g}{mark}")
    if args.write:
        STORED.write_text(json.dumps(scores, indent=1) + "\n", encoding="utf-8")
        print(f"wrote {STORED.relative_to(ROOT)}")
        return 0
    return 0 if scores == stored else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
