"""The routes that run a student's code through another tool, against a hostile student (issue 29).

- Otter (`python -m autograder otter-grade`) and nbgrader (`python -m autograder nbgrader-autograde`), with
  autograder/fixtures/adversarial/tool_route_notebook (a notebook that does no work, patches the judge in
  its kernel, reads the hidden tests, writes into another student's folder, the instructor's course and the
  checkout, and leaves processes) beside an honest student (the answer key) and a third student's folder;
- the lecture drivers on a student's folder (`python -m autograder lecture`), with
  autograder/fixtures/adversarial/driver_writes_outside (an exercise file that writes outside its folder at
  import and leaves a process).

For each route: the fixture earns nothing beyond its work in the points the command reports (the native
grader's; the tool's higher points flagged for that student), nothing outside the command's own output
changes (digests of the course, the other students' folders, a stand-in home and the checkout, before and
after; no file of the fixture's name anywhere it aimed), and no process carrying the test's A2_TEST_TAG
(`launch.PASSED_ENV` passes it to the sandboxed command) is alive once the command has returned (and 4 s
later: the fixture's sleeper writes again after 3 s). What the routes leave open, measured and printed:
the tool's own points (the attack's to set) and the hidden tests it read.

The commands run as subprocesses, as an instructor runs them. Otter's and nbgrader's runs are slow and
part of the proof "real_exports" (tests/proofs.py: re-run when their inputs change). The cross-check's table
and CSV are tested without the tools.
"""

from __future__ import annotations

import csv
import hashlib
import json
import os
import secrets
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from autograder.batch import crosscheck, nbgrader_grade
from autograder.core.manifest import BY_ID, ROOT
from autograder.exports import export_nbgrader, export_otter
from autograder.exports import notebooks as nb
from hetero.impl import load_module_from_path

ADVERSARIAL = ROOT / "autograder" / "fixtures" / "adversarial"
NOTEBOOK_ATTACK = ADVERSARIAL / "tool_route_notebook"
DRIVER_ATTACK = ADVERSARIAL / "driver_writes_outside"
EX02 = BY_ID["ex02"]
SLEEPER_DELAY_S = 4.0  # the fixtures' sleepers write again 3 s after they start
_helpers = load_module_from_path(Path(__file__).with_name("test_grader.py"), "_a2_grader_test_helpers")
tagged_processes = _helpers.tagged_processes


# ---------------------------------------------------------------------------------------------
# What the tests compare


def tree_digest(folder: Path, skip: tuple[Path, ...] = ()) -> dict[str, str]:
    """{relative path: sha256 of the file, or 'link -> target' or 'dir'} of everything under `folder`."""
    found: dict[str, str] = {}
    for path in sorted(folder.rglob("*")):
        if any(path == s or s in path.parents for s in skip):
            continue
        rel = path.relative_to(folder).as_posix()
        if path.is_symlink():
            found[rel] = f"link -> {os.readlink(path)}"
        elif path.is_dir():
            found[rel] = "dir"
        else:
            found[rel] = hashlib.sha256(path.read_bytes()).hexdigest()
    return found


def checkout_state() -> str:
    """The checkout's changes (tracked files' diff and every untracked file, by git) and shared/hetero's
    files' digests: a file written into it, or hetero.checks changed, shows here."""
    status = subprocess.run(
        ["git", "status", "--porcelain", "--untracked-files=all"], cwd=ROOT, capture_output=True, text=True, check=True
    ).stdout
    diff = subprocess.run(["git", "diff", "HEAD"], cwd=ROOT, capture_output=True, check=True).stdout
    hetero = json.dumps(
        tree_digest(ROOT / "shared" / "hetero", skip=tuple((ROOT / "shared" / "hetero").rglob("__pycache__")))
    )
    return hashlib.sha256(status.encode() + diff + hetero.encode()).hexdigest() + "\n" + status


def leftovers(name: str, trees: list[Path], folders: list[Path]) -> list[str]:
    """Files called `name` (the fixture's marker for this test's tag) anywhere under `trees` (the test's own
    folders) or directly in `folders` (the checkout, the machine's shared folders)."""
    found = [str(p) for tree in trees if tree.is_dir() for p in tree.rglob(name)]
    return found + [str(f / name) for f in folders if os.path.lexists(f / name)]


class Hostile:
    """The tag, the folders the fixture aims at and the before-state of everything it must not change."""

    def __init__(self, tmp_path: Path, watched: list[Path], marker_prefix: str):
        self.tag = secrets.token_hex(8)
        self.home = tmp_path / "instructor-home"
        self.home.mkdir()
        (self.home / "notes.txt").write_text("the instructor's own file\n")
        self.watched = [self.home, *watched]
        self.marker = f"{marker_prefix}-{self.tag}.txt"
        self.env = {
            **os.environ,
            "A2_TEST_TAG": self.tag,
            "A2_TEST_FOLDERS": json.dumps([str(p) for p in self.watched]),
        }
        self.before = {str(p): tree_digest(p) for p in self.watched}
        self.checkout = checkout_state()

    def run(self, argv: list[str], timeout_s: float) -> subprocess.CompletedProcess:
        return subprocess.run(
            [sys.executable, "-m", "autograder", *argv],
            capture_output=True,
            text=True,
            timeout=timeout_s,
            cwd=self.home.parent,
            env=self.env,
        )

    def check_nothing_left(self, route: str) -> None:
        """No process of the tag now and SLEEPER_DELAY_S later; then nothing changed, no marker anywhere."""
        left = tagged_processes(self.tag)
        time.sleep(SLEEPER_DELAY_S)
        left = sorted(set(left + tagged_processes(self.tag)))
        for pid in left:  # do not leave them running when the check fails
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        assert not left, f"{route}: {len(left)} process(es) of the student's code outlived the command"
        for folder in self.watched:
            after = tree_digest(folder)
            changed = sorted(
                k for k in {*after, *self.before[str(folder)]} if after.get(k) != self.before[str(folder)].get(k)
            )
            assert not changed, (
                f"{route}: the student's code changed {folder} (outside the command's output): {changed}"
            )
        assert checkout_state() == self.checkout, f"{route}: the checkout changed:\n{checkout_state()}"
        shared = [ROOT, ROOT / "shared" / "hetero", Path("/tmp"), Path("/var/tmp"), Path("/root"), Path.home()]
        found = leftovers(self.marker, self.watched, shared)
        assert not found, f"{route}: the student's code wrote {found}"


def csv_rows(path: Path) -> dict[str, dict[str, str]]:
    with path.open(encoding="utf-8") as handle:
        return {row["student"]: row for row in csv.DictReader(handle)}


def attack_report(out: Path) -> str:
    """What the notebook fixture said it did (a2-attack-report.txt, written in its working folder and
    collected into the command's output)."""
    reports = sorted(out.rglob("a2-attack-report.txt"))
    assert reports, f"the attack's report is missing under {out}: did the fixture's cell run?"
    return reports[0].read_text(encoding="utf-8")


def check_route_points(tool: str, rows: dict[str, dict[str, str]], report: str) -> None:
    """The hostile notebook earns nothing beyond its work (0: it computes nothing) in the reported points,
    its higher tool points are flagged; the answer key keeps full marks and agrees; and what stays open
    (the tool's own points, the hidden tests read) is printed as measured."""
    full = f"{EX02.points:.2f}"
    assert rows["mallory"]["ex02"] == "0.00" and rows["mallory"]["total"] == "0.00", (
        f"{tool}: the hostile notebook should earn 0 in the reported (native) points, got {rows['mallory']}"
    )
    assert f"{tool} {float(rows['mallory'][f'{tool}_total']):.2f} > native 0.00" in rows["mallory"]["check"], (
        f"{tool}: the tool's points above the native ones must be flagged for the student: {rows['mallory']}"
    )
    assert rows["alice"]["ex02"] == full and rows["alice"][f"{tool}_total"] == full and not rows["alice"]["check"], (
        f"{tool}: the answer key should earn {full} both ways, unflagged: {rows['alice']}"
    )
    assert rows["bob"]["ex02"] == "0.00" and not rows["bob"]["check"], (
        f"{tool}: the stub earns 0 both ways: {rows['bob']}"
    )
    hidden = [line for line in report.splitlines() if line.startswith("HIDDEN-READ")]
    print(
        f"\n{tool}: the hostile notebook's own {tool} points: {rows['mallory'][f'{tool}_total']} of {full} "
        f"(reported: {rows['mallory']['ex02']}); it read {len(hidden)} file(s) holding hidden tests in its "
        f"sandbox: {[line.split()[1] for line in hidden]}; "
        f"writes: {[line for line in report.splitlines() if line.startswith('WRITE-OK')]}"
    )
    assert "JUDGE-PATCHED" in report and "SLEEPER-STARTED" in report, report


# ---------------------------------------------------------------------------------------------
# The cross-check (no tool)


def test_cross_check_reports_native_points_and_flags_every_difference(tmp_path):
    tool = {
        "ann": {"ex01": (6.0, ""), "ex02": (10.0, "")},
        "=cmd": {"ex01": (0.0, "otter run failed: boom"), "ex02": (4.0, "")},
    }
    native = {"ann": {"ex01": (6.0, ""), "ex02": (0.0, "")}, "=cmd": {"ex01": (6.0, ""), "ex02": (4.0, "")}}
    checked = crosscheck.cross_check(tool, native, "otter")
    assert checked.reported == native, "the native points are the ones reported by default"
    assert checked.flags["ann"] == [
        "ex02: otter 10.00 > native 0.00, more than its code earns (the notebook may have patched otter's checks "
        "or rewritten its results; native points reported)"
    ], checked.flags
    assert checked.flags["=cmd"] == ["ex01: otter 0.00 < native 6.00 (otter's run lost points: otter run failed: boom)"]
    trusted = crosscheck.cross_check(tool, native, "otter", "tool")
    assert trusted.reported == tool and "otter points reported" in trusted.flags["ann"][0]
    crosscheck.write_csv(checked, tmp_path / "g.csv")
    rows = list(csv.reader((tmp_path / "g.csv").open(encoding="utf-8")))
    assert rows[0] == ["student", "ex01", "ex02", "total", "otter_total", "check"]
    by_name = {row[0]: row for row in rows[1:]}
    assert by_name["ann"][:5] == ["ann", "6.00", "0.00", "6.00", "16.00"], by_name
    assert by_name["ann"][5].startswith("ex02: otter 10.00 >"), by_name
    assert "'=cmd" in by_name, f"a student name is a CSV cell, not a formula: {rows}"
    text = "\n".join(crosscheck.lines(checked))
    assert "ann: 6.00  [otter 16.00]" in text and "1 student(s)" not in text and "2 student(s)" in text, text
    with pytest.raises(ValueError, match="tool points were not computed"):
        crosscheck.cross_check(None, native, "otter", "tool")


def test_tool_points_that_are_not_a_score_count_zero_and_are_flagged():
    """A tool's points come from results the student's code can rewrite (Otter's results.json is read with
    float()): NaN, infinities, 1e300, negatives and more than the exercise's points count 0, flagged, whichever
    points are reported (a red-team pass: NaN compared neither above nor below the native points, so it was
    never flagged, and with --tool-points the student's total was nan)."""
    native = {s: {"ex01": (0.0, "")} for s in ("nan", "inf", "huge", "neg", "over", "ok")}
    native["nan"] = {"ex01": (6.0, "")}  # flagged once, as not a score (not also as "lost points")
    tool = {
        "nan": {"ex01": (float("nan"), "")},
        "inf": {"ex01": (float("inf"), "")},
        "huge": {"ex01": (1e300, "")},
        "neg": {"ex01": (-1.0, "")},
        "over": {"ex01": (BY_ID["ex01"].points + 1.0, "")},
        "ok": {"ex01": (0.0, "")},
    }
    for source in ("native", "tool"):
        checked = crosscheck.cross_check(tool, native, "otter", source)
        assert sorted(checked.flags) == ["huge", "inf", "nan", "neg", "over"], (source, checked.flags)
        assert all("not a score from 0 to 6" in checked.flags[s][0] for s in checked.flags), checked.flags
        assert all(len(flags) == 1 for flags in checked.flags.values()), checked.flags
        reported = checked.reported if source == "tool" else {s: r for s, r in checked.reported.items() if s != "nan"}
        assert all(abs(p) < 1e-9 for row in reported.values() for p, _ in row.values()), (source, reported)


def test_points_equal_to_the_hundredth_are_not_flagged():
    checked = crosscheck.cross_check({"a": {"ex01": (5.999999999, "")}}, {"a": {"ex01": (6.0, "")}}, "nbgrader")
    assert not checked.flags, f"float noise below a hundredth is not a difference: {checked.flags}"


def test_nbgrader_route_copies_only_regular_files_of_the_student(tmp_path):
    """What the sandbox gets: the instructor's files, and the student's regular files: a link in the
    submitted folder (to a secret of this machine, say) is not followed; "_" and "." folders are not students."""
    course = tmp_path / "course"
    (course / "source" / "a2").mkdir(parents=True)
    (course / "source" / "a2" / f"{EX02.module}.ipynb").write_text("{}")
    (course / "gradebook.db").write_bytes(b"")
    secret = tmp_path / "secret.txt"
    secret.write_text("the instructor's secret")
    mine = course / "submitted" / "mallory" / "a2"
    mine.mkdir(parents=True)
    (mine / f"{EX02.module}.ipynb").write_text("{}")
    (mine / "steal.txt").symlink_to(secret)
    (mine / "deeper").symlink_to(tmp_path, target_is_directory=True)
    for other in ("_native", ".hidden", "bob"):
        (course / "submitted" / other).mkdir()
    assert nbgrader_grade.students(course, "a2") == ["mallory"], "bob has no a2 folder; _ and . are not students"
    files = nbgrader_grade._files(course, "a2", "mallory", tmp_path / "private.db")
    assert files["course/gradebook.db"] == tmp_path / "private.db", "the run gets the student's own gradebook"
    assert f"course/submitted/mallory/a2/{EX02.module}.ipynb" in files
    assert not any("steal" in name or "deeper" in name for name in files), f"a link was followed: {sorted(files)}"
    assert [ex.id for ex in nbgrader_grade.course_exercises(course, "a2")] == ["ex02"]
    (course / "gradebook.db").unlink()
    with pytest.raises(FileNotFoundError, match="generate_assignment a2"):
        nbgrader_grade.course_exercises(course, "a2")


# ---------------------------------------------------------------------------------------------
# The routes, for real


def _filled(template: dict, code: str | None) -> dict:
    return template if code is None else nb.fill_exercise_cell(template, EX02, code)


STUDENTS = {
    "alice": (ROOT / "solutions" / EX02.filename).read_text(encoding="utf-8"),
    "mallory": (NOTEBOOK_ATTACK / EX02.filename).read_text(encoding="utf-8"),
    "bob": None,  # the tool's own unfilled notebook
}


@pytest.mark.slow
@pytest.mark.proof("real_exports")
def test_nbgrader_route_against_a_hostile_notebook(tmp_path):
    course = tmp_path / "course"
    export_nbgrader.export(course, ex_ids=["ex02"])
    export_nbgrader.run_nbgrader(course, ["generate_assignment", "a2", "--force"], timeout_s=600)
    release = json.loads((course / "release" / "a2" / f"{EX02.module}.ipynb").read_text(encoding="utf-8"))
    for student, code in STUDENTS.items():
        nb.write_notebook(_filled(release, code), course / "submitted" / student / "a2" / f"{EX02.module}.ipynb")
    hostile = Hostile(tmp_path, [course, course / "submitted" / "alice"], "a2-hostile")
    out = tmp_path / "out"
    done = hostile.run(["nbgrader-autograde", str(course), "--out", str(out), "--csv", str(tmp_path / "g.csv")], 1500)
    assert done.returncode == 0, done.stderr[-3000:]
    assert nbgrader_grade.RESIDUAL_RISK in done.stderr, "the residual risk must be stated with every run"
    hostile.check_nothing_left("nbgrader-autograde")
    check_route_points("nbgrader", csv_rows(tmp_path / "g.csv"), attack_report(out / "mallory"))
    assert (out / "alice" / "course" / "autograded" / "alice" / "a2" / f"{EX02.module}.ipynb").is_file()


@pytest.mark.slow
@pytest.mark.proof("real_exports")
def test_otter_route_against_a_hostile_notebook(tmp_path):
    from autograder.batch import otter_grade

    masters = tmp_path / "masters"
    export_otter.export(masters, ["ex02"], run_tests=False)
    otter_grade.assigned(masters)  # the instructor's own step, before the students' code runs
    student = json.loads((masters / "dist" / EX02.module / "student" / f"{EX02.module}.ipynb").read_text("utf-8"))
    subs = tmp_path / "submissions"
    for name, code in STUDENTS.items():
        nb.write_notebook(_filled(student, code), subs / name / f"{EX02.module}.ipynb")
    hostile = Hostile(tmp_path, [masters, subs], "a2-hostile")
    out = tmp_path / "out"
    done = hostile.run(
        ["otter-grade", str(masters), str(subs), "--out", str(out), "--csv", str(tmp_path / "g.csv")], 1500
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert otter_grade.RESIDUAL_RISK in done.stderr, "the residual risk must be stated with every run"
    hostile.check_nothing_left("otter-grade")
    check_route_points("otter", csv_rows(tmp_path / "g.csv"), attack_report(out / "mallory"))


def test_lecture_driver_on_a_hostile_folder(tmp_path):
    folder = tmp_path / "student"
    folder.mkdir()
    shutil.copyfile(DRIVER_ATTACK / EX02.filename, folder / EX02.filename)
    course = tmp_path / "course"
    (course / "grades").mkdir(parents=True)
    (course / "grades" / "a2.csv").write_text("student,total\nalice,100\n")
    hostile = Hostile(tmp_path, [course, folder], "a2-escaped")
    done = hostile.run(["lecture", "01", "--impl", str(folder)], 600)
    assert done.returncode == 0, done.stderr[-3000:]
    assert "SLEEPER-STARTED" in done.stdout, f"the fixture did not run: {done.stdout[-2000:]}"
    assert "skipped (ex02 missing)" in done.stdout, "the driver should report ex02's parts as missing"
    hostile.check_nothing_left("lecture")
    opened = [line for line in done.stdout.splitlines() if line.startswith("WRITE-OK")]
    print(f"\nlecture: the folder's code could write only {opened} (the run's own private tmpfs)")


LINKS_ATTACK = ADVERSARIAL / "lecture_links"


def test_lecture_driver_follows_no_link_and_writes_only_pngs_where_told(tmp_path):
    """autograder/fixtures/adversarial/lecture_links: the student's folder holds links to the answer key, a hidden
    case file, the stored expected values and the grader's environment, and `.plots.collected` (where the command
    once collected the plots, beside --plots) links to a folder of the instructor's."""
    folder = tmp_path / "student"
    folder.mkdir()
    shutil.copyfile(LINKS_ATTACK / EX02.filename, folder / EX02.filename)
    planted = {
        BY_ID["ex01"].filename: ROOT / "solutions" / BY_ID["ex01"].filename,
        BY_ID["ex03"].filename: ROOT / "autograder" / "tests" / "ex03_hidden.py",
        BY_ID["ex05"].filename: ROOT / "autograder" / "expected" / "ex05.json",
        BY_ID["ex04"].filename: Path("/proc/self/environ"),
    }
    for name, target in planted.items():
        os.symlink(target, folder / name)
    victim = tmp_path / "instructor-keys"
    victim.mkdir()
    os.symlink(victim, folder / ".plots.collected")
    hostile = Hostile(tmp_path, [victim], "a2-links")

    inside = hostile.run(["lecture", "01", "--impl", str(folder), "--plots", str(folder / "plots")], 600)
    assert inside.returncode == 2 and "inside the student's folder" in inside.stderr, inside.stderr[-2000:]

    plots = tmp_path / "plots"
    for args in (["--json"], ["--plots", str(plots)]):
        done = hostile.run(["lecture", "01", "--impl", str(folder), *args], 600)
        seen = {line.split()[1] for line in done.stdout.splitlines() if line.startswith("SEEN ")}
        assert seen == {EX02.filename, "reference_figures.json"}, (
            f"the sandbox was given {sorted(seen)}: a link in the student's folder was followed ({args})"
        )
        assert "\x1b" not in done.stdout + done.stderr, f"a terminal control reached the instructor's terminal ({args})"
        assert "\\x1b]0;PWNED-TITLE" in done.stdout, "the student's output should be shown, escaped"
    assert sorted(p.name for p in plots.iterdir()) == ["owned.png"], "only the driver's PNG files belong in --plots"
    hostile.check_nothing_left("lecture")
    assert not list(victim.iterdir()), "the collect step wrote through the student's link"


def _gradebook(path: Path) -> Path:
    """A gradebook as the instructor's course holds one: the assignment, two students with e-mails, a submission."""
    from nbgrader.api import Gradebook

    with Gradebook(f"sqlite:///{path}") as gradebook:
        gradebook.add_assignment("a2")
        gradebook.add_student("alice", email="alice@example.edu")
        gradebook.add_student("bob", first_name="Bobby", email="bob-secret@example.edu")
        gradebook.add_submission("a2", "alice")
        gradebook.add_submission("a2", "bob")
    return path


@pytest.fixture
def alembic_on_path(monkeypatch):
    """nbgrader stamps a new gradebook with `alembic heads`, run as a program: the venv's bin/ first."""
    monkeypatch.setenv("PATH", f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}")


def test_a_students_nbgrader_run_gets_a_gradebook_without_the_others(tmp_path, alembic_on_path):
    """The gradebook copy a student's sandboxed autograde runs beside holds no student (autograde --create adds
    that one): no other student's name, e-mail or submission, not even in a freed page of the file."""
    course = tmp_path / "course"
    course.mkdir()
    _gradebook(course / "gradebook.db")
    given = nbgrader_grade.studentless_gradebook(course, tmp_path / "template.db")
    from nbgrader.api import Gradebook

    with Gradebook(f"sqlite:///{given}") as gradebook:
        assert [s.id for s in gradebook.students] == []
        assert [a.name for a in gradebook.assignments] == ["a2"], "the assignment stays: autograde needs it"
    raw = given.read_bytes()
    assert b"bob-secret@example.edu" not in raw and b"Bobby" not in raw, "a student's data is in the file"
    assert b"bob-secret@example.edu" in (course / "gradebook.db").read_bytes(), "the instructor's gradebook changed"


def test_a_tampered_gradebook_copy_is_not_read(tmp_path, alembic_on_path):
    """The copy a student's run returns was theirs to rewrite; read in the instructor's process, it is read only
    with the schema it was given. A view in place of the student table (a red-team pass made it an endless
    recursive query, which kept the instructor's process at 100 % CPU and filled /var/tmp) is refused unread."""
    import sqlite3

    given = _gradebook(tmp_path / "given.db")
    before = nbgrader_grade.schema(given)
    honest = tmp_path / "honest"
    honest.mkdir()
    shutil.copyfile(given, honest / "gradebook.db")
    assert nbgrader_grade.returned_points(honest / "gradebook.db", before, "a2", honest) == {"alice": {}, "bob": {}}
    tampered = tmp_path / "tampered.db"
    shutil.copyfile(given, tampered)
    with sqlite3.connect(tampered) as db:
        db.executescript(
            "ALTER TABLE student RENAME TO student_real;"
            "CREATE VIEW student AS WITH RECURSIVE c(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM c WHERE i < 3) "
            "SELECT s.* FROM student_real s, c;"
        )
    with pytest.raises(ValueError, match="schema"):
        nbgrader_grade.returned_points(tampered, before, "a2", tmp_path)
    big = tmp_path / "big.db"
    shutil.copyfile(given, big)
    with open(big, "ab") as handle:
        handle.truncate(nbgrader_grade.GRADEBOOK_MAX_BYTES + 1)
    with pytest.raises(ValueError, match="bytes"):
        nbgrader_grade.returned_points(big, before, "a2", tmp_path)


@pytest.mark.parametrize("command", [["sandbox"], ["grade", "--help"], ["lecture", "--help"]])
def test_a_command_run_from_a_students_folder_imports_none_of_its_modules(tmp_path, command):
    """`python -m` puts the current folder first on sys.path: an instructor who runs a command from inside a
    student's folder must not import its `hetero/` or `numpy.py` into the grader's own process."""
    folder = tmp_path / "student"
    (folder / "hetero").mkdir(parents=True)
    (folder / "hetero" / "__init__.py").write_text('raise SystemExit("SHADOW-HETERO-RAN")\n')
    (folder / "numpy.py").write_text('raise SystemExit("SHADOW-NUMPY-RAN")\n')
    run = subprocess.run(
        [sys.executable, "-m", "autograder", *command], cwd=folder, capture_output=True, text=True, timeout=300
    )
    said = run.stdout + run.stderr
    assert "SHADOW" not in said and run.returncode == 0, f"the student's module ran in the grader: {said[-1500:]}"


def test_lecture_refuses_plots_inside_the_students_folder_even_through_a_link_loop(tmp_path, capsys):
    """Plots are copied into --plots by the grader: inside the student's folder, links planted there would steer
    those writes. A path whose links cannot be resolved (a loop) is refused too, not passed over."""
    from autograder.batch import lecture

    student = tmp_path / "student"
    student.mkdir()
    (student / "loop").symlink_to(student / "loop")
    for plots in (student / "plots", student / "loop" / "x"):
        with pytest.raises(SystemExit) as stopped:
            lecture.main(["01", "--impl", str(student), "--plots", str(plots)])
        assert stopped.value.code == 2 and "lies inside the student's folder" in capsys.readouterr().err, plots


def test_a_command_run_from_a_deleted_folder_runs(tmp_path):
    gone = tmp_path / "gone"
    gone.mkdir()
    run = subprocess.run(
        ["sh", "-c", f'cd "{gone}" && rmdir "{gone}" && exec "{sys.executable}" -m autograder --help'],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert run.returncode == 0 and "Traceback" not in run.stderr, run.stderr[-1500:]
