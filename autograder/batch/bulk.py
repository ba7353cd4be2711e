"""Grade a whole class: `python -m autograder grade-all SUBMISSIONS --csv grades.csv [--out DIR] [--workers N] [--force]`.

SUBMISSIONS is one of:
- a folder with one entry per student: a folder or a .zip (the student is the folder name or the
  zip's stem), e.g. a flat folder of per-student zips;
- Gradescope's "export submissions" zip, or that zip unpacked: a top folder holding
  `submission_metadata.yml` and one folder per submission (`submission_123456/`). The yml maps each
  folder to its submitters; the student is the submitters' e-mail (else their SID, else the folder
  name), so a resubmission, which Gradescope exports under a new folder name, lands on the same
  student; names and e-mails go to the gradebook and the CSV;
- a zip of either (a zip of a folder of per-student zips, for instance).
A zip is unpacked into DIR/_gradescope_export/ with caps (per file, per export, depth; links and
damaged members skipped).

An entry that cannot be graded as a student is refused with a sentence saying why (printed, in the
report and in DIR/refused.txt), never stopping the batch: a name that collides with grade-all's own
outputs (`gradebook.sqlite.zip`, ...), two entries for one student (`alice/` and `alice.zip`), the
output folder itself.

Output folders: every student's folder under DIR differs from every other student's and from every
entry the batch writes into DIR, whatever the students are called. Names are compared ignoring case
and Unicode normalisation: two names collide when any of their lower-cased, upper-cased or
case-folded NFC, NFD or NFKC forms agree. A name colliding with a fixed output (the gradebook and its
journals, refused.txt, _gradescope_export) is refused, as above. Otherwise a student's folder is
their name made safe (`folder_name`) when that collides with no other student's name and not with
this run's --csv file (or the folder holding it) when that lies in DIR. Every other student (both
`Alice/` and `alice/`; `grades.csv/` with `--csv DIR/grades.csv`) gets `<name>-<first 8 hex of
sha256(student)>`, or, when that too collides with an output or a folder already given (a student
literally named `alice-2bd806c9`), `<name>-<16 hex>-<n>` for the first n = 1, 2, ... that collides
with none; these students are served in sorted order, each checked against every name given before.
The gradebook is keyed by student, not by folder.

The batch is sealed: every submission's public phase ends, and what it produced is fixed, before any
submission's hidden phase starts. Each submission is graded by the single-submission grader in two
subprocesses (`autograder.runtime.grader`): `python -m autograder grade SUB --phase public --state STATE`
(intake and every exercise's public phase, sealed in STATE: `autograder.runtime.phases`) for every
submission, several at once; then, once the last of them has ended, `grade SUB --out
DIR/<student>/results.json --phase hidden --state STATE --seal SEAL` for every submission, several
at once. SEAL is the sha256 of the sealed state, taken by the batch when the public phase's process
and everything it started had ended; the hidden phase refuses a state that differs from it, never
replaces what the public phase produced, and a state that changed during the hidden phase makes
the student's grading fail. So no hidden input exists on the machine while any student's visible
output (what the public phases print, return and raise) is being produced: students graded side by
side cannot relay hidden inputs to each other through state the machine shares (record locks, the
page cache, inotify, CPU and timing), which the two phases of one grader process could not stop.
The states live in one grader-only folder (mode 0700, hidden from the sandboxes, removed at the
end), beside the public cases' call specs, computed once per batch. A submission whose public phase
fails (time limit, crash, no sealed state) gets its failure at once and has no hidden phase.

Each grader process is handled the same way, so that a crash, a hang or a runaway submission only
ever affects that student: when it exits or reaches the time limit (one per submission, across both
phases: the hidden phase gets what the public phase left), the grader and every process it started
that is still its descendant or in its process group are stopped (SIGSTOP, so none can fork) and
killed, while the grader is kept unreaped so that its pid and group cannot be reused meanwhile; the
student gets a results.json saying what happened; the batch goes on. (A process that left both the
tree and the group is the sandbox's to end: its children die with the grader, see
`autograder.runtime.sandbox.runner`.) Each grader process runs with a TMPDIR of its own, removed once it has ended
(killed or not), and on Linux dies with the batch process (PR_SET_PDEATHSIG), so a killed batch
leaves no grader running; the TMPDIRs and sealed states a killed batch left behind are removed by
the next batch.

Per student, DIR/<student>/ receives results.json (Gradescope format), grader.log, feedback.md (what
the student may see now: tests whose visibility is "visible") and feedback_instructor.md (every
test, including hidden details). Every text written is made encodable first, and student text is
inert where it is shown: escaped or fenced in the feedback's Markdown, its control characters
escaped in what is printed (`autograder.core.safetext`). All results also go into the SQLite gradebook
(DIR/gradebook.sqlite, with the history of every graded version), which makes the run resumable:
each grading is committed as soon as it ends (with its hidden phase), so a rerun after any failure, even a crash of the
batch itself, grades only what is left; a submission whose content hash is unchanged since it was
last graded successfully, by a grader with the same inputs (`grader_fingerprint`: its code, the
cases, the stored expected values, the `hetero` library), is skipped unless --force (one whose
grader failed is graded again; a changed hidden case or expected value regrades everyone). A failure
to record a grading or to write a student's files is recorded for that student as grade-all's own
failure (0 points, said as such) and the batch goes on. At the end, a summary table (per-exercise
mean and distribution) is printed and, with --csv, the gradebook rows of this batch are exported.

`--dry-run` grades into a temporary folder instead and prints whose grade would change, and which
tests moved, against DIR's gradebook, writing nothing under DIR (`autograder.batch.regrade`).
"""

from __future__ import annotations

import argparse
import dataclasses
import hashlib
import os
import re
import shutil
import signal
import stat
import statistics
import subprocess
import sys
import tempfile
import time
import unicodedata
import zipfile
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Any, TypeVar

from tqdm import tqdm

from autograder.batch.gradebook import Gradebook, Record, exercise_scores, test_exercise
from autograder.core.manifest import BY_ID, EXERCISES, ROOT
from autograder.core.safetext import clean_data, clean_text, markdown_fence, markdown_inline, terminal_text
from autograder.gradescope.fallback import failure_results, readable_results
from autograder.runtime import intake, phases
from autograder.runtime import results as res
from autograder.runtime.sandbox.runner import proc_status, remove_tree

DEFAULT_TIMEOUT_S = sum(e.timeout_s for e in EXERCISES) + 120.0  # every exercise at its limit, plus start-up
IGNORED_NAMES = ("__pycache__", "__MACOSX", ".DS_Store")
LOG_TAIL_CHARS = 6000
GRADEBOOK_NAME = "gradebook.sqlite"
EXPORT_DIR = "_gradescope_export"  # where a Gradescope export zip is unpacked, under --out
METADATA_NAME = "submission_metadata.yml"
REFUSED_NAME = "refused.txt"  # under --out: the entries of the last run that were refused, and why
RESERVED_NAMES = (
    GRADEBOOK_NAME,
    f"{GRADEBOOK_NAME}-journal",
    f"{GRADEBOOK_NAME}-wal",
    f"{GRADEBOOK_NAME}-shm",
    EXPORT_DIR,
    REFUSED_NAME,
)
FOLDER_NAME_CHARS = 120  # longest per-student output folder name (longer names are cut and hashed)
HASH_MAX_ENTRIES = 100000  # files and folders a folder's content hash looks at
EXPORT_MAX_MEMBERS = 200000
EXPORT_MAX_BYTES = 2 * 2**30  # bytes unpacked from one Gradescope export, counted while reading
WAIT_POLL_S = 0.05
SCRATCH_PREFIX = "a2batch-"  # + the batch's pid: a grader's TMPDIR
# Starts the grader so that it dies with the batch (PR_SET_PDEATHSIG survives execve): argv is the
# batch's pid, then the grader's command. The check after prctl closes the race with an early death.
DIE_WITH_BATCH = (
    "import ctypes, os, signal, sys\n"
    "ctypes.CDLL(None, use_errno=True).prctl(1, int(signal.SIGKILL), 0, 0, 0)\n"
    "if os.getppid() != int(sys.argv[1]):\n"
    "    os._exit(70)\n"
    "os.execvp(sys.argv[2], sys.argv[2:])\n"
)
KILL_ROUNDS = 100  # SIGSTOP sweeps over the grader's tree before the SIGKILL (a sweep finds new forks)


@dataclass(frozen=True)
class Submission:
    student: str  # the gradebook's key (printable text)
    path: Path  # a folder or a .zip
    folder: str = ""  # output folder name under --out (default: made from `student`)
    name: str = ""  # display name, when known (Gradescope export)
    email: str = ""

    @property
    def out_folder(self) -> str:
        return self.folder or folder_name(self.student)


@dataclass(frozen=True)
class Refused:
    entry: str  # the entry of SUBMISSIONS (printable)
    reason: str


@dataclass(frozen=True)
class Graded:
    student: str
    results: dict[str, Any]
    duration_s: float
    grader_failed: bool


# ---------------------------------------------------------------------------------------------
# Finding and fingerprinting submissions.


def folder_name(student: str) -> str:
    """A safe output folder name for a student: printable, no separators or control characters,
    not hidden, at most FOLDER_NAME_CHARS long (a cut name keeps a hash of the whole)."""
    name = re.sub(r"[\x00-\x1f\x7f/\\]", "_", clean_text(student)).strip()
    if not name or name.startswith(".") or name in ("..", "."):
        name = "_" + name
    if len(name) > FOLDER_NAME_CHARS:
        digest = hashlib.sha256(name.encode("utf-8")).hexdigest()[:12]
        name = f"{name[: FOLDER_NAME_CHARS - 13]}-{digest}"
    return name


def _name_keys(*names: str) -> set[str]:
    """The forms under which a file system may compare these names: lower-cased, upper-cased and
    case-folded, each after NFC, NFD and NFKC normalisation. Two names collide when they share a form."""
    keys = set()
    for name in names:
        for form in ("NFC", "NFD", "NFKC"):
            normal = unicodedata.normalize(form, name)
            keys |= {normal.lower(), normal.upper(), normal.casefold()}
    return keys


def _hashed_folder(base: str, student: str, attempt: int) -> str:
    """Candidate `attempt` for a student whose own folder name is taken: `<base>-<8 hex>` first (sha256
    of the student), then `<base>-<16 hex>-<attempt>`; `base` is cut to keep FOLDER_NAME_CHARS."""
    digest = hashlib.sha256(student.encode("utf-8", "surrogatepass")).hexdigest()
    suffix = f"-{digest[:8]}" if attempt == 0 else f"-{digest[:16]}-{attempt}"
    return base[: FOLDER_NAME_CHARS - len(suffix)] + suffix


def assign_folders(subs: Sequence[Submission], taken: set[str]) -> list[Submission]:
    """`subs` with output folders that differ from each other and from the names whose forms are in
    `taken` (see `_name_keys`), whatever the students are called; sorted by student.

    A student keeps their own folder name when its forms are shared with no other student's and are
    not in `taken`. Every other student (e.g. both `Alice` and `alice`) gets the first candidate of
    `_hashed_folder` whose forms are still free, checked against every name given so far, in the order
    of the students; the candidates after the first end in their attempt number, so all differ and the
    finitely many names in use can only block finitely many of them.
    """
    owners: dict[str, set[str]] = {}
    for sub in subs:
        for key in _name_keys(sub.out_folder):
            owners.setdefault(key, set()).add(sub.student)
    taken = set(taken)
    plain = {
        sub.student
        for sub in subs
        if not any(key in taken or len(owners[key]) > 1 for key in _name_keys(sub.out_folder))
    }
    for sub in subs:
        if sub.student in plain:
            taken |= _name_keys(sub.out_folder)
    assigned = []
    for sub in sorted(subs, key=lambda s: s.student):
        if sub.student in plain:
            assigned.append(sub)
            continue
        attempt = 0
        while _name_keys(folder := _hashed_folder(sub.out_folder, sub.student, attempt)) & taken:
            attempt += 1
        taken |= _name_keys(folder)
        assigned.append(Submission(sub.student, sub.path, folder, sub.name, sub.email))
    return assigned


def _within(path: Path, folder: Path) -> bool:
    try:
        path.resolve().relative_to(folder.resolve())
    except (ValueError, OSError):
        return False
    return True


def _entries(folder: Path) -> list[tuple[str, Path]]:
    """(student, path) for each sub-folder or .zip of `folder`."""
    found = []
    for entry in sorted(folder.iterdir()):
        if entry.name.startswith(".") or entry.name in IGNORED_NAMES or entry.is_symlink():
            continue
        if entry.is_dir():
            found.append((clean_text(entry.name), entry))
        elif entry.is_file() and entry.suffix.lower() == ".zip":
            found.append((clean_text(entry.stem), entry))
    return found


def discover(
    folder: Path, out: Path | None = None, outputs: Sequence[str] = (), not_submissions: Sequence[Path] = ()
) -> tuple[list[Submission], list[Refused]]:
    """The submissions under `folder` (layouts in the module docstring) and the entries refused.

    `out` is the batch's output folder (a Gradescope export zip is unpacked into it, and it is
    refused as a submission when it lies inside `folder`); `outputs` are the names of further entries
    the batch writes directly under `out` (the --csv export): no student's folder takes one of them;
    `not_submissions` are further output folders refused like `out` (a dry run's real --out).
    """
    if folder.is_file() and zipfile.is_zipfile(folder):
        if out is None:
            raise ValueError(f"{folder} is a zip: give an output folder to unpack it into")
        folder = unpack_export(folder, out / EXPORT_DIR)
        inside = [p for p in folder.iterdir() if not p.name.startswith(".") and p.name not in IGNORED_NAMES]
        if gradescope_root(folder) is None and len(inside) == 1 and inside[0].is_dir():
            folder = inside[0]  # a zip of a folder of submissions
    if not folder.is_dir():
        raise FileNotFoundError(f"{folder} is not a folder of submissions (nor a Gradescope export zip)")
    export_root = gradescope_root(folder)
    metadata = read_metadata(export_root / METADATA_NAME) if export_root is not None else {}
    entries = _entries(export_root if export_root is not None else folder)
    candidates: list[Submission] = []
    refused: list[Refused] = []
    outs = [p for p in (out, *not_submissions) if p is not None]
    for student, path in entries:
        if any(_within(o, path) or path.resolve() == o.resolve() for o in outs):
            refused.append(Refused(clean_text(path.name), "this is grade-all's own output folder, not a submission"))
            continue
        record = metadata.get(clean_text(path.name)) or metadata.get(clean_text(path.stem))
        if record is not None:
            name, email, key = record
            candidates.append(Submission(key, path, folder_name(key), name, email))
        else:
            candidates.append(Submission(student, path))
    by_student: dict[str, list[Submission]] = {}
    for sub in candidates:
        by_student.setdefault(sub.student, []).append(sub)
    reserved = _name_keys(*RESERVED_NAMES)
    sole: list[Submission] = []
    for _student, group in sorted(by_student.items()):
        shown = ", ".join(clean_text(s.path.name) for s in group)
        if len(group) > 1:
            refused += [
                Refused(
                    clean_text(s.path.name),
                    f"more than one submission for one student ({shown}); none of them was graded: keep one",
                )
                for s in group
            ]
        elif _name_keys(group[0].out_folder) & reserved:
            refused.append(
                Refused(
                    clean_text(group[0].path.name),
                    f"its name collides with grade-all's own output {group[0].out_folder!r}; "
                    "rename it and grade it again",
                )
            )
        else:
            sole.append(group[0])
    subs = assign_folders(sole, reserved | _name_keys(*outputs))
    return sorted(subs, key=lambda s: s.student), refused


def gradescope_root(folder: Path) -> Path | None:
    """The folder holding Gradescope's submission_metadata.yml: `folder` itself or its only sub-folder."""
    if (folder / METADATA_NAME).is_file():
        return folder
    subdirs = [p for p in folder.iterdir() if p.is_dir() and not p.name.startswith(".") and p.name not in IGNORED_NAMES]
    if len(subdirs) == 1 and (subdirs[0] / METADATA_NAME).is_file():
        return subdirs[0]
    return None


def _plain_yaml(loader: Any, suffix: str, node: Any) -> Any:
    """Ruby-tagged YAML nodes (`!ruby/object:BigDecimal ...`) read as plain scalars, lists or maps."""
    import yaml

    if isinstance(node, yaml.MappingNode):
        return loader.construct_mapping(node, deep=True)
    if isinstance(node, yaml.SequenceNode):
        return loader.construct_sequence(node, deep=True)
    return loader.construct_scalar(node)


def read_metadata(path: Path) -> dict[str, tuple[str, str, str]]:
    """Gradescope's submission_metadata.yml as {folder: (names, e-mails, student key)}; {} when unreadable.

    The file maps each submission folder to a record whose `:submitters:` list holds `:name:`,
    `:email:` and `:sid:` (keys are Ruby symbols, written with a leading colon).
    """
    try:
        import yaml

        class Loader(yaml.SafeLoader):
            pass

        Loader.add_multi_constructor("!", _plain_yaml)
        data = yaml.load(path.read_text(encoding="utf-8", errors="replace"), Loader=Loader)
    except Exception as exc:  # PyYAML missing, or a malformed file: grade by folder name
        print(
            f"grade-all: {terminal_text(path)} could not be read ({type(exc).__name__}); students are named "
            "by their submission folders",
            file=sys.stderr,
        )
        return {}
    if not isinstance(data, dict):
        return {}
    found: dict[str, tuple[str, str, str]] = {}
    for folder, record in data.items():
        record = {str(k).lstrip(":"): v for k, v in record.items()} if isinstance(record, dict) else {}
        submitters = record.get("submitters")
        people = (
            [{str(k).lstrip(":"): v for k, v in p.items()} for p in submitters if isinstance(p, dict)]
            if isinstance(submitters, list)
            else []
        )
        names = ", ".join(clean_text(p.get("name") or "") for p in people if p.get("name"))
        emails = ", ".join(clean_text(p.get("email") or "") for p in people if p.get("email"))
        sids = "+".join(clean_text(p.get("sid") or "") for p in people if p.get("sid"))
        key = "+".join(clean_text(p.get("email")) for p in people if p.get("email")) or sids or clean_text(folder)
        found[clean_text(folder)] = (names, emails, key)
    return found


def unpack_export(archive: Path, dest: Path) -> Path:
    """Unpack a Gradescope export zip into `dest` (replaced) with the intake caps; return `dest`.

    Links, absolute or `..` paths, hidden entries, files larger than intake.MAX_FILE_BYTES (zips:
    intake.MAX_SUBMISSION_BYTES), entries deeper than intake.MAX_DEPTH + 2 and damaged members are
    skipped (counted on stderr); bytes are counted while reading, at most EXPORT_MAX_BYTES in all.
    Folder entries (names ending in "/", one per folder in a `zip -r` archive) are passed over
    silently: the folders are made for the files inside them.
    """
    if dest.exists():
        shutil.rmtree(dest)
    dest.mkdir(parents=True)
    skipped = 0
    left_bytes = EXPORT_MAX_BYTES
    with zipfile.ZipFile(archive) as zf:
        members = zf.infolist()
        if len(members) > EXPORT_MAX_MEMBERS:
            raise ValueError(f"{archive} holds {len(members)} entries, more than {EXPORT_MAX_MEMBERS}")
        for info in members:
            if info.filename.replace("\\", "/").endswith("/"):
                continue  # a folder entry (what `zip -r` writes for each folder): its files are members too
            name = PurePosixPath(info.filename.replace("\\", "/"))
            parts = name.parts
            if (
                not parts
                or name.is_absolute()
                or ".." in parts
                or any(p.startswith(".") or p in IGNORED_NAMES for p in parts)
                or len(parts) > intake.MAX_DEPTH + 2
                or (info.external_attr >> 16) & 0o170000 == 0o120000
                or info.flag_bits & 0x1
            ):
                skipped += 1
                continue
            target = dest.joinpath(*parts)
            try:
                target.parent.mkdir(parents=True, exist_ok=True)
                with zf.open(info) as src, open(target, "wb") as dst:
                    written = 0
                    limit = intake.MAX_SUBMISSION_BYTES if name.suffix.lower() == ".zip" else intake.MAX_FILE_BYTES
                    while chunk := src.read(intake.READ_CHUNK_BYTES):
                        written += len(chunk)
                        if written > limit or written > left_bytes:
                            raise ValueError("too large")
                        dst.write(chunk)
                left_bytes -= written
            except Exception:  # damaged or oversized member: skip it, keep the others
                target.unlink(missing_ok=True)
                skipped += 1
    if skipped:
        print(
            f"grade-all: {skipped} entries of {terminal_text(archive.name)} were not unpacked (links, hidden, "
            f"damaged, encrypted or larger than {intake.MAX_FILE_BYTES // 2**20} MiB)",
            file=sys.stderr,
        )
    return dest


def _walk_files(top: Path) -> Iterator[tuple[str, Path | None]]:
    """(relative path, file) for the files under `top` in a fixed order, without recursion; unreadable
    folders and the entries past HASH_MAX_ENTRIES are reported as (marker, None)."""
    stack: list[tuple[Path, str]] = [(top, "")]
    seen = 0
    while stack:
        folder, rel = stack.pop()
        try:
            with os.scandir(folder) as it:
                entries = sorted(it, key=lambda e: e.name, reverse=True)
        except OSError as exc:
            yield f"{rel}\0unreadable {exc.errno}", None
            continue
        for entry in entries:
            seen += 1
            if seen > HASH_MAX_ENTRIES:
                yield "\0truncated", None
                return
            if entry.name.startswith(".") or entry.name in IGNORED_NAMES or entry.name.endswith(".pyc"):
                continue
            path = f"{rel}/{entry.name}" if rel else entry.name
            try:
                if entry.is_dir(follow_symlinks=False):
                    stack.append((Path(entry.path), path))
                elif entry.is_file(follow_symlinks=False):
                    yield path, Path(entry.path)
            except OSError:
                yield f"{path}\0unreadable", None


def _file_digest(path: Path) -> bytes:
    digest = hashlib.sha256()
    try:
        with open(path, "rb") as fh:
            while chunk := fh.read(2**20):
                digest.update(chunk)
    except OSError as exc:
        digest.update(f"\0unreadable {exc.errno}".encode())
    return digest.digest()


# what decides a grade, under ROOT (assignments/tests: the public cases where solutions/ is absent)
GRADER_INPUTS = ("autograder", "shared/hetero", "solutions/tests", "assignments/tests")
NOT_GRADER_INPUTS = ("autograder/fixtures",)  # test material only


def grader_fingerprint(root: Path = ROOT) -> str:
    """sha256 over the files that decide a grade (GRADER_INPUTS, without caches and fixtures): a stored
    grading made with other inputs is stale."""
    digest = hashlib.sha256()
    for top in GRADER_INPUTS:
        for path in sorted((root / top).rglob("*")):
            rel = path.relative_to(root).as_posix()
            if not path.is_file() or "__pycache__" in path.parts or rel.startswith(NOT_GRADER_INPUTS):
                continue
            digest.update(rel.encode("utf-8") + b"\0" + hashlib.sha256(path.read_bytes()).digest())
    return digest.hexdigest()


def content_hash(path: Path) -> str:
    """sha256 over a submission's content: a zip's bytes, or a folder's (relative path, file bytes) pairs.

    Never raises for the submission's content: unreadable parts enter the hash as markers, a tree is
    walked without recursion and at most HASH_MAX_ENTRIES entries deep.
    """
    digest = hashlib.sha256()
    if path.is_file():
        digest.update(b"zip\0")
        digest.update(_file_digest(path))
        return digest.hexdigest()
    digest.update(b"dir\0")
    for rel, file in sorted(_walk_files(path)):
        digest.update(os.fsencode(rel) + b"\0")
        if file is not None:
            digest.update(_file_digest(file))
    return digest.hexdigest()


def _zip_is_readable(path: Path) -> bool:
    """Whether the zip's directory can be read (its members are not decompressed: that is the grader's job)."""
    try:
        with zipfile.ZipFile(path) as zf:
            zf.infolist()
        return True
    except Exception:  # a damaged central directory raises many types
        return False


# ---------------------------------------------------------------------------------------------
# Grading one submission in a subprocess, and ending everything it started.


def _process_table() -> dict[int, int]:
    """{pid: parent pid} of every process visible in /proc (empty where there is no /proc)."""
    table: dict[int, int] = {}
    for pid, fields in proc_status():
        try:
            table[pid] = int(fields["PPid"])
        except (KeyError, ValueError):
            continue
    return table


def descendants(root_pid: int) -> set[int]:
    """The pids below `root_pid` in the process tree (children, their children ...)."""
    children: dict[int, list[int]] = {}
    for pid, ppid in _process_table().items():
        children.setdefault(ppid, []).append(pid)
    found: set[int] = set()
    todo = [root_pid]
    while todo:
        for child in children.get(todo.pop(), []):
            if child not in found:
                found.add(child)
                todo.append(child)
    return found


def _signal(pid: int, sig: int) -> None:
    try:
        os.kill(pid, sig)
    except (ProcessLookupError, PermissionError):
        pass


def end_process_tree(root_pid: int) -> int:
    """Stop then kill `root_pid`, its descendants and its process group; return how many were found.

    The caller keeps `root_pid` unreaped (a zombie at worst), so neither its pid nor its process
    group id can be reused by an unrelated process while this runs.
    """
    stopped: set[int] = set()
    for _ in range(KILL_ROUNDS):
        fresh = (descendants(root_pid) | {root_pid}) - stopped
        if not fresh:
            break
        for pid in fresh:
            _signal(pid, signal.SIGSTOP)
        stopped |= fresh
    try:
        os.killpg(root_pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
    for pid in stopped:
        _signal(pid, signal.SIGKILL)
    return len(stopped - {root_pid})


def _wait_unreaped(proc: subprocess.Popen, timeout_s: float) -> bool:
    """Wait up to `timeout_s` for `proc` to exit, leaving it unreaped where the system allows
    (os.waitid with WNOWAIT); True when it has exited."""
    if not hasattr(os, "waitid"):  # e.g. macOS: reaped here; its group id could then be reused, rarely
        try:
            proc.wait(timeout=timeout_s)
            return True
        except subprocess.TimeoutExpired:
            return False
    deadline = time.monotonic() + timeout_s
    while True:
        try:
            info = os.waitid(os.P_PID, proc.pid, os.WEXITED | os.WNOWAIT | os.WNOHANG)
        except ChildProcessError:
            return True
        if info is not None:
            return True
        if time.monotonic() >= deadline:
            return False
        time.sleep(WAIT_POLL_S)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def sweep_stale_scratch() -> int:
    """Remove the graders' TMPDIRs left by batches that died without cleaning up (killed); return
    how many. Only folders of this user named SCRATCH_PREFIX + the pid of a process that no longer
    exists are touched (never links: /tmp is shared with the sandboxed code)."""
    removed = 0
    for entry in Path(tempfile.gettempdir()).glob(SCRATCH_PREFIX + "*"):
        match = re.fullmatch(re.escape(SCRATCH_PREFIX) + r"(\d+)-\w+", entry.name)
        try:
            info = entry.lstat()
        except OSError:
            continue
        if match is None or not stat.S_ISDIR(info.st_mode) or info.st_uid != os.getuid():
            continue
        pid = int(match.group(1))
        if pid == os.getpid() or _alive(pid):
            continue
        remove_tree(entry)
        removed += 1
    return removed


@dataclass(frozen=True)
class Ended:
    """How one grader process ended (`run_grader`)."""

    finished: bool  # it exited by itself within its time limit
    leftovers: int  # processes of its tree or group still there afterwards, all killed
    status: int  # its exit status (negative: the signal that killed it)
    duration_s: float


def run_grader(
    grade: Sequence[str],
    student_dir: Path,
    log_path: Path,
    timeout_s: float,
    append: bool = False,
) -> Ended:
    """Run one grader process (`grade`: its command) for a submission and end everything it started.

    Its output goes to `log_path` (appended to with `append`). The grader's temporary files (its copy
    of the submission's files, the sandbox folders) go to a folder of their own (TMPDIR), removed when
    the grader has ended, also after it was killed. On Linux the grader is killed by the kernel if the
    batch process dies first (PR_SET_PDEATHSIG). The sandboxed children see neither the batch's
    outputs (results, feedback, gradebook) nor the other students' submissions nor the sealed states:
    their root holds only what `autograder.runtime.sandbox.runner` allows.
    """
    cmd = [sys.executable, "-c", DIE_WITH_BATCH, str(os.getpid()), *grade] if sys.platform == "linux" else list(grade)
    start = time.perf_counter()
    scratch = Path(tempfile.mkdtemp(prefix=f"{SCRATCH_PREFIX}{os.getpid()}-"))
    try:
        scratch.chmod(0o711)  # the sandbox user may pass through to its own folder, not list or write here
        env = dict(os.environ, TMPDIR=str(scratch))
        with log_path.open("ab" if append else "wb") as log:
            proc = subprocess.Popen(
                cmd,
                cwd=str(ROOT),
                stdout=log,
                stderr=subprocess.STDOUT,
                env=env,
                stdin=subprocess.DEVNULL,
                start_new_session=True,
            )
            finished = _wait_unreaped(proc, timeout_s)
            leftovers = end_process_tree(proc.pid)
            status = proc.wait()
    finally:
        remove_tree(scratch)
    return Ended(finished, leftovers, status, time.perf_counter() - start)


def _ended_results(
    sub: Submission, results_path: Path | None, log_path: Path, ended: Ended, timeout_s: float, what: str
) -> Graded:
    """The student's grading from a grader process that ended: results.json as written (read from
    `results_path`), else a failure saying why (`what`: what the grader did not write)."""
    reason = ""
    if not ended.finished:
        reason = (
            f"grading took longer than {timeout_s:.0f} s and was stopped (the grader and the "
            f"{ended.leftovers} process(es) it had started were killed)"
        )
    results = None if reason or results_path is None else readable_results(results_path)
    if results is None:
        if not reason:
            reason = f"the grader exited with status {ended.status} without writing {what}" + (
                "" if sub.path.is_dir() or _zip_is_readable(sub.path) else " (the zip file is damaged)"
            )
        tail = log_path.read_text(encoding="utf-8", errors="replace")[-LOG_TAIL_CHARS:]
        return Graded(sub.student, clean_data(failure_results(reason, tail)), ended.duration_s, True)
    return Graded(sub.student, clean_data(results), ended.duration_s, False)


def _grade_command(python: str, sub: Submission) -> list[str]:
    return [python, "-m", "autograder", "grade", str(sub.path.resolve())]


def grade_one(
    sub: Submission,
    student_dir: Path,
    timeout_s: float,
    python: str = sys.executable,
    exercises: Sequence[str] | None = None,
) -> Graded:
    """Grade one submission with both phases in one grader process (`grade SUB --out ...`); never raises
    for anything the submission does. A batch grades with `grade_public` and `grade_hidden` instead
    (`grade_all(sealed=False)` uses this: the batch before the seal, for measurements and tests).
    """
    student_dir.mkdir(parents=True, exist_ok=True)
    results_path = student_dir / "results.json"
    log_path = student_dir / "grader.log"
    results_path.unlink(missing_ok=True)
    grade = [*_grade_command(python, sub), "--out", str(results_path.resolve())]
    if exercises:
        grade += ["--exercises", *exercises]
    ended = run_grader(grade, student_dir, log_path, timeout_s)
    return _ended_results(sub, results_path, log_path, ended, timeout_s, "a readable results.json")


@dataclass(frozen=True)
class Sealed:
    """A submission whose public phase ended and is sealed (`autograder.runtime.phases`): what its hidden phase needs."""

    student: str
    state: Path  # the grader-only folder holding the sealed public phase
    seal: str  # sha256 of its public.json, taken by the batch when the public phase's process had ended
    duration_s: float  # the public phase's wall time


def grade_public(
    sub: Submission,
    student_dir: Path,
    state: Path,
    timeout_s: float,
    python: str = sys.executable,
    exercises: Sequence[str] | None = None,
    specs: Path | None = None,
) -> Sealed | Graded:
    """Phase 1 of one submission in its own grader process (`grade SUB --phase public --state STATE`):
    intake and every exercise's public phase, sealed in `state` (absent or empty; grader-only).

    Returns the seal, fixed here once the process and everything it started have ended; or, when the
    grader timed out, crashed or left no sealed state, the student's failure (as `grade_one` would), which
    has no hidden phase. Never raises for anything the submission does. `specs`: the batch's public call specs
    (`grader.write_public_specs`), so that the process does not load the case files.
    """
    student_dir.mkdir(parents=True, exist_ok=True)
    results_path = student_dir / "results.json"
    log_path = student_dir / "grader.log"
    results_path.unlink(missing_ok=True)
    grade = [*_grade_command(python, sub), "--phase", "public", "--state", str(state.resolve())]
    if specs is not None:
        grade += ["--public-specs", str(specs.resolve())]
    if exercises:
        grade += ["--exercises", *exercises]
    ended = run_grader(grade, student_dir, log_path, timeout_s)
    if ended.finished:
        try:
            seal = phases.read_seal(state)
            if phases.state_digest(state) == seal:
                return Sealed(sub.student, state, seal, ended.duration_s)
        except phases.SealError:
            pass
    return _ended_results(sub, None, log_path, ended, timeout_s, "its sealed public phase")


def grade_hidden(
    sub: Submission,
    student_dir: Path,
    sealed: Sealed,
    timeout_s: float,
    python: str = sys.executable,
) -> Graded:
    """Phase 2 of one submission in its own grader process (`grade SUB --out results.json --phase hidden
    --state STATE --seal SEAL`): the hidden phases and results.json; never raises for anything the
    submission does.

    `timeout_s` is the submission's whole time limit: this process gets what the public phase left. A
    state that no longer matches its seal after this process ended is the batch's failure for the
    student, whatever results.json says.
    """
    results_path = student_dir / "results.json"
    log_path = student_dir / "grader.log"
    results_path.unlink(missing_ok=True)
    grade = [*_grade_command(python, sub), "--out", str(results_path.resolve())]
    grade += ["--phase", "hidden", "--state", str(sealed.state.resolve()), "--seal", sealed.seal]
    left_s = max(0.0, timeout_s - sealed.duration_s)
    ended = run_grader(grade, student_dir, log_path, left_s, append=True)
    ended = dataclasses.replace(ended, duration_s=sealed.duration_s + ended.duration_s)
    graded = _ended_results(sub, results_path, log_path, ended, timeout_s, "a readable results.json")
    try:
        intact = phases.state_digest(sealed.state) == sealed.seal
    except phases.SealError:
        intact = False
    if not intact:
        reason = "grade-all itself failed, not the submission: the sealed public phase changed during the hidden phase"
        return Graded(sub.student, failure_results(reason), graded.duration_s, True)
    return graded


# ---------------------------------------------------------------------------------------------
# Feedback.


def _visibility(test: dict[str, Any], results: dict[str, Any]) -> str:
    return str(test.get("visibility") or results.get("visibility") or "visible")


def feedback_markdown(student: str, results: dict[str, Any], instructor: bool) -> str:
    """Readable feedback: per-exercise score, then each failed test's message.

    Student-influenced text is inert Markdown (`autograder.core.safetext`): the student's name and the test
    names are escaped inline, the summary and every test's output are shown verbatim in code fences
    they cannot close, and control characters are escaped (the file is safe to print on a terminal).

    The student copy shows only tests whose visibility is "visible" (what Gradescope shows before
    the due date); the instructor copy shows every test and marks its visibility.
    """
    tests = [t for t in results.get("tests", []) if instructor or _visibility(t, results) == "visible"]
    hidden_count = len(results.get("tests", [])) - len(tests)
    shown = {"tests": tests}
    per_ex = exercise_scores(shown)
    score = sum(float(t.get("score") or 0.0) for t in tests)
    max_score = sum(float(t.get("max_score") or 0.0) for t in tests)
    title = "instructor copy" if instructor else "student copy"
    lines = [f"# Feedback for {markdown_inline(student)} ({title})", ""]
    if instructor and results.get("score") is not None:
        lines.append(f"**Total: {float(results['score']):.2f} / {max_score:.2f}**")
    else:
        lines.append(f"**Score in the tests shown: {score:.2f} / {max_score:.2f}**")
    if hidden_count:
        lines.append(
            f"\n{hidden_count} further test entries are not visible to students yet (shown after the due date, or to staff only)."
        )
    if results.get("output"):
        lines += ["", markdown_fence(results["output"])]
    lines += ["", "| exercise | score | max |", "|---|---:|---:|"]
    by_ex: dict[str, list[dict[str, Any]]] = {}
    other: list[dict[str, Any]] = []
    for test in tests:
        ex_id = test_exercise(test)
        (by_ex.setdefault(ex_id, []) if ex_id else other).append(test)
    for e in EXERCISES:
        if e.id in by_ex:
            s, m = per_ex[e.id]
            lines.append(f"| {e.id} {e.title} | {s:.2f} | {m:.2f} |")
    for group, label in [(by_ex.get(e.id, []), f"{e.id}: {e.title}") for e in EXERCISES] + [(other, "other")]:
        failed = [t for t in group if _failed(t)]
        if not failed:
            continue
        lines += ["", f"## {label}", ""]
        for test in failed:
            vis = f" _[{markdown_inline(_visibility(test, results))}]_" if instructor else ""
            output = str(test.get("output") or "").strip()
            lines.append(
                f"- **{markdown_inline(test.get('name', '?'))}** ({float(test.get('score') or 0):.2f} / "
                f"{float(test.get('max_score') or 0):.2f}){vis}" + (":" if output else "")
            )
            if output:  # a top-level fence: no list-item rule (a line indented too little) can end it early
                lines += ["", markdown_fence(output), ""]
    return terminal_text("\n".join(lines) + "\n", lines=True)


def _failed(test: dict[str, Any]) -> bool:
    if test.get("status") in ("failed", "passed"):
        return test["status"] == "failed"
    return float(test.get("score") or 0.0) < float(test.get("max_score") or 0.0)


def write_outputs(student_dir: Path, student: str, results: dict[str, Any]) -> None:
    """results.json (rewritten when what the grader wrote needed escaping) and the two feedback files."""
    results = clean_data(results)
    student_dir.mkdir(parents=True, exist_ok=True)
    results_path = student_dir / "results.json"
    if readable_results(results_path) != results:
        res.write(results, results_path)
    for name, instructor in (("feedback.md", False), ("feedback_instructor.md", True)):
        (student_dir / name).write_text(
            feedback_markdown(clean_text(student), results, instructor), encoding="utf-8", errors="backslashreplace"
        )


# ---------------------------------------------------------------------------------------------
# Summary.

SCORE_EPS = 1e-6  # fraction of the maximum: scores are float sums of case points, off by rounding only


def _distribution(fractions: list[float]) -> str:
    """Counts of students at 0, below half, at least half, and full marks (fractions of the maximum)."""
    zero = sum(f <= SCORE_EPS for f in fractions)
    full = sum(f >= 1 - SCORE_EPS for f in fractions)
    low = sum(SCORE_EPS < f < 0.5 for f in fractions)
    high = len(fractions) - zero - full - low
    return f"{zero:>4} {low:>5} {high:>6} {full:>5}"


def summary_table(records: list[Record], exercises: Sequence[str] | None = None) -> str:
    """Per-exercise and total mean / median / min / max and distribution over `records`
    (rows for `exercises` only, when given: the ones a `--exercises` batch graded)."""
    if not records:
        return "no graded submissions"
    head = (
        f"{'exercise':<10}{'max':>6}{'mean':>8}{'median':>8}{'min':>7}{'max':>7}   "
        f"{'=0':>4} {'<50%':>5} {'>=50%':>6} {'full':>5}"
    )
    lines = [head, "-" * len(head)]
    rows: list[tuple[str, float, list[float]]] = []
    for e in EXERCISES:
        if exercises is None or e.id in exercises:
            rows.append((e.id, float(e.points), [r.exercises.get(e.id, (0.0, 0.0))[0] for r in records]))
    rows.append(("total", max(r.max_score for r in records), [r.score for r in records]))
    for name, top, scores in rows:
        fractions = [s / top if top > 0 else 0.0 for s in scores]
        lines.append(
            f"{name:<10}{top:>6.1f}{statistics.fmean(scores):>8.2f}{statistics.median(scores):>8.2f}"
            f"{min(scores):>7.2f}{max(scores):>7.2f}   {_distribution(fractions)}"
        )
    failed = [terminal_text(r.student) for r in records if r.status == "grader_failed"]
    lines.append(
        f"{len(records)} submissions; grader failed on {len(failed)}" + (f": {', '.join(failed)}" if failed else "")
    )
    return "\n".join(lines)


# ---------------------------------------------------------------------------------------------
# The batch.


@dataclass(frozen=True)
class BatchReport:
    graded: list[str]
    skipped: list[str]
    failed: list[str]
    records: list[Record]
    wall_s: float
    refused: list[Refused] = field(default_factory=list)


def _failure(student: str, reason: str) -> Graded:
    return Graded(student, failure_results(reason), 0.0, True)


def _record(book: Gradebook, sub: Submission, digest: str, result: Graded, out: Path, fingerprint: str) -> Graded:
    """Store one grading and write its files; a failure here costs only this student, and is recorded
    for them as the batch's own failure (not the submission's)."""
    try:
        book.record(
            sub.student, str(sub.path), digest, result.results, result.duration_s, result.grader_failed, fingerprint
        )
        if sub.name or sub.email:
            book.set_identity(sub.student, sub.name, sub.email)
        write_outputs(out / sub.out_folder, sub.name or sub.student, result.results)
        return result
    except Exception as exc:  # e.g. a results file the feedback writer cannot read, a folder it cannot write
        failed = _failure(
            sub.student,
            "grade-all itself failed, not the submission: it could not record this grading or write its "
            f"output files ({type(exc).__name__})",
        )
        print(
            f"grade-all: recording {terminal_text(sub.student)} into {terminal_text(out / sub.out_folder)} failed: "
            f"{type(exc).__name__}: {terminal_text(exc)}; recorded as the batch's own failure",
            file=sys.stderr,
        )
    try:
        book.record(sub.student, str(sub.path), digest, failed.results, result.duration_s, True)
    except Exception as exc:
        print(f"grade-all: {terminal_text(sub.student)} was not recorded ({type(exc).__name__})", file=sys.stderr)
    try:
        write_outputs(out / sub.out_folder, sub.student, failed.results)
    except Exception:  # said above and in the gradebook; the other students go on
        pass
    return failed


def _names_under(out: Path, paths: Sequence[Path]) -> list[str]:
    """For each of `paths` that lies inside `out`, the name of its entry directly under `out`."""
    top = Path(os.path.abspath(out))
    names = []
    for path in paths:
        child = Path(os.path.abspath(path))
        for parent in child.parents:
            if parent == top or (parent.exists() and top.exists() and os.path.samefile(parent, top)):
                names.append(clean_text(child.name))
                break
            child = parent
    return names


Store = Callable[[Submission, str, Graded], None]
Job = TypeVar("Job", bound=tuple)  # a submission's job: (Submission, digest, whatever its phase needs)


def _failed_to_start(sub: Submission, exc: Exception) -> Graded:
    return _failure(sub.student, f"could not start grading ({type(exc).__name__}: {clean_text(exc)})")


def _each_in_pool(
    items: Sequence[Job],
    run: Callable[[Job], Any],
    done: Callable[[Job, Any], None],
    desc: str,
    n_workers: int,
    progress: bool,
) -> None:
    """`run(item)` for every item (a tuple whose first element is its Submission), `n_workers` at once,
    with a progress bar; `done(item, result)` as each ends. A job that raised (the submission could not
    even be handed to the grader) ends with the student's failure."""
    with (
        ThreadPoolExecutor(max_workers=n_workers) as pool,
        tqdm(total=len(items), desc=desc, unit="submission", file=sys.stderr, disable=not progress) as bar,
    ):
        futures = {pool.submit(run, item): item for item in items}
        for future in as_completed(futures):
            item = futures[future]
            try:
                result = future.result()
            except Exception as exc:
                result = _failed_to_start(item[0], exc)
            done(item, result)
            bar.update(1)


def _grade_unsealed(
    todo: Sequence[tuple[Submission, str]],
    out: Path,
    store: Store,
    n_workers: int,
    timeout_s: float,
    progress: bool,
    python: str,
    exercises: Sequence[str] | None,
) -> None:
    """Each submission in one grader process (`grade_one`), `n_workers` at once; `store` each grading."""
    _each_in_pool(
        todo,
        lambda job: grade_one(job[0], out / job[0].out_folder, timeout_s, python, exercises),
        lambda job, result: store(job[0], job[1], result),
        "grading",
        n_workers,
        progress,
    )


def _grade_sealed(
    todo: Sequence[tuple[Submission, str]],
    out: Path,
    store: Store,
    n_workers: int,
    timeout_s: float,
    progress: bool,
    python: str,
    exercises: Sequence[str] | None,
) -> None:
    """Every submission's public phase (`grade_public`, `n_workers` at once), then, once the last has
    ended and is sealed, every hidden phase (`grade_hidden`); `store` each grading as it is complete.
    The public cases' call specs are computed once, here, and handed to every public phase.

    The sealed states live in one grader-only folder (mode 0700, a SCRATCH_PREFIX name: a killed batch's
    is swept by the next), outside every sandbox's root and removed at the end, also on an error.
    """
    states = Path(tempfile.mkdtemp(prefix=f"{SCRATCH_PREFIX}{os.getpid()}-"))
    try:
        states.chmod(0o700)
        specs: Path | None = states / "public_specs.json"
        try:  # once for the batch (ex10's cases import torch: 1.5 s of CPU in every process that loads them)
            from autograder.runtime import grader

            grader.write_public_specs(states / "public_specs.json", exercises)
        except Exception as exc:  # each public phase computes them then
            print(f"grade-all: the public call specs were not computed ({type(exc).__name__})", file=sys.stderr)
            specs = None
        ready: list[tuple[Submission, str, Sealed]] = []

        def public_done(job: tuple[Submission, str, Path], first: Sealed | Graded) -> None:
            if isinstance(first, Sealed):
                ready.append((job[0], job[1], first))
            else:  # no hidden phase: its failure is what the student sees
                store(job[0], job[1], first)

        def hidden_done(job: tuple[Submission, str, Sealed], result: Graded) -> None:
            remove_tree(job[2].state)
            store(job[0], job[1], result)

        public_jobs = [(sub, digest, states / f"s{index:06d}") for index, (sub, digest) in enumerate(todo)]
        _each_in_pool(
            public_jobs,
            lambda job: grade_public(job[0], out / job[0].out_folder, job[2], timeout_s, python, exercises, specs),
            public_done,
            "public phases",
            n_workers,
            progress,
        )
        # the barrier: every public phase above has ended and is sealed; no hidden case ran before this line
        _each_in_pool(
            sorted(ready, key=lambda job: job[0].student),
            lambda job: grade_hidden(job[0], out / job[0].out_folder, job[2], timeout_s, python),
            hidden_done,
            "hidden phases",
            n_workers,
            progress,
        )
    finally:
        remove_tree(states)


def grade_all(
    submissions: Path,
    out: Path,
    workers: int | None = None,
    force: bool = False,
    timeout_s: float = DEFAULT_TIMEOUT_S,
    progress: bool = True,
    python: str = sys.executable,
    exercises: Sequence[str] | None = None,
    also_writes: Sequence[Path] = (),
    not_submissions: Sequence[Path] = (),
    sealed: bool = True,
) -> BatchReport:
    """Grade every submission under `submissions` into `out` (see the module docstring).

    `python` is the interpreter that runs `-m autograder grade` (the current one by default);
    `exercises` limits grading to these exercise ids (default: all); `also_writes` are further files
    the caller writes after the batch (the --csv export): where one lies in `out`, no student's folder
    takes its name; `not_submissions`: further output folders that are never graded as students (the
    real --out of a dry run, which grades into a temporary folder; like every folder outside the
    sandbox's allow-list, the children do not see it). `sealed=False` grades each submission with both phases in one grader process, side by side
    with the others (the batch before the seal: one student's public phase may run while another's
    hidden phase does), for measurements and for the tests that show what the seal closes.
    """
    out.mkdir(parents=True, exist_ok=True)
    sweep_stale_scratch()
    subs, refused = discover(submissions, out, _names_under(out, also_writes), not_submissions)
    for item in refused:
        print(f"grade-all: refused {terminal_text(item.entry)}: {terminal_text(item.reason)}", file=sys.stderr)
    refused_path = out / REFUSED_NAME
    if refused:
        listed = "".join(f"{terminal_text(r.entry)}\t{terminal_text(r.reason)}\n" for r in refused)
        refused_path.write_text(listed, encoding="utf-8")
    else:
        refused_path.unlink(missing_ok=True)
    start = time.perf_counter()
    graded: list[str] = []
    skipped: list[str] = []
    failed: list[str] = []
    # the exercises graded are part of it: a full run after an --exercises run grades everything again
    fingerprint = grader_fingerprint() + ("" if exercises is None else ":" + ",".join(sorted(exercises)))
    with Gradebook(out / GRADEBOOK_NAME) as book:
        todo: list[tuple[Submission, str]] = []
        for sub in subs:
            digest = content_hash(sub.path)
            if (
                not force
                and book.known_hash(sub.student) == digest
                and book.status(sub.student) == "graded"
                and book.fingerprint(sub.student) == fingerprint
            ):
                skipped.append(sub.student)
                stored = book.results(sub.student)
                try:
                    if stored is not None:
                        write_outputs(out / sub.out_folder, sub.name or sub.student, stored)
                    continue
                except Exception:  # its files cannot be rewritten: graded again, and any failure recorded
                    skipped.pop()
            todo.append((sub, digest))
        n_workers = max(1, workers or os.cpu_count() or 1)

        def store(sub: Submission, digest: str, result: Graded) -> None:
            result = _record(book, sub, digest, result, out, fingerprint)
            graded.append(sub.student)
            if result.grader_failed:
                failed.append(sub.student)

        if sealed:
            _grade_sealed(todo, out, store, n_workers, timeout_s, progress, python, exercises)
        else:
            _grade_unsealed(todo, out, store, n_workers, timeout_s, progress, python, exercises)
        wanted = {s.student for s in subs}
        records = [r for r in book.records() if r.student in wanted]
    return BatchReport(sorted(graded), skipped, sorted(failed), records, time.perf_counter() - start, refused)


def _dry_run(args: argparse.Namespace) -> int:
    """--dry-run: grade into a temporary folder, print what would change against --out (see autograder.batch.regrade)."""
    from autograder.batch import regrade

    if args.csv is not None:
        print(
            "grade-all: --dry-run writes nothing: leave out --csv (it regrades everyone, as --force)", file=sys.stderr
        )
        return 2
    try:
        diffs, graded = regrade.dry_run(
            args.submissions,
            args.out,
            args.workers,
            args.timeout,
            not args.no_progress,
            args.python,
            args.exercises,
        )
    except (OSError, ValueError, zipfile.BadZipFile) as exc:
        print(f"grade-all: {clean_text(exc)}", file=sys.stderr)
        return 2
    regrade.print_dry_run(diffs, graded, args.out)
    return 0


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="python -m autograder grade-all", description=__doc__.splitlines()[0])
    parser.add_argument(
        "submissions",
        type=Path,
        help="folder with one sub-folder or .zip per student, or a Gradescope export (zip or folder)",
    )
    parser.add_argument("--csv", type=Path, help="export this batch's gradebook rows to this CSV file")
    parser.add_argument(
        "--out",
        type=Path,
        default=Path("out/graded"),
        help="per-student results, feedback and gradebook.sqlite (default out/graded)",
    )
    parser.add_argument("--workers", type=int, default=None, help="parallel graders (default: number of cores)")
    parser.add_argument("--force", action="store_true", help="regrade submissions whose content is unchanged")
    parser.add_argument(
        "--timeout",
        type=float,
        default=DEFAULT_TIMEOUT_S,
        help=f"wall-clock limit per submission, s (default {DEFAULT_TIMEOUT_S:.0f})",
    )
    parser.add_argument("--exercises", nargs="+", choices=list(BY_ID), help="grade only these exercises")
    parser.add_argument("--no-progress", action="store_true", help="no progress bar")
    parser.add_argument(
        "--dry-run",
        action="store_true",
        help="grade into a temporary folder and print whose grade would change (and which tests); "
        "writes nothing under --out",
    )
    parser.add_argument(
        "--python", default=sys.executable, help="interpreter that runs `-m autograder grade` (default: this one)"
    )
    args = parser.parse_args(argv)
    for stream in (sys.stdout, sys.stderr):  # student names in the summary never stop the report
        if hasattr(stream, "reconfigure"):
            stream.reconfigure(errors="backslashreplace")
    if args.csv is not None and (
        args.csv.name.lower() in {n.lower() for n in RESERVED_NAMES}
        or args.csv.resolve() == (args.out / GRADEBOOK_NAME).resolve()
    ):
        print(f"grade-all: --csv {args.csv} would overwrite grade-all's own output", file=sys.stderr)
        return 2
    if args.csv is not None and args.csv.is_dir():
        print(f"grade-all: --csv {args.csv} is a folder, not a file to write", file=sys.stderr)
        return 2
    if args.dry_run:
        return _dry_run(args)
    try:
        report = grade_all(
            args.submissions,
            args.out,
            args.workers,
            args.force,
            args.timeout,
            not args.no_progress,
            args.python,
            args.exercises,
            [args.csv] if args.csv is not None else [],
        )
    except (OSError, ValueError, zipfile.BadZipFile) as exc:
        print(f"grade-all: {terminal_text(exc)}", file=sys.stderr)
        return 2
    print(summary_table(report.records, args.exercises))
    print(
        f"graded {len(report.graded)}, skipped {len(report.skipped)} unchanged, "
        f"grader failed on {len(report.failed)}, refused {len(report.refused)}; {report.wall_s:.1f} s; "
        f"gradebook {args.out / GRADEBOOK_NAME}"
    )
    for item in report.refused:
        print(f"refused {terminal_text(item.entry)}: {terminal_text(item.reason)}")
    if args.csv:
        try:
            with Gradebook(args.out / GRADEBOOK_NAME) as book:
                rows = book.export_csv(args.csv, [r.student for r in report.records])
        except OSError as exc:  # the gradebook holds every grading: export it again with another --csv
            print(f"grade-all: the CSV {args.csv} could not be written: {terminal_text(exc)}", file=sys.stderr)
            return 1
        print(f"wrote {args.csv} ({rows} rows)")
    return 0
