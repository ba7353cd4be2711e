"""Wall time to grade the same submission (the answer key, every exportable exercise) three ways:
the native sandboxed grader (`python -m autograder grade`), `otter run` (no Docker) and
`nbgrader autograde`. One run each; ratios to the native grader are printed.

What is timed: for the native grader, one `grade` call on a folder holding the solution notebooks
(one per exercise); for Otter, one `otter run` per exercise notebook (Otter grades one notebook per
call), summed; for nbgrader, one `autograde` call over the same notebooks. The one-off set-up
(`otter assign`, `nbgrader generate_assignment`) is timed separately and not part of the ratios.

Usage: python benchmarks/bench_exports.py [--exercises ex01,ex02]
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from autograder.core.manifest import BY_ID, ROOT
from autograder.exports import export_nbgrader, export_otter
from autograder.exports import notebooks as nb


def _solution(ex_id: str) -> str:
    return (ROOT / "solutions" / BY_ID[ex_id].filename).read_text(encoding="utf-8")


def time_native(notebooks: dict[str, Path], work: Path) -> float:
    folder = work / "native"
    folder.mkdir()
    for ex_id, path in notebooks.items():
        shutil.copyfile(path, folder / f"{BY_ID[ex_id].module}.ipynb")
    start = time.perf_counter()
    subprocess.run(
        [sys.executable, "-m", "autograder", "grade", str(folder), "--out", str(work / "native.json")],
        check=True,
        capture_output=True,
        timeout=1800,
        cwd=ROOT,
    )
    return time.perf_counter() - start


def bench(ex_ids: list[str], work: Path) -> dict[str, float]:
    timings: dict[str, float] = {}
    # Otter: assign (set-up), then one run per exercise.
    masters = work / "otter-masters"
    export_otter.export(masters, ex_ids, run_tests=False)
    start = time.perf_counter()
    built = {
        e: export_otter.assign(masters / BY_ID[e].module / f"{BY_ID[e].module}.ipynb", work / "otter-dist" / e)
        for e in ex_ids
    }
    timings["otter assign (set-up)"] = time.perf_counter() - start
    otter_subs = {
        e: nb.write_notebook(
            nb.fill_exercise_cell(json.loads(built[e][1].read_text(encoding="utf-8")), BY_ID[e], _solution(e)),
            work / "otter-sub" / f"{BY_ID[e].module}.ipynb",
        )
        for e in ex_ids
    }
    start = time.perf_counter()
    for e in ex_ids:
        export_otter.run(built[e][0], otter_subs[e], work / "otter-out" / e, timeout_s=60 + 3 * BY_ID[e].timeout_s)
    timings["otter run"] = time.perf_counter() - start
    # nbgrader: generate (set-up), then one autograde call.
    course = work / "course"
    export_nbgrader.export(course, ex_ids=ex_ids)
    start = time.perf_counter()
    export_nbgrader.run_nbgrader(course, ["generate_assignment", "a2", "--force"], timeout_s=600)
    timings["nbgrader generate_assignment (set-up)"] = time.perf_counter() - start
    nbg_subs = {}
    for e in ex_ids:
        module = BY_ID[e].module
        release = json.loads((course / "release" / "a2" / f"{module}.ipynb").read_text(encoding="utf-8"))
        nbg_subs[e] = nb.write_notebook(
            nb.fill_exercise_cell(release, BY_ID[e], _solution(e)),
            course / "submitted" / "solutions" / "a2" / f"{module}.ipynb",
        )
    start = time.perf_counter()
    export_nbgrader.run_nbgrader(course, ["autograde", "a2", "--create"], timeout_s=1800)
    timings["nbgrader autograde"] = time.perf_counter() - start
    timings["native grade"] = time_native(nbg_subs, work)
    return timings


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--exercises", help="comma-separated exercise ids (default: every exportable one)")
    args = parser.parse_args(argv)
    ex_ids = args.exercises.split(",") if args.exercises else [ex.id for ex in nb.gradable_exercises()]
    if not ex_ids:
        print("no exercise has hidden cases with stored expected values yet", file=sys.stderr)
        return 1
    with tempfile.TemporaryDirectory() as tmp:
        timings = bench(ex_ids, Path(tmp))
    native = timings["native grade"]
    print(f"grading the answer key of {len(ex_ids)} exercises ({', '.join(ex_ids)}), one run each:")
    print(f"{'grader':<40} {'wall s':>8} {'x native':>9}")
    for name in ("native grade", "otter run", "nbgrader autograde"):
        print(f"{name:<40} {timings[name]:>8.1f} {timings[name] / native:>9.2f}")
    for name in ("otter assign (set-up)", "nbgrader generate_assignment (set-up)"):
        print(f"{name:<40} {timings[name]:>8.1f} {'':>9}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
