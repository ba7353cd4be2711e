"""`python -m autograder nbgrader-autograde COURSE [--assignment a2] [--csv F]`: the nbgrader route in one
command, each student's notebooks run in the grader's sandbox.

`nbgrader autograde` in the course folder runs every student's notebooks as the instructor, with the course
(its gradebook, the source notebooks holding the hidden tests, the other students' folders) writable
beside them. This command runs, for each student folder COURSE/submitted/<student>/<assignment>/,
`nbgrader autograde <assignment> --student <student> --create` inside the sandbox
(`autograder.runtime.sandbox.command.run_command`: the machine's rung, a uid of its own where the grader is
root, nothing of the machine writable, every process ended, time and memory capped) on a COPY of what
autograde reads: nbgrader_config.py, the gradebook with no student in it (`studentless_gradebook`: every
student's name, e-mail, submissions and grades deleted, the file vacuumed; autograde --create adds this one), source/<assignment>/,
release/<assignment>/ and that student's submitted folder. The copy's course root and database are set on nbgrader's command line
(whatever nbgrader_config.py says). Out of the sandbox come that student's autograded notebooks and the
gradebook copy, into OUT/<student>/course/ (autograded/<student>/<assignment>/*.ipynb, gradebook.db), with
nbgrader's log in OUT/<student>/nbgrader.log; the student's points are read from that copy (nbgrader's
Gradebook API: `export_nbgrader.autograded_points`), in this process, so only while it has the schema it was
given and at most GRADEBOOK_MAX_BYTES (`returned_points`: the student's code may have rewritten it, and a view
of theirs would run here). The instructor's gradebook.db, source/ and the other
students' folders are never written: nbgrader's own gradebook learns nothing (run `nbgrader autograde` there
yourself for students you trust, or import the CSV).

nbgrader runs its grade cells inside the student's kernel, after the student's code (RESIDUAL_RISK, printed
with every run). So the same notebooks are also graded by the native grader (`grade-all` on a copy of the
submitted notebooks, OUT/_native_input/, into OUT/_native/), and the points reported are the native ones;
nbgrader's stand beside them, every exercise where they differ flagged (`autograder.batch.crosscheck`).
`--tool-points` reports nbgrader's points instead (students you trust); `--native` skips nbgrader.

Needs the bubblewrap rung: the kernel and nbgrader talk over TCP (ZeroMQ; ipykernel binds 127.0.0.1 even on
IPC transport), which only bubblewrap's network namespace confines to the run's own loopback; elsewhere the
command refuses and says to use --native.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import shutil
import stat
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from autograder.batch import crosscheck
from autograder.core.manifest import EXERCISES, Exercise
from autograder.exports import export_nbgrader, export_otter
from autograder.runtime.sandbox import command, ladder
from autograder.runtime.sandbox.users import remove_tree

RUN_TIMEOUT_S = 120.0  # nbgrader's start-up, the gradebook, one kernel per notebook; plus 3x each exercise's limit
NBGRADER_TOOLS = ("nbgrader", "ipykernel")  # what autograde imports and the kernel it starts, with their requirements
GRADEBOOK_MAX_BYTES = 64 * 2**20  # a returned gradebook copy larger than this is not read
NATIVE_OUT, NATIVE_INPUT = "_native", "_native_input"  # "_" folders: never a student's (`students`)

RESIDUAL_RISK = (
    "nbgrader-autograde: nbgrader runs its grade cells inside the student's kernel, after the student's code: "
    "that code can read the hidden tests (the source notebooks and the gradebook it runs beside: nbgrader's own "
    "model, jupyter/nbgrader#1386), patch the checks and rewrite the gradebook copy, so nbgrader's points are "
    "only as sound as the student is honest. Each run is sandboxed (a copy of the course; nothing of this "
    "machine writable, no network, no process left, time and memory capped), which protects the machine and "
    "the course, not nbgrader's grade. Reported: the native grader's points on the same notebooks (its checks "
    "run outside the student's process), nbgrader's beside them, every difference flagged. --native: the native "
    "grader only; --tool-points: nbgrader's points (students you trust)."
)

# Runs inside the sandbox (the venv's interpreter, the standard library and NBGRADER_TOOLS only; `argv` fills
# {code} and {work}, so no brace here): copy the course into the work folder, autograde the one student,
# then drop the copied inputs so that what is collected is autograded/, the gradebook copy and the logs.
PRELUDE = """
import os, shutil, subprocess, sys
code, work, assignment, student = sys.argv[1:5]
course = os.path.join(work, "course")
shutil.copytree(os.path.join(code, "course"), course)
status = subprocess.call(
    [sys.executable, "-m", "nbgrader", "autograde", assignment, "--student", student, "--create",
     "--CourseDirectory.root=" + course, "--CourseDirectory.db_url=sqlite:///" + course + "/gradebook.db"],
    cwd=course,
)
for name in ("source", "release", "submitted"):
    shutil.rmtree(os.path.join(course, name), ignore_errors=True)
shutil.rmtree(os.environ["IPYTHONDIR"], ignore_errors=True)
print("nbgrader autograde exited with status", status, flush=True)
sys.exit(status)
"""
assert "{" not in PRELUDE and "}" not in PRELUDE, "run_command formats argv: no brace in the prelude"


def students(course: Path, assignment: str) -> list[str]:
    """The student ids with a submitted/<id>/<assignment>/ folder (names starting with "." or "_" are not students)."""
    submitted = course / "submitted"
    if not submitted.is_dir():
        return []
    return sorted(
        p.name
        for p in submitted.iterdir()
        if p.is_dir() and not p.name.startswith((".", "_")) and (p / assignment).is_dir()
    )


def course_exercises(course: Path, assignment: str) -> list[Exercise]:
    """The manifest's exercises whose source notebook the course's assignment holds."""
    source = course / "source" / assignment
    found = [ex for ex in EXERCISES if (source / f"{ex.module}.ipynb").is_file()]
    if not found:
        raise FileNotFoundError(
            f"{source}: no exercise notebook (write the course with `python -m autograder export-nbgrader`)"
        )
    if not (course / "gradebook.db").is_file():
        raise FileNotFoundError(
            f"{course / 'gradebook.db'}: missing; run `nbgrader generate_assignment {assignment}` first"
        )
    return found


def _files(course: Path, assignment: str, student: str, gradebook: Path) -> dict[str, Path]:
    """What the sandbox gets (as course/<path>): `gradebook` (a copy of `studentless_gradebook`), the instructor's other
    files, and the student's regular files only (a link in a submitted folder is not followed: it could point
    anywhere on this machine)."""
    files = {"course/gradebook.db": gradebook}
    if (course / "nbgrader_config.py").is_file():
        files["course/nbgrader_config.py"] = course / "nbgrader_config.py"
    for folder in (f"source/{assignment}", f"release/{assignment}"):
        for path in sorted((course / folder).rglob("*")) if (course / folder).is_dir() else []:
            if path.is_file():
                files[f"course/{path.relative_to(course).as_posix()}"] = path
    for folder, _, names in os.walk(course / "submitted" / student / assignment):  # links to folders not followed
        for name in sorted(names):
            path = Path(folder, name)
            if stat.S_ISREG(path.lstat().st_mode):
                files[f"course/{path.relative_to(course).as_posix()}"] = path
    return files


def studentless_gradebook(course: Path, dest: Path) -> Path:
    """A copy of the course's gradebook at `dest` with no student in it: every student (their names, e-mails,
    submissions and grades: `Gradebook.remove_student`) deleted and the file vacuumed, so no freed page still
    holds them. Made once per command; each student's run gets a copy of it, to which `nbgrader autograde
    --create` adds that student alone."""
    import sqlite3

    from nbgrader.api import Gradebook

    shutil.copyfile(course / "gradebook.db", dest)
    with Gradebook(f"sqlite:///{dest}") as gradebook:
        for student in [s.id for s in gradebook.students]:
            gradebook.remove_student(student)
    with contextlib.closing(sqlite3.connect(dest)) as db:
        db.execute("VACUUM")
    return dest


def schema(database: Path) -> list[tuple[str, ...]]:
    """Every table, index, view and trigger of an SQLite file, with its SQL (read only)."""
    import sqlite3

    with contextlib.closing(sqlite3.connect(f"file:{database}?mode=ro", uri=True)) as db:
        return [tuple(map(str, row)) for row in db.execute("SELECT type, name, tbl_name, sql FROM sqlite_master")]


def returned_points(
    copy: Path, given: list[tuple[str, ...]], assignment: str, staging: Path
) -> dict[str, dict[str, float]] | None:
    """The student's points from the gradebook copy their run returned, or None (the copy is absent). The copy
    was the student's to rewrite, and it is read in the instructor's process: it is read only if it is at most
    GRADEBOOK_MAX_BYTES and has exactly the schema it was given (no view, trigger, table or index added or
    changed: no query of the student's runs here), from a private copy of its main file (no journal of theirs).
    ValueError says which rule it broke."""
    if not copy.is_file() or copy.is_symlink():
        return None
    size = copy.stat().st_size
    if size > GRADEBOOK_MAX_BYTES:
        raise ValueError(f"it has {size} bytes, more than the {GRADEBOOK_MAX_BYTES} a gradebook copy may have")
    mine = staging / "returned.db"
    shutil.copyfile(copy, mine)
    if sorted(schema(mine)) != sorted(given):
        raise ValueError("its schema is not the one it was given (a table, view, trigger or index was changed)")
    return export_nbgrader.autograded_points(staging, assignment, database=mine)


def autograde_student(
    course: Path, assignment: str, student: str, out: Path, exercises: list[Exercise], template: Path
) -> dict[str, tuple[float, str]]:
    """`nbgrader autograde` of one student in the sandbox (module docstring), beside a copy of `template`
    (`studentless_gradebook`): {exercise id: (points, why 0)}."""
    where = out / student
    remove_tree(where)  # nothing of an earlier run mixes with this one
    where.mkdir(parents=True)
    staging = Path(tempfile.mkdtemp(prefix="a2nbgrader-"))
    points: dict[str, float] | None = None
    output = ""
    try:
        given = staging / "gradebook.db"
        shutil.copyfile(template, given)
        given_schema = schema(given)
        run = _run_student(course, assignment, student, where, exercises, given)
        output, ended, notes, wall_s = run.output, run.ended, run.notes, run.wall_s
        try:
            returned = returned_points(where / "course" / "gradebook.db", given_schema, assignment, staging)
            points = None if returned is None else returned.get(student)
        except Exception as exc:  # noqa: BLE001 - the copy is the student's to break: a broken one costs this student
            output = f"{output}\nthe gradebook copy was not read: {type(exc).__name__}: {exc}"
    except ladder.Refused:
        raise  # no sandbox for nbgrader here: every run would refuse, so the command does, once
    except Exception as exc:  # noqa: BLE001 - a failure around one student's run costs that student only
        output, ended, notes, wall_s = f"{type(exc).__name__}: {exc}", "error", [], 0.0
    finally:
        remove_tree(staging)
    log = where / "nbgrader.log"
    log.write_text(f"[sandbox] {'; '.join(notes)}\n[ended] {ended} after {wall_s:.1f} s\n{output}")
    submitted = course / "submitted" / student / assignment
    autograded = where / "course" / "autograded" / student / assignment
    row: dict[str, tuple[float, str]] = {}
    for ex in exercises:
        if not (submitted / f"{ex.module}.ipynb").is_file():
            row[ex.id] = (0.0, "missing")
        elif points is None or ex.id not in points or not (autograded / f"{ex.module}.ipynb").is_file():
            last = ([ln for ln in output.strip().splitlines() if ln.strip()] or [""])[-1][:160]
            row[ex.id] = (0.0, f"nbgrader autograde failed ({ended}): {last} (log: {log})")
        else:
            row[ex.id] = (points[ex.id], "")
    return row


def _run_student(
    course: Path, assignment: str, student: str, where: Path, exercises: list[Exercise], gradebook: Path
) -> command.CommandRun:
    venv_bin = str(Path(sys.executable).parent)
    return command.run_command(
        ["{python}", "-c", PRELUDE, "{code}", "{work}", assignment, student],
        _files(course, assignment, student, gradebook),
        collect=where,
        timeout_s=RUN_TIMEOUT_S + 3 * sum(ex.timeout_s for ex in exercises),
        memory_mib=max(ex.memory_mib for ex in exercises) + export_otter.TOOL_MEMORY_MIB,
        tools=NBGRADER_TOOLS,
        sockets="loopback",  # the kernel's ZeroMQ channels and ipykernel's IOPub pipe: TCP on the run's own loopback
        env={
            # nbgrader runs `alembic` as a program: the venv's bin/ first
            "PATH": f"{venv_bin}:/usr/local/bin:/usr/bin:/bin",
            "PYTHONPATH": "{code}/site",
            "JUPYTER_RUNTIME_DIR": "{work}/runtime",
            "IPYTHONDIR": "{work}/tmp/ipython",
        },
        work_dirs=("runtime",),
    )


def grade_course(course: Path, assignment: str, out: Path, workers: int = 2) -> crosscheck.Table:
    """{student: {exercise id: (points, why)}}: every student's sandboxed autograde (module docstring)."""
    exercises = course_exercises(course, assignment)
    names = students(course, assignment)
    with tempfile.TemporaryDirectory(prefix="a2nbgrader-") as folder:
        template = studentless_gradebook(course, Path(folder) / "gradebook.db")
        with ThreadPoolExecutor(max_workers=max(1, workers)) as pool:
            rows = list(pool.map(lambda s: autograde_student(course, assignment, s, out, exercises, template), names))
    return dict(zip(names, rows, strict=True))


def native_table(course: Path, assignment: str, out: Path, workers: int = 2) -> crosscheck.Table:
    """The same submitted notebooks through the native grader: copied into OUT/_native_input/<student>/ (the
    assignment's exercise notebooks only), graded by grade-all into OUT/_native/."""
    exercises = course_exercises(course, assignment)
    names = students(course, assignment)
    view = out / NATIVE_INPUT
    remove_tree(view)
    for student in names:
        (view / student).mkdir(parents=True)
        for ex in exercises:
            notebook = course / "submitted" / student / assignment / f"{ex.module}.ipynb"
            if notebook.is_file() and not notebook.is_symlink():
                shutil.copyfile(notebook, view / student / notebook.name)
    return crosscheck.native_table(view, out / NATIVE_OUT, workers, [ex.id for ex in exercises], names)


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m autograder nbgrader-autograde", description=__doc__.splitlines()[0]
    )
    parser.add_argument(
        "course", type=Path, help="the nbgrader course folder (export-nbgrader, generate_assignment done)"
    )
    parser.add_argument(
        "--assignment", default=export_nbgrader.DEFAULT_ASSIGNMENT, help="assignment name (default: a2)"
    )
    parser.add_argument("--out", type=Path, default=Path("out/nbgrader"), help="where each student's run is collected")
    crosscheck.add_route_options(parser, "nbgrader")
    args = parser.parse_args(argv)
    if not args.course.is_dir():
        parser.error(f"{args.course}: not a folder")

    def tool() -> crosscheck.Table:
        table = grade_course(args.course, args.assignment, args.out, args.workers)
        print(
            f"[sandbox] nbgrader ran on rung {ladder.current().name}; logs: {args.out}/<student>/nbgrader.log",
            file=sys.stderr,
        )
        return table

    return crosscheck.run_route(
        args,
        "nbgrader-autograde",
        "nbgrader",
        RESIDUAL_RISK,
        tool,
        lambda _tool: native_table(args.course, args.assignment, args.out, args.workers),
    )
