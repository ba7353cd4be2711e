"""`python -m autograder otter-grade MASTERS SUBMISSIONS --csv grades.csv`: the Otter route in one command.

Otter grades one assignment per exercise (`autograder.exports.export_otter`: one master notebook per
exercise, since each exercise has its own namespace). This command does the rest of the route for a
class: `otter assign` of every master under MASTERS (once, into MASTERS/dist/<exercise>/, skipped when
its autograder zip is there already), then, per student folder under SUBMISSIONS holding
`exNN_<name>.ipynb` files, `otter run` of each notebook against its exercise's zip (bounded by a
timeout, as Otter has none), and the per-exercise points totalled per student. A missing notebook
scores 0 ("missing"); an `otter run` that fails or times out scores 0 with its reason in the table
(the whole error in OUT/<student>/<exercise>/otter-error.log).
Several runs go at once (`--workers`). Output: a table on the terminal and, with --csv, one row per
student (student, the reported points per exercise, total, the other route's total, the flags: `crosscheck`),
student names escaped for the terminal and CSV.

Each `otter run` runs in the grader's sandbox (`export_otter.run`: a uid of its own, nothing of the machine
but the interpreter and the packages, its processes ended and its time and memory capped; it needs the
bubblewrap rung, whose network namespace gives Otter's log server and kernel a loopback of their own,
and refuses elsewhere). What the sandbox cannot change is Otter's own model: its checks run inside the
student's kernel, beside the student's code, which can read the hidden tests shipped in the autograder
zip, patch what checks them and rewrite the results Otter leaves (RESIDUAL_RISK, printed with every run).
So the same notebooks are also graded by the native grader (`grade-all`: the notebook reader, the sealed
two-phase batch, the checks outside the student's process; into OUT/_native/), and the points reported
are the native ones, Otter's beside them and every exercise where the two differ flagged for its student
(`autograder.batch.crosscheck`). `--tool-points` reports Otter's points instead (students you trust);
`--native` skips Otter.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from autograder.batch import crosscheck
from autograder.core.manifest import EXERCISES, Exercise
from autograder.exports import export_otter
from autograder.runtime.sandbox import ladder

RUN_TIMEOUT_S = 60.0  # kernel start-up, added to three times the exercise's own limit
NATIVE_OUT = "_native"  # grade-all's folder in --out: "_" names are never a student's (`_students`)

RESIDUAL_RISK = (
    "otter-grade: Otter runs its checks inside the student's kernel: the student's code can read the hidden "
    "tests in the autograder zip, patch the checks and rewrite Otter's results, so Otter's points are only as "
    "sound as the student is honest. Each run is sandboxed (nothing of this machine writable, no network, no "
    "process left, time and memory capped), which protects the machine, not Otter's grade. Reported: the native "
    "grader's points on the same notebooks (its checks run outside the student's process), Otter's beside them, "
    "every difference flagged. --native: the native grader only; --tool-points: Otter's points (students you "
    "trust)."
)


def assigned(masters: Path, assign: Callable[[Path, Path], tuple[Path, Path]] = export_otter.assign) -> dict[str, Path]:
    """{exercise id: its Otter autograder zip}, assigning the masters that have none yet."""
    zips: dict[str, Path] = {}
    for ex in EXERCISES:
        master = masters / ex.module / f"{ex.module}.ipynb"
        if not master.is_file():
            continue
        out = masters / "dist" / ex.module
        found = sorted((out / "autograder").glob("*-autograder_*.zip"))
        zips[ex.id] = found[-1] if found else assign(master, out)[0]
    if not zips:
        raise FileNotFoundError(f"{masters}: no master notebooks (write them with `python -m autograder export-otter`)")
    return zips


def _students(submissions: Path) -> list[Path]:
    return sorted(
        p for p in submissions.iterdir() if p.is_dir() and not p.is_symlink() and not p.name.startswith((".", "_"))
    )


def grade_class(
    masters: Path,
    submissions: Path,
    out: Path,
    workers: int = 2,
    run: Callable[[Path, Path, Path, float, int], dict[str, float]] = export_otter.run,
    assign: Callable[[Path, Path], tuple[Path, Path]] = export_otter.assign,
) -> dict[str, dict[str, tuple[float, str]]]:
    """{student: {exercise id: (points, "" or why 0)}} for every student folder and assigned exercise."""
    zips = assigned(masters, assign)
    exercises: list[Exercise] = [ex for ex in EXERCISES if ex.id in zips]
    jobs = [(student, ex) for student in _students(submissions) for ex in exercises]

    def one(job: tuple[Path, Exercise]) -> tuple[float, str]:
        student, ex = job
        notebook = student / f"{ex.module}.ipynb"
        if notebook.is_symlink():  # as the native grader's intake: a link could name any file of this machine
            return 0.0, "a link, not a file: not followed"
        if not notebook.is_file():
            return 0.0, "missing"
        where = out / student.name / ex.id
        try:
            points = run(zips[ex.id], notebook, where, RUN_TIMEOUT_S + 3 * ex.timeout_s, ex.memory_mib)
        except ladder.Refused:
            raise  # no sandbox for Otter here: every run would refuse, so the command does, once
        except Exception as exc:  # noqa: BLE001 - one student's failed run costs that exercise only
            where.mkdir(parents=True, exist_ok=True)
            (where / "otter-error.log").write_text(f"{type(exc).__name__}: {exc}\n", encoding="utf-8")
            last = (str(exc).strip().splitlines() or [""])[-1][:160]
            return 0.0, f"otter run failed: {type(exc).__name__}: {last} (log: {where / 'otter-error.log'})"
        return float(points.get(ex.id, 0.0)), ""

    with ThreadPoolExecutor(max_workers=max(1, workers)) as pool:
        results = list(pool.map(one, jobs))
    table: dict[str, dict[str, tuple[float, str]]] = {}
    for (student, ex), result in zip(jobs, results, strict=True):
        table.setdefault(student.name, {})[ex.id] = result
    return table


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="python -m autograder otter-grade", description=__doc__.splitlines()[0])
    parser.add_argument("masters", type=Path, help="the folder `export-otter` wrote (assigned into its dist/)")
    parser.add_argument("submissions", type=Path, help="one folder per student holding exNN_<name>.ipynb files")
    parser.add_argument("--out", type=Path, default=Path("out/otter"), help="where `otter run` writes (per student)")
    crosscheck.add_route_options(parser, "Otter")
    args = parser.parse_args(argv)
    if not args.submissions.is_dir():
        parser.error(f"{args.submissions}: not a folder")

    def native(tool: crosscheck.Table | None) -> crosscheck.Table:
        if tool is None:
            ids = [ex.id for ex in EXERCISES if (args.masters / ex.module / f"{ex.module}.ipynb").is_file()]
        else:
            ids = sorted({e for row in tool.values() for e in row})
        return crosscheck.native_table(
            args.submissions,
            args.out / NATIVE_OUT,
            args.workers,
            ids or None,
            [s.name for s in _students(args.submissions)],
        )

    return crosscheck.run_route(
        args,
        "otter-grade",
        "otter",
        RESIDUAL_RISK,
        lambda: grade_class(args.masters, args.submissions, args.out, args.workers),
        native,
    )
