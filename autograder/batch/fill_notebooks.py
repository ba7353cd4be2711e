"""Folder of .py submissions into filled notebooks for the nbgrader and Otter routes: `fill-notebooks`.

    python -m autograder fill-notebooks SUBMISSIONS --nbgrader COURSE [--assignment a2]
    python -m autograder fill-notebooks SUBMISSIONS --otter MASTERS --out DIR

SUBMISSIONS is what grade-all reads (a folder of student folders or zips, or Gradescope's export zip;
`autograder.batch.submissions.discover`, the same student keys). Each student's exercise files are found
as the grader finds them (`autograder.runtime.intake.locate`: near-miss names, zips; a notebook handed in
instead is read through its exercise cell) and read as text: the code is never imported or run here.
Each exercise's code goes into the exercise cell (the cell tagged `a2-exercise`) of that exercise's
released notebook (`autograder.exports.notebooks.fill_exercise_cell`), which is written where the
route's grader looks for it:

- `--nbgrader COURSE` (the course `export-nbgrader` wrote, after `nbgrader generate_assignment`): from
  COURSE/release/<assignment>/exNN_<name>.ipynb to COURSE/submitted/<student>/<assignment>/exNN_<name>.ipynb;
  then `nbgrader autograde <assignment>` grades them.
- `--otter MASTERS --out DIR` (the masters `export-otter` wrote; each is `otter assign`ed into
  MASTERS/dist/ first when it has not been, as `otter-grade` does): from
  MASTERS/dist/<exNN_name>/student/<exNN_name>.ipynb to DIR/<student>/<exNN_name>.ipynb; then
  `python -m autograder otter-grade MASTERS DIR` grades them.

A student's folder name is their grade-all output folder name (`Submission.out_folder`: printable, no
separators). An exercise a student did not hand in gets no notebook (both routes score it 0, "missing");
what was written, missing and refused is printed per student.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from autograder.batch.submissions import discover
from autograder.core.manifest import EXERCISES, Exercise
from autograder.core.safetext import clean_text, one_line, terminal_text
from autograder.exports import notebooks as nb
from autograder.runtime import intake

DEFAULT_ASSIGNMENT = "a2"  # as autograder.exports.export_nbgrader


class FillError(ValueError):
    """Bad input (no released notebook, a folder that is not a course): the message says what to do."""


@dataclass
class Filled:
    student: str
    folder: str
    written: list[Path] = field(default_factory=list)
    missing: list[str] = field(default_factory=list)  # exercises with no file (or an unreadable one)


def nbgrader_release(course: Path, assignment: str) -> dict[str, Path]:
    """{exercise id: released notebook} of an nbgrader course (after `nbgrader generate_assignment`)."""
    release = course / "release" / assignment
    found = {ex.id: release / f"{ex.module}.ipynb" for ex in EXERCISES if (release / f"{ex.module}.ipynb").is_file()}
    if not found:
        raise FillError(
            f"--nbgrader {course}: no released notebook in {release}; run `python -m autograder export-nbgrader "
            f"{course}` and `nbgrader generate_assignment {assignment}` in it first"
        )
    return found


def otter_release(masters: Path, assign: Callable[[Path], dict[str, Path]] | None = None) -> dict[str, Path]:
    """{exercise id: Otter student notebook}, assigning the masters that have not been (`otter-grade`'s way)."""
    if assign is None:
        from autograder.batch.otter_grade import assigned

        assign = assigned
    try:
        assign(masters)
    except FileNotFoundError as exc:
        raise FillError(f"--otter {masters}: {exc}") from None
    found = {}
    for ex in EXERCISES:
        student = masters / "dist" / ex.module / "student" / f"{ex.module}.ipynb"
        if student.is_file():
            found[ex.id] = student
    if not found:
        raise FillError(f"--otter {masters}: no student notebook under {masters / 'dist'} (otter assign wrote none)")
    return found


def fill(
    submissions: Path, release: dict[str, Path], target: Callable[[str, Exercise], Path]
) -> tuple[list[Filled], list[str]]:
    """Fill `release`'s notebooks with each student's code and write them to `target(folder, exercise)`;
    returns what was done per student and the entries of SUBMISSIONS refused (with why)."""
    exercises = [ex for ex in EXERCISES if ex.id in release]
    notebooks: dict[str, dict[str, Any]] = {}
    for ex in exercises:
        try:
            notebooks[ex.id] = json.loads(release[ex.id].read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            raise FillError(f"{release[ex.id]}: not a readable notebook ({clean_text(exc)})") from None
    done: list[Filled] = []
    with tempfile.TemporaryDirectory(prefix="a2-fill-") as scratch:
        subs, refused = discover(submissions, Path(scratch) / "export")
        for n, sub in enumerate(subs):
            found, _ = intake.locate(sub.path, exercises, Path(scratch) / f"s{n}", follow_link=False)
            item = Filled(sub.student, sub.out_folder)
            for ex in exercises:
                where = found.get(ex.id)
                if where is None or where.path is None:
                    item.missing.append(ex.id)
                    continue
                code = where.path.read_bytes().decode("utf-8", errors="replace")
                filled = nb.fill_exercise_cell(notebooks[ex.id], ex, clean_text(code))
                item.written.append(nb.write_notebook(filled, target(sub.out_folder, ex)))
            done.append(item)
    return done, [f"{one_line(r.entry)}: {r.reason}" for r in refused]


def main(argv: Sequence[str]) -> int:
    parser = argparse.ArgumentParser(prog="python -m autograder fill-notebooks", description=__doc__.splitlines()[0])
    parser.add_argument("submissions", type=Path, help="the folder (or Gradescope export zip) grade-all reads")
    route = parser.add_mutually_exclusive_group(required=True)
    route.add_argument("--nbgrader", type=Path, metavar="COURSE", help="the nbgrader course (export-nbgrader)")
    route.add_argument("--otter", type=Path, metavar="MASTERS", help="the Otter masters (export-otter)")
    parser.add_argument("--assignment", default=DEFAULT_ASSIGNMENT, help="nbgrader: the assignment's name (a2)")
    parser.add_argument("--out", type=Path, help="otter: where the students' notebooks go (otter-grade's input)")
    args = parser.parse_args(list(argv))
    if not args.submissions.exists():
        print(f"fill-notebooks: {args.submissions} does not exist", file=sys.stderr)
        return 2
    try:
        if args.nbgrader is not None:
            release = nbgrader_release(args.nbgrader, args.assignment)
            course, assignment = args.nbgrader, args.assignment

            def target(folder: str, ex: Exercise) -> Path:
                return course / "submitted" / folder / assignment / f"{ex.module}.ipynb"

        else:
            if args.out is None:
                parser.error("--otter needs --out DIR (the folder otter-grade then reads)")
            release = otter_release(args.otter)
            out = args.out

            def target(folder: str, ex: Exercise) -> Path:
                return out / folder / f"{ex.module}.ipynb"

        done, refused = fill(args.submissions, release, target)
    except (FillError, ValueError, FileNotFoundError, RuntimeError) as exc:
        print(f"fill-notebooks: {terminal_text(exc)}", file=sys.stderr)
        return 2
    for line in refused:
        print(f"fill-notebooks: refused {terminal_text(line)}", file=sys.stderr)
    for item in done:
        missing = f"; missing {', '.join(item.missing)}" if item.missing else ""
        print(f"{terminal_text(item.student)}: {len(item.written)} notebooks{missing}")
    print(f"filled {sum(len(d.written) for d in done)} notebooks for {len(done)} students")
    return 0
