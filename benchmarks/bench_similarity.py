"""Time of `python -m autograder similarity` for a class of N (default 200) submissions, every exercise.

Assembles N student folders in a temporary folder, one file per exercise each, and runs `similarity.run`
once; prints the time to read the submissions, to fingerprint and compare them, to write the pages, the
pairs compared and flagged, and the peak memory of the process.

The class (default): per exercise, 2% of the students hand in the answer key and 2% a disguised copy of it
(`autograder.selftest.attacks.disguised_copy`: the pairs to flag), 8% the unfilled stub, and the rest code
written apart, of the key's length: a slice of a module of Python's standard library (no class of real,
independent solutions ships here; what the timing needs is code of the right size that shares little).
`--all-copies`: every file is a variant of
the key (the key, a disguised copy, a wrong fixture, or the stub, in turn), so most pairs are flagged: the
worst case for the comparison (the pages stop at --max-pages).

    python benchmarks/bench_similarity.py [--n 200] [--threshold 0.5] [--all-copies]
"""

from __future__ import annotations

import argparse
import os
import random
import resource
import sys
import sysconfig
import tempfile
import time
from pathlib import Path

from autograder.authoring.wrong_fixtures import FIXTURES, materialise
from autograder.batch import similarity
from autograder.core.manifest import EXERCISES, ROOT
from autograder.selftest.attacks import disguised_copy

SKIPPED = {"site-packages", "test", "tests", "encodings", "pydoc_data", "idlelib"}  # tests, generated tables
DATA_LINE = ("'", '"', "0x", "#", "b'", 'b"', "r'", 'r"', "(", "[", "{", ")", "]", "}")


def windows(lines: int, rng: random.Random) -> list[str]:
    """Code written apart, `lines` long (module docstring): every non-overlapping window of the standard
        library's modules (past their first 40 lines: licence headers; not its tests, codec tables or generated
    documentation), that are code rather than data, shuffled; none is handed out twice."""
    stdlib = Path(sysconfig.get_paths()["stdlib"])
    found = []
    for path in sorted(stdlib.rglob("*.py")):
        if set(path.parts) & SKIPPED:
            continue
        text = path.read_text(encoding="utf-8", errors="replace").splitlines()
        for at in range(40, len(text) - lines, lines):
            window = text[at : at + lines]
            data = sum(line.strip().startswith(DATA_LINE) for line in window)
            if data <= 0.3 * len(window):  # code, not a table of strings or numbers (all alike once normalised)
                found.append("\n".join(window) + "\n")
    rng.shuffle(found)
    return found


def assemble_realistic(dest: Path, n: int, seed: int = 0) -> None:
    rng = random.Random(seed)
    for i in range(n):
        (dest / f"student{i:03d}").mkdir(parents=True)
    for e in EXERCISES:
        key = (ROOT / "solutions" / e.filename).read_text(encoding="utf-8")
        stub = (ROOT / "assignments" / e.filename).read_text(encoding="utf-8")
        apart = windows(len(key.splitlines()), rng)
        order = list(range(n))
        rng.shuffle(order)
        copies, stubs = max(2, round(0.02 * n)), round(0.08 * n)
        for rank, i in enumerate(order):
            if rank < copies:
                text = key
            elif rank < 2 * copies:
                text = disguised_copy(key)
            elif rank < 2 * copies + stubs:
                text = stub
            else:
                text = apart.pop()
            (dest / f"student{i:03d}" / e.filename).write_text(text, encoding="utf-8")


def assemble(dest: Path, n: int) -> None:
    by_ex = {e.id: [f for f in FIXTURES if f.exercise == e.id] for e in EXERCISES}
    scratch = dest.parent / "fixtures"
    made: dict[str, str] = {}
    for e in EXERCISES:
        for f in by_ex[e.id]:
            made[f.name] = materialise(f.name, scratch / f.name).read_text(encoding="utf-8")
    for i in range(n):
        folder = dest / f"student{i:03d}"
        folder.mkdir(parents=True)
        for k, e in enumerate(EXERCISES):
            key = (ROOT / "solutions" / e.filename).read_text(encoding="utf-8")
            kind = (i + k) % 4
            if kind == 0:
                text = key
            elif kind == 1:
                text = disguised_copy(key)
            elif kind == 2 and by_ex[e.id]:
                text = made[by_ex[e.id][i % len(by_ex[e.id])].name]
            else:
                text = (ROOT / "assignments" / e.filename).read_text(encoding="utf-8")
            (folder / e.filename).write_text(text, encoding="utf-8")


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=200)
    parser.add_argument("--threshold", type=float, default=similarity.THRESHOLD)
    parser.add_argument("--all-copies", action="store_true", help="every file a variant of the key (worst case)")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="a2-bench-similarity-") as tmp:
        subs, out = Path(tmp) / "class", Path(tmp) / "out"
        start = time.perf_counter()
        (assemble if args.all_copies else assemble_realistic)(subs, args.n)
        built = time.perf_counter() - start
        start = time.perf_counter()
        summary = similarity.run(subs, out, threshold=args.threshold)
        total = time.perf_counter() - start
    read_s, compare_s = summary["seconds"]["read"], summary["seconds"]["compare"]
    usage = resource.getrusage(resource.RUSAGE_SELF)
    peak_mib, cpu_s = usage.ru_maxrss / 1024, usage.ru_utime + usage.ru_stime
    kind = (
        "every file a variant of the key"
        if args.all_copies
        else "2% key, 2% disguised copies, 8% stubs, the rest apart"
    )
    print(f"class: {args.n} submissions x {len(EXERCISES)} exercises, {kind} (assembled in {built:.1f} s)")
    read_cpu, compare_cpu = summary["cpu_seconds"]["read"], summary["cpu_seconds"]["compare"]
    print(f"read (intake.locate, text):         {read_s:8.2f} s wall, {read_cpu:6.2f} s CPU")
    print(
        f"fingerprint + compare (copydetect): {compare_s:8.2f} s wall, {compare_cpu:6.2f} s CPU  "
        f"({summary['compared']} pairs compared)"
    )
    print(
        f"pages + similarity.json:           {total - read_s - compare_s:8.2f} s  ({len(summary['pairs'])} pairs flagged)"
    )
    print(f"total:                             {total:8.2f} s  ({total / args.n * 1000:.0f} ms per submission)")
    print(f"peak memory: {peak_mib:.0f} MiB; CPU time of the whole script (assembly too): {cpu_s:.1f} s")
    print(
        f"load average after: {' '.join(f'{x:.1f}' for x in os.getloadavg())} (2 cores shared: wall time grows with it)"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
