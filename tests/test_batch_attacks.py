"""Hostile submissions against the submission reader and the batch: nothing crashes, a broken part costs only itself.

Three layers, cheapest first:
- `autograder.runtime.intake.locate` on hostile trees and zips (no grading: which file is chosen, what is
  said, what reaches the disk): damaged zip members, zip bombs, deep trees, surrogate file names,
  near-miss names, malformed notebooks, files swapped after they were located.
- `grade-all` with a stand-in grader (a small script that behaves like `python -m autograder grade`
  according to the submission's name): escaping, refused names, CSV formulas, the per-submission
  timeout ending the grader's whole tree, resuming after a crash of the batch, Gradescope's export
  layout, resubmission history.
- The real grader on hostile submissions (ex01 and ex02 only, to stay cheap), and a batch of 20
  whose honest members must score exactly what they score alone.

Large fixtures (bombs, deep trees, damaged zips, names that are not UTF-8) are generated here; the
small ones live in autograder/fixtures/adversarial/batch_*.
"""

from __future__ import annotations

import csv
import json
import os
import shutil
import sqlite3
import subprocess
import sys
import tempfile
import textwrap
import time
import zipfile
from pathlib import Path

import pytest

from autograder.authoring.wrong_fixtures import for_exercise, source
from autograder.batch import bulk, cli, outputs, processes, submissions
from autograder.batch.gradebook import Gradebook
from autograder.core.manifest import BY_ID, ROOT
from autograder.core.safetext import clean_text, csv_cell
from autograder.runtime import grader, intake, zips
from autograder.runtime import results as res
from autograder.selftest.attacks import BOMB_COPIES, bomb_zip, damaged_zip, deep_tree, remove_deep, very_deep_tree
from hetero.impl import load_module_from_path

SOLUTIONS = ROOT / "solutions"
ADVERSARIAL = ROOT / "autograder" / "fixtures" / "adversarial"
EX01, EX02 = BY_ID["ex01"], BY_ID["ex02"]
GRADED = ["ex01", "ex02"]  # the real-grader tests grade only these two (cheap: about 4 s per submission)
SCORE_TOL = 1e-6  # scores are sums of rounded (1e-6) case points
# deeper than Python's recursion limit (1000) and, at 11 characters a level, than PATH_MAX (4096)
# 3 times over; the default 3000 levels cost 10 s of rmdir (3.5 ms each) on this machine
VERY_DEEP = {"levels": 1200, "name": "d" * 10}


def _key(ex) -> bytes:
    return (SOLUTIONS / ex.filename).read_bytes()


def _score(data: dict, ex_id: str) -> float:
    return sum(t["score"] for t in data["tests"] if t["name"].split(" ", 1)[0] == ex_id)


def _failures(data: dict) -> list[str]:
    return [t["name"] for t in data["tests"] if t["name"].startswith(("autograder failed", "Autograder run"))]


def _locate(submission: Path, tmp_path: Path) -> tuple[dict, list[str], Path]:
    staging = tmp_path / "staging"
    staging.mkdir(exist_ok=True)
    found, notes = grader.locate(submission, [EX01, EX02, BY_ID["ex03"], BY_ID["ex04"]], staging)
    return found, notes, staging


@pytest.fixture()
def deep_trees():
    """Makes deep trees (autograder.selftest.attacks.deep_tree) and always removes them: pytest's own remover
    of old temporary folders recurses once per level and would fail on them in a later session."""
    made: list[Path] = []

    def make(top: Path) -> Path:
        made.append(top)
        return deep_tree(top)

    yield make
    for top in made:
        if top.exists():
            remove_deep(top)


def _disk_bytes(folder: Path) -> int:
    return sum(p.stat().st_size for p in folder.rglob("*") if p.is_file())


# ---------------------------------------------------------------------------------------------
# The reader (no grading).


def test_damaged_zip_members_cost_only_their_exercise(tmp_path):
    found, notes, _ = _locate(damaged_zip(tmp_path / "damaged.zip"), tmp_path)
    assert found["ex01"].path is not None and found["ex01"].path.read_bytes() == _key(EX01), (
        "the intact member must be extracted byte for byte"
    )
    expected = {"ex02": "encrypted", "ex03": "Bad CRC", "ex04": "zip method 99"}
    for ex_id, words in expected.items():
        assert found[ex_id].path is None, f"{ex_id}: a damaged member must not be graded"
        assert words in found[ex_id].note, f"{ex_id}: the note must say why ({words!r}); got {found[ex_id].note!r}"
    assert notes == [], f"damage to single members is not a note about the whole zip: {notes}"


def test_zip_bomb_is_capped_while_extracting(tmp_path):
    archive = bomb_zip(tmp_path / "bomb.zip")
    assert archive.stat().st_size < 4 * 2**20, "the bomb must stay a small file (it is built compressed)"
    start = time.perf_counter()
    found, _, staging = _locate(archive, tmp_path)
    took = time.perf_counter() - start
    assert found["ex01"].path is None and "larger than 2 MiB" in found["ex01"].note, found["ex01"]
    assert f"{EX01.filename} occurs {BOMB_COPIES + 1} times" in found["ex01"].note, found["ex01"].note
    assert found["ex02"].path is not None, "the honest member next to the bomb must still be graded"
    on_disk = _disk_bytes(staging)
    assert on_disk <= 2 * intake.MAX_FILE_BYTES, (
        f"{on_disk} bytes left in staging: only the chosen copy of each exercise may be extracted, not all "
        f"{BOMB_COPIES + 1} (about {BOMB_COPIES * 3 + 256} MiB)"
    )
    # reading stops after MAX_FILE_BYTES + one chunk: far less than decompressing 556 MiB (seconds)
    assert took < 5.0, f"locating took {took:.1f} s: the bomb was decompressed past its cap"


def test_a_zip_with_too_many_entries_is_refused_with_a_note(tmp_path):
    archive = tmp_path / "many.zip"
    with zipfile.ZipFile(archive, "w") as zf:
        for i in range(zips.MAX_ZIP_MEMBERS + 1):
            zf.writestr(f"f{i}", b"")
        zf.writestr(EX01.filename, _key(EX01))
    found, notes, _ = _locate(archive, tmp_path)
    assert found == {} and len(notes) == 1 and f"more than the {zips.MAX_ZIP_MEMBERS}" in notes[0], notes


def test_a_zip_that_cannot_be_opened_is_a_note_not_a_crash(tmp_path):
    archive = tmp_path / "cut.zip"
    good = tmp_path / "good.zip"
    with zipfile.ZipFile(good, "w") as zf:
        zf.writestr(EX01.filename, _key(EX01))
    data = good.read_bytes()
    archive.write_bytes(data.replace(b"PK\x01\x02", b"XX\x01\x02"))  # the central directory no longer parses
    found, notes, _ = _locate(archive, tmp_path)
    assert found == {} and notes, "a damaged zip must be said in the notes"
    assert "The zip could not be opened (BadZipFile" in notes[0], notes


def test_a_zip_whose_utf8_names_are_not_utf8_is_a_note(tmp_path):
    archive = tmp_path / "names.zip"
    with zipfile.ZipFile(archive, "w") as zf:
        zf.writestr(zipfile.ZipInfo("ex01_cost_per_gb\u00e9.py"), b"x = 1\n")  # stored with the UTF-8 flag
    data = archive.read_bytes().replace("\u00e9".encode("utf-8"), b"\xff\xfe")  # now invalid UTF-8
    archive.write_bytes(data)
    found, notes, _ = _locate(archive, tmp_path)
    assert found == {} and len(notes) == 1 and "could not be opened" in notes[0], notes
    notes[0].encode("utf-8")


def test_a_deep_tree_is_searched_to_its_depth_cap(tmp_path, deep_trees):
    top = deep_trees(tmp_path / "deep")
    (top / EX01.filename).write_bytes(_key(EX01))
    found, notes, _ = _locate(top, tmp_path)
    digest = submissions.content_hash(top)
    assert found["ex01"].path is not None, "the exercise at the top must be graded despite the deep tree"
    assert "ex02" not in found, "a file below the depth cap must not be found"
    assert any(f"deeper than {intake.MAX_DEPTH} levels" in n for n in notes), notes
    assert len(digest) == 64


def test_a_tree_deeper_than_path_max_neither_stops_hashing_nor_reading(tmp_path):
    top = very_deep_tree(tmp_path / "sub", **VERY_DEEP)  # what earlier code could leave in a writable folder
    (top / EX01.filename).write_bytes(_key(EX01))
    try:
        digest = submissions.content_hash(top)
        found, _, _ = _locate(top, tmp_path)
    finally:
        bulk.remove_tree(top)
    assert len(digest) == 64 and found["ex01"].path is not None


def test_remove_tree_removes_what_no_recursive_remover_can(tmp_path):
    top = very_deep_tree(tmp_path / "very_deep", **VERY_DEEP)
    (top / "link").symlink_to(ROOT)  # must be removed as a link, never followed
    bulk.remove_tree(top)
    assert not top.exists(), "a tree deeper than the recursion limit and PATH_MAX, with a locked folder, must go"
    assert (ROOT / "README.md").is_file()


def test_surrogate_file_names_are_escaped_in_notes(tmp_path):
    top = tmp_path / "sub"
    odd = top / os.fsdecode(b"dir\xff")
    odd.mkdir(parents=True)
    (odd / EX01.filename).write_bytes(_key(EX01))
    (top / EX01.filename).write_bytes(_key(EX01))
    (top / os.fsdecode(b"ex02_kv\xfe.py")).write_text("x = 1\n")
    found, _, _ = _locate(top, tmp_path)
    note = found["ex01"].note + found["ex02"].note
    note.encode("utf-8")  # raises if a lone surrogate survived
    assert "dir\\udcff/" in note, f"the ignored copy must be named, escaped: {note!r}"
    assert "ex02_kv\\udcfe.py looks like it" in found["ex02"].note, found["ex02"].note


def test_near_miss_names_are_accepted_with_a_note_or_named(tmp_path):
    top = tmp_path / "sub"
    top.mkdir()
    (top / "ex01_cost_per_gb (1).py").write_bytes(_key(EX01))
    (top / "EX02_KV_Capacity.py").write_bytes(_key(EX02))
    (top / "ex03_cache_pool.py.txt").write_text("x = 1\n")
    (top / "ex4.py").write_text("x = 1\n")
    found, _, _ = _locate(top, tmp_path)
    for ex_id, shown in (
        ("ex01", "ex01_cost_per_gb (1).py"),
        ("ex02", "EX02_KV_Capacity.py"),
        ("ex03", "ex03_cache_pool.py.txt"),
    ):
        assert found[ex_id].path is not None and found[ex_id].path.name == BY_ID[ex_id].filename, found[ex_id]
        assert f"Graded {shown} as {BY_ID[ex_id].filename}" in found[ex_id].note, found[ex_id].note
    assert found["ex04"].path is None and "ex4.py looks like it" in found["ex04"].note, found["ex04"]
    (top / EX01.filename).write_text("x = 2\n")
    found, _, _ = _locate(top, tmp_path)
    assert found["ex01"].path.read_text() == "x = 2\n", "the exact name must win over a near miss"


def test_a_fifo_named_like_an_exercise_neither_hangs_nor_is_graded(tmp_path):
    top = tmp_path / "sub"
    top.mkdir()
    os.mkfifo(top / EX01.filename)  # opening it for reading would block forever
    (top / "deeper").mkdir()
    (top / "deeper" / EX01.filename).write_bytes(_key(EX01))
    found, _, _ = _locate(top, tmp_path)
    assert found["ex01"].shown == f"deeper/{EX01.filename}", found["ex01"]
    assert len(submissions.content_hash(top)) == 64


def test_files_are_snapshotted_before_any_code_runs(tmp_path):
    top = tmp_path / "sub"
    top.mkdir()
    (top / EX01.filename).write_bytes(_key(EX01))
    (top / EX02.filename).write_bytes(_key(EX02))
    found, _, _ = _locate(top, tmp_path)
    (top / EX02.filename).unlink()
    (top / EX02.filename).symlink_to(ROOT / "README.md")  # what code run for ex01 could do
    assert found["ex02"].path.read_bytes() == _key(EX02), "ex02 must be graded from the copy taken before grading"
    assert not intake.within(found["ex02"].path, top)


@pytest.mark.parametrize(
    "damage",
    [
        {"tags": 5},
        {"tags": "a2-exercise"},
        {"tags": [None, 3]},
        "metadata as text",
        None,
    ],
)
def test_malformed_cell_metadata_costs_nothing_when_the_marker_is_there(tmp_path, damage):
    from autograder.exports.notebooks import load_sources, marker_line, student_notebook
    from autograder.runtime.notebook_code import extract_code

    src = load_sources("ex01", with_hidden=False)
    notebook = student_notebook(src, code=_key(EX01).decode())
    for cell in notebook["cells"]:
        cell["metadata"] = damage
    notebook["metadata"] = {"a2": 5}
    path = tmp_path / f"{EX01.module}.ipynb"
    path.write_text(json.dumps(notebook))
    code = extract_code(path, "ex01")
    assert code.strip() == _key(EX01).decode().strip() and marker_line(EX01) not in code, (
        "with the marker line present, the exercise cell must be found whatever its metadata holds"
    )


@pytest.mark.parametrize("text", ["[" * 100000, '{"cells": [], "nbformat": {"x": 1}}', '{"cells": [5]}'])
def test_hostile_notebook_json_costs_only_its_exercise(tmp_path, text):
    top = tmp_path / "sub"
    top.mkdir()
    (top / f"{EX02.module}.ipynb").write_text(text)
    (top / EX01.filename).write_bytes(_key(EX01))
    found, _, _ = _locate(top, tmp_path)
    assert found["ex01"].path is not None
    assert found["ex02"].path is None and "could not be read as this exercise's notebook" in found["ex02"].note, found[
        "ex02"
    ]


def test_committed_bad_tags_notebook_costs_only_its_exercise(tmp_path):
    top = tmp_path / "sub"
    shutil.copytree(ADVERSARIAL / "batch_notebook_bad_tags", top)
    (top / EX01.filename).write_bytes(_key(EX01))
    found, _, _ = _locate(top, tmp_path)
    assert found["ex01"].path is not None
    assert found["ex02"].path is None and "could not be read as this exercise's notebook" in found["ex02"].note


# ---------------------------------------------------------------------------------------------
# The batch with a stand-in grader.

STANDINS = load_module_from_path(Path(__file__).with_name("standins.py"), "_a2_standins")
FAKE_GRADER = textwrap.dedent('''\
    #!{python}
    """Stand-in for `python -m autograder grade SUB --out OUT`, driven by the submission's name."""
    import hashlib, json, os, signal, subprocess, sys, time
    {public_phase}
    sub, out = sys.argv[4], sys.argv[6]
    name = os.fsdecode(os.path.basename(os.fsencode(sub)))
    here = os.path.dirname(out)
    with open(os.path.join(os.path.dirname(here), "calls.txt"), "a", errors="backslashreplace") as fh:
        fh.write(name + "\\n")
    if "spawn" in name:
        sleeper = [sys.executable, "-c", "import time; time.sleep(120)"]
        pids = [subprocess.Popen(sleeper).pid,                          # same group
                subprocess.Popen(sleeper, start_new_session=True).pid]  # own session, still a child
        if os.fork() == 0:                                              # an orphan in the same group
            if os.fork() == 0:
                with open(os.path.join(here, "orphan.txt"), "w") as fh:
                    fh.write(str(os.getpid()))
                time.sleep(120)
            os._exit(0)
        relay = ("import os, time\\n"
                 "while True:\\n"
                 "    if os.fork():\\n"
                 "        os._exit(0)\\n"
                 "    open(os.path.join({{here!r}}, 'relay.txt'), 'a').write(str(os.getpid()) + '\\\\n')\\n"
                 "    time.sleep(0.005)\\n").format(here=here)
        subprocess.Popen([sys.executable, "-c", relay])
        with open(os.path.join(here, "pids.txt"), "w") as fh:
            fh.write(" ".join(map(str, pids)))
        import tempfile
        scratch = tempfile.mkdtemp(prefix="staging-")
        open(os.path.join(scratch, "copy.py"), "w").write("x = 1")
        with open(os.path.join(here, "scratch.txt"), "w") as fh:
            fh.write(scratch)
        time.sleep(120)
    text = "plain"
    if "surrogate" in name:
        text = "odd \\udcff\\ud800 text"
    tests = [{{"name": "ex01 public: ex01.f " + text, "score": 6, "max_score": 6, "status": "passed",
               "visibility": "visible", "output": "printed " + text}}]
    with open(out, "w") as fh:
        json.dump({{"score": 6.0, "output": "summary " + text, "tests": tests}}, fh)
''')


@pytest.fixture()
def fake_python(tmp_path) -> str:
    path = tmp_path / "fake_grader.py"
    path.write_text(FAKE_GRADER.format(public_phase=STANDINS.PUBLIC_PHASE, python=sys.executable))
    path.chmod(0o755)
    return str(path)


def _folder(root: Path, name: str) -> Path:
    folder = root / name
    folder.mkdir(parents=True)
    (folder / "f.py").write_text("x = 1\n")
    return folder


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat", "rb") as fh:
            state = fh.read().rsplit(b")", 1)[1].split()[0]
    except OSError:
        return False
    return state not in (b"Z", b"X")


def test_surrogates_everywhere_and_reruns_never_stop_the_batch(tmp_path, fake_python):
    subs = tmp_path / "subs"
    _folder(subs, "alice_surrogate")
    _folder(subs, os.fsdecode(b"bob\xff"))
    _folder(subs, "carol")
    out = tmp_path / "graded"
    for force in (False, True, False):
        report = bulk.grade_all(subs, out, workers=2, progress=False, python=fake_python, force=force)
        assert sorted(r.student for r in report.records) == ["alice_surrogate", "bob\\udcff", "carol"], report
        assert report.failed == [], f"escaping is not a grader failure: {report.failed}"
    for student in ("alice_surrogate", submissions.folder_name("bob\\udcff")):
        for name in ("results.json", "feedback.md", "feedback_instructor.md"):
            (out / student / name).read_bytes().decode("utf-8")  # raises when not valid UTF-8
        results = json.loads((out / student / "results.json").read_text(encoding="utf-8"))
        json.dumps(results, ensure_ascii=False).encode("utf-8")  # no lone surrogate left, even escaped
    assert "odd \\udcff\\ud800 text" in (out / "alice_surrogate" / "feedback.md").read_text(encoding="utf-8")
    assert (
        cli.main(
            [str(subs), "--out", str(out), "--csv", str(tmp_path / "g.csv"), "--no-progress", "--python", fake_python]
        )
        == 0
    )
    rows = list(csv.DictReader((tmp_path / "g.csv").open(encoding="utf-8")))
    assert sorted(r["student"] for r in rows) == ["alice_surrogate", "bob\\udcff", "carol"]
    with Gradebook(out / "gradebook.sqlite") as book:
        table = outputs.summary_table(list(book.records()), ["ex01"])
    assert [line.split()[0] for line in table.splitlines()[2:4]] == ["ex01", "total"], table


def test_names_colliding_with_outputs_are_refused_and_formulas_neutralised(tmp_path, fake_python):
    subs = tmp_path / "subs"
    _folder(subs, "alice")
    formula = '=HYPERLINK("example.invalid","click")'
    _folder(subs, formula)
    for name in ("gradebook.sqlite.zip", "GRADEBOOK.SQLITE-wal.zip", f"{submissions.EXPORT_DIR}.zip"):
        with zipfile.ZipFile(subs / name, "w") as zf:
            zf.writestr("f.py", "x = 1\n")
    (subs / "+tab\there").mkdir()
    out = tmp_path / "graded"
    code = cli.main(
        [str(subs), "--out", str(out), "--csv", str(tmp_path / "g.csv"), "--no-progress", "--python", fake_python]
    )
    assert code == 0
    with Gradebook(out / "gradebook.sqlite") as book:
        students = sorted(r.student for r in book.records())
    assert students == sorted(["alice", formula, "+tab\there"]), students
    cells = [row[0] for row in csv.reader((tmp_path / "g.csv").open(encoding="utf-8"))][1:]
    assert sorted(cells) == sorted(["alice", "'" + formula, "'+tab\\there"]), (
        f"cells starting with = + - @ tab or CR must be neutralised with a leading apostrophe (a tab shown as \\t): "
        f"{cells}"
    )
    report = bulk.grade_all(subs, out, progress=False, python=fake_python)
    refused = sorted(r.entry for r in report.refused)
    assert refused == sorted(["gradebook.sqlite.zip", "GRADEBOOK.SQLITE-wal.zip", f"{submissions.EXPORT_DIR}.zip"]), (
        refused
    )
    assert all("collides with grade-all's own output" in r.reason for r in report.refused), report.refused
    assert (out / "gradebook.sqlite").is_file(), "the gradebook must not be replaced by a student's folder"
    listed = (out / "refused.txt").read_text(encoding="utf-8")
    assert all(f"{entry}\t" in listed for entry in refused), f"refused.txt must list every refused entry: {listed}"


def test_case_variants_are_two_students_with_two_folders(tmp_path, fake_python):
    subs = tmp_path / "subs"
    _folder(subs, "Alice")
    _folder(subs, "alice")
    report = bulk.grade_all(subs, tmp_path / "graded", progress=False, python=fake_python)
    assert report.graded == ["Alice", "alice"] and not report.refused, report
    folders = sorted(p.name for p in (tmp_path / "graded").iterdir() if p.is_dir())
    assert len(folders) == 2 and all(f.lower().startswith("alice-") for f in folders), (
        f"one output folder per student, distinct even where case is ignored: {folders}"
    )


def test_output_folder_inside_the_submissions_is_not_a_student(tmp_path, fake_python):
    subs = tmp_path / "subs"
    _folder(subs, "alice")
    report = bulk.grade_all(subs, subs / "graded", progress=False, python=fake_python)
    again = bulk.grade_all(subs, subs / "graded", progress=False, python=fake_python)
    assert [r.student for r in again.records] == ["alice"] and report.graded == ["alice"]
    assert [r.entry for r in again.refused] == ["graded"], again.refused


@pytest.mark.parametrize("chars", [csv_cell("=1+1"), csv_cell("-2"), csv_cell("@x"), csv_cell("\rx")])
def test_csv_cell_neutralises_every_formula_start(chars):
    assert chars.startswith("'"), chars


def test_clean_text_escapes_only_what_cannot_be_encoded():
    assert clean_text("plain é 中") == "plain é 中"
    assert clean_text("a\udcffb") == "a\\udcffb"


def test_timeout_ends_the_graders_whole_tree_and_says_so(tmp_path, fake_python):
    subs = tmp_path / "subs"
    _folder(subs, "spawn")
    _folder(subs, "alice")
    out = tmp_path / "graded"
    report = bulk.grade_all(subs, out, workers=2, timeout_s=4.0, progress=False, python=fake_python)
    assert report.failed == ["spawn"], report.failed
    scores = {r.student: r.score for r in report.records}
    assert abs(scores["alice"] - 6) < SCORE_TOL, "the other student must be graded normally"
    results = json.loads((out / "spawn" / "results.json").read_text())
    assert "longer than 4 s" in results["tests"][0]["output"] and "were killed" in results["tests"][0]["output"]
    pids = [int(p) for p in (out / "spawn" / "pids.txt").read_text().split()]
    pids.append(int((out / "spawn" / "orphan.txt").read_text()))
    time.sleep(0.5)
    survivors = [p for p in pids if _alive(p)]
    relay = [int(p) for p in (out / "spawn" / "relay.txt").read_text().split()]
    relay_alive = [p for p in relay[-5:] if _alive(p)]
    assert not survivors, f"children of the timed-out grader survived: {survivors}"
    assert not relay_alive, f"a relay re-forking in the grader's group survived: {relay_alive}"
    size = (out / "spawn" / "relay.txt").stat().st_size
    time.sleep(0.3)
    assert (out / "spawn" / "relay.txt").stat().st_size == size, "the relay is still forking"
    scratch = Path((out / "spawn" / "scratch.txt").read_text())
    assert not scratch.exists() and not scratch.parent.exists(), (
        f"the killed grader's temporary files ({scratch}) must be removed with its TMPDIR"
    )


@pytest.mark.skipif(sys.platform != "linux", reason="PR_SET_PDEATHSIG is Linux only")
def test_graders_die_with_a_killed_batch(tmp_path, fake_python, monkeypatch):
    subs = tmp_path / "subs"
    _folder(subs, "spawn")
    out = tmp_path / "graded"
    # A TMPDIR of its own: a batch that other tests start meanwhile sweeps /tmp's stale scratch folders,
    # this killed batch's included, before this test could see the sweep below do it.
    own_tmp = tmp_path / "tmp"
    own_tmp.mkdir()
    script = (
        f"from pathlib import Path\nfrom autograder.batch import bulk\n"
        f"bulk.grade_all(Path({str(subs)!r}), Path({str(out)!r}), progress=False, python={fake_python!r})\n"
    )
    batch = subprocess.Popen([sys.executable, "-c", script], cwd=str(ROOT), env={**os.environ, "TMPDIR": str(own_tmp)})
    monkeypatch.setattr(tempfile, "tempdir", str(own_tmp))
    pid_file = out / "spawn" / "pids.txt"
    deadline = time.monotonic() + 60
    while not (out / "spawn" / "scratch.txt").is_file() and time.monotonic() < deadline:
        time.sleep(0.1)
    assert pid_file.is_file(), "the stand-in grader did not start"
    graders = [
        pid
        for pid in processes.descendants(batch.pid)
        if " grade " in _cmdline(pid) and "/subs/spawn " in _cmdline(pid)
    ]
    batch.kill()
    assert len(graders) == 1, f"expected the one grader below the batch, found {graders}"
    (grader_pid,) = graders
    batch.wait()
    deadline = time.monotonic() + 10
    while _alive(grader_pid) and time.monotonic() < deadline:
        time.sleep(0.1)
    leftovers = [int(p) for p in pid_file.read_text().split()] + [int((out / "spawn" / "orphan.txt").read_text())]
    for pid in leftovers:  # the stand-in's own children: in a real grader they die with it (sandbox)
        if _alive(pid):
            os.kill(pid, 9)
    try:
        os.killpg(grader_pid, 9)
    except ProcessLookupError:
        pass
    assert not _alive(grader_pid), "the grader of a batch that was killed must die with it"
    scratch = Path((out / "spawn" / "scratch.txt").read_text()).parent
    assert scratch.name.startswith(f"{processes.SCRATCH_PREFIX}{batch.pid}-") and scratch.is_dir()
    assert processes.sweep_stale_scratch() >= 1 and not scratch.exists(), (
        "the next batch must remove the TMPDIR a killed batch left behind"
    )


def _cmdline(pid: int) -> str:
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as fh:
            return fh.read().replace(b"\0", b" ").decode(errors="replace").strip()
    except OSError:
        return ""


def test_a_crash_of_the_batch_itself_resumes_where_it_stopped(tmp_path, fake_python, monkeypatch):
    subs = tmp_path / "subs"
    for name in ("a", "b", "c", "d"):
        _folder(subs, name)
    out = tmp_path / "graded"
    real_record = bulk._record
    calls = []

    def crash_on_third(*args, **kwargs):
        calls.append(1)
        if len(calls) == 3:
            raise KeyboardInterrupt("the instructor's laptop went to sleep")
        return real_record(*args, **kwargs)

    monkeypatch.setattr(bulk, "_record", crash_on_third)
    with pytest.raises(KeyboardInterrupt):
        bulk.grade_all(subs, out, workers=1, progress=False, python=fake_python)
    monkeypatch.setattr(bulk, "_record", real_record)
    with Gradebook(out / "gradebook.sqlite") as book:
        done = {r.student for r in book.records()}
    assert len(done) == 2, f"the two gradings before the crash must be stored, got {done}"
    again = bulk.grade_all(subs, out, workers=1, progress=False, python=fake_python)
    assert sorted(again.skipped) == sorted(done) and sorted(again.graded) == sorted({"a", "b", "c", "d"} - done), again


def test_a_rerun_grades_again_what_the_grader_failed_on(tmp_path, fake_python):
    subs = tmp_path / "subs"
    _folder(subs, "alice")
    _folder(subs, "spawn")  # the stand-in hangs on it: a grader failure (time limit)
    out = tmp_path / "graded"
    first = bulk.grade_all(subs, out, timeout_s=2.0, progress=False, python=fake_python)
    again = bulk.grade_all(subs, out, timeout_s=2.0, progress=False, python=fake_python)
    assert first.failed == ["spawn"] and again.graded == ["spawn"] and again.skipped == ["alice"], again
    calls = (out / "calls.txt").read_text().split()
    assert calls.count("spawn") == 2 and calls.count("alice") == 1, calls
    with Gradebook(out / "gradebook.sqlite") as book:
        assert [v.status for v in book.history("spawn")] == ["grader_failed", "grader_failed"]


def test_resubmission_history_keeps_every_graded_version(tmp_path, fake_python):
    subs = tmp_path / "subs"
    alice = _folder(subs, "alice")
    out = tmp_path / "graded"
    bulk.grade_all(subs, out, progress=False, python=fake_python)
    (alice / "g.py").write_text("y = 2\n")
    bulk.grade_all(subs, out, progress=False, python=fake_python)
    bulk.grade_all(subs, out, progress=False, python=fake_python)  # unchanged: no new version
    with Gradebook(out / "gradebook.sqlite") as book:
        versions = book.history("alice")
        (latest,) = list(book.records())
        book.export_csv(tmp_path / "g.csv")
    assert len(versions) == 2 and versions[0].content_hash != versions[1].content_hash, versions
    assert latest.content_hash == versions[-1].content_hash and latest.versions == 2
    (row,) = list(csv.DictReader((tmp_path / "g.csv").open()))
    assert row["versions"] == "2" and row["content_hash"] == versions[-1].content_hash


GRADESCOPE_YML = textwrap.dedent("""\
    submission_111:
      :submitters:
      - :name: Alice Liddell
        :sid: '1001'
        :email: alice@example.edu
      :created_at: 2026-11-30 10:00:00.000000000 -08:00
      :score: !ruby/object:BigDecimal 18:0.6e1
      :status: processed
    submission_222:
      :submitters:
      - :name: Bob Duo
        :sid: '1002'
        :email: bob@example.edu
      - :name: =Carol Duo
        :sid: '1003'
        :email: carol@example.edu
      :created_at: 2026-11-30 11:00:00.000000000 -08:00
      :score: 0.0
    """)


def gradescope_export(path: Path, folders: dict[str, str], yml: str) -> Path:
    with zipfile.ZipFile(path, "w") as zf:
        zf.writestr("assignment_42_export/submission_metadata.yml", yml)
        for folder, text in folders.items():
            zf.writestr(f"assignment_42_export/{folder}/work/f.py", text)
    return path


def test_gradescope_export_zip_is_graded_by_student_with_history(tmp_path, fake_python):
    export = gradescope_export(
        tmp_path / "export.zip", {"submission_111": "x = 1\n", "submission_222": "x = 2\n"}, GRADESCOPE_YML
    )
    out = tmp_path / "graded"
    assert (
        cli.main(
            [str(export), "--out", str(out), "--csv", str(tmp_path / "g.csv"), "--no-progress", "--python", fake_python]
        )
        == 0
    )
    rows = {r["student"]: r for r in csv.DictReader((tmp_path / "g.csv").open())}
    assert sorted(rows) == ["alice@example.edu", "bob@example.edu+carol@example.edu"], rows
    assert rows["alice@example.edu"]["name"] == "Alice Liddell"
    assert rows["bob@example.edu+carol@example.edu"]["name"] == "Bob Duo, =Carol Duo", "names joined, text kept"
    assert (out / "alice@example.edu" / "feedback.md").read_text().startswith("# Feedback for Alice Liddell")
    resubmitted = GRADESCOPE_YML.replace("submission_111", "submission_333")
    export2 = gradescope_export(
        tmp_path / "export2.zip", {"submission_333": "x = 3\n", "submission_222": "x = 2\n"}, resubmitted
    )
    report = bulk.grade_all(export2, out, progress=False, python=fake_python)
    assert report.graded == ["alice@example.edu"] and report.skipped == ["bob@example.edu+carol@example.edu"], report
    with Gradebook(out / "gradebook.sqlite") as book:
        assert len(book.history("alice@example.edu")) == 2, "Alice's resubmission (a new folder) is her second version"


def test_unpacked_gradescope_export_and_flat_folder_of_zips(tmp_path, fake_python):
    export = gradescope_export(tmp_path / "export.zip", {"submission_111": "x = 1\n"}, GRADESCOPE_YML)
    unpacked = tmp_path / "unpacked"
    with zipfile.ZipFile(export) as zf:
        zf.extractall(unpacked)
    subs, refused = submissions.discover(unpacked)
    assert [(s.student, s.name) for s in subs] == [("alice@example.edu", "Alice Liddell")] and not refused
    flat = tmp_path / "flat"
    flat.mkdir()
    for student in ("dora", "eve"):
        with zipfile.ZipFile(flat / f"{student}.zip", "w") as zf:
            zf.writestr("f.py", "x = 1\n")
    subs, refused = submissions.discover(flat)
    assert [s.student for s in subs] == ["dora", "eve"] and not refused
    zipped = tmp_path / "class.zip"
    with zipfile.ZipFile(zipped, "w") as zf:
        for student in ("dora", "eve"):
            zf.write(flat / f"{student}.zip", f"class/{student}.zip")
    out = tmp_path / "graded"
    report = bulk.grade_all(zipped, out, progress=False, python=fake_python)
    assert report.graded == ["dora", "eve"] and not report.failed, "a zip of a folder of per-student zips"


# ---------------------------------------------------------------------------------------------
# The real grader.


def _submission(base: Path, name: str, files: dict[str, bytes]) -> Path:
    folder = base / name
    folder.mkdir(parents=True)
    for rel, data in files.items():
        (folder / rel).parent.mkdir(parents=True, exist_ok=True)
        (folder / rel).write_bytes(data)
    return folder


def _zip(base: Path, name: str, files: dict[str, bytes]) -> Path:
    base.mkdir(parents=True, exist_ok=True)
    with zipfile.ZipFile(base / name, "w", zipfile.ZIP_DEFLATED) as zf:
        for rel, data in files.items():
            zf.writestr(rel, data)
    return base / name


def test_real_grader_on_damaged_zip_and_bad_notebook(tmp_path):
    data = grader.grade_submission(damaged_zip(tmp_path / "damaged.zip"), exercises=GRADED)
    res.validate(data)
    assert not _failures(data), data["output"]
    assert abs(_score(data, "ex01") - EX01.points) < SCORE_TOL and _score(data, "ex02") == 0, data["output"]
    assert "encrypted" in data["output"]
    folder = tmp_path / "nb"
    shutil.copytree(ADVERSARIAL / "batch_notebook_bad_tags", folder)
    (folder / EX01.filename).write_bytes(_key(EX01))
    data = grader.grade_submission(folder, exercises=GRADED)
    assert not _failures(data) and abs(_score(data, "ex01") - EX01.points) < SCORE_TOL and _score(data, "ex02") == 0


@pytest.mark.slow
def test_real_batch_of_twenty_grades_the_honest_ones_as_alone(tmp_path, deep_trees, graded):
    subs = tmp_path / "subs"
    key = {EX01.filename: _key(EX01), EX02.filename: _key(EX02)}
    wrong = dict(key, **{EX02.filename: source(for_exercise("ex02")[0].name).encode("utf-8")})
    honest = {}
    for i in range(8):
        honest[f"key{i}"] = _submission(subs, f"key{i}", key)
    honest["wrong"] = _submission(subs, "wrong", wrong)
    honest["stubs"] = _submission(subs, "stubs", {f: (ROOT / "assignments" / f).read_bytes() for f in key})
    honest["zipped"] = _zip(subs, "zipped.zip", {f"hw/{k}": v for k, v in key.items()})
    honest["near_miss"] = _submission(
        subs, "near_miss", {"ex01_cost_per_gb (1).py": key[EX01.filename], EX02.filename: key[EX02.filename]}
    )
    surrogate = _submission(subs, "surrogate", {EX01.filename: key[EX01.filename]})
    shutil.copyfile(ADVERSARIAL / "batch_surrogate_message" / EX02.filename, surrogate / EX02.filename)
    _submission(subs, os.fsdecode(b"name\xff"), key)
    deep = _submission(subs, "deep", {EX01.filename: key[EX01.filename]})
    deep_trees(deep / "x")
    bomb_zip(subs / "bomb.zip")
    damaged_zip(subs / "damaged.zip")
    nb = _submission(subs, "notebook", {EX01.filename: key[EX01.filename]})
    shutil.copyfile(ADVERSARIAL / "batch_notebook_bad_tags" / f"{EX02.module}.ipynb", nb / f"{EX02.module}.ipynb")
    _submission(subs, '=HYPERLINK("example.invalid")', key)
    _zip(subs, "gradebook.sqlite.zip", key)
    assert len(list(subs.iterdir())) == 20
    out = tmp_path / "graded"
    report = bulk.grade_all(subs, out, workers=2, progress=False, exercises=GRADED)
    again = bulk.grade_all(subs, out, workers=2, progress=False, exercises=GRADED)
    scores = {r.student: r for r in report.records}
    assert len(scores) == 19 and [r.entry for r in report.refused] == ["gradebook.sqlite.zip"], report.refused
    assert report.failed == [], f"no hostile submission may make the grader fail: {report.failed}"
    for student, path in honest.items():
        alone = graded(path, GRADED)  # the eight copies of the key are one grading
        assert abs(scores[student].score - alone["score"]) < SCORE_TOL, (
            f"{student}: {scores[student].score} in the batch, {alone['score']} alone"
        )
    full = EX01.points + EX02.points
    assert abs(scores["key0"].score - full) < SCORE_TOL and scores["wrong"].score < full - SCORE_TOL
    deserved = {
        "surrogate": EX01.points,
        "name\\udcff": full,
        "deep": EX01.points,
        "bomb": EX02.points,
        "damaged": EX01.points,
        "notebook": EX01.points,
        '=HYPERLINK("example.invalid")': full,
        "near_miss": full,
    }
    for student, points in deserved.items():
        assert abs(scores[student].score - points) < SCORE_TOL, f"{student}: {scores[student].score}, deserved {points}"
    assert again.graded == [] and len(again.skipped) == 19, "an unchanged batch must be skipped entirely"
    with sqlite3.connect(out / "gradebook.sqlite") as db:
        assert db.execute("SELECT COUNT(*) FROM history").fetchone()[0] == 19


@pytest.mark.slow
def test_grade_all_children_see_neither_the_batch_outputs_nor_other_submissions(tmp_path):
    """A student whose ex02 looks for grader outputs everywhere (read_grader_outputs) is graded by
    grade-all after another student: the batch's output folder (results, feedback, gradebook) and the
    submissions folder are empty in the child's view, so nothing of them reaches its feedback."""
    from autograder.batch import bulk
    from autograder.core.manifest import BY_ID, ROOT

    subs = tmp_path / "submissions"
    (subs / "alice").mkdir(parents=True)
    (subs / "alice" / BY_ID["ex02"].filename).write_text(
        (ROOT / "solutions" / BY_ID["ex02"].filename).read_text() + "\n# SECRET-ALICE\n"
    )
    (subs / "zed").mkdir()
    attack = ROOT / "autograder" / "fixtures" / "adversarial" / "read_grader_outputs" / BY_ID["ex02"].filename
    (subs / "zed" / BY_ID["ex02"].filename).write_text(attack.read_text())
    out = tmp_path / "graded"
    bulk.grade_all(subs, out, workers=1, progress=False, exercises=["ex02"])
    zed = (out / "zed" / "results.json").read_text()
    assert "SECRET-ALICE" not in zed and "SQLite" not in zed and "READ-OK" not in zed, (
        "a child read another student's submission or the batch's outputs"
    )
    assert json.loads((out / "alice" / "results.json").read_text())["score"] == BY_ID["ex02"].points


@pytest.mark.skipif(sys.platform != "linux", reason="prctl(PR_SET_NAME) and /proc are Linux only")
def test_a_process_name_that_spoofs_a_parent_line_stays_in_the_tree():
    """A student's process may rename itself (prctl PR_SET_NAME, 15 bytes) to look like a `PPid:` line of
    /proc/PID/status; the kernel escapes the newline, so grade-all still finds it under its real parent."""
    code = (
        "import ctypes, sys, time; ctypes.CDLL(None).prctl(15, b'x\\nPPid:\\t1\\n', 0, 0, 0); "
        "print('renamed', flush=True); time.sleep(30)"
    )
    child = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)
    try:
        assert child.stdout is not None and child.stdout.readline().strip() == "renamed"
        assert child.pid in processes.descendants(os.getpid()), "the renamed child must stay below its real parent"
    finally:
        child.kill()
        child.wait()


def test_a_one_process_batch_grader_refuses_a_submission_swapped_for_a_link(tmp_path, monkeypatch):
    """`grade_one` (a cluster worker's grader, and grade_all(sealed=False)) runs `grade SUB --in-class`: an entry
    swapped for a link to the answer key after discovery is refused unread, as the sealed batch's public phase
    refuses it (a review found the one-process grader still followed it)."""
    klass = tmp_path / "class"
    klass.mkdir()
    (klass / "zmallory").symlink_to(ROOT / "solutions")
    seen: list[list[str]] = []

    def run_grader(argv, student_dir, log_path, timeout_s):
        seen.append(list(argv))
        log_path.write_text("")
        return processes.Ended(finished=True, leftovers=0, status=0, duration_s=0.0)

    monkeypatch.setattr(processes, "run_grader", run_grader)
    processes.grade_one(submissions.Submission("zmallory", klass / "zmallory"), tmp_path / "out", 60.0)
    assert "--in-class" in seen[0], seen
    data = grader.grade_submission(klass / "zmallory", tmp_path / "results.json", exercises=["ex01"], in_a_class=True)
    staff = json.dumps(data)  # the reason is in the staff-only entry; the student sees "the autograder failed"
    assert abs(data["score"]) < 1e-9 and "is a symbolic link in the class folder" in staff, staff[-800:]
