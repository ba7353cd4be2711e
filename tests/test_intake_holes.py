"""Holes a red-team pass found in the submission intake, each with the mechanism that closes it.

- Gradescope's roster (`submission_metadata.yml`) is read only from SUBMISSIONS itself or from its only
  entry named like Gradescope's export folder, never from a student's folder; a yml using YAML anchors
  or aliases (a "billion laughs") or larger than the cap is not parsed.
- Only stored and deflate zip members are read (zipfile bounds neither bzip2's nor lzma's output).
- A class or export zip with a member that cannot be written (a 300-byte name, a file named like a
  folder) skips that member and unpacks the rest.
- Files beneath a submission are opened through folder descriptors, each component without following
  links, and a batch's submission must not itself be a link; hard-linked files are not graded.
- Names longer than a file name can be are never exercise names, and a zip's directory is measured
  before zipfile parses it.

All in-process (intake.locate and the submissions functions), a few seconds in all.
"""

from __future__ import annotations

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


def test_a_roster_with_yaml_aliases_or_too_large_is_not_parsed(tmp_path, capsys):
    laughs = tmp_path / "laughs.yml"
    lines = ['a0: &a0 ["lol","lol","lol","lol","lol","lol","lol","lol","lol","lol"]']
    lines += [f"a{i}: &a{i} [{','.join([f'*a{i - 1}'] * 10)}]" for i in range(1, 5)]  # 10^5 nodes: 10^9 with 9
    lines += ['m: {":submitters": [{":name": *a4, ":email": "mallory"}]}']
    laughs.write_text("\n".join(lines) + "\n")
    assert submissions.read_metadata(laughs) == {}
    assert "anchors or aliases" in capsys.readouterr().err
    big = tmp_path / "big.yml"
    big.write_text(ROSTER + "#" * (submissions.METADATA_MAX_BYTES + 1) + "\n")
    assert submissions.read_metadata(big) == {}
    assert "larger than" in capsys.readouterr().err
    plain = tmp_path / "plain.yml"
    plain.write_text(ROSTER)
    assert submissions.read_metadata(plain)["a"] == ("Alice", "alice@uni.edu", "alice@uni.edu")


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
