"""Reading a submission: which file is graded for each exercise, found safely in a folder or a zip.

`locate(submission, exercises, staging)` is the one entry point (the grader's `locate`). Rules:

- **Names.** The file of an exercise is `exNN_<name>.py` (or the notebook `exNN_<name>.ipynb`, graded
  through `autograder.runtime.notebook_code.extract_code`). A near miss is accepted with a note in the feedback:
  a case difference (`EX04_NIC_Line_Rate.py`), a copy suffix a browser or file manager adds
  (`ex04_nic_line_rate (1).py`, `... - Copy.py`, `... copy 2.py`) or a `.txt` appended by an editor
  (`ex04_nic_line_rate.py.txt`). The exact name wins over a near miss, a `.py` over a notebook, a
  shallower copy over a deeper one (the feedback names the copies ignored). A file that only looks
  like an exercise's (`ex4_nic.py`, `my_ex04_nic_line_rate.py`) is not graded, but the feedback
  names it as the likely intended file.
- **What is skipped.** Hidden entries (names starting with "."), `__MACOSX`, `__pycache__`,
  symbolic links, anything that is not a regular file, anything deeper than `MAX_DEPTH` folder
  levels, entries past the first `MAX_ENTRIES` of a folder tree; zip members with absolute paths
  or `..`. Each limit that was reached is said in the notes.
- **Caps.** A graded file larger than `MAX_FILE_BYTES` is not graded. A zip larger than
  `MAX_SUBMISSION_BYTES` or holding more than `MAX_ZIP_MEMBERS` entries is not opened. Only the one
  chosen member per exercise is extracted, and bytes are counted while they are read (never taken
  from the zip's declared sizes): at most `MAX_FILE_BYTES + 1` per member and `MAX_EXTRACT_BYTES`
  per submission reach the disk.
- **Damage costs only its exercise.** An encrypted member, a member with a bad CRC or an unknown
  compression method, a malformed notebook: that exercise scores 0 with a sentence saying why; the
  other exercises are graded normally. A zip that cannot be opened at all is said in the notes.
- **Snapshots.** Every chosen file is copied into `staging` (opened without following links) before
  any student code runs, so code graded for one exercise cannot swap the file of a later one.

Every name shown in the feedback goes through `autograder.core.safetext.one_line` (file names that are
not UTF-8, control characters, line breaks and bidi controls are escaped: one visible line, never a crash).
"""

from __future__ import annotations

import os
import re
import stat
import zipfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import IO

from autograder.core.manifest import Exercise
from autograder.core.safetext import clean_text, one_line

MAX_FILE_BYTES = 2 * 2**20  # an exercise file (or notebook) larger than this is not graded
MAX_SUBMISSION_BYTES = 256 * 2**20  # a zip larger than this is not opened
MAX_ZIP_MEMBERS = 20000  # a zip with more entries is not opened (its directory alone costs memory)
MAX_EXTRACT_BYTES = 32 * 2**20  # bytes extracted from one submission in total, counted while reading
MAX_DEPTH = 32  # folder levels below the submission's top that are searched
MAX_ENTRIES = 50000  # folder entries (files and folders) looked at in one folder submission
SKIPPED_DIRS = ("__MACOSX", "__pycache__")
READ_CHUNK_BYTES = 2**16
ZIP_METHODS = {
    zipfile.ZIP_STORED: "stored",
    zipfile.ZIP_DEFLATED: "deflate",
    zipfile.ZIP_BZIP2: "bzip2",
    zipfile.ZIP_LZMA: "lzma",
}
_COPY_SUFFIX = re.compile(r"(?:\s*\(\d{1,3}\)|\s*-\s*copy(?:\s*\(\d{1,3}\))?|\s+copy(?:\s+\d{1,3})?)$")
_EXERCISE_NUMBER = re.compile(r"^ex0*(\d{1,2})(?!\d)")
_EXACT, _NEAR = 0, 1


@dataclass(frozen=True)
class Found:
    """The file graded for one exercise."""

    path: Path | None  # the .py to run (None: nothing gradable)
    shown: str  # where it was in the submission, for feedback
    note: str = ""  # duplicates, notebook used, too large ...


@dataclass(frozen=True)
class _Candidate:
    shown: str  # path inside the submission, printable
    depth: int  # folder levels above the file inside the submission
    ex_id: str
    kind: str  # "py" or "ipynb"
    rank: int  # _EXACT or _NEAR
    source: Path | zipfile.ZipInfo


_Scan = tuple[list[_Candidate], dict[str, list[str]], list[str]]  # candidates, hinted names per exercise, notes


class _Budget:
    """Bytes still allowed to reach the disk from this submission."""

    def __init__(self, limit_bytes: int):
        self.left_bytes = limit_bytes


def join(*parts: str) -> str:
    return " ".join(p for p in parts if p)


def _ignored(part: str) -> bool:
    return part.startswith(".") or part in SKIPPED_DIRS


# ---------------------------------------------------------------------------------------------
# Names


def normalised_name(name: str) -> str:
    """The name with case, a copy suffix before the extension and an appended `.txt` taken away."""
    lowered = name.lower()
    if lowered.endswith((".py.txt", ".ipynb.txt")):
        lowered = lowered[:-4]
    for ext in (".py", ".ipynb"):
        if lowered.endswith(ext):
            return _COPY_SUFFIX.sub("", lowered[: -len(ext)]).rstrip() + ext
    return lowered


def match_name(name: str, exercises: Sequence[Exercise]) -> tuple[str, str, int] | None:
    """(exercise id, "py" | "ipynb", _EXACT | _NEAR) for a file name that is an exercise's, else None."""
    near = normalised_name(name)
    for ex in exercises:
        for kind, expected in (("py", ex.filename), ("ipynb", f"{ex.module}.ipynb")):
            if name == expected:
                return ex.id, kind, _EXACT
            if near == expected.lower():
                return ex.id, kind, _NEAR
    return None


def hinted_exercise(name: str, exercises: Sequence[Exercise]) -> str | None:
    """The exercise a file that is not graded seems meant for (`ex4_nic.py` -> ex04), else None."""
    lowered = name.lower()
    if lowered.endswith(".txt"):
        lowered = lowered[:-4]
    if not lowered.endswith((".py", ".ipynb")):
        return None
    number = _EXERCISE_NUMBER.match(lowered)
    for ex in exercises:
        if ex.module in lowered or (number and int(number.group(1)) == int(ex.id[2:])):
            return ex.id
    return None


# ---------------------------------------------------------------------------------------------
# Folders


def _folder_candidates(top: Path, exercises: Sequence[Exercise]) -> _Scan:
    """Candidates, hinted names per exercise and notes for a folder, walked without recursion."""
    candidates: list[_Candidate] = []
    hints: dict[str, list[str]] = {}
    too_deep = unreadable = 0
    seen = 0
    stack: list[tuple[Path, tuple[str, ...]]] = [(top, ())]
    while stack:
        folder, rel = stack.pop()
        try:
            with os.scandir(folder) as it:
                entries = []
                for entry in it:  # counted while listing: a folder of millions of entries is not read whole
                    seen += 1
                    if seen > MAX_ENTRIES:
                        stack.clear()
                        break
                    entries.append(entry)
        except OSError:
            unreadable += 1
            continue
        for entry in sorted(entries, key=lambda e: e.name, reverse=True):
            name = entry.name
            if _ignored(name):
                continue
            try:
                if entry.is_symlink():
                    continue
                is_dir = entry.is_dir(follow_symlinks=False)
                is_file = entry.is_file(follow_symlinks=False)
            except OSError:
                unreadable += 1
                continue
            if is_dir:
                if len(rel) + 1 > MAX_DEPTH:
                    too_deep += 1
                else:
                    stack.append((Path(entry.path), rel + (name,)))
                continue
            if not is_file:
                continue
            shown = one_line("/".join(rel + (name,)))
            _classify(name, shown, len(rel), Path(entry.path), exercises, candidates, hints)
    notes = []
    if seen > MAX_ENTRIES:
        notes.append(
            f"Your submission holds more than {MAX_ENTRIES} files and folders; only the first "
            f"{MAX_ENTRIES} were searched for exercise files."
        )
    if too_deep:
        notes.append(f"{too_deep} folder(s) deeper than {MAX_DEPTH} levels were not searched.")
    if unreadable:
        notes.append(f"{unreadable} entries of your submission could not be read and were skipped.")
    return candidates, hints, notes


def _classify(
    name: str,
    shown: str,
    depth: int,
    source: Path | zipfile.ZipInfo,
    exercises: Sequence[Exercise],
    candidates: list[_Candidate],
    hints: dict[str, list[str]],
) -> None:
    matched = match_name(name, exercises)
    if matched is not None:
        ex_id, kind, rank = matched
        candidates.append(_Candidate(shown, depth, ex_id, kind, rank, source))
        return
    hinted = hinted_exercise(name, exercises)
    if hinted is not None:
        hints.setdefault(hinted, []).append(shown)


def _copy_file(path: Path, target: Path, budget: _Budget) -> str:
    """Copy a regular file without following links; '' on success, else why it was not copied."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError as exc:
        return f"could not be opened ({clean_text(exc.strerror or type(exc).__name__)})"
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return "is not a regular file"
        with os.fdopen(fd, "rb", closefd=False) as src:
            return _write_capped(src, target, budget)
    except OSError as exc:
        return f"could not be read ({clean_text(exc.strerror or type(exc).__name__)})"
    finally:
        os.close(fd)


def _write_capped(src: IO[bytes], target: Path, budget: _Budget) -> str:
    """Copy at most MAX_FILE_BYTES + 1 bytes (and what the budget allows); '' when the whole file fits."""
    target.parent.mkdir(parents=True, exist_ok=True)
    written = 0
    with open(target, "wb") as dst:
        while True:
            chunk = src.read(READ_CHUNK_BYTES)
            if not chunk:
                return ""
            written += len(chunk)
            if written > MAX_FILE_BYTES:
                return f"is larger than {MAX_FILE_BYTES // 2**20} MiB and was not graded"
            if written > budget.left_bytes:
                return (
                    f"was not extracted: this submission reached the limit of "
                    f"{MAX_EXTRACT_BYTES // 2**20} MiB extracted in total"
                )
            budget.left_bytes -= len(chunk)
            dst.write(chunk)


# ---------------------------------------------------------------------------------------------
# Zips


def _zip_candidates(zf: zipfile.ZipFile, exercises: Sequence[Exercise]) -> _Scan:
    candidates: list[_Candidate] = []
    hints: dict[str, list[str]] = {}
    too_deep = 0
    for info in zf.infolist():
        name = PurePosixPath(info.filename.replace("\\", "/"))
        if info.is_dir() or name.is_absolute() or ".." in name.parts or not name.parts:
            continue
        if any(_ignored(part) for part in name.parts):
            continue
        if (info.external_attr >> 16) & 0o170000 == 0o120000:  # a symbolic link stored in the zip
            continue
        depth = len(name.parts) - 1
        if depth > MAX_DEPTH:
            too_deep += 1
            continue
        _classify(name.name, one_line(name.as_posix()), depth, info, exercises, candidates, hints)
    notes = [f"{too_deep} zip entries deeper than {MAX_DEPTH} folder levels were not searched."] if too_deep else []
    return candidates, hints, notes


def _extract_member(zf: zipfile.ZipFile, info: zipfile.ZipInfo, target: Path, budget: _Budget) -> str:
    """Extract one member with the caps; '' on success, else why it was not extracted."""
    if info.flag_bits & 0x1:
        return "is encrypted (password-protected) in the zip; zip your files again without a password"
    if info.compress_type not in ZIP_METHODS:
        return (
            f"is compressed with a method the grader cannot read (zip method {info.compress_type}); "
            "zip your files again with ordinary (deflate) compression"
        )
    try:
        with zf.open(info) as src:
            return _write_capped(src, target, budget)
    except Exception as exc:  # zipfile raises many types on damaged data (BadZipFile, zlib.error, EOFError ...)
        return (
            f"could not be read from the zip ({type(exc).__name__}: {clean_text(exc)}); "
            "the zip is damaged: zip your files again"
        )


def _open_zip(archive: Path) -> tuple[zipfile.ZipFile | None, str]:
    try:
        size = archive.stat().st_size
    except OSError as exc:
        return None, f"The submission could not be read ({clean_text(exc.strerror or exc)}); nothing was graded."
    if size > MAX_SUBMISSION_BYTES:
        return None, (
            f"The zip is {size / 2**20:.0f} MiB, more than the {MAX_SUBMISSION_BYTES // 2**20} MiB "
            "the grader opens; nothing was graded. Submit only the exercise files."
        )
    try:
        zf = zipfile.ZipFile(archive)
    except Exception as exc:  # a damaged or hostile central directory: many exception types
        return None, (
            f"The zip could not be opened ({type(exc).__name__}: {clean_text(exc)}); nothing was "
            "graded. Zip your files again and resubmit."
        )
    count = len(zf.infolist())
    if count > MAX_ZIP_MEMBERS:
        zf.close()
        return None, (
            f"The zip holds {count} entries, more than the {MAX_ZIP_MEMBERS} the grader opens; "
            "nothing was graded. Submit only the exercise files."
        )
    return zf, ""


# ---------------------------------------------------------------------------------------------
# Choosing and staging


def _choose(candidates: list[_Candidate], ex: Exercise) -> tuple[_Candidate, str]:
    """The candidate graded for `ex` and the note about the others (duplicates, near-miss name)."""
    ordered = sorted(candidates, key=lambda c: (c.rank, c.kind != "py", c.depth, c.shown))
    best = ordered[0]
    expected = ex.filename if best.kind == "py" else f"{ex.module}.ipynb"
    same = [c for c in ordered if c.rank == best.rank and c.kind == best.kind]
    note = ""
    if len(same) > 1:
        others = ", ".join(c.shown for c in same[1:])
        note = (
            f"{expected} occurs {len(same)} times in your submission; graded {best.shown} (the shallowest), "
            f"ignored {others}."
        )
    if best.rank == _NEAR:
        note = join(
            note, f"Graded {best.shown} as {expected}: the expected name is {expected}; please use it next time."
        )
    return best, note


def _stage(cand: _Candidate, ex: Exercise, zf: zipfile.ZipFile | None, staging: Path, budget: _Budget) -> Found:
    name = ex.filename if cand.kind == "py" else f"{ex.module}.ipynb"
    target = staging / "files" / ex.id / name
    if isinstance(cand.source, zipfile.ZipInfo):
        assert zf is not None
        problem = _extract_member(zf, cand.source, target, budget)
    else:
        problem = _copy_file(cand.source, target, budget)
    if problem:
        target.unlink(missing_ok=True)
        return Found(None, cand.shown, f"{cand.shown} {problem}.")
    return Found(target, cand.shown)


def from_notebook(found: Found, ex: Exercise, staging: Path) -> Found:
    """Grade a notebook submission through the code of its exercise cells (autograder.exports.notebooks)."""
    if found.path is None:
        return found
    from autograder.runtime.notebook_code import extract_code

    try:
        code = extract_code(found.path, ex.id)
    except Exception as exc:  # NotebookError, and whatever else a hostile JSON document provokes
        return Found(
            None,
            found.shown,
            join(found.note, f"{found.shown} could not be read as this exercise's notebook: {clean_text(exc)}"),
        )
    target = staging / "notebooks" / ex.filename
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(code, encoding="utf-8", errors="backslashreplace")
    return Found(target, found.shown, join(found.note, f"graded the code extracted from the notebook {found.shown}."))


def locate(submission: Path, exercises: Sequence[Exercise], staging: Path) -> tuple[dict[str, Found], list[str]]:
    """Exercise id -> Found (absent: nothing for it), and notes about the submission as a whole."""
    notes: list[str] = []
    zf: zipfile.ZipFile | None = None
    candidates: list[_Candidate] = []
    hints: dict[str, list[str]] = {}
    shown_name = one_line(submission.name)
    if submission.is_dir():
        candidates, hints, notes = _folder_candidates(submission, exercises)
    elif submission.is_file() and submission.suffix.lower() != ".ipynb" and zipfile.is_zipfile(submission):
        zf, problem = _open_zip(submission)
        if zf is None:
            notes.append(problem)
        else:
            candidates, hints, notes = _zip_candidates(zf, exercises)
    elif submission.is_file() and match_name(submission.name, exercises) is not None:
        _classify(submission.name, shown_name, 0, submission, exercises, candidates, hints)
    else:
        notes.append(f"The submission {shown_name!r} is neither a folder nor a zip file; nothing was graded.")
    budget = _Budget(MAX_EXTRACT_BYTES)
    found: dict[str, Found] = {}
    try:
        for ex in exercises:
            mine = [c for c in candidates if c.ex_id == ex.id]
            if not mine:
                if ex.id in hints:
                    likely = ", ".join(hints[ex.id][:3])
                    found[ex.id] = Found(
                        None,
                        likely,
                        f"{ex.filename} was not found in your submission; {likely} "
                        f"looks like it but was not graded: rename it to "
                        f"{ex.filename} and resubmit.",
                    )
                continue
            best, note = _choose(mine, ex)
            staged = _stage(best, ex, zf, staging, budget)
            staged = Found(staged.path, staged.shown, join(note, staged.note))
            found[ex.id] = from_notebook(staged, ex, staging) if best.kind == "ipynb" else staged
    finally:
        if zf is not None:
            zf.close()
    return found, notes
