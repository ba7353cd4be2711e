"""`python -m autograder pack`: the student's upload zip and its static missing/unfilled warnings."""

from __future__ import annotations

import re
import zipfile
from pathlib import Path

import pytest

from autograder.authoring.release import strip_solutions
from autograder.core.manifest import EXERCISES, ROOT
from autograder.packaging import pack

FILLED = '''"""{ex} answer."""


def answer(x: float) -> float:
    return 2.0 * x
'''


def _filled_folder(folder: Path) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    for e in EXERCISES:
        (folder / e.filename).write_text(FILLED.format(ex=e.id))
    return folder


def _released_stubs(folder: Path) -> Path:
    """The student release of every exercise file, made from the answer key as the release tool does."""
    folder.mkdir(parents=True, exist_ok=True)
    for e in EXERCISES:
        src = ROOT / "solutions" / e.filename
        (folder / e.filename).write_text(strip_solutions(src.read_text(encoding="utf-8"), e.id, str(src)))
    return folder


def _solution_functions(ex_id: str, filename: str) -> set[str]:
    """Functions whose body holds a solution block, read from the answer key's text."""
    names: set[str] = set()
    current = None
    for line in (ROOT / "solutions" / filename).read_text(encoding="utf-8").splitlines():
        match = re.match(r"\s*(?:async\s+)?def\s+(\w+)", line)
        if match:
            current = match.group(1)
        if line.strip() == "# BEGIN SOLUTION" and current:
            names.add(current)
    return names


def test_complete_folder_packs_every_file_flat_without_warning(tmp_path, capsys):
    folder = _filled_folder(tmp_path / "work")
    (folder / "notes.txt").write_text("not an exercise")
    out = tmp_path / "submission.zip"
    assert pack.main(["--from", str(folder), "--out", str(out)]) == 0
    with zipfile.ZipFile(out) as zf:
        names = sorted(zf.namelist())
        assert names == sorted(e.filename for e in EXERCISES), (
            f"expected exactly the 10 exercise files at the zip's root, got {names}"
        )
        assert zf.read(EXERCISES[0].filename).decode() == FILLED.format(ex=EXERCISES[0].id)
    err = capsys.readouterr().err
    assert "warning" not in err, f"a complete folder must pack without warnings, got: {err}"


def test_released_stubs_are_reported_unfilled_function_by_function(tmp_path):
    folder = _released_stubs(tmp_path / "assignments")
    for status in pack.inspect_folder(folder):
        expected = _solution_functions(status.exercise, status.filename)
        assert set(status.stubs) == expected, (
            f"{status.filename}: expected the stubs {sorted(expected)} (the functions with a solution "
            f"block), got {sorted(status.stubs)}"
        )
        assert not status.complete


def test_answer_key_is_reported_complete():
    for status in pack.inspect_folder(ROOT / "solutions"):
        assert status.complete, f"{status.filename}: the answer key was reported as {status.describe()}"


def test_missing_and_partly_filled_files_warn(tmp_path, capsys):
    folder = _filled_folder(tmp_path / "work")
    ex_missing, ex_partial = EXERCISES[0], EXERCISES[2]
    (folder / ex_missing.filename).unlink()
    (folder / ex_partial.filename).write_text(
        "class Pool:\n"
        "    def put(self):\n"
        f'        raise NotImplementedError("{ex_partial.id}: put")\n\n'
        "def done():\n    return 1\n\n"
        "def todo():\n"
        "    def inner():\n        return 0\n"
        f'    raise NotImplementedError("{ex_partial.id}: todo")\n'
    )
    out = tmp_path / "s.zip"
    assert pack.main(["--from", str(folder), "--out", str(out)]) == 0
    captured = capsys.readouterr()
    by_ex = {s.exercise: s for s in pack.inspect_folder(folder)}
    assert not by_ex[ex_missing.id].present
    assert by_ex[ex_partial.id].stubs == ("Pool.put", "todo"), by_ex[ex_partial.id].stubs
    for ex in (ex_missing, ex_partial):
        assert ex.id in captured.err, f"the warning must name {ex.id}; stderr was: {captured.err}"
    assert "MISSING" in captured.out and "UNFILLED" in captured.out
    with zipfile.ZipFile(out) as zf:
        assert ex_missing.filename not in zf.namelist()
        assert len(zf.namelist()) == len(EXERCISES) - 1


@pytest.mark.parametrize(
    ("source", "reason"),
    [
        ("def f(:\n    return 1\n", "does not parse (line 1"),
        ("import pandas_that_is_not_here as pd\n", "imports pandas_that_is_not_here, which is not installed"),
        ("from ex02_kv_capacity import kv_bytes_per_token\n", "imports ex02_kv_capacity, the file of ex02"),
        ("from . import helpers\n", "a relative import"),
    ],
)
def test_a_file_the_grader_cannot_import_is_refused_with_the_reason(tmp_path, capsys, source, reason):
    """Issue 31: pack said "ok" for a file importing a package that is not installed or another exercise
    file; both fail at grading. Now it says why and writes no zip."""
    folder = _filled_folder(tmp_path / "work")
    ex = EXERCISES[0]
    (folder / ex.filename).write_text(source + "\n" + (folder / ex.filename).read_text())
    out = tmp_path / "s.zip"
    assert pack.main(["--from", str(folder), "--out", str(out)]) == 1
    captured = capsys.readouterr()
    line = next(ln for ln in captured.out.splitlines() if ex.filename in ln)
    assert "REFUSED" in line and reason in line, line
    assert "move it out of the folder" in captured.err and not out.exists()


def test_an_optional_import_and_an_installed_extra_do_not_refuse(tmp_path, capsys):
    folder = _filled_folder(tmp_path / "work")
    ex = EXERCISES[0]
    extra = "try:\n    import pandas_that_is_not_here\nexcept ImportError:\n    pass\nimport pytest\n"
    (folder / ex.filename).write_text(extra + (folder / ex.filename).read_text())
    out = tmp_path / "s.zip"
    assert pack.main(["--from", str(folder), "--out", str(out)]) == 0, capsys.readouterr()
    line = next(ln for ln in capsys.readouterr().out.splitlines() if ex.filename in ln)
    assert line.split()[2] == "filled" and "(1 function;" in line and "imports pytest; the grader has only" in line, (
        line
    )


def test_other_not_implemented_errors_are_not_stubs(tmp_path):
    """Only the release stub's message ("exNN: ...") or a bare NotImplementedError counts as unfilled."""
    folder = _filled_folder(tmp_path / "work")
    ex = EXERCISES[3]
    (folder / ex.filename).write_text(
        "def f(mode):\n"
        "    if mode == 'gpu':\n"
        "        raise NotImplementedError('gpu mode is out of scope')\n"
        "    return 1\n"
        "def g():\n"
        "    raise NotImplementedError('ex99: g')\n"
    )
    status = pack.inspect_file(ex, folder)
    assert status.stubs == () and status.complete, status


def test_pack_never_imports_student_code(tmp_path):
    folder = _filled_folder(tmp_path / "work")
    sentinel = tmp_path / "imported"
    (folder / EXERCISES[4].filename).write_text(f"open({str(sentinel)!r}, 'w').write('x')\nraise SystemExit(3)\n")
    pack.pack(folder, tmp_path / "s.zip")
    assert not sentinel.exists(), "pack executed a student file; it must only parse it"


def test_empty_folder_is_an_error(tmp_path, capsys):
    (tmp_path / "empty").mkdir()
    assert pack.main(["--from", str(tmp_path / "empty"), "--out", str(tmp_path / "s.zip")]) == 1
    assert "no exercise files" in capsys.readouterr().err
    assert not (tmp_path / "s.zip").exists()


def test_missing_folder_is_an_error(tmp_path, capsys):
    assert pack.main(["--from", str(tmp_path / "nope"), "--out", str(tmp_path / "s.zip")]) == 1
    assert "no exercise files" in capsys.readouterr().err


def test_default_folder_is_the_assignments_found_upward_and_is_printed(tmp_path, monkeypatch, capsys):
    folder = _filled_folder(tmp_path / "course" / "assignments")
    (folder / "tests").mkdir()
    monkeypatch.chdir(folder / "tests")
    out = tmp_path / "s.zip"
    assert pack.main(["--out", str(out)]) == 0
    assert f"exercise files: {folder.resolve()}" in capsys.readouterr().out
    with zipfile.ZipFile(out) as zf:
        assert len(zf.namelist()) == len(EXERCISES)


def test_no_assignments_anywhere_up_is_an_error_not_another_copy(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    assert pack.main(["--out", str(tmp_path / "s.zip")]) == 1
    err = capsys.readouterr().err
    assert "no assignments/ folder" in err and str(tmp_path) in err, err
    assert not (tmp_path / "s.zip").exists()


def test_the_student_command_is_hetero_pack():
    from hetero import pack as student_pack

    assert pack.main is student_pack.main, "`python -m autograder pack` and `python -m hetero.pack` must be one tool"
