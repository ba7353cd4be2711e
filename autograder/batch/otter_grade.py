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
student (student, one column per exercise, total), student names escaped for the terminal and CSV.

Each `otter run` runs in the grader's sandbox (`export_otter.run`: a uid of its own, nothing of the machine
but the interpreter and the packages, its processes ended and its time and memory capped; it needs the
bubblewrap rung, whose network namespace gives Otter's log server and kernel a loopback of their own,
and refuses elsewhere). What the sandbox cannot change is Otter's own model: its checks run inside the
student's kernel, beside the student's code, which can read the hidden tests shipped in the autograder
zip and patch what checks them (RESIDUAL_RISK, printed with every run). `--native` grades the same
notebooks through the native grader instead (`grade-all`: the notebook reader, the sealed two-phase
batch, the checks outside the student's process), with the same points.
"""

from __future__ import annotations

import argparse
import csv
import sys
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from autograder.core.manifest import EXERCISES, Exercise
from autograder.core.safetext import csv_cell, terminal_text
from autograder.exports import export_otter

RUN_TIMEOUT_S = 60.0  # kernel start-up, added to three times the exercise's own limit

RESIDUAL_RISK = (
    "otter-grade: Otter runs its checks inside the student's kernel: the student's code can read the hidden "
    "tests in the autograder zip and patch the checks, so a score here is only as sound as the student is "
    "honest. Each run is sandboxed (no file of this machine, no network, no process left, time and memory "
    "capped), which protects the machine, not the grade. For grades that hold against hostile code: --native "
    "(the same notebooks through the native grader, the same points)."
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
    return sorted(p for p in submissions.iterdir() if p.is_dir() and not p.name.startswith((".", "_")))


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
        if not notebook.is_file():
            return 0.0, "missing"
        where = out / student.name / ex.id
        try:
            points = run(zips[ex.id], notebook, where, RUN_TIMEOUT_S + 3 * ex.timeout_s, ex.memory_mib)
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


def native_table(submissions: Path, out: Path, workers: int = 2) -> dict[str, dict[str, tuple[float, str]]]:
    """The sound route for the same submissions: `grade-all` (each student folder's exNN_<name>.ipynb read by
    the notebook reader, graded in sealed sandboxed children) into out/native; the table `grade_class`
    gives, from its gradebook."""
    from autograder.batch import bulk

    report = bulk.grade_all(submissions, out / "native", workers, progress=False)
    table: dict[str, dict[str, tuple[float, str]]] = {}
    for record in report.records:
        why = "" if record.status == "graded" else record.status
        table[record.student] = {ex.id: (record.exercises.get(ex.id, (0.0, 0.0))[0], why) for ex in EXERCISES}
    return table


def write_csv(table: dict[str, dict[str, tuple[float, str]]], path: Path) -> None:
    ids = [ex.id for ex in EXERCISES if any(ex.id in row for row in table.values())]
    with path.open("w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle)
        writer.writerow(["student", *ids, "total"])
        for student, row in sorted(table.items()):
            points = [row.get(e, (0.0, "missing"))[0] for e in ids]
            writer.writerow([csv_cell(student), *(f"{p:.2f}" for p in points), f"{sum(points):.2f}"])


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="python -m autograder otter-grade", description=__doc__.splitlines()[0])
    parser.add_argument("masters", type=Path, help="the folder `export-otter` wrote (assigned into its dist/)")
    parser.add_argument("submissions", type=Path, help="one folder per student holding exNN_<name>.ipynb files")
    parser.add_argument("--out", type=Path, default=Path("out/otter"), help="where `otter run` writes (per student)")
    parser.add_argument("--csv", type=Path, help="write one row per student: points per exercise and total")
    parser.add_argument("--workers", type=int, default=2, help="otter runs at once")
    parser.add_argument(
        "--native",
        action="store_true",
        help="grade the notebooks through the native grader (sandboxed, checks outside the student's process)",
    )
    args = parser.parse_args(argv)
    if not args.submissions.is_dir():
        parser.error(f"{args.submissions}: not a folder")
    try:
        if args.native:
            table = native_table(args.submissions, args.out, args.workers)
        else:
            print(RESIDUAL_RISK, file=sys.stderr)
            table = grade_class(args.masters, args.submissions, args.out, args.workers)
    except (FileNotFoundError, RuntimeError) as exc:
        print(f"otter-grade: {terminal_text(str(exc))}", file=sys.stderr)
        return 1
    for student, row in sorted(table.items()):
        cells = [f"{e} {p:.2f}" + (f" ({terminal_text(why)})" if why else "") for e, (p, why) in row.items()]
        print(f"{terminal_text(student)}: {sum(p for p, _ in row.values()):.2f}  " + ", ".join(cells))
    if args.csv:
        args.csv.parent.mkdir(parents=True, exist_ok=True)
        write_csv(table, args.csv)
        print(f"wrote {args.csv}")
    return 0
