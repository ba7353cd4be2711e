"""Holes a red-team pass found in the submission intake, each with the mechanism that closes it.

- Gradescope's roster (`submission_metadata.yml`) is read only from SUBMISSIONS itself or from its only
  entry named like Gradescope's export folder, never from a student's folder; a yml whose aliases
  expand it beyond a node cap (a "billion laughs") or larger than the byte cap is not read.
- Only stored and deflate zip members are read (zipfile bounds neither bzip2's nor lzma's output).
- A class or export zip with a member that cannot be written (a 300-byte name, a file named like a
  folder) skips that member and unpacks the rest.
- Files beneath a submission are opened through folder descriptors, each component without following
  links, and a batch's submission must not itself be a link; a hard-linked file owned by someone other
  than the submission's owner is not graded.
- Names longer than a file name can be are never exercise names, and a zip's directory is measured
  before zipfile parses it.

All in-process (intake.locate and the submissions functions), a few seconds in all.
"""

from __future__ import annotations

import os
import textwrap
import zipfile
from pathlib import Path

import pytest

from autograder.batch import submissions
from autograder.core.manifest import BY_ID, ROOT

SOLUTIONS = ROOT / "solutions"
EX01 = BY_ID["ex01"]

ROSTER = textwrap.dedent("""\
    a:
      :submitters:
      - :name: Alice
        :email: alice@uni.edu
    m:
      :submitters:
      - :name: Mallory
        :email: mallory@uni.edu
    """)


def _student_zip(path: Path) -> None:
    with zipfile.ZipFile(path, "w") as zf:
        zf.writestr(EX01.filename, "x = 1\n")


def test_a_students_folder_holding_a_roster_is_not_an_export_root(tmp_path):
    cls = tmp_path / "class"
    (cls / "mallory" / "a").mkdir(parents=True)
    (cls / "mallory" / "m").mkdir()
    (cls / "mallory" / submissions.METADATA_NAME).write_text(ROSTER)
    _student_zip(cls / "alice.zip")
    _student_zip(cls / "bob.zip")
    subs, refused = submissions.discover(cls)
    assert sorted(s.student for s in subs) == ["alice", "bob", "mallory"] and not refused, subs
    late = tmp_path / "late"  # mallory alone in a class folder: her folder is still only hers
    (late / "mallory@uni.edu" / "a").mkdir(parents=True)
    (late / "mallory@uni.edu" / "m").mkdir()
    (late / "mallory@uni.edu" / submissions.METADATA_NAME).write_text(ROSTER)
    assert submissions.gradescope_root(late) is None
    subs, _ = submissions.discover(late)
    assert [s.student for s in subs] == ["mallory@uni.edu"], subs
    export = tmp_path / "unpacked"  # Gradescope's own layout is still read
    (export / "assignment_42_export" / "a").mkdir(parents=True)
    (export / "assignment_42_export" / submissions.METADATA_NAME).write_text(ROSTER)
    (export / "__MACOSX").mkdir()
    assert submissions.gradescope_root(export) == export / "assignment_42_export"
    subs, _ = submissions.discover(export)
    assert [(s.student, s.name) for s in subs] == [("alice@uni.edu", "Alice")], subs


def test_an_export_folder_beside_other_entries_stops_with_an_error_naming_it(tmp_path):
    cls = tmp_path / "downloads"  # `unzip submissions.zip` in place: the zip stays beside its export folder
    export = cls / "assignment_123_export"
    (export / "a").mkdir(parents=True)
    (export / submissions.METADATA_NAME).write_text(ROSTER)
    _student_zip(cls / "submissions.zip")
    with pytest.raises(ValueError, match="assignment_123_export") as raised:  # grade-all reports it and stops
        submissions.discover(cls)
    assert "submissions.zip" in str(raised.value) and "pass the export folder itself" in str(raised.value)
    subs, _ = submissions.discover(export)  # the export folder itself is read as before
    assert [s.student for s in subs] == ["alice@uni.edu"], subs
    (cls / "submissions.zip").unlink()
    assert submissions.gradescope_root(cls) == export


def test_a_roster_expanding_too_far_or_too_large_is_not_parsed(tmp_path, capsys):
    import time

    laughs = tmp_path / "laughs.yml"
    lines = ['a0: &a0 ["lol","lol","lol","lol","lol","lol","lol","lol","lol","lol"]']
    lines += [f"a{i}: &a{i} [{','.join([f'*a{i - 1}'] * 10)}]" for i in range(1, 9)]  # 10^9 nodes written out
    lines += ['m: {":submitters": [{":name": *a8, ":email": "mallory"}]}']
    laughs.write_text("\n".join(lines) + "\n")
    start = time.perf_counter()
    assert submissions.read_metadata(laughs) == {}
    assert time.perf_counter() - start < 2.0, "the expanded size was not counted on the node graph"
    assert "expand it to more than" in capsys.readouterr().err
    itself = tmp_path / "itself.yml"
    itself.write_text('a: &r {":submitters": [*r]}\n')
    assert submissions.read_metadata(itself) == {}
    assert "holds it" in capsys.readouterr().err
    big = tmp_path / "big.yml"
    big.write_text(ROSTER + "#" * (submissions.METADATA_MAX_BYTES + 1) + "\n")
    assert submissions.read_metadata(big) == {}
    assert "larger than" in capsys.readouterr().err
    plain = tmp_path / "plain.yml"
    plain.write_text(ROSTER)
    assert submissions.read_metadata(plain)["a"] == ("Alice", "alice@uni.edu", "alice@uni.edu")


def test_a_roster_with_ruby_style_aliases_is_read(tmp_path):
    ruby = tmp_path / "ruby.yml"  # Ruby's YAML writer: `&1` on a Hash or Array met twice, `*1` after
    ruby.write_text(
        textwrap.dedent("""\
            a:
              :submitters: &1
              - :name: Alice
                :email: alice@uni.edu
                :sid: &2 "1234"
              :history: *1
            b:
              :submitters:
              - :name: Bob
                :email: bob@uni.edu
                :sid: *2
            """)
    )
    roster = submissions.read_metadata(ruby)
    assert roster == {
        "a": ("Alice", "alice@uni.edu", "alice@uni.edu"),
        "b": ("Bob", "bob@uni.edu", "bob@uni.edu"),
    }, roster


def _class_zip(path: Path, extra: dict[str, bytes]) -> Path:
    key = (SOLUTIONS / EX01.filename).read_bytes()
    with zipfile.ZipFile(path, "w") as zf:
        zf.writestr(f"class/alice/{EX01.filename}", key)
        zf.writestr(f"class/bob/{EX01.filename}", key)
        for name, data in extra.items():
            zf.writestr(name, data)
    return path


@pytest.mark.parametrize(
    "extra",
    [
        {"class/bob/" + "n" * 300 + ".py": b"# my notes\n"},  # ENAMETOOLONG
        {f"class/carol/x/{EX01.filename}": b"pass\n", "class/carol/x": b"a file named like the folder\n"},  # EISDIR
        {"class/carol/y": b"a file\n", f"class/carol/y/{EX01.filename}": b"pass\n"},  # ENOTDIR
    ],
    ids=["long-name", "file-over-folder", "folder-under-file"],
)
def test_a_class_zip_member_that_cannot_be_written_is_skipped_and_the_rest_unpacked(tmp_path, capsys, extra):
    archive = _class_zip(tmp_path / "class.zip", extra)
    out = tmp_path / "out"
    subs, refused = submissions.discover(archive, out)
    students = [s.student for s in subs]
    assert students[:2] == ["alice", "bob"] and not refused, students
    assert (out / submissions.EXPORT_DIR / "class" / "bob" / EX01.filename).is_file()
    assert "could not be written here" in capsys.readouterr().err


@pytest.mark.parametrize("code", ["ENOSPC", "EDQUOT", "EIO"])
def test_a_full_or_failing_disk_while_unpacking_stops_the_batch(tmp_path, monkeypatch, code):
    import builtins
    import errno

    archive = _class_zip(tmp_path / "class.zip", {})
    real_open = builtins.open

    def failing_open(file, mode="r", *args, **kwargs):
        if "w" in mode:
            raise OSError(getattr(errno, code), os.strerror(getattr(errno, code)), str(file))
        return real_open(file, mode, *args, **kwargs)

    monkeypatch.setattr(submissions, "open", failing_open, raising=False)
    with pytest.raises(OSError) as raised:
        submissions.discover(archive, tmp_path / "out")
    assert raised.value.errno == getattr(errno, code)


def test_zip_members_compressed_with_bzip2_or_lzma_are_not_read(tmp_path, capsys):
    from autograder.runtime import intake

    archive = tmp_path / "sub.zip"
    exercises = [BY_ID["ex01"], BY_ID["ex02"], BY_ID["ex03"]]
    keys = {ex.id: (SOLUTIONS / ex.filename).read_bytes() for ex in exercises}
    methods = {"ex01": zipfile.ZIP_BZIP2, "ex02": zipfile.ZIP_LZMA, "ex03": zipfile.ZIP_DEFLATED}
    with zipfile.ZipFile(archive, "w") as zf:
        for ex in exercises:
            zf.writestr(ex.filename, keys[ex.id], compress_type=methods[ex.id])
    staging = tmp_path / "staging"
    found, notes = intake.locate(archive, exercises, staging)
    for ex_id, method in (("ex01", "bzip2"), ("ex02", "lzma")):
        assert found[ex_id].path is None, f"{ex_id}: a {method} member must not be decompressed"
        assert method in found[ex_id].note and "(deflate) compression" in found[ex_id].note, found[ex_id].note
    assert found["ex03"].path is not None and found["ex03"].path.read_bytes() == keys["ex03"]
    assert notes == [], notes
    cls = tmp_path / "class.zip"  # a class zip's members: the same rule
    with zipfile.ZipFile(cls, "w") as zf:
        zf.writestr(f"class/alice/{EX01.filename}", keys["ex01"], compress_type=zipfile.ZIP_DEFLATED)
        zf.writestr(f"class/bob/{EX01.filename}", keys["ex01"], compress_type=zipfile.ZIP_BZIP2)
    dest = submissions.unpack_export(cls, tmp_path / "unpacked")
    assert (dest / "class" / "alice" / EX01.filename).is_file()
    assert not (dest / "class" / "bob" / EX01.filename).exists()
    assert "bzip2" in capsys.readouterr().err


def _many_entries_zip(path: Path, n: int, declared: int | None = None, zip64: bool = False) -> Path:
    """A zip whose central directory lists `n` entries (all pointing at one local header), its end record
    declaring `declared` of them (default: n), with zip64 end records if asked (as mk_manyentries.py)."""
    import struct
    import zlib

    data = b"x = 1\n"
    crc = zlib.crc32(data)
    local = struct.pack("<IHHHHHIIIHH", 0x04034B50, 20, 0, 0, 0, 0x21, crc, len(data), len(data), 1, 0) + b"a" + data
    records = []
    for i in range(n):
        name = b"%x" % i
        records.append(
            struct.pack(
                "<IHHHHHHIIIHHHHHII",
                0x02014B50,
                (3 << 8) | 20,
                20,
                0,
                0,
                0,
                0x21,
                crc,
                len(data),
                len(data),
                len(name),
                0,
                0,
                0,
                0,
                0o100644 << 16,
                0,
            )  # fmt: skip
            + name
        )
    directory = b"".join(records)
    count = n if declared is None else declared
    end = b""
    if zip64:
        at = len(local) + len(directory)
        end += struct.pack("<IQHHIIQQQQ", 0x06064B50, 44, 45, 45, 0, 0, count, count, len(directory), len(local))
        end += struct.pack("<IIQI", 0x07064B50, 0, at, 1)
        end += struct.pack("<IHHHHIIH", 0x06054B50, 0, 0, 0xFFFF, 0xFFFF, 0xFFFFFFFF, 0xFFFFFFFF, 0)
    else:
        end += struct.pack("<IHHHHIIH", 0x06054B50, 0, 0, count, count, len(directory), len(local), 0)
    path.write_bytes(local + directory + end)
    return path


@pytest.mark.parametrize("declared, zip64", [(None, False), (None, True), (1, False), (1, True)])
def test_a_zip_directory_too_long_is_refused_before_zipfile_parses_it(tmp_path, monkeypatch, declared, zip64):
    from autograder.runtime import intake, zips

    archive = _many_entries_zip(tmp_path / "many.zip", zips.MAX_ZIP_MEMBERS + 1, declared, zip64)
    with zipfile.ZipFile(archive) as zf:
        assert len(zf.infolist()) == zips.MAX_ZIP_MEMBERS + 1, "the fixture is a zip zipfile reads whole"

    def parsed(self):
        raise AssertionError("zipfile parsed the whole directory")

    monkeypatch.setattr(zipfile.ZipFile, "_RealGetContents", parsed)
    found, notes = intake.locate(archive, [EX01], tmp_path / "staging")
    assert found == {} and len(notes) == 1 and f"more than the {zips.MAX_ZIP_MEMBERS}" in notes[0], notes
    with pytest.raises(ValueError, match="more than the 5 "):
        monkeypatch.setattr(submissions, "EXPORT_MAX_MEMBERS", 5)
        submissions.unpack_export(archive, tmp_path / "unpacked")
    assert not submissions.zip_is_readable(archive)


@pytest.mark.parametrize("fixed", [False, True], ids=["zipfile-before-cve-2025-8291", "zipfile-after"])
@pytest.mark.parametrize("zip64", [False, True])
def test_the_directory_walk_runs_whichever_location_zipfiles_end_record_gives(tmp_path, monkeypatch, fixed, zip64):
    from autograder.runtime import zips

    archive = _many_entries_zip(tmp_path / "many.zip", 6, declared=1, zip64=zip64)  # the end record lies
    real = zips._END_RECORD

    def end_record(fh):  # CPython's fix: the zip64 end record's own offset, not the end record's
        end = list(real(fh))
        if fixed and end[0] == b"PK\x06\x06":
            end[9] -= zips._ZIP64_END_BYTES
        return end

    monkeypatch.setattr(zips, "_END_RECORD", end_record)
    with open(archive, "rb") as fh:
        assert zips.zip_directory_problem(fh, max_members=5) == "holds more than the 5 entries the grader opens"
        assert zips.zip_directory_problem(fh, max_members=6) == ""


def test_a_zip_opened_for_a_submission_is_closed_whatever_is_raised_while_it_is_read(tmp_path, monkeypatch):
    from autograder.runtime import intake

    archive = tmp_path / "sub.zip"
    _student_zip(archive)
    opened = []
    open_zip = intake._open_zip

    def recording_open_zip(fh):
        zf, problem = open_zip(fh)
        opened.append((fh, zf))
        return zf, problem

    def failing_candidates(zf, exercises):
        raise RuntimeError("a bug while listing the zip")

    monkeypatch.setattr(intake, "_open_zip", recording_open_zip)
    monkeypatch.setattr(intake, "_zip_candidates", failing_candidates)
    with pytest.raises(RuntimeError, match="a bug while listing"):
        intake.locate(archive, [EX01], tmp_path / "staging")
    [(fh, zf)] = opened
    assert fh.closed and zf is not None and zf.fp is None, "the zip and its file object were left open"


def test_names_longer_than_a_file_name_are_never_exercise_names(tmp_path):
    import time

    from autograder.runtime import intake

    archive = tmp_path / "spaces.zip"
    with zipfile.ZipFile(archive, "w", zipfile.ZIP_DEFLATED) as zf:
        zf.writestr("ex01" + " " * 65000 + ".py", b"")  # the copy-suffix pattern backtracked over the spaces
        zf.writestr(EX01.filename[:-3] + " " * 300 + ".py", b"x = 1\n")  # a near miss, but no file name
    start = time.perf_counter()
    found, notes = intake.locate(archive, [EX01], tmp_path / "staging")
    took = time.perf_counter() - start
    assert found == {} and notes == [], (found, notes)
    assert took < 1.0, f"reading a zip of two long names took {took:.1f} s"
    assert intake.match_name(EX01.filename[:-3] + " (1).py", [EX01]) is not None, "short near misses still match"


def test_a_folder_swapped_for_a_link_after_the_walk_is_not_followed(tmp_path, monkeypatch):
    from autograder.runtime import intake

    top = tmp_path / "sub"
    (top / "d").mkdir(parents=True)
    (top / "d" / EX01.filename).write_text("# the student's stub\n")
    key = SOLUTIONS / EX01.filename
    choose = intake._choose

    def swap_then_choose(candidates, ex):  # what renameat2(RENAME_EXCHANGE) does between walk and copy
        (top / "d").rename(top / ".d_orig")
        (top / "d").symlink_to(SOLUTIONS)
        return choose(candidates, ex)

    monkeypatch.setattr(intake, "_choose", swap_then_choose)
    found, _ = intake.locate(top, [EX01], tmp_path / "staging")
    staged = found["ex01"]
    assert staged.path is None or staged.path.read_bytes() != key.read_bytes(), "the answer key was staged"
    assert staged.path is None and "symbolic link" in staged.note, staged


def test_a_batch_never_grades_a_submission_that_is_a_link(tmp_path):
    from autograder.batch import processes
    from autograder.runtime import grader, intake

    cls = tmp_path / "class"
    cls.mkdir()
    (cls / "zmallory").symlink_to(SOLUTIONS)  # swapped in after discovery
    link = cls / "zmallory"
    command = processes._grade_command("python", submissions.Submission("zmallory", link))
    assert Path(command[4]) == cls.resolve() / "zmallory" and Path(command[4]).is_symlink(), command
    found, notes = intake.locate(link, [EX01], tmp_path / "staging", follow_link=False)
    assert found == {} and "symbolic link" in notes[0], notes
    assert "is a symbolic link in the class folder" in grader.refusal(link, in_a_class=True)
    found, _ = intake.locate(link, [EX01], tmp_path / "staging2")  # `grade LINK` by hand still follows it
    assert found["ex01"].path is not None


@pytest.mark.skipif(not hasattr(os, "geteuid") or os.geteuid() != 0, reason="chown to another owner needs root")
def test_a_hard_link_to_another_owners_file_is_not_graded(tmp_path):
    from autograder.runtime import intake

    secret = tmp_path / "secret_dir" / "shadow_standin"
    secret.parent.mkdir()
    secret.write_text("root:$6$SECRET-HASH-OUTSIDE-THE-SUBMISSION:19000:0:99999:7:::\n")
    top = tmp_path / "sub"
    top.mkdir()
    os.chown(secret, os.stat(top).st_uid + 4242, -1)  # the instructor's file, linked by a student
    os.link(secret, top / EX01.filename)
    found, _ = intake.locate(top, [EX01], tmp_path / "staging")
    assert found["ex01"].path is None and "hard link" in found["ex01"].note, found["ex01"]
    assert not any(b"SECRET" in p.read_bytes() for p in (tmp_path / "staging").rglob("*") if p.is_file())


def test_a_hard_link_owned_by_the_submissions_owner_is_graded(tmp_path):
    from autograder.runtime import intake

    snapshot = tmp_path / "yesterday" / "alice"  # `cp -al yesterday today`: one file, two names, one owner
    snapshot.mkdir(parents=True)
    (snapshot / EX01.filename).write_text("x = 1\n")
    top = tmp_path / "today" / "alice"
    top.mkdir(parents=True)
    os.link(snapshot / EX01.filename, top / EX01.filename)
    assert os.stat(top / EX01.filename).st_nlink == 2 and os.stat(top / EX01.filename).st_uid == os.stat(top).st_uid
    found, _ = intake.locate(top, [EX01], tmp_path / "staging")
    assert found["ex01"].path is not None and found["ex01"].path.read_text() == "x = 1\n", found["ex01"]


def test_skipped_zip_entries_and_hidden_class_entries_are_said(tmp_path):
    from autograder.runtime import intake

    archive = tmp_path / "sub.zip"
    with zipfile.ZipFile(archive, "w") as zf:
        zf.writestr("../" + EX01.filename, b"x = 1\n")
        zf.writestr("/abs/" + EX01.filename, b"x = 1\n")
        link = zipfile.ZipInfo("work/" + EX01.filename)
        link.external_attr = 0o120777 << 16
        zf.writestr(link, "/etc/passwd")
    found, notes = intake.locate(archive, [EX01], tmp_path / "staging")
    assert found == {}, found
    assert any("2 zip entries with a path starting at /" in n for n in notes), notes
    assert any("1 zip entries stored as symbolic links" in n for n in notes), notes
    cls = tmp_path / "class"
    (cls / ".mallory").mkdir(parents=True)
    (cls / "alice").mkdir()
    (cls / ".git").mkdir()
    (cls / "bob").symlink_to(cls / "alice")
    subs, refused = submissions.discover(cls)
    assert [s.student for s in subs] == ["alice"], subs
    assert sorted(r.entry for r in refused) == [".mallory", "bob"], refused


def test_refused_class_entries_are_named_on_one_line(tmp_path):
    cls = tmp_path / "class"
    (cls / ".mal\tlory").mkdir(parents=True)  # hidden, a tab in its name
    (cls / "alice").mkdir()
    (cls / "b\tob\nby.zip").symlink_to(cls / "alice")  # a link, a tab and a line break in its name
    subs, refused = submissions.discover(cls)
    assert [s.student for s in subs] == ["alice"], subs
    entries = sorted(r.entry for r in refused)
    assert entries == [".mal\\tlory", "b\\tob\\nby.zip"], entries


def test_entries_tools_leave_in_a_class_folder_are_passed_over_silently(tmp_path):
    cls = tmp_path / "class"
    (cls / "alice").mkdir(parents=True)
    _student_zip(cls / "bob.zip")
    (cls / "._bob.zip").write_bytes(b"\x00\x05\x16\x07AppleDouble")  # macOS on SMB or exFAT
    for name in (".snapshot", ".Trash-1000", ".TemporaryItems", ".AppleDouble", "._alice"):
        (cls / name).mkdir()
    (cls / ".DS_Store").write_bytes(b"Bud1")
    (cls / ".mallory").mkdir()  # still refused: a student's folder hidden
    subs, refused = submissions.discover(cls)
    assert [s.student for s in subs] == ["alice", "bob"], subs
    assert [r.entry for r in refused] == [".mallory"], refused


def _zip_of_the_key(path: Path, *exercises) -> None:
    with zipfile.ZipFile(path, "w") as zf:
        for ex in exercises:
            zf.write(SOLUTIONS / ex.filename, ex.filename)


def test_a_folder_holding_only_the_packing_tools_zip_is_graded_from_the_zip(tmp_path):
    """`python -m hetero.pack` writes submission.zip into the student's folder; a folder handed in with just
    that zip (and no exercise file beside it) is read from the zip, and the note says so."""
    from autograder.runtime import intake

    ex02 = BY_ID["ex02"]
    folder = tmp_path / "ivy"
    folder.mkdir()
    _zip_of_the_key(folder / "submission.zip", EX01, ex02)
    (folder / "notes.txt").write_text("my notes\n")
    found, notes = intake.locate(folder, [EX01, ex02], _staging(tmp_path, "a"))
    assert set(found) == {"ex01", "ex02"} and all(f.path is not None for f in found.values()), (found, notes)
    assert found["ex01"].path.read_bytes() == (SOLUTIONS / EX01.filename).read_bytes()
    assert any("no exercise file but the zip 'submission.zip': graded the exercise files" in n for n in notes), notes
    (folder / "loose").symlink_to(tmp_path)  # what the folder walk says is kept beside the zip's notes
    found, notes = intake.locate(folder, [EX01, ex02], _staging(tmp_path, "a2"))
    assert set(found) == {"ex01", "ex02"} and any("symbolic link" in n for n in notes), notes
    (folder / "loose").unlink()
    # Two zips, a linked zip, or an exercise file beside the zip: the folder is read as it is.
    _zip_of_the_key(folder / "old.zip", EX01)
    assert intake.locate(folder, [EX01], _staging(tmp_path, "b"))[0] == {}
    (folder / "old.zip").unlink()
    (folder / "submission.zip").rename(tmp_path / "elsewhere.zip")
    (folder / "submission.zip").symlink_to(tmp_path / "elsewhere.zip")
    assert intake.locate(folder, [EX01], _staging(tmp_path, "c"))[0] == {}
    (folder / "submission.zip").unlink()
    (tmp_path / "elsewhere.zip").rename(folder / "submission.zip")
    (folder / EX01.filename).write_text("x = 1\n")
    found, notes = intake.locate(folder, [EX01, ex02], _staging(tmp_path, "d"))
    assert set(found) == {"ex01"} and found["ex01"].path.read_text() == "x = 1\n", (found, notes)


def _staging(tmp_path: Path, name: str) -> Path:
    staging = tmp_path / f"staging-{name}"
    staging.mkdir()
    return staging
