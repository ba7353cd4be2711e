"""Throughput of bulk grading: submissions per minute and per-submission wall time.

Assembles N (default 20) submissions — the answer key, the unfilled stubs, the answer key with one
wrong fixture (cycling through every fixture), and partial submissions (answer key with k exercises
left as stubs) — grades them with `grade-all` (parallel workers, each submission in its own grader
subprocess) into a temporary folder and prints the figures. Target: >= 10 submissions per minute.

    python benchmarks/bench_bulk.py [--n 20] [--workers N]
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import statistics
import sys
import tempfile
from pathlib import Path

from autograder import bulk
from autograder.demo import copy_exercises, with_fixture, wrong_fixtures
from autograder.manifest import EXERCISES, ROOT

TARGET_PER_MIN = 10.0


def assemble(dest: Path, n: int) -> list[str]:
    """`n` varied submissions in `dest`; returns their names."""
    kinds: list[tuple[str, object]] = [("key", None), ("stubs", None)]
    kinds += [("wrong", f) for f in wrong_fixtures()]
    kinds += [("partial", k) for k in range(1, len(EXERCISES))]
    names = []
    for i in range(n):
        kind, arg = kinds[i % len(kinds)]
        name = f"s{i:03d}_{kind}"
        folder = dest / name
        if kind == "key":
            copy_exercises(ROOT / "solutions", folder)
        elif kind == "stubs":
            copy_exercises(ROOT / "assignments", folder)
        elif kind == "wrong":
            with_fixture(arg, folder)  # type: ignore[arg-type]
        else:
            copy_exercises(ROOT / "solutions", folder)
            for e in EXERCISES[-int(arg):]:  # type: ignore[call-overload]
                shutil.copyfile(ROOT / "assignments" / e.filename, folder / e.filename)
        names.append(name)
    return names


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=20, help="number of submissions (>= 20 for the figure)")
    parser.add_argument("--workers", type=int, default=None, help="parallel graders (default: cores)")
    args = parser.parse_args(argv)
    workers = args.workers or os.cpu_count() or 1
    with tempfile.TemporaryDirectory(prefix="a2-bench-bulk-") as tmp:
        subs = Path(tmp) / "submissions"
        assemble(subs, args.n)
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        report = bulk.grade_all(subs, Path(tmp) / "graded", workers=workers, progress=False)
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
    # CPU seconds of every grader process and its sandbox children (all reaped by this process)
    cpu_per_sub = ((after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)) / max(1, len(report.graded))
    cores = os.cpu_count() or 1
    durations = sorted(r.duration_s for r in report.records)
    per_min = len(report.graded) / report.wall_s * 60.0
    p90 = durations[min(len(durations) - 1, int(round(0.9 * (len(durations) - 1))))]
    print(f"bulk grading: {len(report.graded)} submissions, {workers} workers, {cores} cores")
    print(f"  batch wall time            {report.wall_s:8.1f} s")
    print(f"  throughput                 {per_min:8.1f} submissions/min  (target >= {TARGET_PER_MIN:.0f})")
    print(f"  per-submission wall time   mean {statistics.fmean(durations):.1f} s, "
          f"median {statistics.median(durations):.1f} s, p90 {p90:.1f} s, max {durations[-1]:.1f} s")
    print(f"  CPU per submission         {cpu_per_sub:8.1f} s  (grader + sandbox children)")
    print(f"  CPU-bound ceiling          {cores * 60.0 / cpu_per_sub:8.1f} submissions/min on {cores} idle cores")
    print(f"  machine load average       {os.getloadavg()[0]:8.2f}  (other processes compete for the cores)")
    print(f"  grader failures            {len(report.failed)}")
    print("  scores: " + ", ".join(f"{r.student}={r.score:.1f}" for r in report.records))
    verdict = "meets" if per_min >= TARGET_PER_MIN else "MISSES"
    print(f"  {verdict} the target of {TARGET_PER_MIN:.0f} submissions/min")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
