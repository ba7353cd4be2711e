"""What a batch grades: the submissions found in a folder or a Gradescope export, each student's output folder,
and the content hash and grader fingerprint that decide what is graded again. It reads only.

SUBMISSIONS is one of:
- a folder with one entry per student: a folder or a .zip (the student is the folder name or the
  zip's stem), e.g. a flat folder of per-student zips;
- Gradescope's "export submissions" zip, or that zip unpacked: a top folder holding
  `submission_metadata.yml` and one folder per submission (`submission_123456/`); the top folder is
  SUBMISSIONS itself, or its only entry when that is named like Gradescope's `assignment_<id>_export/`
  (a yml in any other sub-folder is a student's file, never a roster; the export folder beside other
  entries, such as the `submissions.zip` it was unzipped from, stops with an error naming it). The yml maps each
  folder to its submitters; the student is the submitters' e-mail (else their SID, else the folder
  name), so a resubmission, which Gradescope exports under a new folder name, lands on the same
  student; names and e-mails go to the gradebook and the CSV;
- a zip of either (a zip of a folder of per-student zips, for instance).
A zip is unpacked into DIR/_gradescope_export/ with caps (per file, per export, depth; links and
damaged members skipped).

An entry that cannot be graded as a student is refused with a sentence saying why, never stopping the
batch: a name that collides with grade-all's own outputs (`gradebook.sqlite.zip`, ...), two entries for
one student (`alice/` and `alice.zip`), the output folder itself, a hidden folder or zip (`.alice/`;
not the entries tools leave, such as `.git`, `.snapshot`, `.Trash-1000` or macOS's AppleDouble `._alice.zip`,
which are passed over silently), a symbolic link.

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
"""

from __future__ import annotations

import errno
import hashlib
import os
import re
import shutil
import sys
import unicodedata
import zipfile
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from autograder.core.manifest import ROOT
from autograder.core.safetext import UNSHOWN, clean_text, one_line, terminal_text
from autograder.runtime import intake, zips

IGNORED_NAMES = ("__pycache__", "__MACOSX", ".DS_Store")

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

EXPORT_MAX_DIRECTORY_BYTES = 128 * 2**20  # an export zip's central directory (read whole by zipfile)

# the errors of a member's name or shape (too long, a file where a folder is or the reverse, a name the file
# system refuses): that member is skipped; any other error (ENOSPC, EDQUOT, EIO ...) stops the unpacking
NAME_ERRNOS = frozenset({errno.ENAMETOOLONG, errno.EISDIR, errno.ENOTDIR, errno.EEXIST, errno.EINVAL, errno.EILSEQ})


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
    entry: str  # the entry of SUBMISSIONS (one line: safetext.one_line)
    reason: str


def folder_name(student: str) -> str:
    """A safe output folder name for a student: printable, no separators, control characters (C0, C1),
    line separators or bidi controls (safetext.UNSHOWN), not hidden, at most FOLDER_NAME_CHARS long (a cut
    name keeps a hash of the whole)."""
    name = re.sub(f"[{UNSHOWN}/\\\\]", "_", clean_text(student)).strip()
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


TOOL_HIDDEN_NAMES = (
    ".git",
    ".ipynb_checkpoints",
    ".Trash",
    ".Trashes",
    ".fseventsd",
    ".Spotlight-V100",
    ".vscode",
    ".snapshot",  # NetApp's snapshots
    ".TemporaryItems",  # macOS on a network share
    ".AppleDouble",  # netatalk's resource forks
    ".DS_Store",
)
_TOOL_HIDDEN = re.compile(r"\._.*|\.Trash-\d+", re.DOTALL)  # AppleDouble `._alice.zip` (SMB, exFAT); `.Trash-1000`


def _tool_entry(name: str) -> bool:
    """Whether a class folder's entry is one tools leave (IGNORED_NAMES, TOOL_HIDDEN_NAMES, `._*`, `.Trash-<uid>`)."""
    return name in IGNORED_NAMES or name in TOOL_HIDDEN_NAMES or _TOOL_HIDDEN.fullmatch(name) is not None


def _entries(folder: Path) -> tuple[list[tuple[str, Path]], list[Refused]]:
    """(student, path) for each sub-folder or .zip of `folder`, and the entries refused: a hidden folder or
    zip (name starting with "."; not the entries tools leave, `_tool_entry`) and a symbolic link."""
    found = []
    refused = []
    for entry in sorted(folder.iterdir()):
        if _tool_entry(entry.name):
            continue
        shown = one_line(entry.name)  # a refusal's entry: one line (refused.txt is tab-separated)
        is_zip = entry.suffix.lower() == ".zip"
        if entry.is_symlink():
            if entry.is_dir() or is_zip:
                refused.append(
                    Refused(
                        shown,
                        "it is a symbolic link, which grade-all does not follow: put the folder or zip itself here",
                    )
                )
            continue
        if not (entry.is_dir() or (entry.is_file() and is_zip)):
            continue
        if entry.name.startswith("."):
            refused.append(Refused(shown, "its name starts with '.', which hides it: rename it without the dot"))
        elif entry.is_dir():
            found.append((clean_text(entry.name), entry))
        else:
            found.append((clean_text(entry.stem), entry))
    return found, refused


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
    entries, refused = _entries(export_root if export_root is not None else folder)
    candidates: list[Submission] = []
    outs = [p for p in (out, *not_submissions) if p is not None]
    for student, path in entries:
        if any(intake.within(o, path) for o in outs):
            refused.append(Refused(one_line(path.name), "this is grade-all's own output folder, not a submission"))
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
        shown = ", ".join(one_line(s.path.name) for s in group)
        if len(group) > 1:
            refused += [
                Refused(
                    one_line(s.path.name),
                    f"more than one submission for one student ({shown}); none of them was graded: keep one",
                )
                for s in group
            ]
        elif _name_keys(group[0].out_folder) & reserved:
            refused.append(
                Refused(
                    one_line(group[0].path.name),
                    f"its name collides with grade-all's own output {group[0].out_folder!r}; "
                    "rename it and grade it again",
                )
            )
        else:
            sole.append(group[0])
    subs = assign_folders(sole, reserved | _name_keys(*outputs))
    return sorted(subs, key=lambda s: s.student), refused


EXPORT_ROOT_NAME = re.compile(r"assignment_\d+_export")  # the folder Gradescope's export zip holds

METADATA_MAX_BYTES = 16 * 2**20  # a larger submission_metadata.yml is not parsed


class ExportLayoutError(ValueError):
    """Gradescope's export folder lies in SUBMISSIONS beside other entries: which folder is the class is unclear."""


def gradescope_root(folder: Path) -> Path | None:
    """The folder holding Gradescope's submission_metadata.yml: `folder` itself, or its only entry (beside
    hidden and ignored ones) when that is a folder named like Gradescope's export (`assignment_<id>_export`).

    A sub-folder with any other name is a student's own submission: a yml in it names no one. An entry
    named like the export folder and holding the yml beside other entries (the export unzipped in place,
    `submissions.zip` left beside it) raises ExportLayoutError: it is never graded as one student.
    """
    if (folder / METADATA_NAME).is_file():
        return folder
    inside = [p for p in folder.iterdir() if not p.name.startswith(".") and p.name not in IGNORED_NAMES]
    exports = [p for p in inside if EXPORT_ROOT_NAME.fullmatch(p.name) and (p / METADATA_NAME).is_file()]
    if not exports:
        return None
    only = inside[0]
    if len(inside) == 1 and only.is_dir() and not only.is_symlink():
        return only
    others = ", ".join(repr(one_line(p.name)) for p in sorted(inside) if p not in exports)
    raise ExportLayoutError(
        f"{one_line(folder)} holds Gradescope's export folder {one_line(exports[0].name)!r} beside other "
        f"entries ({others or 'another export folder'}); it is not graded as a student: pass the export folder "
        f"itself ({one_line(exports[0])}), or remove the other entries"
    )


METADATA_MAX_NODES = 1_000_000  # a roster expanding (its aliases followed) to more YAML nodes is not read


class YamlTooLargeError(ValueError):
    """A YAML document whose aliases expand it beyond METADATA_MAX_NODES nodes (a "billion laughs"), or
    into itself."""


def _expanded_nodes(root: Any) -> int:
    """The nodes of a composed YAML document counted as if every alias were written out: count(node) =
    1 + the counts of its children, memoised per node, so linear in the composed graph (a billion-laughs
    DAG of a few hundred nodes costs a few hundred steps). YamlTooLargeError above METADATA_MAX_NODES or
    for a node inside itself (an alias within its own anchor). Without recursion."""
    import yaml

    def children(node: Any) -> list[Any]:
        if isinstance(node, yaml.MappingNode):
            return [part for pair in node.value for part in pair]
        if isinstance(node, yaml.SequenceNode):
            return list(node.value)
        return []

    counts: dict[int, int] = {}
    on_path: set[int] = set()
    stack: list[tuple[Any, bool]] = [(root, False)]
    while stack:
        node, expanded = stack.pop()
        key = id(node)
        if expanded:
            on_path.discard(key)
            counts[key] = 1 + sum(counts[id(child)] for child in children(node))
            if counts[key] > METADATA_MAX_NODES:
                raise YamlTooLargeError(f"its aliases expand it to more than {METADATA_MAX_NODES} YAML nodes")
            continue
        if key in counts:
            continue
        if key in on_path:
            raise YamlTooLargeError("an alias in it refers to a node that holds it (a document without end)")
        on_path.add(key)
        stack.append((node, True))
        stack.extend((child, False) for child in children(node) if id(child) not in counts)
    return counts[id(root)]


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

    A file larger than METADATA_MAX_BYTES is not parsed, and one whose YAML aliases expand it to more than
    METADATA_MAX_NODES nodes (a "billion laughs": a few lines, billions of nodes) or into itself is not
    read: {} with a warning. Aliases within the cap are read (Ruby's YAML writer emits `&1`/`*1` for a
    Hash or Array it meets twice). The size is counted on the composed node graph before anything is built.
    The file maps each submission folder to a record whose `:submitters:` list holds `:name:`,
    `:email:` and `:sid:` (keys are Ruby symbols, written with a leading colon).
    """
    try:
        import yaml

        class Loader(yaml.SafeLoader):
            pass

        Loader.add_multi_constructor("!", _plain_yaml)
        with open(path, "rb") as fh:
            raw = fh.read(METADATA_MAX_BYTES + 1)
        if len(raw) > METADATA_MAX_BYTES:
            raise ValueError(f"larger than {METADATA_MAX_BYTES // 2**20} MiB")
        loader = Loader(raw.decode("utf-8", errors="replace"))
        try:
            root = loader.get_single_node()
            if root is not None:
                _expanded_nodes(root)
            data = loader.construct_document(root) if root is not None else None
        finally:
            loader.dispose()
    except Exception as exc:  # PyYAML missing, a malformed or oversized file: grade by folder name
        print(
            f"grade-all: {terminal_text(path)} could not be read ({type(exc).__name__}: {terminal_text(exc)}); "
            "students are named "
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

    Links, absolute or `..` paths, hidden entries, encrypted members and members compressed other than
    stored or deflate (`zips.member_problem`), files larger than intake.MAX_FILE_BYTES (zips:
    intake.MAX_SUBMISSION_BYTES), entries deeper than intake.MAX_DEPTH + 2 and damaged members are
    skipped (counted on stderr); bytes are counted while reading, at most EXPORT_MAX_BYTES in all. A
    member this file system cannot hold (a name too long, a file named like a folder made before it: the
    errors in NAME_ERRNOS) is skipped too, with its own count on stderr: one student's odd name never stops
    the batch. Any other error writing a member (a full disk, a quota, an I/O error) is raised: grading
    never goes on with files missing.
    Folder entries (names ending in "/", one per folder in a `zip -r` archive) are passed over
    silently: the folders are made for the files inside them.
    """
    if dest.exists():
        shutil.rmtree(dest)
    dest.mkdir(parents=True)
    with open(archive, "rb") as fh:
        try:
            zf = zips.open_zip(fh, EXPORT_MAX_MEMBERS, EXPORT_MAX_DIRECTORY_BYTES)
        except zips.ZipRefused as exc:
            raise ValueError(f"{archive} {exc}") from None
        _unpack_members(zf, archive, dest)
    return dest


def _unpack_members(zf: zipfile.ZipFile, archive: Path, dest: Path) -> None:
    skipped = unwritable = 0
    left_bytes = EXPORT_MAX_BYTES
    with zf:
        for info in zf.infolist():
            skip = zips.member_skip(info)  # absolute, '..', hidden, a link: intake's rule
            if skip == "folder":
                continue  # a folder entry (what `zip -r` writes for each folder): its files are members too
            name = zips.member_path(info)
            parts = name.parts
            if (
                skip
                or len(parts) > intake.MAX_DEPTH + 2
                or zips.member_problem(info)  # encrypted, or compressed other than stored or deflate
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
            except OSError as exc:  # a name too long here, a file named like a folder ...: skip it, keep the others
                _remove_partial(target)
                if exc.errno not in NAME_ERRNOS:  # a full or failing disk: grade-all stops with its error
                    raise
                unwritable += 1
            except Exception:  # damaged or oversized member: skip it, keep the others
                _remove_partial(target)
                skipped += 1
    if skipped:
        print(
            f"grade-all: {skipped} entries of {terminal_text(archive.name)} were not unpacked (links, hidden, "
            f"damaged, encrypted, compressed with bzip2 or lzma, or larger than {intake.MAX_FILE_BYTES // 2**20} MiB)",
            file=sys.stderr,
        )
    if unwritable:
        print(
            f"grade-all: {unwritable} entries of {terminal_text(archive.name)} could not be written here (a name "
            "too long for this file system, a file named like a folder, ...) and were skipped; the rest was unpacked",
            file=sys.stderr,
        )


def _remove_partial(target: Path) -> None:
    """Remove what an unpacked member left at `target`, if it is a file; a folder or an impossible name stays."""
    try:
        if target.is_file() and not target.is_symlink():
            target.unlink()
    except OSError:  # ENAMETOOLONG, ENOTDIR ...: nothing was written there
        pass


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


def zip_is_readable(path: Path) -> bool:
    """Whether the zip's directory can be read within intake's caps (its members are not decompressed: that is
    the grader's job)."""
    try:
        with open(path, "rb") as fh, zips.open_zip(fh):  # too many entries to parse here: the grader said so
            return True
    except Exception:  # a damaged central directory raises many types
        return False


def names_under(out: Path, paths: Sequence[Path]) -> list[str]:
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
