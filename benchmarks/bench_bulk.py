"""Throughput of bulk grading: submissions per minute and per-submission wall time.

Assembles N (default 20) submissions — the answer key, the unfilled stubs, the answer key with one
wrong fixture (cycling through every fixture), and partial submissions (answer key with k exercises
left as stubs) — grades them with `grade-all` (parallel workers, each submission in its own grader
subprocess) into a temporary folder and prints the figures. Target: >= 10 submissions per minute.
grade-all seals every public phase before any hidden phase starts (two grader processes per
submission, a barrier between them); `--unsealed` grades the same batch as before the seal (one
grader process per submission, both phases, side by side), to measure what the seal costs.

`--hostile` grades instead (exercises ex01 and ex02 only) one submission of each hostile class the
batch must survive (a zip bomb, a zip with damaged members, a 1100-level folder tree, a lone
surrogate in exception messages, a notebook with malformed tags) next to the answer key, and prints
each one's grading time and score, and the peak bytes the zip bomb put on disk while it was read
(the staging folder sampled every millisecond during `autograder.runtime.intake.locate`; extracting every
exercise-named member, as the reader once did, wrote 202 MiB for this zip).

`--compare` grades one batch (default 6: the answer key, the stubs, four wrong fixtures; the real grader, every
exercise) three ways, one after the other, and prints submissions/min side by side with the load average
before and after each: the local process pool (`--workers`, default 2), `--cluster local:1` and `--cluster
local:2` (a Dask LocalCluster of one or two worker processes, one thread each; its start-up counts, as it does
for `grade-all`). It also says whether the three gave every student the same score.

    python benchmarks/bench_bulk.py [--n 20] [--workers N] [--unsealed] [--hostile] [--compare]
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path

from autograder.authoring.wrong_fixtures import FIXTURES
from autograder.batch import bulk
from autograder.batch.cluster import connect
from autograder.core.manifest import BY_ID, EXERCISES, ROOT
from autograder.runtime import intake
from autograder.selftest.attacks import (
    BOMB_BYTES,
    BOMB_COPIES,
    answer_key,
    bomb_zip,
    damaged_zip,
    deep_tree,
    remove_deep,
)
from autograder.selftest.demo import copy_exercises, with_fixture

TARGET_PER_MIN = 10.0


def assemble(dest: Path, n: int) -> list[str]:
    """`n` varied submissions in `dest`; returns their names."""
    kinds: list[tuple[str, object]] = [("key", None), ("stubs", None)]
    kinds += [("wrong", f) for f in FIXTURES]
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
            for e in EXERCISES[-int(arg) :]:  # type: ignore[call-overload]
                shutil.copyfile(ROOT / "assignments" / e.filename, folder / e.filename)
        names.append(name)
    return names


HOSTILE_EXERCISES = ["ex01", "ex02"]
SAMPLE_S = 0.001


def _tree_bytes(folder: Path) -> int:
    total = 0
    for dirpath, _, files in os.walk(folder):
        for name in files:
            try:
                total += os.lstat(os.path.join(dirpath, name)).st_size
            except OSError:
                pass
    return total


def peak_staging_bytes(archive: Path) -> tuple[int, float]:
    """(peak bytes in the staging folder, seconds) while intake.locate reads `archive`."""
    with tempfile.TemporaryDirectory(prefix="a2-bench-staging-") as tmp:
        staging = Path(tmp)
        peak = 0
        done = threading.Event()

        def sample() -> None:
            nonlocal peak
            while not done.is_set():
                peak = max(peak, _tree_bytes(staging))
                time.sleep(SAMPLE_S)

        sampler = threading.Thread(target=sample)
        sampler.start()
        start = time.perf_counter()
        intake.locate(archive, [BY_ID[e] for e in HOSTILE_EXERCISES], staging)
        took = time.perf_counter() - start
        done.set()
        sampler.join()
        return max(peak, _tree_bytes(staging)), took


def assemble_hostile(dest: Path) -> dict[str, str]:
    """One submission per hostile class, plus the answer key; {entry: what it is}."""
    files = {BY_ID[e].filename: answer_key(e) for e in HOSTILE_EXERCISES}

    def folder(name: str, extra: dict[str, bytes]) -> None:
        (dest / name).mkdir(parents=True)
        for rel, data in {**files, **extra}.items():
            (dest / name / rel).write_bytes(data)

    folder("key", {})
    bomb_zip(dest / "zip_bomb.zip")
    damaged_zip(dest / "zip_damaged.zip")
    folder("deep_tree", {})
    (dest / "deep_tree" / BY_ID["ex02"].filename).unlink()
    deep_tree(dest / "deep_tree" / "x")
    fixtures = ROOT / "autograder" / "fixtures" / "adversarial"
    attack = fixtures / "batch_surrogate_message" / "ex02_kv_capacity.py"
    folder("surrogate", {"ex02_kv_capacity.py": attack.read_bytes()})
    folder("notebook_bad_tags", {})
    (dest / "notebook_bad_tags" / "ex02_kv_capacity.py").unlink()
    shutil.copyfile(
        fixtures / "batch_notebook_bad_tags" / "ex02_kv_capacity.ipynb",
        dest / "notebook_bad_tags" / "ex02_kv_capacity.ipynb",
    )
    return {
        "key": "answer key",
        "zip_bomb": f"ex01: a {BOMB_BYTES // 2**20} MiB member + {BOMB_COPIES} copies of 3 MiB",
        "zip_damaged": "ex02 encrypted (ex03/ex04 damaged, not graded here)",
        "deep_tree": f"ex02 below {intake.MAX_DEPTH} levels",
        "surrogate": "ex02 raises lone surrogates",
        "notebook_bad_tags": 'ex02 notebook with "tags": 5',
    }


def hostile(workers: int) -> int:
    with tempfile.TemporaryDirectory(prefix="a2-bench-hostile-") as tmp:
        subs = Path(tmp) / "submissions"
        kinds = assemble_hostile(subs)
        try:
            peak, took = peak_staging_bytes(subs / "zip_bomb.zip")
            bomb_size = (subs / "zip_bomb.zip").stat().st_size
            report = bulk.grade_all(
                subs, Path(tmp) / "graded", workers=workers, progress=False, exercises=HOSTILE_EXERCISES
            )
        finally:
            remove_deep(subs / "deep_tree")
    print(
        f"hostile submissions ({', '.join(HOSTILE_EXERCISES)} graded, {workers} workers, "
        f"load average {os.getloadavg()[0]:.2f}):"
    )
    print(f"  {'submission':<20}{'seconds':>9}{'score':>8}  what")
    for rec in report.records:
        print(f"  {rec.student:<20}{rec.duration_s:>9.1f}{rec.score:>8.1f}  {kinds.get(rec.student, '')}")
    print(f"  grader failures: {len(report.failed)}")
    expanded_mib = BOMB_BYTES / 2**20 + 3 * BOMB_COPIES
    print(
        f"zip bomb: {bomb_size / 1e3:.0f} KB zip expanding to {expanded_mib:.0f} MiB; "
        f"peak staging disk use {peak / 2**20:.2f} MiB (cap per file {intake.MAX_FILE_BYTES / 2**20:.0f} MiB, "
        f"per submission {intake.MAX_EXTRACT_BYTES / 2**20:.0f} MiB); locate took {took:.2f} s"
    )
    return 0


def compare(n: int, workers: int) -> int:
    """--compare: the same batch through the process pool and Dask LocalClusters of 1 and 2 workers."""
    routes: list[tuple[str, str | None]] = [
        (f"process pool, --workers {workers}", None),
        ("--cluster local:1", "local:1"),
        ("--cluster local:2", "local:2"),
    ]
    rows = []
    scores: dict[str, dict[str, float]] = {}
    with tempfile.TemporaryDirectory(prefix="a2-bench-compare-") as tmp:
        subs = Path(tmp) / "submissions"
        names = assemble(subs, n)
        for i, (label, cluster) in enumerate(routes):
            start_s = 0.0
            if cluster is not None:  # its start-up alone, once before the run (the run starts its own)
                start = time.perf_counter()
                with connect(cluster):
                    start_s = time.perf_counter() - start
            load = os.getloadavg()[0]
            report = bulk.grade_all(subs, Path(tmp) / f"graded{i}", workers, progress=False, cluster=cluster)
            after = os.getloadavg()[0]
            rows.append((label, len(report.graded), report.wall_s, start_s, load, after, len(report.failed)))
            scores[label] = {r.student: round(r.score, 6) for r in report.records}
    cores = os.cpu_count() or 1
    print(f"bulk grading, one batch three ways: {n} submissions ({', '.join(names)}), real grader, every exercise")
    print(f"  {cores} cores shared with other processes: the load average says how busy they were\n")
    print(
        f"  {'route':<28}{'graded':>7}{'wall s':>9}{'subs/min':>10}{'start-up s':>12}{'load before':>13}"
        f"{'load after':>12}{'failed':>8}"
    )
    for label, graded, wall, start_s, before, after, failed in rows:
        print(
            f"  {label:<28}{graded:>7}{wall:>9.1f}{graded / wall * 60:>10.2f}{start_s:>12.1f}{before:>13.2f}"
            f"{after:>12.2f}{failed:>8}"
        )
    print("  (wall s includes the cluster's start-up; start-up s: the same start-up timed alone just before)")
    first = next(iter(scores.values()))
    differ = sorted({s for other in scores.values() for s in first if other.get(s) != first[s]})
    print("  same score for every student in every route: " + ("yes" if not differ else f"NO: {differ}"))
    return 0 if not differ else 1


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=None, help="number of submissions (default 20; >= 20 for the figure)")
    parser.add_argument("--workers", type=int, default=None, help="parallel graders (default: cores)")
    parser.add_argument("--hostile", action="store_true", help="grade one submission per hostile class instead")
    parser.add_argument(
        "--compare", action="store_true", help="one batch (--n, default 6): process pool, --cluster local:1, local:2"
    )
    parser.add_argument(
        "--unsealed", action="store_true", help="one grader process per submission, no barrier (before the seal)"
    )
    args = parser.parse_args(argv)
    if args.hostile:
        return hostile(args.workers or os.cpu_count() or 1)
    if args.compare:
        return compare(6 if args.n is None else args.n, args.workers or 2)
    workers = args.workers or os.cpu_count() or 1
    with tempfile.TemporaryDirectory(prefix="a2-bench-bulk-") as tmp:
        subs = Path(tmp) / "submissions"
        assemble(subs, args.n or 20)
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        report = bulk.grade_all(subs, Path(tmp) / "graded", workers=workers, progress=False, sealed=not args.unsealed)
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
    # CPU seconds of every grader process and its sandbox children (all reaped by this process)
    cpu_per_sub = ((after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)) / max(1, len(report.graded))
    cores = os.cpu_count() or 1
    durations = sorted(r.duration_s for r in report.records)
    per_min = len(report.graded) / report.wall_s * 60.0
    p90 = durations[min(len(durations) - 1, int(round(0.9 * (len(durations) - 1))))]
    how = "unsealed: one grader process each" if args.unsealed else "sealed: public phases, barrier, hidden phases"
    print(f"bulk grading: {len(report.graded)} submissions, {workers} workers, {cores} cores ({how})")
    print(f"  batch wall time            {report.wall_s:8.1f} s")
    print(f"  throughput                 {per_min:8.1f} submissions/min  (target >= {TARGET_PER_MIN:.0f})")
    print(
        f"  per-submission wall time   mean {statistics.fmean(durations):.1f} s, "
        f"median {statistics.median(durations):.1f} s, p90 {p90:.1f} s, max {durations[-1]:.1f} s"
    )
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
