"""`python -m autograder grade-all`: batch grading, crash/timeout isolation, resumability, the gradebook.

The fast tests drive the batch runner with a stand-in grader executable (a small script that
behaves like `python -m autograder grade` for submissions named by what they should do: score,
crash, hang), so they check the runner's own logic in about a second. The slow test grades a real
batch (answer key, unfilled stubs, a wrong fixture, a damaged zip) with the real grader and checks
the scores against `grade_submission` in this process.
"""

from __future__ import annotations

import csv
import hashlib
import json
import os
import re
import shutil
import sqlite3
import sys
import textwrap
import time
import zipfile
from pathlib import Path

import pytest

from autograder.batch import bulk, cli, outputs, regrade, submissions
from autograder.batch.gradebook import Gradebook, exercise_scores
from autograder.core.manifest import EXERCISES, ROOT
from hetero.impl import load_module_from_path

SCORE_TOL = 1e-6  # scores are sums of a few dozen floats; anything above rounding is a real difference

STANDINS = load_module_from_path(Path(__file__).with_name("standins.py"), "_a2_standins")
FAKE_GRADER = textwrap.dedent('''\
    #!{python}
    """Stand-in for `python -m autograder grade SUB --out OUT` driven by the submission's name."""
    import hashlib, json, os, sys, time
    {public_phase}
    sub, out = sys.argv[4], sys.argv[6]
    name = os.path.basename(sub)
    with open(os.path.join(os.path.dirname(os.path.dirname(out)), "calls.txt"), "a") as fh:
        fh.write(name + "\\n")
    if "hang" in name:
        with open(os.path.join(os.path.dirname(out), "pid.txt"), "w") as fh:
            fh.write(str(os.getpid()))
        time.sleep(60)
    if "crash" in name:
        print("Traceback: grader exploded", file=sys.stderr)
        sys.exit(3)
    n_files = len(os.listdir(sub)) if os.path.isdir(sub) else 0
    tests = [{{"name": "ex01 public: ex01.f.case", "score": min(n_files, 6), "max_score": 6,
               "status": "passed" if n_files >= 6 else "failed", "visibility": "visible",
               "output": "ex01 said: expected 187.5 $/GB"}},
             {{"name": "ex02 hidden detail: ex02.g.secret", "score": 0, "max_score": 0,
               "status": "failed", "visibility": "after_due_date", "output": "inputs: SECRET-INPUT"}}]
    with open(out, "w") as fh:
        json.dump({{"score": float(min(n_files, 6)), "tests": tests}}, fh)
''')


@pytest.fixture()
def fake_python(tmp_path) -> str:
    path = tmp_path / "fake_grader.py"
    path.write_text(FAKE_GRADER.format(public_phase=STANDINS.PUBLIC_PHASE, python=sys.executable))
    path.chmod(0o755)
    return str(path)


def _folder(root: Path, name: str, n_files: int) -> Path:
    folder = root / name
    folder.mkdir(parents=True)
    for i in range(n_files):
        (folder / f"f{i}.py").write_text(f"x = {i}\n")
    return folder


def _calls(out: Path) -> list[str]:
    return sorted((out / "calls.txt").read_text().split())


def test_batch_isolates_crashes_and_timeouts_and_keeps_going(tmp_path, fake_python):
    subs = tmp_path / "subs"
    _folder(subs, "alice", 6)
    _folder(subs, "bob", 2)
    _folder(subs, "carol_crash", 6)
    _folder(subs, "dave_hang", 6)
    (subs / "erin.zip").write_bytes(b"not a zip")
    (subs / "readme.txt").write_text("ignored: neither a folder nor a zip")
    out = tmp_path / "graded"
    start = time.perf_counter()
    report = bulk.grade_all(subs, out, workers=4, timeout_s=3.0, progress=False, python=fake_python)
    wall = time.perf_counter() - start
    assert wall < 30, f"the hanging submission must be stopped at its 3 s limit; the batch took {wall:.1f} s"
    assert report.graded == ["alice", "bob", "carol_crash", "dave_hang", "erin"], report.graded
    assert report.failed == ["carol_crash", "dave_hang"], (
        f"expected the crash and the hang to fail, got {report.failed}"
    )
    scores = {r.student: r.score for r in report.records}
    assert abs(scores["alice"] - 6) < SCORE_TOL and abs(scores["bob"] - 2) < SCORE_TOL, scores
    for student in ("carol_crash", "dave_hang"):
        results = json.loads((out / student / "results.json").read_text())
        assert results["score"] == 0 and results["tests"][0]["visibility"] == "visible", results
        assert results["tests"][0]["status"] == "failed"
    assert (
        "time limit" in (out / "dave_hang" / "results.json").read_text()
        or "longer than" in (out / "dave_hang" / "results.json").read_text()
    )
    assert "grader exploded" in (out / "carol_crash" / "feedback_instructor.md").read_text(), (
        "the instructor's feedback must carry the grader's log tail for a crash"
    )
    hung_pid = int((out / "dave_hang" / "pid.txt").read_text())
    with pytest.raises(ProcessLookupError):
        os.kill(hung_pid, 0)  # the runaway grader was killed, not left behind


def test_feedback_respects_visibility(tmp_path, fake_python):
    subs = tmp_path / "subs"
    _folder(subs, "bob", 2)
    out = tmp_path / "graded"
    bulk.grade_all(subs, out, workers=1, progress=False, python=fake_python)
    student = (out / "bob" / "feedback.md").read_text()
    instructor = (out / "bob" / "feedback_instructor.md").read_text()
    assert "expected 187.5 $/GB" in student, "a visible failed test's message must reach the student"
    assert "SECRET-INPUT" not in student, "an after_due_date detail must not appear in the student copy"
    assert "SECRET-INPUT" in instructor and "after_due_date" in instructor
    assert "1 further test entry is not visible to students yet" in student


def test_resume_skips_unchanged_and_force_regrades(tmp_path, fake_python):
    subs = tmp_path / "subs"
    _folder(subs, "alice", 6)
    bob = _folder(subs, "bob", 2)
    out = tmp_path / "graded"
    first = bulk.grade_all(subs, out, workers=2, progress=False, python=fake_python)
    assert first.graded == ["alice", "bob"] and first.skipped == []
    shutil.rmtree(out / "alice")  # feedback files are rewritten from the gradebook on a skip
    second = bulk.grade_all(subs, out, workers=2, progress=False, python=fake_python)
    assert second.graded == [] and sorted(second.skipped) == ["alice", "bob"], second
    assert (out / "alice" / "results.json").is_file() and (out / "alice" / "feedback.md").is_file()
    (bob / "f2.py").write_text("x = 2\n")  # bob resubmits: a changed content hash
    third = bulk.grade_all(subs, out, workers=2, progress=False, python=fake_python)
    assert third.graded == ["bob"] and third.skipped == ["alice"], third
    assert {r.student: r.score for r in third.records}["bob"] == pytest.approx(3, abs=SCORE_TOL)
    forced = bulk.grade_all(subs, out, workers=2, force=True, progress=False, python=fake_python)
    assert forced.graded == ["alice", "bob"] and forced.skipped == []
    calls = _calls(out)
    assert calls.count("alice") == 2 and calls.count("bob") == 3, (
        f"alice graded by the first and the forced run, bob also after resubmitting; got {calls}"
    )
    with sqlite3.connect(out / "gradebook.sqlite") as db:
        assert db.execute("SELECT COUNT(*) FROM submissions").fetchone()[0] == 2
        assert db.execute("SELECT COUNT(*) FROM exercise_scores").fetchone()[0] == 2 * len(EXERCISES)


def test_a_changed_grader_regrades_unchanged_submissions(tmp_path, fake_python, monkeypatch):
    """A new hidden case, expected value or grader fix changes `grader_fingerprint`: every stored grading
    is stale, and an unchanged submission is graded again instead of keeping its old score."""
    subs = tmp_path / "subs"
    _folder(subs, "alice", 6)
    out = tmp_path / "graded"
    first = bulk.grade_all(subs, out, workers=1, progress=False, python=fake_python)
    assert first.graded == ["alice"], first
    again = bulk.grade_all(subs, out, workers=1, progress=False, python=fake_python)
    assert again.skipped == ["alice"] and again.graded == [], f"same grader, same files: skipped; got {again}"
    monkeypatch.setattr(bulk, "grader_fingerprint", lambda root=None: "another grader")
    changed = bulk.grade_all(subs, out, workers=1, progress=False, python=fake_python)
    assert changed.graded == ["alice"] and changed.skipped == [], (
        f"a grading made by a grader with other inputs must be redone; got {changed}"
    )
    assert _calls(out).count("alice") == 2, _calls(out)


def test_grader_fingerprint_follows_the_grading_inputs(tmp_path):
    """The fingerprint changes with a hidden case, an expected value or the hetero library, not with a
    fixture or a cache file."""
    for top in ("autograder/tests", "autograder/expected", "autograder/fixtures", "shared/hetero", "solutions/tests"):
        (tmp_path / top).mkdir(parents=True)
    (tmp_path / "autograder/tests/ex01_hidden.py").write_text("CASES = []\n")
    (tmp_path / "autograder/expected/ex01.json").write_text("{}\n")
    base = submissions.grader_fingerprint(tmp_path)
    assert submissions.grader_fingerprint(tmp_path) == base, "the fingerprint must be deterministic"
    (tmp_path / "autograder/fixtures/x.py").write_text("x = 1\n")
    (tmp_path / "shared/hetero/__pycache__").mkdir()
    (tmp_path / "shared/hetero/__pycache__/m.pyc").write_bytes(b"\0")
    assert submissions.grader_fingerprint(tmp_path) == base, "fixtures and caches do not decide a grade"
    for path in (
        "autograder/expected/ex01.json",
        "autograder/tests/ex01_hidden.py",
        "solutions/tests/public_ex01.py",
        "shared/hetero/roofline.py",
    ):
        before = submissions.grader_fingerprint(tmp_path)
        (tmp_path / path).write_text("changed = True\n")
        assert submissions.grader_fingerprint(tmp_path) != before, f"changing {path} must change the fingerprint"


def test_content_hash_tracks_content_not_noise(tmp_path):
    a = _folder(tmp_path, "a", 3)
    h = submissions.content_hash(a)
    (a / "__pycache__").mkdir()
    (a / "__pycache__" / "f0.cpython-311.pyc").write_bytes(b"\0")
    (a / ".DS_Store").write_bytes(b"\0")
    assert submissions.content_hash(a) == h, "byte-code caches and dot files must not change the hash"
    (a / "f0.py").write_text("x = 99\n")
    assert submissions.content_hash(a) != h
    (a / "f0.py").write_text("x = 0\n")
    (a / "f0.py").rename(a / "g0.py")
    assert submissions.content_hash(a) != h, "a renamed file is a different submission"


def test_discover_refuses_two_submissions_for_one_student_and_keeps_the_others(tmp_path):
    _folder(tmp_path, "alice", 1)
    (tmp_path / "alice.zip").write_bytes(b"")
    _folder(tmp_path, "bob", 1)
    subs, refused = submissions.discover(tmp_path)
    assert [s.student for s in subs] == ["bob"], "a clash between two entries must not stop the others"
    assert sorted(r.entry for r in refused) == ["alice", "alice.zip"], refused
    assert all("more than one submission" in r.reason for r in refused), refused


def test_gradebook_csv_and_summary(tmp_path):
    results = {
        "score": 7.5,
        "tests": [
            {"name": "ex01 public: ex01.a", "score": 6.0, "max_score": 6.0, "status": "passed"},
            {"name": "ex02 hidden: ex02.b", "score": 1.5, "max_score": 10.0, "status": "failed"},
        ],
    }
    assert exercise_scores(results)["ex02"] == (1.5, 10.0)
    with Gradebook(tmp_path / "gb.sqlite") as book:
        book.record("zoe", "subs/zoe", "h1", results, 1.0, False)
        book.record("amy", "subs/amy.zip", "h2", {"score": 0.0, "tests": []}, 2.0, True)
        assert book.known_hash("zoe") == "h1" and book.known_hash("nobody") is None
        rows = book.export_csv(tmp_path / "g.csv")
    assert rows == 2
    table = list(csv.DictReader((tmp_path / "g.csv").open()))
    assert [r["student"] for r in table] == ["amy", "zoe"]
    zoe = table[1]
    assert float(zoe["score"]) == pytest.approx(7.5) and float(zoe["ex02"]) == pytest.approx(1.5)
    assert table[0]["status"] == "grader_failed"
    with Gradebook(tmp_path / "gb.sqlite") as book:
        summary = outputs.summary_table(list(book.records()))
    ex01_line = next(line for line in summary.splitlines() if line.startswith("ex01"))
    # ex01: zoe 6/6, amy 0/6 -> mean 3.00; distribution: one at 0, one at full marks
    assert ex01_line.split()[2] == "3.00" and ex01_line.split()[-4:] == ["1", "0", "0", "1"], ex01_line
    assert "grader failed on 1: amy" in summary


def test_cli_writes_csv_and_prints_summary(tmp_path, fake_python, capsys):
    subs = tmp_path / "subs"
    _folder(subs, "alice", 6)
    code = cli.main(
        [
            str(subs),
            "--csv",
            str(tmp_path / "g.csv"),
            "--out",
            str(tmp_path / "graded"),
            "--workers",
            "1",
            "--no-progress",
            "--python",
            fake_python,
        ]
    )
    assert code == 0
    out = capsys.readouterr().out
    assert "ex10" in out and "total" in out and "wrote" in out
    assert (tmp_path / "g.csv").read_text().count("\n") == 2


def test_folder_entries_of_a_zip_are_accepted_silently(tmp_path, capsys):
    """`zip -r export.zip export/` stores an entry per folder (`export/`, `export/alice/` ...): they are
    not "entries not unpacked"; a hidden file still is."""
    archive = tmp_path / "export.zip"
    with zipfile.ZipFile(archive, "w") as zf:
        for folder in ("export/", "export/alice/", "export/alice/work/", "export/bob/"):
            zf.writestr(folder, "")
        zf.writestr("export/alice/work/f.py", "x = 1\n")
        zf.writestr("export/bob/f.py", "x = 2\n")
    dest = submissions.unpack_export(archive, tmp_path / "unpacked")
    assert (dest / "export" / "alice" / "work" / "f.py").read_text() == "x = 1\n"
    assert (dest / "export" / "bob" / "f.py").is_file()
    assert "not unpacked" not in capsys.readouterr().err, "folder entries are not skipped members"
    with zipfile.ZipFile(archive, "a") as zf:
        zf.writestr("export/bob/.secret", "hidden")
    submissions.unpack_export(archive, tmp_path / "again")
    assert "1 entries of export.zip were not unpacked" in capsys.readouterr().err


def test_moved_tests_compares_two_results_in_hundredths():
    old = {
        "tests": [
            {"name": "ex01 a", "score": 1.0},
            {"name": "ex01 b", "score": 0.1 + 0.2},
            {"name": "dup", "score": 1.0},
            {"name": "dup", "score": 2.0},
            {"name": "gone", "score": 3.0},
        ]
    }
    new = {
        "tests": [
            {"name": "ex01 a", "score": 0.5},
            {"name": "ex01 b", "score": 0.3},
            {"name": "dup", "score": 1.0},
            {"name": "dup", "score": 2.5},
            {"name": "added", "score": 0.0},
        ]
    }
    moved = regrade.moved_tests(old, new)
    assert moved == [
        regrade.MovedTest("ex01 a", 1.0, 0.5),
        regrade.MovedTest("dup #2", 2.0, 2.5),
        regrade.MovedTest("added", None, 0.0),
        regrade.MovedTest("gone", 3.0, None),
    ], moved
    assert regrade.moved_tests(old, old) == [], "a grading equal to itself moves nothing"
    only = regrade.only_exercises(
        {"score": 9.0, "tests": [{"name": "ex01 a", "score": 1.0}, {"name": "ex02 c", "score": 2.0}]}, ["ex02"]
    )
    assert only == {"score": 2.0, "tests": [{"name": "ex02 c", "score": 2.0}]}
    lines = regrade.format_diff(regrade.StudentDiff("amy", 7.0, 6.5, moved[:1], "graded", "graded"))
    assert lines == ["amy: 7.00 -> 6.50", "  ex01 a: 1.00 -> 0.50"], lines


def test_dry_run_prints_what_a_regrade_would_change_and_writes_nothing(tmp_path, fake_python, capsys):
    subs = tmp_path / "subs"
    _folder(subs, "alice", 6)
    _folder(subs, "bob", 2)
    out = subs / "graded"  # inside SUBMISSIONS: refused as a student by the real run and by the dry run
    first = bulk.grade_all(subs, out, workers=2, progress=False, python=fake_python)
    assert first.graded == ["alice", "bob"], first
    grader = Path(fake_python)  # the grader changes: bob's ex01 test now earns one point more
    grader.write_text(
        grader.read_text().replace(
            "n_files = len(os.listdir(sub)) if os.path.isdir(sub) else 0\n",
            "n_files = len(os.listdir(sub)) if os.path.isdir(sub) else 0\nn_files += name == 'bob'\n",
        )
    )
    _folder(subs, "carol", 1)  # new since the stored grading
    watched = [out / "gradebook.sqlite", out / "bob" / "results.json", out / "bob" / "feedback.md", out / "calls.txt"]
    before = [(p.read_bytes(), p.stat().st_mtime_ns) for p in watched]
    capsys.readouterr()
    code = cli.main(
        [str(subs), "--out", str(out), "--dry-run", "--workers", "2", "--no-progress", "--python", fake_python]
    )
    printed = capsys.readouterr().out
    assert code == 0, printed
    assert "bob: 2.00 -> 3.00\n  ex01 public: ex01.f.case: 2.00 -> 3.00\n" in printed, printed
    assert "carol: not graded before -> 1.00" in printed and "alice" not in printed, printed
    assert "refused graded" in printed, "the real --out inside SUBMISSIONS is not a student"
    assert "dry run: 1 of 3 students would change (their points), 1 graded for the first time; 0 more" in printed, (
        printed
    )
    assert [(p.read_bytes(), p.stat().st_mtime_ns) for p in watched] == before, "the dry run wrote into --out"
    assert not (out / "carol").exists()
    with Gradebook(out / "gradebook.sqlite") as book:
        assert book.version_results("bob")["score"] == 2.0 and book.version_results("bob", -2) is None
    assert cli.main([str(subs), "--out", str(out), "--dry-run", "--csv", str(tmp_path / "g.csv")]) == 2
    # The real regrade says whose grade moved and why, as the dry run did.
    capsys.readouterr()
    args = [str(subs), "--out", str(out), "--workers", "2", "--no-progress", "--python", fake_python, "--force"]
    assert cli.main(args) == 0
    printed = capsys.readouterr().out
    assert re.search(r"^  bob: 2\.00 / [\d.]+ -> 3\.00 / [\d.]+ \(same files, graded again\)$", printed, re.M), printed
    assert "grades that moved since each student's previous grading (1;" in printed and "  alice:" not in printed
    (subs / "carol" / "f2.py").write_text("x = 2\n")  # carol resubmits
    assert cli.main(args) == 0
    printed = capsys.readouterr().out
    assert re.search(r"^  carol: 1\.00 / [\d.]+ -> 2\.00 / [\d.]+ \(new files\)$", printed, re.M), printed


def test_points_change_and_rewording_are_told_apart():
    old = {
        "score": 3.0,
        "output": "Score: 3",
        "tests": [
            {"name": "ex01 a (public cases)", "score": 1.0, "output": "[passed] a"},
            {"name": "ex01 b (hidden cases)", "score": 2.0, "output": "hidden case 1 of 1: passed."},
            {"name": "grading environment (staff only)", "score": 0, "output": "grading took 3.1 s"},
        ],
    }

    def variant(**changes) -> dict:
        new = json.loads(json.dumps(old))
        for index, fields in changes.get("tests", {}).items():
            new["tests"][index].update(fields)
        new.update(changes.get("top", {}))
        return new

    timing = variant(tests={2: {"output": "grading took 9.9 s"}})
    assert not regrade.points_change(old, timing) and regrade.reworded(old, timing) == [], (
        "the staff-only entry's grading time is never a change"
    )
    text = variant(tests={1: {"output": "hidden case 1 of 1: passed (new words)."}})
    assert not regrade.points_change(old, text), "a changed feedback text is not a points change"
    assert regrade.reworded(old, text) == ["ex01 b (hidden cases): feedback text changed"]
    renamed = variant(tests={0: {"name": "ex01 a renamed (public cases)"}})
    assert not regrade.points_change(old, renamed), "a test renamed with its points changes no score"
    assert regrade.reworded(old, renamed) == [
        "ex01 a renamed (public cases): new test (1.00 points)",
        "ex01 a (public cases): test gone (1.00 points)",
    ]
    shifted = variant(tests={0: {"score": 2.0}, 1: {"score": 1.0}})
    assert regrade.points_change(old, shifted), "points moved between two tests of one exercise are a change"
    noise = variant(tests={0: {"score": 1.0 + 1e-9}}, top={"score": 3.0 + 1e-9})
    assert not regrade.points_change(old, noise), "float noise below a hundredth is not a change"
    assert regrade.points_change(old, variant(top={"score": 2.5}, tests={1: {"score": 1.5}}))


def test_dry_run_counts_only_students_whose_points_change(tmp_path, fake_python, capsys):
    """A class of 20 regraded by a changed grader: 5 students' points change, 13 only see new wording,
    2 see nothing new. "would change" is 5; the 13 are listed apart, each with what differs."""
    subs = tmp_path / "subs"
    points_move = [f"p{i:02d}" for i in range(5)]
    words_move = [f"w{i:02d}" for i in range(13)]
    for student in [*points_move, *words_move, "same0", "same1"]:
        _folder(subs, student, 3)
    out = tmp_path / "graded"
    first = bulk.grade_all(subs, out, workers=2, progress=False, python=fake_python)
    assert not first.failed, [(out / s / "feedback_instructor.md").read_text()[-1500:] for s in first.failed]
    grader = Path(fake_python)  # the new grader: more points for p*, other words for w*
    grader.write_text(
        grader.read_text()
        .replace(
            "n_files = len(os.listdir(sub)) if os.path.isdir(sub) else 0\n",
            "n_files = len(os.listdir(sub)) if os.path.isdir(sub) else 0\nn_files += name.startswith('p')\n",
        )
        .replace(
            '"output": "ex01 said: expected 187.5 $/GB"',
            '"output": "ex01 says: expected 187.5 $/GB" if name.startswith("w") else "ex01 said: expected 187.5 $/GB"',
        )
    )
    capsys.readouterr()
    assert (
        cli.main(
            [str(subs), "--out", str(out), "--dry-run", "--workers", "2", "--no-progress", "--python", fake_python]
        )
        == 0
    )
    printed = capsys.readouterr().out
    head, _, apart = printed.partition("same points, other feedback:")
    assert (
        "dry run: 5 of 20 students would change (their points), 0 graded for the first time; 13 more keep "
        "their points but their feedback differs" in head
    ), printed
    for student in points_move:
        assert f"{student}: 3.00 -> 4.00\n  ex01 public: ex01.f.case: 3.00 -> 4.00" in head, printed
    for student in words_move:
        assert f"  {student}: 3.00 -> 3.00\n    ex01 public: ex01.f.case: feedback text changed" in apart, apart
        assert f"{student}:" not in head, f"{student}'s points do not change: not among those who would change"
    assert "same0" not in printed and "same1" not in printed


# ---------------------------------------------------------------------------------------------
# The real grader on a small batch.


def _copy_exercises(src: Path, dest: Path) -> Path:
    dest.mkdir(parents=True)
    for e in EXERCISES:
        shutil.copyfile(src / e.filename, dest / e.filename)
    return dest


@pytest.mark.slow
def test_real_batch_matches_single_grader(tmp_path, graded):
    from autograder.authoring.wrong_fixtures import FIXTURES, materialise

    subs = tmp_path / "subs"
    _copy_exercises(ROOT / "solutions", subs / "key")
    _copy_exercises(ROOT / "assignments", subs / "stubs")
    fixture = FIXTURES[0]
    wrong = _copy_exercises(ROOT / "solutions", subs / "wrong")
    materialise(fixture.name, wrong)
    (subs / "damaged.zip").write_bytes(b"PK\x03\x04 cut off")
    out = tmp_path / "graded"
    report = bulk.grade_all(subs, out, progress=False)
    scores = {r.student: r for r in report.records}
    assert scores["key"].score == pytest.approx(100, abs=SCORE_TOL), "the answer key must score 100"
    assert scores["stubs"].score == pytest.approx(0, abs=SCORE_TOL), "the unfilled stubs must score 0"
    direct = graded(wrong)
    assert scores["wrong"].score == pytest.approx(float(direct["score"]), abs=SCORE_TOL), (
        f"bulk and single grading disagree on {fixture.name}"
    )
    assert scores["wrong"].score < 100 - SCORE_TOL, f"{fixture.name} must lose points"
    assert scores["damaged"].score == pytest.approx(0, abs=SCORE_TOL)
    assert (out / "damaged" / "results.json").is_file()
    again = bulk.grade_all(subs, out, progress=False)
    assert again.graded == [] and len(again.skipped) == 4, "an unchanged batch must be skipped entirely"


# ---------------------------------------------------------------------------------------------
# Names chosen by students never mix up two students' outputs, nor stop the batch (red team, round 2).

EX01_KEY = ROOT / "solutions" / "ex01_cost_per_gb.py"


def _ex01_submission(subs: Path, name: str, right: bool) -> None:
    """A one-exercise submission: the ex01 answer key (6/6), or an empty ex01 file (0/6)."""
    folder = subs / name
    folder.mkdir(parents=True)
    if right:
        shutil.copyfile(EX01_KEY, folder / EX01_KEY.name)
    else:
        (folder / EX01_KEY.name).write_text("")


def _run_grade_all(subs: Path, out: Path, csv_path: Path) -> int:
    argv = [
        str(subs),
        "--out",
        str(out),
        "--csv",
        str(csv_path),
        "--workers",
        "1",
        "--exercises",
        "ex01",
        "--no-progress",
    ]
    try:
        return cli.main(argv)
    except Exception as exc:  # the batch must end with its report, whatever the students' names
        pytest.fail(
            f"grade-all must finish with exit code 0 for {sorted(p.name for p in subs.iterdir())}, "
            f"it raised {type(exc).__name__}: {exc}"
        )


def _check_every_student_has_own_outputs(subs: Path, out: Path, csv_path: Path, expected: dict[str, float]) -> None:
    """Each student's own folder holds their own score, distinct from every other folder ignoring case;
    the gradebook and the CSV list every student with that same score."""
    folders: dict[str, list[str]] = {}  # student -> the folders whose feedback is addressed to them
    for folder in sorted(p for p in out.iterdir() if p.is_dir()):
        header = (folder / "feedback.md").read_text(encoding="utf-8").splitlines()[0]
        student = header.removeprefix("# Feedback for ").removesuffix(" (student copy)")
        folders.setdefault(student, []).append(folder.name)
    assert sorted(folders) == sorted(expected) and all(len(f) == 1 for f in folders.values()), (
        f"expected one output folder for each of {sorted(expected)}, found {folders}"
    )
    lowered = [f[0].casefold() for f in folders.values()]
    assert len(set(lowered)) == len(lowered), f"expected one output folder per student, even ignoring case: {folders}"
    with Gradebook(out / "gradebook.sqlite") as book:
        recorded = {r.student: (r.score, r.status) for r in book.records()}
    rows = {row["student"]: row for row in csv.DictReader(csv_path.open(encoding="utf-8"))}
    for student, score in expected.items():
        folder = out / folders[student][0]
        results = json.loads((folder / "results.json").read_text(encoding="utf-8"))
        assert results["score"] == pytest.approx(score, abs=SCORE_TOL), (
            f"expected {folder.name}/results.json to hold {student}'s score {score}, it says {results['score']}"
        )
        assert student in recorded, f"expected {student} in the gradebook, it holds {sorted(recorded)}"
        assert recorded[student] == (pytest.approx(score, abs=SCORE_TOL), "graded"), (
            f"expected the gradebook to say {student} {score} graded, it says {recorded[student]}"
        )
        assert student in rows, f"expected {student} in {csv_path.name}, it lists {sorted(rows)}"
        assert float(rows[student]["score"]) == pytest.approx(score, abs=SCORE_TOL), (
            f"expected {csv_path.name} to give {student} {score}, it gives {rows[student]['score']}"
        )


@pytest.mark.slow
def test_a_name_equal_to_a_hashed_folder_never_shares_it(tmp_path):
    """Alice and alice get hashed folders; a third student literally named like alice's hashed folder
    must neither overwrite alice's outputs nor be overwritten."""
    subs = tmp_path / "subs"
    lookalike = "alice-" + hashlib.sha256(b"alice").hexdigest()[:8]
    _ex01_submission(subs, "Alice", right=True)
    _ex01_submission(subs, "alice", right=True)
    _ex01_submission(subs, lookalike, right=False)
    out, csv_path = tmp_path / "graded", tmp_path / "grades.csv"
    code = _run_grade_all(subs, out, csv_path)
    assert code == 0, f"expected exit code 0, got {code}"
    _check_every_student_has_own_outputs(subs, out, csv_path, {"Alice": 6.0, "alice": 6.0, lookalike: 0.0})


@pytest.mark.slow
def test_a_student_named_like_the_csv_inside_out_is_graded_and_the_batch_goes_on(tmp_path):
    """--csv OUT/grades.csv and a student folder grades.csv: the student gets a folder of its own, the
    CSV is written, and the student after it (zed) is recorded, on the first run and on a rerun."""
    subs = tmp_path / "subs"
    _ex01_submission(subs, "bob", right=True)
    _ex01_submission(subs, "grades.csv", right=True)
    _ex01_submission(subs, "zed", right=False)
    out = tmp_path / "graded"
    csv_path = out / "grades.csv"
    expected = {"bob": 6.0, "grades.csv": 6.0, "zed": 0.0}
    for run in ("first run", "rerun with the CSV in place"):
        code = _run_grade_all(subs, out, csv_path)
        assert code == 0, f"{run}: expected exit code 0, got {code}"
        assert csv_path.is_file(), f"{run}: expected the CSV at {csv_path}, not a student's folder"
        _check_every_student_has_own_outputs(subs, out, csv_path, expected)


def test_an_error_writing_one_students_files_is_recorded_for_that_student_only(tmp_path, fake_python, monkeypatch):
    subs = tmp_path / "subs"
    for name in ("bob", "carol", "zed"):
        _folder(subs, name, 6)
    real_write = outputs.write_outputs

    def write_outputs(student_dir: Path, student: str, results: dict) -> None:
        if student_dir.name == "carol":
            raise FileExistsError(17, "File exists", str(student_dir))
        real_write(student_dir, student, results)

    monkeypatch.setattr(bulk, "write_outputs", write_outputs)
    try:
        report = bulk.grade_all(subs, tmp_path / "graded", workers=1, progress=False, python=fake_python)
    except Exception as exc:
        pytest.fail(f"expected the batch to go on past carol's unwritable folder, it raised {exc!r}")
    status = {r.student: (r.score, r.status) for r in report.records}
    assert status == {"bob": (6.0, "graded"), "carol": (0.0, "grader_failed"), "zed": (6.0, "graded")}, (
        f"expected carol recorded as a failure and bob and zed graded, got {status}"
    )
    with Gradebook(tmp_path / "graded" / "gradebook.sqlite") as book:
        said = json.dumps(book.results("carol"))
    assert "grade-all itself failed, not the submission" in said and "FileExistsError" in said, (
        f"expected carol's results to say the failure is grade-all's own, got {said}"
    )


def test_folders_stay_distinct_whatever_names_are_chosen(tmp_path):
    """Names built to hit each candidate folder of the others (every attempt, any case, ß/SS) and the CSV."""
    digest = hashlib.sha256(b"alice").hexdigest()
    names = [
        "alice",
        "Alice",
        "ALICE",
        f"alice-{digest[:8]}",
        f"ALICE-{digest[:8].upper()}",
        f"alice-{digest[:16]}-1",
        f"alice-{digest[:16]}-2",
        "straße",
        "STRASSE",
        "strasse",
        "grades.csv",
        "GRADES.CSV-" + hashlib.sha256(b"grades.csv").hexdigest()[:8],
    ]
    subs = tmp_path / "subs"
    for name in names:
        _folder(subs, name, 1)
    found, refused = submissions.discover(subs, outputs=["grades.csv"])
    assert not refused and sorted(s.student for s in found) == sorted(names), (found, refused)
    taken = submissions._name_keys(*submissions.RESERVED_NAMES, "grades.csv")
    for sub in found:
        keys = submissions._name_keys(sub.out_folder)
        assert not keys & taken, f"expected {sub.student}'s folder {sub.out_folder!r} to collide with nothing else"
        taken |= keys


def test_where_exercises_take_turns_each_grader_takes_one_before_its_time_limit(tmp_path, monkeypatch):
    """Without a cgroup that keeps children apart, exercises take turns (autograder/runtime/sandbox/turns.py).
    In a batch the whole grader process takes the turn, and its time limit starts once it has it: two graders
    of 2 s each, started together with a 4 s limit, run one after the other and both finish (had the wait
    counted, the second would have been stopped after 4 s), each told that it holds the turn."""
    import dataclasses
    import re
    import threading

    from autograder.batch import processes
    from autograder.runtime.sandbox import ladder, turns

    rung = dataclasses.replace(ladder.current(), groups=None)
    monkeypatch.setattr(ladder, "current", lambda: rung)
    assert not turns.side_by_side(rung)
    script = (
        "import os, time; t0 = time.monotonic(); time.sleep(2.0); "
        f"print('SPAN', t0, time.monotonic(), os.environ.get('{turns.HELD_ENV}'))"
    )
    ended: dict[int, processes.Ended] = {}
    barrier = threading.Barrier(2)

    def grade(i: int) -> None:
        barrier.wait()
        ended[i] = processes.run_grader([sys.executable, "-c", script], tmp_path, tmp_path / f"log{i}", timeout_s=4.0)

    threads = [threading.Thread(target=grade, args=(i,)) for i in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert all(e.finished for e in ended.values()), f"a grader was stopped at its 4 s limit: {ended}"
    spans = sorted(
        (float(a), float(b), held)
        for i in range(2)
        for a, b, held in re.findall(r"^SPAN (\S+) (\S+) (\S+)$", (tmp_path / f"log{i}").read_text(), re.M)
    )
    assert len(spans) == 2 and spans[0][1] <= spans[1][0], f"the two graders ran at the same time: {spans}"
    assert all(held == "1" for *_, held in spans), f"each grader must be told it holds the turn: {spans}"
