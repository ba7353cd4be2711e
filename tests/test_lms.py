"""`python -m autograder export-lms`: Canvas and Gradescope CSV files from the gradebook of a grade-all run.

The gradebook is made by `grade_all` with a stand-in grader (a small script that behaves like `python
-m autograder grade`: each submission file `exNN.py` holding `points = X` earns X points in one test
of exNN, out of that exercise's manifest points), so the exported values can be checked against what
the gradebook holds, including sums of tenths that are not exact in binary floating point.
"""

from __future__ import annotations

import csv
import dataclasses
import os
import re
import sys
import textwrap
from pathlib import Path

import pytest

from autograder.__main__ import main as cli
from autograder.batch import bulk, lms
from autograder.batch.gradebook import Gradebook
from autograder.core.manifest import EXERCISES
from hetero.impl import load_module_from_path

STANDINS = load_module_from_path(Path(__file__).with_name("standins.py"), "_a2_standins")
FAKE_GRADER = textwrap.dedent('''\
    #!{python}
    """Stand-in for `python -m autograder grade SUB --out OUT`: exNN.py holding `points = X` earns X in exNN."""
    import hashlib, json, os, sys
    {public_phase}
    sub, out = sys.argv[4], sys.argv[6]
    maxima = {maxima!r}
    tests, total = [], 0.0
    for ex_id, top in maxima.items():
        path = os.path.join(sub, ex_id + ".py")
        points = 0.0
        if os.path.isfile(path):
            points = float(open(path).read().split("=")[1])
        total += points
        tests.append({{"name": ex_id + " hidden: " + ex_id + ".case", "score": points, "max_score": top,
                       "status": "passed" if points >= top else "failed", "visibility": "visible"}})
    with open(out, "w") as fh:
        json.dump({{"score": total, "tests": tests}}, fh)
''')

# points per exercise: tenths and hundredths whose float sum is not exactly the decimal total
ALICE = {
    "ex01": 0.1,
    "ex02": 0.2,
    "ex03": 11.9,
    "ex04": 5.9,
    "ex05": 13.9,
    "ex06": 7.9,
    "ex07": 7.7,
    "ex08": 9.9,
    "ex09": 0.1,
    "ex10": 0.7,
}  # summed in this order: 58.300000000000004
BOB = {"ex01": 2.5, "ex02": 3.33}
FORMULA = '=HYPERLINK("evil.example")'


@pytest.fixture()
def fake_python(tmp_path) -> str:
    path = tmp_path / "fake_grader.py"
    path.write_text(
        FAKE_GRADER.format(
            public_phase=STANDINS.PUBLIC_PHASE, python=sys.executable, maxima={e.id: float(e.points) for e in EXERCISES}
        )
    )
    path.chmod(0o755)
    return str(path)


def _student(root: Path, name: str, points: dict[str, float]) -> None:
    folder = root / name
    folder.mkdir(parents=True)
    for ex_id, value in points.items():
        (folder / f"{ex_id}.py").write_text(f"points = {value!r}\n")


@pytest.fixture()
def graded(tmp_path, fake_python) -> Path:
    """grade-all's --out folder for alice (0.1 + 0.2 + ... = 58.300000000000004 in floats), bob and a
    student whose folder name is a spreadsheet formula."""
    subs = tmp_path / "subs"
    _student(subs, "alice", ALICE)
    _student(subs, "bob", BOB)
    _student(subs, FORMULA, {"ex01": 1})
    out = tmp_path / "graded"
    report = bulk.grade_all(subs, out, workers=2, progress=False, python=fake_python)
    assert report.graded == sorted(["alice", "bob", FORMULA]) and not report.failed, report
    return out


def _rows(path: Path) -> list[list[str]]:
    with path.open(newline="", encoding="utf-8") as fh:
        return list(csv.reader(fh))


def _map(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "map.csv"
    path.write_text(textwrap.dedent(text), encoding="utf-8")
    return path


def test_canvas_csv_has_the_documented_shape_and_the_gradebooks_latest_grades(tmp_path, graded, capsys):
    mapping = _map(
        tmp_path,
        """\
        student,lms_id,name,sis_user_id,sis_login,section
        alice,1001,"Liddell, Alice",S-20481,aliddell,Section 01
        bob,1002,,,bduo,Section 02
        carol,1003,"Nobody, Carol",S-1,cnobody,Section 01
        """,
    )
    dest = tmp_path / "canvas.csv"
    args = ["--format", "canvas", "--out", str(dest), "--map", str(mapping), "--assignment", "A2 serving (12345)"]
    assert cli(["export-lms", str(graded), *args]) == 0
    rows = _rows(dest)
    assert rows[0] == ["Student", "ID", "SIS User ID", "SIS Login ID", "Section", "A2 serving (12345)"]
    assert rows[1] == ["    Points Possible", "", "", "", "", "100"], "Canvas's Points Possible row"
    with Gradebook(graded / "gradebook.sqlite") as book:
        latest = {r.student: r.score for r in book.records()}
    assert latest["alice"] != round(latest["alice"], 2), "the fixture must exercise float noise"
    by_id = {r[1]: r for r in rows[2:]}
    assert by_id["1001"] == ["Liddell, Alice", "1001", "S-20481", "aliddell", "Section 01", "58.3"], (
        f"the SIS User ID comes from the map's sis_user_id column: {by_id}"
    )
    assert by_id["1002"] == ["bob", "1002", "", "bduo", "Section 02", "5.83"], "name falls back to the student key"
    formula_row = by_id[""]
    assert formula_row[0] == "'" + FORMULA and formula_row[5] == "1", "a formula-like name is neutralised"
    assert len(rows) == 2 + 3
    shown = {"alice": by_id["1001"][5], "bob": by_id["1002"][5], FORMULA: formula_row[5]}
    assert {s: round(v, 2) for s, v in latest.items()} == {s: float(v) for s, v in shown.items()}
    err = capsys.readouterr().err
    assert f"{FORMULA} is not in --map: exported with an empty ID" in err, err
    assert "--map row 'carol' matches no graded student" in err, err
    assert "has no Canvas assignment id" not in err, "the column carries its id: Canvas puts it into 12345"


def test_canvas_per_exercise_columns_carry_each_exercises_points(tmp_path, graded):
    dest = tmp_path / "canvas.csv"
    report = lms.export(graded, "canvas", dest, per_exercise=True, assignment="A2")
    rows = _rows(dest)
    assert rows[0] == ["Student", "ID", "SIS User ID", "SIS Login ID", "Section", *(f"A2 {e.id}" for e in EXERCISES)]
    assert rows[1] == ["    Points Possible", "", "", "", "", *(str(e.points) for e in EXERCISES)]
    alice = next(r for r in rows[2:] if r[0] == "alice")
    want = dict(
        zip(
            [f"ex{n:02d}" for n in range(1, 11)],
            ["0.1", "0.2", "11.9", "5.9", "13.9", "7.9", "7.7", "9.9", "0.1", "0.7"],
            strict=True,
        )
    )
    got = dict(zip((e.id for e in EXERCISES), alice[5:], strict=False))
    assert {k: got[k] for k in want} == want and all(v == "0" for k, v in got.items() if k not in want), alice
    assert report.rows == 3 and report.unmapped == [] and report.unused == [], "no --map: nobody reported"


def test_canvas_per_exercise_columns_go_into_existing_assignments(tmp_path, graded, capsys):
    """Canvas's importer puts a column `Title (12345)` into assignment 12345, and a column without an id into
    the assignment titled exactly as the header, else a new one: every exercise given its id, no column is
    without one; an exercise left out keeps its bare title and is named on stderr."""
    ids = {e.id: f"A2 {e.id} ({20000 + n})" for n, e in enumerate(EXERCISES)}
    dest = tmp_path / "canvas.csv"
    specs = [f"{ex}={title}" for ex, title in ids.items()]
    report = lms.export(graded, "canvas", dest, per_exercise=True, exercise_ids=specs)
    assert _rows(dest)[0][5:] == list(ids.values()) and report.without_id == [], (_rows(dest)[0], report)
    args = ["export-lms", str(graded), "--format", "canvas", "--per-exercise", "--out", str(dest)]
    assert cli([*args, *(f"--exercise-assignment={s}" for s in specs[1:])]) == 0
    err = capsys.readouterr().err
    assert _rows(dest)[0][5:] == ["A2 ex01", *list(ids.values())[1:]], _rows(dest)[0]
    assert "column 'A2 ex01' has no Canvas assignment id" in err and "creates a new assignment" in err, err
    assert err.count("has no Canvas assignment id") == 1, err
    for bad, why in (
        ("ex99=X (1)", "with an exercise of the manifest"),
        ("ex01", "EXERCISE=TITLE"),
        ("ex01=", "is empty"),
    ):
        with pytest.raises(lms.ExportError, match=re.escape(why)):
            lms.export(graded, "canvas", dest, per_exercise=True, exercise_ids=[bad])
    with pytest.raises(lms.ExportError, match="ex01 is given twice"):
        lms.export(graded, "canvas", dest, per_exercise=True, exercise_ids=["ex01=A (1)", "ex01=B (2)"])
    with pytest.raises(lms.ExportError, match="use it with --format canvas --per-exercise"):
        lms.export(graded, "canvas", dest, exercise_ids=["ex01=A (1)"])


def test_gradescope_csv_columns_and_values(tmp_path, graded):
    mapping = _map(tmp_path, "student,lms_id\nALICE,S-1\nbob,S-2\n")  # folder names match exactly
    dest = tmp_path / "gs.csv"
    report = lms.export(graded, "gradescope", dest, map_path=mapping)
    rows = _rows(dest)
    assert rows[0] == [
        "Name",
        "SID",
        "Email",
        "Total Score",
        "Max Points",
        "Status",
        *(f"{e.id} ({e.points} pts)" for e in EXERCISES),
    ]
    bob = next(r for r in rows[1:] if r[0] == "bob")
    assert bob[:6] == ["bob", "S-2", "", "5.83", "100", "Graded"] and bob[6:8] == ["2.5", "3.33"], bob
    assert sorted(report.unmapped) == sorted(["alice", FORMULA]) and report.unused == ["ALICE"], report
    assert all(not c.startswith(("=", "+", "-", "@")) for row in rows for c in row), "no formula cell"


def test_group_submission_exports_one_row_per_member_and_emails_match_ignoring_case(tmp_path, graded):
    with Gradebook(graded / "gradebook.sqlite") as book:
        book.record("ann@x.edu+ben@x.edu", "subs/s1", "h", {"score": 7.0, "tests": []}, 1.0, False)
        book.set_identity("ann@x.edu+ben@x.edu", "Ann, Ben", "ann@x.edu, ben@x.edu")
    mapping = _map(tmp_path, "student,lms_id,name\nAnn@X.edu,11,Ann A\nben@x.edu,12,Ben B\n")
    dest = tmp_path / "gs.csv"
    lms.export(graded, "gradescope", dest, map_path=mapping)
    rows = {r[1]: r for r in _rows(dest)[1:]}
    assert rows["11"][:4] == ["Ann A", "11", "ann@x.edu", "7"] and rows["12"][:4] == ["Ben B", "12", "ben@x.edu", "7"]


def test_points_are_rounded_to_hundredths():
    assert lms.points_text(100.00000000000001) == "100"
    assert lms.points_text(0.1 + 0.2) == "0.3" and lms.points_text(2.675) in ("2.67", "2.68")
    assert lms.points_text(-0.0) == "0" and lms.points_text(1e-9) == "0" and lms.points_text(12.5) == "12.5"


def test_bad_input_is_refused_with_the_argument_named(tmp_path, graded, capsys):
    dest = tmp_path / "x.csv"
    assert cli(["export-lms", str(tmp_path / "nowhere"), "--format", "canvas", "--out", str(dest)]) == 2
    assert "OUT_DIR" in capsys.readouterr().err
    empty = tmp_path / "empty"
    empty.mkdir()
    assert cli(["export-lms", str(empty), "--format", "canvas", "--out", str(dest)]) == 2
    err = capsys.readouterr().err
    assert "has no gradebook.sqlite" in err and not (empty / "gradebook.sqlite").exists(), "never created"
    assert cli(["export-lms", str(graded), "--format", "moodle", "--out", str(dest)]) == 2
    assert "--format 'moodle' is not known" in capsys.readouterr().err
    bad_map = _map(tmp_path, "folder,canvas_id\nalice,1\n")
    assert cli(["export-lms", str(graded), "--format", "canvas", "--out", str(dest), "--map", str(bad_map)]) == 2
    assert "--map" in (err := capsys.readouterr().err) and "missing: student, lms_id" in err, err
    twice = _map(tmp_path, "student,lms_id\nalice,1\nalice,2\n")
    with pytest.raises(lms.ExportError, match="appears twice"):
        lms.read_map(twice)
    with pytest.raises(lms.ExportError, match="--map .*no such file"):
        lms.read_map(tmp_path / "missing.csv")
    with pytest.raises(lms.ExportError, match="--out .* is the gradebook itself"):
        lms.export(graded, "canvas", graded / "gradebook.sqlite")
    assert not dest.exists(), "nothing is written on bad input"


def test_export_never_writes_the_gradebook(tmp_path, graded):
    book = graded / "gradebook.sqlite"
    before = (book.read_bytes(), book.stat().st_mtime_ns)
    lms.export(graded, "canvas", tmp_path / "c.csv")
    assert (book.read_bytes(), book.stat().st_mtime_ns) == before


ESCAPES = "mallory\x1b[2J\x1b[H\x1b]0;pwned\x07\x1b[31mRED"


def test_a_students_name_reaches_the_terminal_escaped(tmp_path, fake_python, capsys):
    # A folder name is the student's: export-lms names unmapped students on stderr, which must not carry
    # the terminal's control sequences (clear screen, window title, colours), only their escapes.
    subs = tmp_path / "subs"
    _student(subs, ESCAPES, {"ex01": 1})
    out = tmp_path / "graded"
    assert bulk.grade_all(subs, out, workers=1, progress=False, python=fake_python).graded == [ESCAPES]
    capsys.readouterr()
    mapping = _map(tmp_path, "student,lms_id\nalice,1001\n")
    args = ["--format", "canvas", "--out", str(tmp_path / "c.csv"), "--map", str(mapping)]
    assert cli(["export-lms", str(out), *args]) == 0
    err = capsys.readouterr().err
    controls = [c for c in err if ord(c) < 32 and c not in "\n\t" or 0x7F <= ord(c) <= 0x9F]
    assert not controls, f"export-lms printed the student's control characters {controls!r}: {err!r}"
    assert "mallory\\x1b[2J" in err, f"the unmapped student should be named, escaped: {err!r}"


def test_the_export_is_the_instructors_alone_and_the_callers_umask_is_kept(tmp_path, graded):
    """export-lms (one of the commands that write grades: autograder.__main__.PRIVATE_OUTPUT) writes its CSV with
    mode 600 under umask 077, even over a file that was 644 (a file rewritten in place keeps its mode unless
    set), and a caller in the same process (this test) keeps its own umask afterwards."""
    dest = tmp_path / "gradescope.csv"
    dest.write_text("older export\n")
    dest.chmod(0o644)
    before = os.umask(0o022)
    try:
        assert cli(["export-lms", str(graded), "--format", "gradescope", "--out", str(dest)]) == 0
        after = os.umask(0o022)
    finally:
        os.umask(before)
    assert dest.stat().st_mode & 0o777 == 0o600, (
        f"the export must be readable by its owner alone (600), it is {dest.stat().st_mode & 0o777:o}: on the "
        "seccomp-uid rung a later batch's student could read the class's grades"
    )
    assert after == 0o022, f"the command left this process's umask at {after:o} (expected 022, the caller's)"


def test_grades_not_out_of_the_manifests_points_are_not_exported(tmp_path, graded, fake_python, monkeypatch):
    """A latest grading on some exercises only (`grade-all --exercises`) or made before an exercise's points
    changed would reach the LMS as a grade out of 100 that is not: export-lms refuses and names who."""
    dest = tmp_path / "c.csv"
    ex01_only = [e for e in EXERCISES if e.id == "ex01"]
    subset_grader = tmp_path / "subset.py"
    subset_grader.write_text(
        FAKE_GRADER.format(
            public_phase=STANDINS.PUBLIC_PHASE, python=sys.executable, maxima={e.id: float(e.points) for e in ex01_only}
        )
    )
    subset_grader.chmod(0o755)
    bulk.grade_all(tmp_path / "subs", graded, progress=False, python=str(subset_grader), exercises=["ex01"])
    with pytest.raises(
        lms.ExportError, match=r"3 student\(s\).*alice \(graded out of 6, not 100: some exercises only\?\)"
    ):
        lms.export(graded, "canvas", dest)
    assert not dest.exists(), "nothing is written when the export is refused"
    bulk.grade_all(tmp_path / "subs", graded, progress=False, python=fake_python)  # every exercise again
    lms.export(graded, "canvas", dest)
    moved = tuple(
        dataclasses.replace(e, points=e.points + 2)
        if e.id == "ex09"
        else dataclasses.replace(e, points=e.points - 2)
        if e.id == "ex10"
        else e
        for e in EXERCISES
    )
    monkeypatch.setattr(lms, "EXERCISES", moved)
    with pytest.raises(lms.ExportError, match=r"ex09 out of 6, now 8; ex10 out of 20, now 18"):
        lms.export(graded, "gradescope", tmp_path / "g.csv")
