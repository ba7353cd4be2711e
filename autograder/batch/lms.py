"""Grades out of the gradebook and into a learning management system: Canvas or Gradescope CSV files.

`python -m autograder export-lms OUT_DIR --format canvas|gradescope --out FILE [--per-exercise]
[--map MAPFILE] [--assignment "A2 (12345)"] [--exercise-assignment 'ex01=A2 ex01 (12346)' ...]` reads OUT_DIR/gradebook.sqlite (what `grade-all --out
OUT_DIR` keeps; only read, never changed) and writes each student's latest grade:

- `canvas`: Canvas's gradebook import CSV. Header `Student,ID,SIS User ID,SIS Login ID,Section,<Assignment
  name> (<assignment id>)`, then a "Points Possible" row (first cell `    Points Possible`, the identity
  columns blank, then the maximum points), then one row per student. The assignment column is the
  total score; with --per-exercise, one column per exercise instead, each out of its manifest points.
  `--assignment "A2 (12345)"` gives the assignment's name and Canvas id (the number in its URL);
  `--exercise-assignment "ex01=A2 ex01 (12346)"` (once per exercise) names the existing Canvas
  assignment of one exercise's column, which is otherwise `<assignment name> ex01`. How Canvas's
  importer reads a column header (canvas-lms GradebookImporter): `Title (12345)` goes into assignment
  12345; a header without an id goes into the assignment whose title is exactly the whole header, and
  when there is none Canvas creates a new assignment. So each column without an id is listed on stderr
  with that consequence, and a per-exercise file imports into existing assignments when every exercise
  has its id.
- `gradescope`: `Name,SID,Email,Total Score,Max Points,Status`, then `ex01 (6 pts)`, ... per exercise.

The student mapping (--map, a CSV file, UTF-8, header row required): columns `student,lms_id` and
optionally `name,sis_user_id,sis_login,section`. `student` is the gradebook's key: the submission folder's (or
zip's) name, or for a Gradescope export the submitter's e-mail (e-mails match ignoring case). `lms_id`
is the LMS's id of that student: Canvas's user ID (the `ID` column of Canvas's own gradebook export),
or Gradescope's SID; `sis_user_id` and `sis_login` fill Canvas's `SIS User ID` and `SIS Login ID`
columns (Canvas matches a row by its ID first, then by these). A gradebook student with no map row is listed on stderr and exported with an empty
ID (import would not match them: add them to the map); a map row with no graded student is listed too.
A group submission (gradebook key `a@x.edu+b@x.edu`, from a Gradescope export) is exported as one row
per member, each with the group's score.

Every cell goes through `autograder.core.safetext.csv_cell` (no spreadsheet formulas), and every score is
rounded to hundredths (`100`, never `100.00000000000001`).
"""

from __future__ import annotations

import argparse
import csv
import os
import re
import sys
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from autograder.batch.gradebook import Gradebook, Record
from autograder.core.manifest import EXERCISES
from autograder.core.safetext import clean_text, csv_cell, one_line, terminal_text
from autograder.runtime.statedir import created_mode

GRADEBOOK_NAME = "gradebook.sqlite"  # as in autograder.batch.bulk (not imported: bulk pulls in the grader's stack)
FORMATS = ("canvas", "gradescope")
DEFAULT_ASSIGNMENT = "A2"
CANVAS_IDENTITY = ["Student", "ID", "SIS User ID", "SIS Login ID", "Section"]
CANVAS_POINTS_LABEL = "    Points Possible"  # Canvas's own export writes it with four leading spaces
GRADESCOPE_HEAD = ["Name", "SID", "Email", "Total Score", "Max Points", "Status"]
MAP_REQUIRED = ("student", "lms_id")
MAP_OPTIONAL = ("name", "sis_user_id", "sis_login", "section")
STATUS_TEXT = {"graded": "Graded", "grader_failed": "Grader failed"}
_ASSIGNMENT_RE = re.compile(r"^(?P<name>.*?)\s*\((?P<id>\d+)\)\s*$")


class ExportError(ValueError):
    """Bad input to the export (missing gradebook, unreadable map, unknown format): its message says which."""


@dataclass(frozen=True)
class MapRow:
    """One row of the --map file: the LMS identity of one gradebook student."""

    student: str
    lms_id: str
    name: str = ""
    sis_user_id: str = ""
    sis_login: str = ""
    section: str = ""


@dataclass(frozen=True)
class ExportRow:
    """One exported line: who (as the LMS knows them) and their latest grade."""

    student: str  # gradebook key (for a group member: the member's e-mail)
    name: str
    lms_id: str
    email: str
    sis_user_id: str
    sis_login: str
    section: str
    record: Record


@dataclass(frozen=True)
class ExportReport:
    rows: int
    unmapped: list[str]  # gradebook students with no map row (exported with an empty ID)
    unused: list[str]  # map rows whose student is not in the gradebook
    failed: list[str]  # students whose latest grading is the grader's failure (exported with its 0 points)
    without_id: list[str] = field(default_factory=list)  # Canvas columns without an assignment id


def points_text(points: float) -> str:
    """Points rounded to hundredths, shortest form: 6, 4.5, 0.37 (never 100.00000000000001, never -0)."""
    value = round(float(points), 2) + 0.0
    text = f"{value:.2f}".rstrip("0").rstrip(".")
    return "0" if text in ("-0", "") else text


def parse_assignment(text: str) -> tuple[str, str]:
    """`"A2 (12345)"` -> ("A2", "12345"); `"A2"` -> ("A2", "")."""
    match = _ASSIGNMENT_RE.match(text.strip())
    if match and match.group("name"):
        return match.group("name"), match.group("id")
    if not text.strip():
        raise ExportError('--assignment is empty: give the assignment\'s name, e.g. --assignment "A2 (12345)"')
    return text.strip(), ""


def _key(student: str) -> str:
    """How a map's student is compared with the gradebook's: e-mails ignoring case, folder names exactly."""
    student = student.strip()
    return student.casefold() if "@" in student else student


def read_map(path: Path) -> dict[str, MapRow]:
    """The --map CSV as {compare key: row}; raises ExportError naming --map and the line for bad input."""
    try:
        text = path.read_text(encoding="utf-8-sig")  # a byte-order mark (Excel) is fine
    except FileNotFoundError:
        raise ExportError(f"--map {path}: no such file") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise ExportError(f"--map {path} could not be read as UTF-8 text: {exc}") from None
    reader = csv.DictReader(text.splitlines())
    fields = [f.strip().lower() for f in reader.fieldnames or []]
    missing = [f for f in MAP_REQUIRED if f not in fields]
    if missing:
        raise ExportError(
            f"--map {path}: the header needs the columns {', '.join(MAP_REQUIRED)} "
            f"(optional: {', '.join(MAP_OPTIONAL)}); missing: {', '.join(missing)}"
        )
    reader.fieldnames = fields
    rows: dict[str, MapRow] = {}
    lines: dict[str, int] = {}
    for line, raw in enumerate(reader, start=2):
        cells = {k: clean_text(v or "").strip() for k, v in raw.items() if isinstance(k, str)}
        if not any(cells.values()):
            continue
        if not cells["student"]:
            raise ExportError(f"--map {path}, line {line}: the student column is empty")
        key = _key(cells["student"])
        if key in rows:
            raise ExportError(
                f"--map {path}: student {cells['student']!r} appears twice (lines {lines[key]} and {line})"
            )
        rows[key] = MapRow(**{f: cells.get(f, "") for f in (*MAP_REQUIRED, *MAP_OPTIONAL)})
        lines[key] = line
    return rows


def _members(student: str) -> list[str]:
    """The people behind one gradebook key: a Gradescope group's e-mails (`a@x+b@y`), else the key itself."""
    parts = student.split("+")
    return parts if len(parts) > 1 and all("@" in p for p in parts) else [student]


def export_rows(
    records: Iterable[Record], identities: dict[str, tuple[str, str]], mapping: dict[str, MapRow] | None
) -> tuple[list[ExportRow], list[str], list[str]]:
    """Rows to export (sorted by student), the unmapped students and the unused map rows.

    `identities`: {student: (name, email)} from the gradebook; `mapping`: the --map rows (None: no map,
    so nobody is reported as unmapped and every ID is empty)."""
    rows: list[ExportRow] = []
    unmapped: list[str] = []
    used: set[str] = set()
    for rec in records:
        name, email = identities.get(rec.student, ("", ""))
        members = _members(rec.student)
        for member in members:
            row = (mapping or {}).get(_key(member))
            if row is not None:
                used.add(_key(member))
            elif mapping is not None:
                unmapped.append(member)
            member_email = member if len(members) > 1 else (email or (member if "@" in member else ""))
            member_name = (row.name if row else "") or (name if len(members) == 1 else "") or member
            rows.append(
                ExportRow(
                    member,
                    member_name,
                    row.lms_id if row else "",
                    member_email,
                    row.sis_user_id if row else "",
                    row.sis_login if row else "",
                    row.section if row else "",
                    rec,
                )
            )
    unused = sorted(r.student for k, r in (mapping or {}).items() if k not in used)
    return sorted(rows, key=lambda r: r.student), sorted(unmapped), unused


def exercise_assignments(specs: Iterable[str]) -> dict[str, str]:
    """`--exercise-assignment` values (`ex01=A2 ex01 (12346)`) as {exercise id: "Title (id)"}; ExportError
    naming the value for an unknown exercise, a missing `=`, an empty title or an exercise given twice."""
    known = {e.id for e in EXERCISES}
    found: dict[str, str] = {}
    for spec in specs:
        ex_id, eq, text = spec.partition("=")
        ex_id = ex_id.strip()
        if not eq or ex_id not in known:
            raise ExportError(
                f"--exercise-assignment {spec!r}: give EXERCISE=TITLE (ID) with an exercise of the manifest "
                f'({", ".join(sorted(known))}), e.g. "ex01=A2 ex01 (12346)"'
            )
        if ex_id in found:
            raise ExportError(f"--exercise-assignment: {ex_id} is given twice")
        parse_assignment(text)  # an empty title is refused
        found[ex_id] = text.strip()
    return found


def canvas_columns(assignment: str, per_exercise: bool, exercises: dict[str, str] | None = None) -> list[str]:
    """The assignment column headers: `Title (id)` where an id is known, else the bare title."""
    if not per_exercise:
        pairs = [parse_assignment(assignment)]
    else:
        name = parse_assignment(assignment)[0]
        pairs = [parse_assignment((exercises or {}).get(e.id, f"{name} {e.id}")) for e in EXERCISES]
    return [f"{title} ({number})" if number else title for title, number in pairs]


def canvas_table(
    rows: Sequence[ExportRow], assignment: str, per_exercise: bool, exercises: dict[str, str] | None = None
) -> list[list[str]]:
    """Canvas's gradebook import CSV as a list of rows (header, Points Possible, one row per student)."""
    columns = canvas_columns(assignment, per_exercise, exercises)
    if per_exercise:
        possible = [points_text(e.points) for e in EXERCISES]
    else:
        possible = [points_text(sum(e.points for e in EXERCISES))]
    table = [[*CANVAS_IDENTITY, *columns], [CANVAS_POINTS_LABEL, "", "", "", "", *possible]]
    for row in rows:
        if per_exercise:
            scores = [points_text(row.record.exercises.get(e.id, (0.0, 0.0))[0]) for e in EXERCISES]
        else:
            scores = [points_text(row.record.score)]
        table.append([row.name, row.lms_id, row.sis_user_id, row.sis_login, row.section, *scores])
    return [[csv_cell(cell) for cell in line] for line in table]


def gradescope_table(rows: Sequence[ExportRow]) -> list[list[str]]:
    """Gradescope-style score CSV: identity, total, maximum, status, then one column per exercise."""
    head = [*GRADESCOPE_HEAD, *(f"{e.id} ({points_text(e.points)} pts)" for e in EXERCISES)]
    table = [head]
    max_points = points_text(sum(e.points for e in EXERCISES))
    for row in rows:
        rec = row.record
        table.append(
            [
                row.name,
                row.lms_id,
                row.email,
                points_text(rec.score),
                max_points,
                STATUS_TEXT.get(rec.status, rec.status),
                *(points_text(rec.exercises.get(e.id, (0.0, 0.0))[0]) for e in EXERCISES),
            ]
        )
    return [[csv_cell(cell) for cell in line] for line in table]


def not_this_manifest(record: Record) -> str:
    """Why `record`'s grading is not out of the manifest's exercises and points ("" when it is): graded on some
    exercises only (`grade-all --exercises`), or before an exercise's points changed. A grading the grader
    failed on is exported with its 0 points, as said elsewhere."""
    if record.status != "graded":
        return ""
    total = sum(e.points for e in EXERCISES)
    if abs(record.max_score - total) > 0.005:
        return f"graded out of {points_text(record.max_score)}, not {points_text(total)}: some exercises only?"
    moved = [
        f"{e.id} out of {points_text(record.exercises[e.id][1])}, now {points_text(e.points)}"
        for e in EXERCISES
        if e.id in record.exercises and abs(record.exercises[e.id][1] - e.points) > 0.005
    ]
    return "; ".join(moved)


def export(
    out_dir: Path,
    fmt: str,
    dest: Path,
    per_exercise: bool = False,
    map_path: Path | None = None,
    assignment: str = DEFAULT_ASSIGNMENT,
    exercise_ids: Sequence[str] = (),
) -> ExportReport:
    """Write the latest grades of OUT_DIR's gradebook to `dest` in format `fmt` (see the module docstring)."""
    if fmt not in FORMATS:
        raise ExportError(f"--format {fmt!r} is not known: choose one of {', '.join(FORMATS)}")
    book_path = out_dir / GRADEBOOK_NAME
    if not out_dir.is_dir():
        raise ExportError(f"OUT_DIR {out_dir} is not a folder (give grade-all's --out folder)")
    if not book_path.is_file():
        raise ExportError(f"OUT_DIR {out_dir} has no {GRADEBOOK_NAME}: run grade-all with --out {out_dir} first")
    if dest.is_dir():
        raise ExportError(f"--out {dest} is a folder, not a file to write")
    if dest.resolve() == book_path.resolve():
        raise ExportError(f"--out {dest} is the gradebook itself: give another file name")
    mapping = read_map(map_path) if map_path is not None else None
    exercises = exercise_assignments(exercise_ids)
    if exercises and not (fmt == "canvas" and per_exercise):
        raise ExportError(
            "--exercise-assignment names per-exercise Canvas columns: use it with --format canvas --per-exercise"
        )
    columns = canvas_columns(assignment, per_exercise, exercises) if fmt == "canvas" else []  # bad input fails here
    with Gradebook(book_path, read_only=True) as book:
        records = list(book.records())
        identities = {r.student: book.identity(r.student) for r in records}
    stale = [f"{r.student} ({why})" for r in records if (why := not_this_manifest(r))]
    if stale:
        raise ExportError(
            f"{len(stale)} student(s) were last graded on other exercises or points than the manifest's, so their "
            f"grades would not be out of its {points_text(sum(e.points for e in EXERCISES))}: "
            f"{', '.join(one_line(s) for s in stale[:5])}{' ...' if len(stale) > 5 else ''}. Grade them again with "
            f"`python -m autograder grade-all SUBMISSIONS --out {out_dir}` (every exercise) and export then."
        )
    rows, unmapped, unused = export_rows(records, identities, mapping)
    table = canvas_table(rows, assignment, per_exercise, exercises) if fmt == "canvas" else gradescope_table(rows)
    dest.parent.mkdir(parents=True, exist_ok=True)
    with dest.open("w", newline="", encoding="utf-8") as fh:
        os.fchmod(fh.fileno(), created_mode())  # a file written before keeps its mode otherwise
        csv.writer(fh).writerows(table)
    failed = [r.student for r in records if r.status != "graded"]
    without_id = [c for c in columns if not _ASSIGNMENT_RE.match(c)]
    return ExportReport(len(rows), unmapped, unused, failed, without_id)


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="python -m autograder export-lms", description=__doc__.splitlines()[0])
    parser.add_argument("out_dir", type=Path, help="grade-all's --out folder (holding gradebook.sqlite)")
    parser.add_argument("--format", required=True, help=f"one of: {', '.join(FORMATS)}")
    parser.add_argument("--out", type=Path, required=True, help="CSV file to write")
    parser.add_argument(
        "--per-exercise", action="store_true", help="canvas: one column per exercise instead of the total"
    )
    parser.add_argument("--map", type=Path, help="CSV with columns student,lms_id[,name,sis_user_id,sis_login,section]")
    parser.add_argument(
        "--assignment",
        default=DEFAULT_ASSIGNMENT,
        help='canvas: the assignment\'s name and Canvas id, e.g. "A2 (12345)" (default: A2, matched by name)',
    )
    parser.add_argument(
        "--exercise-assignment",
        action="append",
        default=[],
        metavar="EXERCISE=TITLE (ID)",
        help='canvas --per-exercise: the existing Canvas assignment of one exercise, e.g. "ex01=A2 ex01 (12346)"',
    )
    args = parser.parse_args(argv)
    for stream in (sys.stdout, sys.stderr):  # student names in the report never stop it
        if hasattr(stream, "reconfigure"):
            stream.reconfigure(errors="backslashreplace")
    try:
        report = export(
            args.out_dir, args.format, args.out, args.per_exercise, args.map, args.assignment, args.exercise_assignment
        )
    except ExportError as exc:
        print(f"export-lms: {terminal_text(exc)}", file=sys.stderr)
        return 2
    except OSError as exc:
        print(f"export-lms: {args.out} could not be written: {terminal_text(exc)}", file=sys.stderr)
        return 1
    if args.map is None:
        print(
            "export-lms: no --map: the ID column is empty for every student ("
            + (
                "Canvas must match rows by name)"
                if args.format == "canvas"
                else "match rows by the Email column, where the gradebook has one)"
            ),
            file=sys.stderr,
        )
    for student in report.unmapped:
        print(f"export-lms: {terminal_text(student)} is not in --map: exported with an empty ID", file=sys.stderr)
    for student in report.failed:
        print(
            f"export-lms: the grader failed on {terminal_text(student)}'s latest submission: exported with its 0 "
            "points (see their feedback_instructor.md; grade it again before importing)",
            file=sys.stderr,
        )
    for column in report.without_id:
        print(
            f"export-lms: column {terminal_text(column)!r} has no Canvas assignment id: Canvas imports it into the "
            "assignment titled exactly so, or creates a new assignment when there is none (give the id: "
            '--assignment "TITLE (ID)", --exercise-assignment "exNN=TITLE (ID)")',
            file=sys.stderr,
        )
    for student in report.unused:
        print(f"export-lms: --map row {terminal_text(student)!r} matches no graded student", file=sys.stderr)
    print(
        f"wrote {args.out} ({report.rows} students, {args.format}); "
        f"{len(report.unmapped)} without an LMS id, {len(report.unused)} map rows unused"
    )
    return 0
