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
  symbolic links, anything that is not a regular file, a file with more than one hard link whose owner
  is not the owner of the submission's top folder (another of its names may lie outside the submission:
  with Linux's protected_hardlinks a user can hard-link only files they own or may read and write, and
  the link keeps the file's owner, so a link to an instructor's file, the answer key, keeps the
  instructor as owner; a class folder an instructor built with `cp -al`, `rsync --link-dest` or a dedup
  tool keeps its owner on file and folder alike and is graded), anything deeper than `MAX_DEPTH` folder levels,
  entries past the first `MAX_ENTRIES` of a folder tree; zip members with absolute paths or `..`,
  and zip members stored as links. Each limit that was reached is said in the notes. A submission that is
  one file (not a folder or zip) is not checked for hard links: it is what was named, not found beneath.
- **No link is followed.** A folder is read through descriptors: the submission is opened once, and
  every folder and file beneath it is opened relative to its parent's descriptor with O_NOFOLLOW, so
  a folder swapped for a link while the submission is read is not entered. A zip is read from that
  same descriptor. In a batch (`follow_link=False`) the submission itself must not be a link either.
- **Caps.** A graded file larger than `MAX_FILE_BYTES` is not graded. A zip larger than
  `MAX_SUBMISSION_BYTES`, holding more than `zips.MAX_ZIP_MEMBERS` entries or a central directory larger than
  `zips.MAX_ZIP_DIRECTORY_BYTES` is not opened; the entries are counted from the end record and the records'
  fixed headers before zipfile builds its member list. A name longer than `MAX_NAME_BYTES` is no
  exercise's (and no pattern is run on it). Only the one
  chosen member per exercise is extracted, and bytes are counted while they are read (never taken
  from the zip's declared sizes): at most `MAX_FILE_BYTES + 1` per member and `MAX_EXTRACT_BYTES`
  per submission reach the disk.
- **Damage costs only its exercise.** An encrypted member, a member with a bad CRC or a compression
  method other than stored and deflate (zipfile bounds the output of a deflate read, not of a bzip2 or
  lzma one: a 2 KB bzip2 member can be gigabytes in one read), a malformed notebook: that exercise
  scores 0 with a sentence saying why (for bzip2 or lzma: zip again with the usual compression); the
  other exercises are graded normally. A zip that cannot be opened at all is said in the notes.
- **A folder holding the packing tool's zip.** A folder with no exercise file (nor a near-miss name) and
  exactly one `.zip` among its first `NESTED_ZIP_SCAN` entries is read from that zip, as a zip submission
  is (opened without following a link, not another owner's hard link; one level: a zip inside it is not
  opened); the folder walk's notes are kept beside the zip's.
- **Snapshots.** Every chosen file is copied into `staging` (opened as above) before
  any student code runs, so code graded for one exercise cannot swap the file of a later one.

Every name shown in the feedback goes through `autograder.core.safetext.one_line` (file names that are
not UTF-8, control characters, line breaks and bidi controls are escaped: one visible line, never a crash).
"""

from __future__ import annotations

import errno
import os
import re
import stat
import zipfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import IO

from autograder.core.manifest import Exercise
from autograder.core.safetext import one_line
from autograder.runtime import zips

MAX_FILE_BYTES = 2 * 2**20  # an exercise file (or notebook) larger than this is not graded
MAX_SUBMISSION_BYTES = 256 * 2**20  # a zip larger than this is not opened
MAX_NAME_BYTES = 255  # a longer file name (a zip's may be 65,535 bytes) is never an exercise's
MAX_EXTRACT_BYTES = 32 * 2**20  # bytes extracted from one submission in total, counted while reading
MAX_DEPTH = 32  # folder levels below the submission's top that are searched
MAX_ENTRIES = 50000  # folder entries (files and folders) looked at in one folder submission
READ_CHUNK_BYTES = 2**16
_COPY_SUFFIX = re.compile(r"(?:\s*\(\d{1,3}\)|\s*-\s*copy(?:\s*\(\d{1,3}\))?|\s+copy(?:\s+\d{1,3})?)$")
_EXERCISE_NUMBER = re.compile(r"^ex0*(\d{1,2})(?!\d)")
_EXACT, _NEAR = 0, 1
_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC  # a folder beneath the top
_FILE_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC  # a file beneath the top (a FIFO: no wait)


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
    source: tuple[str, ...] | zipfile.ZipInfo  # the path's parts under the submission's folder (() for a lone file)


_Scan = tuple[list[_Candidate], dict[str, list[str]], list[str]]  # candidates, hinted names per exercise, notes


class _Budget:
    """Bytes still allowed to reach the disk from this submission."""

    def __init__(self, limit_bytes: int):
        self.left_bytes = limit_bytes


def join(*parts: str) -> str:
    return " ".join(p for p in parts if p)


_ignored = zips.hidden


# ---------------------------------------------------------------------------------------------
# Names


def within(path: Path, folder: Path, *, unresolved: bool = False) -> bool:
    """Whether `path` (made or not) is `folder` or lies in it, links resolved; `unresolved` where a link cannot
    be resolved (a loop): False to pass such a path over, True where the answer guards a write."""
    try:
        path.resolve().relative_to(folder.resolve())
    except ValueError:
        return False
    except (OSError, RuntimeError):
        return unresolved
    return True


def too_long(name: str) -> bool:
    """Whether `name` is longer than a file name can be on common file systems (MAX_NAME_BYTES in UTF-8)."""
    return len(name) > MAX_NAME_BYTES or len(name.encode("utf-8", "surrogatepass")) > MAX_NAME_BYTES


def normalised_name(name: str) -> str:
    """The name with case, a copy suffix before the extension and an appended `.txt` taken away (a name
    longer than MAX_NAME_BYTES only lower-cased: the suffix pattern is never run on unbounded text)."""
    lowered = name.lower()
    if too_long(name):
        return lowered
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


def _folder_candidates(top_fd: int, exercises: Sequence[Exercise]) -> _Scan:
    """Candidates, hinted names per exercise and notes for the folder open as `top_fd`, walked without
    recursion through folder descriptors: each sub-folder is opened relative to its parent's descriptor
    without following a link (a folder swapped for a link while it is walked is skipped, never entered).
    Only the descriptors of the folders on the current path are open (at most MAX_DEPTH + 1)."""
    candidates: list[_Candidate] = []
    hints: dict[str, list[str]] = {}
    too_deep = unreadable = links = 0
    seen = 0
    # the open folders on the current path: (descriptor, path inside the submission, sub-folders still to
    # walk, last first: popped in name order)
    frames: list[tuple[int, tuple[str, ...], list[str]]] = []
    rel: tuple[str, ...] = ()
    fd = os.dup(top_fd)
    try:
        while True:
            subfolders: list[str] = []
            frames.append((fd, rel, subfolders))
            entries = []
            try:
                with os.scandir(fd) as it:
                    for entry in it:  # counted while listing: a folder of millions of entries is not read whole
                        seen += 1
                        if seen > MAX_ENTRIES:
                            break
                        entries.append(entry)
            except OSError:
                unreadable += 1
            for entry in sorted(entries, key=lambda e: e.name, reverse=True):
                name = entry.name
                if _ignored(name):
                    continue
                try:
                    if entry.is_symlink():
                        links += 1
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
                        subfolders.append(name)
                    continue
                if not is_file:
                    continue
                shown = one_line("/".join(rel + (name,)))
                _classify(name, shown, len(rel), rel + (name,), exercises, candidates, hints)
            if seen > MAX_ENTRIES:
                break
            following = None
            while frames and following is None:
                parent_fd, parent_rel, pending = frames[-1]
                if not pending:
                    os.close(parent_fd)
                    frames.pop()
                    continue
                name = pending.pop()
                try:
                    following = (os.open(name, _DIR_FLAGS, dir_fd=parent_fd), parent_rel + (name,))
                except OSError:  # ELOOP: swapped for a link since it was listed; or unreadable
                    unreadable += 1
            if following is None:
                break
            fd, rel = following
    finally:
        for frame_fd, _, _ in frames:
            os.close(frame_fd)
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
    if links:
        notes.append(f"{links} symbolic link(s) in your submission were skipped: the grader does not follow links.")
    return candidates, hints, notes


def _classify(
    name: str,
    shown: str,
    depth: int,
    source: tuple[str, ...] | zipfile.ZipInfo,
    exercises: Sequence[Exercise],
    candidates: list[_Candidate],
    hints: dict[str, list[str]],
) -> None:
    if too_long(name):  # no exercise's name, nor a hint of one
        return
    matched = match_name(name, exercises)
    if matched is not None:
        ex_id, kind, rank = matched
        candidates.append(_Candidate(shown, depth, ex_id, kind, rank, source))
        return
    hinted = hinted_exercise(name, exercises)
    if hinted is not None:
        hints.setdefault(hinted, []).append(shown)


def _open_beneath(top_fd: int, parts: tuple[str, ...]) -> int:
    """A new descriptor for the file at `parts` under the folder `top_fd`, each component opened relative
    to the one before without following a link (`()`: `top_fd` itself, a lone file, read from its start)."""
    if not parts:
        fd = os.dup(top_fd)
        os.lseek(fd, 0, os.SEEK_SET)
        return fd
    opened: list[int] = []
    try:
        folder = top_fd
        for part in parts[:-1]:
            try:
                folder = os.open(part, _DIR_FLAGS, dir_fd=folder)
            except NotADirectoryError:  # what O_DIRECTORY | O_NOFOLLOW says of a link: say it is one
                if stat.S_ISLNK(os.stat(part, dir_fd=folder, follow_symlinks=False).st_mode):
                    raise OSError(errno.ELOOP, os.strerror(errno.ELOOP)) from None
                raise
            opened.append(folder)
        return os.open(parts[-1], _FILE_FLAGS, dir_fd=folder)
    finally:
        for fd in opened:
            os.close(fd)


def _copy_file(top_fd: int, parts: tuple[str, ...], target: Path, budget: _Budget) -> str:
    """Copy a regular file from beneath `top_fd` without following links; '' on success, else why it was not
    copied."""
    try:
        fd = _open_beneath(top_fd, parts)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            return "is reached through a symbolic link, which the grader does not follow, and was not graded"
        return f"could not be opened ({one_line(exc.strerror or type(exc).__name__)})"
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            return "is not a regular file"
        if parts and info.st_nlink > 1 and info.st_uid != os.fstat(top_fd).st_uid:  # see `locate`'s rules
            return (
                "is a hard link (one file with more than one name) to a file of another owner, which is not "
                "graded: save it as an ordinary copy and resubmit"
            )
        with os.fdopen(fd, "rb", closefd=False) as src:
            return _write_capped(src, target, budget)
    except OSError as exc:
        return f"could not be read ({one_line(exc.strerror or type(exc).__name__)})"
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
    too_deep = unsafe = links = 0
    for info in zf.infolist():
        skip = zips.member_skip(info)
        if skip == "unsafe":
            unsafe += 1
        elif skip == "link":
            links += 1
        if skip:
            continue
        name = zips.member_path(info)
        depth = len(name.parts) - 1
        if depth > MAX_DEPTH:
            too_deep += 1
            continue
        _classify(name.name, one_line(name.as_posix()), depth, info, exercises, candidates, hints)
    notes = [f"{too_deep} zip entries deeper than {MAX_DEPTH} folder levels were not searched."] if too_deep else []
    if unsafe:
        notes.append(
            f"{unsafe} zip entries with a path starting at / or going up with '..' were skipped: "
            "zip your files from inside their folder."
        )
    if links:
        notes.append(f"{links} zip entries stored as symbolic links were skipped: the grader does not follow links.")
    return candidates, hints, notes


def _extract_member(zf: zipfile.ZipFile, info: zipfile.ZipInfo, target: Path, budget: _Budget) -> str:
    """Extract one member with the caps; '' on success, else why it was not extracted."""
    problem = zips.member_problem(info)
    if problem:
        return problem
    try:
        with zf.open(info) as src:
            return _write_capped(src, target, budget)
    except Exception as exc:  # zipfile raises many types on damaged data (BadZipFile, zlib.error, EOFError ...)
        return (
            f"could not be read from the zip ({type(exc).__name__}: {one_line(exc)}); "
            "the zip is damaged: zip your files again"
        )


def _open_zip(fh: IO[bytes]) -> tuple[zipfile.ZipFile | None, str]:
    try:
        size = os.fstat(fh.fileno()).st_size
    except OSError as exc:
        return None, f"The submission could not be read ({one_line(exc.strerror or exc)}); nothing was graded."
    if size > MAX_SUBMISSION_BYTES:
        return None, (
            f"The zip is {size / 2**20:.0f} MiB, more than the {MAX_SUBMISSION_BYTES // 2**20} MiB "
            "the grader opens; nothing was graded. Submit only the exercise files."
        )
    try:
        return zips.open_zip(fh), ""
    except zips.ZipRefused as exc:
        return None, f"The zip {exc}; nothing was graded. Submit only the exercise files."
    except Exception as exc:  # a damaged or hostile central directory: many exception types
        return None, (
            f"The zip could not be opened ({type(exc).__name__}: {one_line(exc)}); nothing was "
            "graded. Zip your files again and resubmit."
        )


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


def _stage(
    cand: _Candidate, ex: Exercise, zf: zipfile.ZipFile | None, top_fd: int, staging: Path, budget: _Budget
) -> Found:
    name = ex.filename if cand.kind == "py" else f"{ex.module}.ipynb"
    target = staging / "files" / ex.id / name
    if isinstance(cand.source, zipfile.ZipInfo):
        assert zf is not None
        problem = _extract_member(zf, cand.source, target, budget)
    else:
        problem = _copy_file(top_fd, cand.source, target, budget)
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
            join(found.note, f"{found.shown} could not be read as this exercise's notebook: {one_line(exc)}"),
        )
    target = staging / "notebooks" / ex.filename
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(code, encoding="utf-8", errors="backslashreplace")
    return Found(target, found.shown, join(found.note, f"graded the code extracted from the notebook {found.shown}."))


def locate(
    submission: Path, exercises: Sequence[Exercise], staging: Path, *, follow_link: bool = True
) -> tuple[dict[str, Found], list[str]]:
    """Exercise id -> Found (absent: nothing for it), and notes about the submission as a whole.

    `follow_link=False` (a batch: the submission is an entry of the class folder): a submission that is
    itself a symbolic link is not read. Links beneath the submission are never followed.
    """
    shown_name = one_line(submission.name)
    try:
        top_fd = os.open(submission, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC | (0 if follow_link else os.O_NOFOLLOW))
    except OSError as exc:
        if exc.errno == errno.ELOOP and not follow_link:
            return {}, [
                f"The submission {shown_name!r} is a symbolic link, which the grader does not follow; nothing was graded."
            ]
        return {}, [f"The submission could not be read ({one_line(exc.strerror or exc)}); nothing was graded."]
    try:
        return _locate_open(top_fd, shown_name, submission.name, exercises, staging)
    finally:
        os.close(top_fd)


NESTED_ZIP_SCAN = 64  # entries of a folder without exercise files looked at for a single zip inside it


def _only_zip(top_fd: int) -> str | None:
    """The name of the one zip file (no link) directly in the folder open as `top_fd` when it holds exactly
    one and at most NESTED_ZIP_SCAN entries; else None."""
    zips: list[str] = []
    try:
        with os.scandir(top_fd) as it:
            for n, entry in enumerate(it):
                if n >= NESTED_ZIP_SCAN:
                    return None
                if entry.name.lower().endswith(".zip") and not _ignored(entry.name):
                    if entry.is_file(follow_symlinks=False):
                        zips.append(entry.name)
    except OSError:
        return None
    return zips[0] if len(zips) == 1 else None


def _inner_zip(
    top_fd: int, name: str, exercises: Sequence[Exercise], staging: Path
) -> tuple[dict[str, Found], list[str]]:
    """`locate` on the zip `name` inside the folder open as `top_fd` (opened without following a link; a hard
    link to another owner's file is not read, as in the folder walk); one level only: a zip is not searched
    for further zips."""
    shown = one_line(name)
    try:
        fd = os.open(name, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC | os.O_NOFOLLOW, dir_fd=top_fd)
    except OSError as exc:
        return {}, [f"The zip {shown!r} in your submission could not be read ({one_line(exc.strerror or exc)})."]
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode) or (info.st_nlink > 1 and info.st_uid != os.fstat(top_fd).st_uid):
            return {}, [f"The zip {shown!r} in your submission is not a file of your own; nothing was graded."]
        found, notes = _locate_open(fd, shown, name, exercises, staging)
    finally:
        os.close(fd)
    said = "graded the exercise files inside it" if found else "read it"
    return found, [f"Your submission is a folder with no exercise file but the zip {shown!r}: {said}.", *notes]


def _locate_open(
    top_fd: int, shown_name: str, name: str, exercises: Sequence[Exercise], staging: Path
) -> tuple[dict[str, Found], list[str]]:
    """`locate` on the submission open as `top_fd` (a folder or a regular file; anything else is a note)."""
    notes: list[str] = []
    zf: zipfile.ZipFile | None = None
    archive: IO[bytes] | None = None
    candidates: list[_Candidate] = []
    hints: dict[str, list[str]] = {}
    budget = _Budget(MAX_EXTRACT_BYTES)
    found: dict[str, Found] = {}
    try:  # from before the zip is opened: whatever is raised, the zip and its file object are closed
        mode = os.fstat(top_fd).st_mode
        if stat.S_ISDIR(mode):
            candidates, hints, notes = _folder_candidates(top_fd, exercises)
            inner = _only_zip(top_fd) if not candidates and not hints else None
            if inner is not None:  # a folder holding no exercise file but the zip the packing tool made: read it
                found, zip_notes = _inner_zip(top_fd, inner, exercises, staging)
                return found, [*notes, *zip_notes]
        elif stat.S_ISREG(mode) and not name.lower().endswith(".ipynb") and zips.is_zip(top_fd):
            archive = os.fdopen(os.dup(top_fd), "rb")
            zf, problem = _open_zip(archive)
            if zf is None:
                notes.append(problem)
            else:
                candidates, hints, notes = _zip_candidates(zf, exercises)
        elif stat.S_ISREG(mode) and match_name(name, exercises) is not None:
            _classify(name, shown_name, 0, (), exercises, candidates, hints)
        else:
            notes.append(f"The submission {shown_name!r} is neither a folder nor a zip file; nothing was graded.")
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
            staged = _stage(best, ex, zf, top_fd, staging, budget)
            staged = Found(staged.path, staged.shown, join(note, staged.note))
            found[ex.id] = from_notebook(staged, ex, staging) if best.kind == "ipynb" else staged
    finally:
        if zf is not None:
            zf.close()
        if archive is not None:
            archive.close()  # ZipFile leaves a file object it was handed open
    return found, notes
