"""`python -m autograder export-nbgrader DIR`: write a complete nbgrader course for the exercises.

Layout written (one assignment, one notebook per exercise; the assignment name is `--assignment`):

    DIR/nbgrader_config.py
    DIR/source/<assignment>/exNN_<name>.ipynb

Each notebook holds, with nbgrader cell metadata (schema_version 3):
- a locked markdown cell with the exercise's title, lecture section, points and module docstring;
- the solution cell: the whole `solutions/exNN_<name>.py`, its `# BEGIN SOLUTION` / `# END SOLUTION`
  lines written as nbgrader's `### BEGIN SOLUTION` / `### END SOLUTION` (nbgrader replaces each region
  by a stub at the region's indentation). The cell is tagged `a2-exercise` like the package's own
  student notebooks, so `autograder.runtime.notebook_code.extract_code` also reads nbgrader submissions;
- one autograded grade cell per exercise function (`autograder.exports.notebooks.group_cell_code`): its public
  cases are visible to students; its hidden cases sit between `### BEGIN HIDDEN TESTS` /
  `### END HIDDEN TESTS` inside the same cell (so the students' copy has no empty hidden cell) and embed
  each case's inputs, the answer-key value stored in `autograder/expected/exNN.json` and the known
  mistakes' outputs. The cell scores with `hetero.grading.score_cases` (the native grader's judge, exact
  hundredths and live-function rule, a per-case time limit) and ends with the points earned, which
  nbgrader takes as partial credit; its test output goes to stdout (nbgrader scores a cell that writes
  to stderr 0).

Points are exact hundredths where they are written: each grade cell's `points` is its cases' centipoints
/ 100 rounded to 2 decimals, and each cell's score is `CellScore.points` (rounded the same way). nbgrader
itself adds these floats in SQL, so its totals carry float noise (`100.00000000000001` for the answer
key); `autograded_points` rounds what it reads, and the written nbgrader_config.py makes `nbgrader export`
use `autograder.exports.nbgrader_export.RoundedCsvExportPlugin`, whose grades.csv scores are rounded to
hundredths (`round_grades_csv`).

The grading kernel needs the `hetero` package (this repository's `pip install -e .`) and the kernel
named `python3`; nbgrader must find `alembic` on PATH (the venv's bin/).
"""

from __future__ import annotations

import argparse
import csv
import io
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from autograder.core.manifest import BY_ID, ROOT, Exercise
from autograder.exports import notebooks as nb
from autograder.runtime import notebook_code

DEFAULT_ASSIGNMENT = "a2"
COURSE_ID = "llmsys-a2-hetero"
BEGIN_HIDDEN = "### BEGIN HIDDEN TESTS"
END_HIDDEN = "### END HIDDEN TESTS"
CODE_STUB = "# TODO: implement this function (see its docstring)\nraise NotImplementedError()"
SCORE_COLUMNS = ("raw_score", "late_submission_penalty", "score", "max_score")  # of nbgrader export's grades.csv
POINTS_DECIMALS = 2


def nbgrader_meta(
    grade_id: str, *, solution: bool = False, grade: bool = False, locked: bool = False, points: float | None = None
) -> dict[str, Any]:
    meta: dict[str, Any] = {
        "grade": grade,
        "grade_id": grade_id,
        "locked": locked,
        "schema_version": 3,
        "solution": solution,
        "task": False,
    }
    if grade:
        meta["points"] = points
    return meta


def to_nbgrader_markers(solution_text: str) -> str:
    """`# BEGIN SOLUTION` / `# END SOLUTION` lines become `### BEGIN SOLUTION` / `### END SOLUTION`."""
    out = []
    for line in solution_text.splitlines():
        stripped = line.strip()
        if stripped in ("# BEGIN SOLUTION", "# END SOLUTION"):
            line = line[: len(line) - len(line.lstrip())] + "##" + stripped
        out.append(line)
    return "\n".join(out)


def source_notebook(src: nb.ExerciseSources) -> dict[str, Any]:
    """The nbgrader source (instructor) notebook of one exercise: one grade cell per exercise function."""
    ex = src.exercise
    cents = src.cents
    cells = [
        nb.markdown_cell(nb.intro_markdown(src), "intro", {"nbgrader": nbgrader_meta(f"{ex.id}-intro", locked=True)}),
        nb.code_cell(
            nb.exercise_cell_source(ex, to_nbgrader_markers(src.solution)),
            "exercise",
            {"tags": [notebook_code.EXERCISE_TAG], "nbgrader": nbgrader_meta(f"{ex.id}-code", solution=True)},
        ),
        nb.markdown_cell(
            "## Tests\n\nOne cell per function. Each runs that function's public cases and prints "
            "what was expected, in which unit, and the likely mistake; when grading, the same cell "
            f"also runs hidden cases. Each case has a time limit of {ex.case_timeout_s:g} s. A function's "
            "points count once it returns correct, different answers on the hidden inputs.",
            "tests",
            {"nbgrader": nbgrader_meta(f"{ex.id}-tests", locked=True)},
        ),
    ]
    for keys in nb.cell_groups(src):
        grade_id = nb.cell_id_for(f"{ex.id}-{keys[0]}")
        points = round(sum(cents[c.id] for key in keys for c in sum(nb.group_cases(src, key)[:2], [])) / 100, 2)
        cells.append(
            nb.code_cell(
                nb.group_cell_code(src, keys, BEGIN_HIDDEN, END_HIDDEN),
                grade_id,
                {"nbgrader": nbgrader_meta(grade_id, grade=True, locked=True, points=points)},
            )
        )
    return nb.new_notebook(cells, {"a2": {"exercise": ex.id, "module": ex.module}})


def config_text(exercises: list[Exercise], feedback_shows_hidden: bool = False) -> str:
    timeout = max(int(ex.timeout_s) for ex in exercises)
    feedback = (
        []
        if feedback_shows_hidden
        else [
            "# Feedback leaves the hidden tests out (their inputs and expected values): generate_feedback",
            "# renders the autograded notebooks, whose grade cells hold the hidden tests again.",
            "from nbconvert.preprocessors import CSSHTMLHeaderPreprocessor",
            "from nbgrader.preprocessors import ClearHiddenTests, GetGrades",
            "c.GenerateFeedback.preprocessors = [GetGrades, ClearHiddenTests, CSSHTMLHeaderPreprocessor]",
        ]
    )
    export_plugin = [
        "# `nbgrader export` writes scores rounded to hundredths (nbgrader's float sums show 100.00000000000001);",
        "# without the autograder package installed, nbgrader's own exporter is used.",
        "try:",
        "    from autograder.exports.nbgrader_export import RoundedCsvExportPlugin",
        "",
        "    c.ExportApp.plugin_class = RoundedCsvExportPlugin",
        "except ImportError:",
        "    pass",
    ]
    return "\n".join(
        [
            '"""nbgrader configuration of the A2 course (written by `python -m autograder export-nbgrader`)."""',
            "",
            *feedback,
            "c = get_config()  # noqa: F821 (provided by nbgrader when it reads this file)",
            *export_plugin,
            f"c.CourseDirectory.course_id = {COURSE_ID!r}",
            "# Each case stops after its exercise's case_timeout_s (inside the cell); a whole cell may run for as",
            "# long as the slowest exercise's whole time limit in the native grader.",
            f"c.Execute.timeout = {timeout}",
            f"c.ClearSolutions.code_stub = {{'python': {CODE_STUB!r}}}",
            "",
        ]
    )


def export(
    dest: Path,
    assignment: str = DEFAULT_ASSIGNMENT,
    ex_ids: list[str] | None = None,
    root: Path = ROOT,
    feedback_shows_hidden: bool = False,
) -> list[Path]:
    """Write the course into `dest`; returns the files written."""
    chosen = nb.chosen_exercises(ex_ids, root)
    dest.mkdir(parents=True, exist_ok=True)
    config = dest / "nbgrader_config.py"
    config.write_text(config_text(chosen, feedback_shows_hidden), encoding="utf-8")
    written = [config]
    for ex in chosen:
        src = nb.load_sources(ex.id, root)
        written.append(nb.write_notebook(source_notebook(src), dest / "source" / assignment / f"{ex.module}.ipynb"))
    return written


def tool_env() -> dict[str, str]:
    """The environment for nbgrader / Otter commands: this interpreter's bin/ first on PATH (alembic,
    jupyter, the python3 kernel of the venv)."""
    env = dict(os.environ)
    env["PATH"] = str(Path(sys.executable).parent) + os.pathsep + env.get("PATH", "")
    return env


def run_nbgrader(course: Path, args: list[str], timeout_s: float) -> subprocess.CompletedProcess:
    """Run `nbgrader <args>` in the course folder; raises RuntimeError with its output when it fails."""
    cmd = [str(Path(sys.executable).parent / "nbgrader"), *args]
    done = subprocess.run(cmd, cwd=course, env=tool_env(), capture_output=True, text=True, timeout=timeout_s)
    if done.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} failed ({done.returncode}):\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}")
    return done


def autograded_points(
    course: Path, assignment: str = DEFAULT_ASSIGNMENT, database: Path | None = None
) -> dict[str, dict[str, float]]:
    """{student: {exercise id: points}} from the course's gradebook (or `database`) after `nbgrader autograde`."""
    from nbgrader.api import Gradebook, MissingEntry

    by_module = {ex.module: ex.id for ex in BY_ID.values()}
    points: dict[str, dict[str, float]] = {}
    with Gradebook(f"sqlite:///{database or course / 'gradebook.db'}") as gradebook:
        for student in gradebook.students:
            try:
                submission = gradebook.find_submission(assignment, student.id)
            except MissingEntry:
                continue
            points[student.id] = {
                by_module[n.name]: round(float(n.score), POINTS_DECIMALS)
                for n in submission.notebooks
                if n.name in by_module
            }
    return points


def round_grades_csv(text: str) -> str:
    """nbgrader export's grades.csv with its score columns (SCORE_COLUMNS) rounded to hundredths:
    `100.00000000000001` -> `100.0`. Other cells, and cells that are not numbers, are kept as they are."""
    rows = list(csv.reader(io.StringIO(text)))
    if not rows:
        return text
    columns = [i for i, name in enumerate(rows[0]) if name in SCORE_COLUMNS]
    for row in rows[1:]:
        for i in columns:
            if i < len(row):
                try:
                    row[i] = str(round(float(row[i]), POINTS_DECIMALS) + 0.0)
                except ValueError:
                    pass
    out = io.StringIO()
    csv.writer(out, lineterminator="\n").writerows(rows)
    return out.getvalue()


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="python -m autograder export-nbgrader", description=__doc__.split("\n")[0])
    parser.add_argument("dest", type=Path, help="course folder to write (nbgrader_config.py, source/)")
    parser.add_argument("--assignment", default=DEFAULT_ASSIGNMENT, help="assignment name (default: a2)")
    parser.add_argument("--exercises", help="comma-separated exercise ids (default: every exportable one)")
    parser.add_argument(
        "--feedback-shows-hidden",
        action="store_true",
        help="let generate_feedback show the hidden tests (their inputs and expected values)",
    )
    args = parser.parse_args(argv)
    ex_ids = nb.exercise_ids_option(parser, args.exercises)
    try:
        written = export(args.dest, args.assignment, ex_ids, feedback_shows_hidden=args.feedback_shows_hidden)
    except ValueError as exc:
        print(f"export-nbgrader: {exc}", file=sys.stderr)
        return 1
    for path in written:
        print(path)
    return 0
