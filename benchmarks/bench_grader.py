"""Wall time of grading the answer-key submission: per exercise and in total (target: <= 20 s in all).

Grades a copy of solutions/ (every exercise whose cases and stored expected values exist) with the
real sandbox, one child per exercise, and prints seconds per exercise, the score, and the total.
Run: `python benchmarks/bench_grader.py` (as root this includes the uid change and namespaces).

`--child-starts N` measures instead the cost of one sandboxed child: N runs of a one-line file with no
case (sandbox start, interpreter start, import, exit, uid sweep), median and range.

Measured on the shared 2-core machine as root, other test runs going (loads 3.5-5.4), runs interleaved
with the block-list sandbox (fa84682, an export graded with the same venv), score 100 each:
- `/usr/bin/time -f %e python -m autograder grade solutions --out /tmp/r.json`: before 14.49, 14.19,
  14.78, 15.20 s; bubblewrap's allow-list root 14.03, 13.62, 13.60, 16.64 s. CPU (user + sys, loads
  5.5-6.4): before 7.62, 7.67, 7.66 s; after 7.49, 7.21, 7.46 s.
- `--child-starts 15` (median of 15): before 0.428, 0.524, 0.522 s; after 0.392, 0.420, 0.439 s.
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

from autograder.authoring import expected
from autograder.core.manifest import EXERCISES, ROOT
from autograder.runtime import grader
from autograder.runtime.sandbox import isolation, runner
from autograder.runtime.sandbox.limits import Limits

TARGET_TOTAL_S = 20.0


def ready() -> list[str]:
    """Exercises with a solution, public and hidden cases (expected.available_exercises) and stored values."""
    return [ex_id for ex_id in expected.available_exercises() if (expected.EXPECTED_DIR / f"{ex_id}.json").is_file()]


def child_starts(n: int) -> int:
    """Median wall time of `n` children that import a one-line file and run no case."""
    mode = isolation.isolation_mode()
    times = []
    with tempfile.TemporaryDirectory() as tmp:
        probe = Path(tmp) / "ex01_cost_per_gb.py"
        probe.write_text("x = 1\n")
        probe.chmod(0o644)
        for _ in range(n):
            start = time.monotonic()
            report = runner.run_exercise(probe, "ex01_cost_per_gb", [], 0, Limits(20, 20, 1024))
            times.append(time.monotonic() - start)
            if report.imported is not True:
                print(f"the child did not import the file: {report.ended} {report.detail} {report.output_all[:500]}")
                return 1
    print(
        f"mode {mode['mode']}: one child start, median of {n}: {statistics.median(times):.3f} s "
        f"(min {min(times):.3f}, max {max(times):.3f})"
    )
    return 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--child-starts", type=int, default=0, metavar="N", help="time N bare child starts instead")
    args = parser.parse_args()
    if args.child_starts:
        return child_starts(args.child_starts)
    ids = ready()
    if not ids:
        print("no exercise has cases and stored expected values yet")
        return 1
    with tempfile.TemporaryDirectory() as tmp:
        submission = Path(tmp) / "submission"
        submission.mkdir()
        for ex in EXERCISES:
            if ex.id in ids:
                shutil.copyfile(ROOT / "solutions" / ex.filename, submission / ex.filename)
        print(
            f"grading {len(ids)} exercises as {'root (sandbox uid, namespaces)' if isolation.is_root() else 'this user'}"
        )
        print(f"{'exercise':<10}{'cases':>7}{'score':>10}{'max':>7}{'wall s':>9}")
        total_start = time.monotonic()
        rows = []
        for ex_id in ids:
            start = time.monotonic()
            data = grader.grade_submission(submission, exercises=[ex_id])
            wall = time.monotonic() - start
            cases = [t for t in data["tests"] if t["max_score"] > 0]
            rows.append((ex_id, len(cases), data["score"], sum(t["max_score"] for t in cases), wall))
            print(f"{ex_id:<10}{len(cases):>7}{data['score']:>10.2f}{rows[-1][3]:>7.1f}{wall:>9.2f}")
        per_exercise_total = time.monotonic() - total_start
        start = time.monotonic()
        data = grader.grade_submission(submission, exercises=ids)
        together = time.monotonic() - start
    print(f"sum of per-exercise runs: {per_exercise_total:.2f} s")
    print(
        f"one run over all {len(ids)}: {together:.2f} s, score {data['score']:g} / "
        f"{sum(t['max_score'] for t in data['tests']):g} (target <= {TARGET_TOTAL_S:g} s: "
        f"{'met' if together <= TARGET_TOTAL_S else 'NOT met'})"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
