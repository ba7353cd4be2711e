"""The public phase's state, sealed: what `grade --phase public` hands to `grade --phase hidden`.

`python -m autograder grade SUB --phase public --state DIR` reads the submission and runs every
exercise's public phase; `--phase hidden --state DIR --out results.json` runs the hidden phases and
writes results.json (`autograder.runtime.grader`). grade-all runs the first for every submission of a batch,
then the second for every submission, so no hidden input is on the machine while any student's
visible output is being produced (`autograder.batch.bulk`).

DIR is the grader's own storage (mode 0700; grade-all keeps it outside every sandbox's view). It holds:
- `submission/`: the exercise files as the public phase located them (`autograder.runtime.intake`): the hidden phase
  grades these copies, not the submission again;
- `public.json`: the exercises and time scale graded, the submission's notes, each exercise's located
  file (path under DIR, where it was, its note) and its public phase: the child report (outcomes,
  refusals, how it ended, the public output) or the grader's traceback, the digest of the public
  call specs it ran (`grader.specs_digest`), the sha256 of every file under `submission/`, and the
  time the phase took;
- `seal`: the sha256 of public.json's bytes, in hex.
The seal is fixed when the public phase ends; the hidden phase refuses a state whose public.json or
files no longer match it (given with `--seal`, else read from `seal`), uses the sealed reports as
they are (a public case's outcome, the public output and the import error come only from them) and
never writes into DIR. Nothing hidden is ever written to DIR: the public phase is sent no hidden input.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
from pathlib import Path
from typing import Any

from autograder.runtime.intake import Found
from autograder.runtime.sandbox.limits import ChildReport
from hetero.checks import Outcome

FORMAT = 1
STATE_NAME = "public.json"
SEAL_NAME = "seal"
FILES_NAME = "submission"  # the located exercise files, under DIR
SEAL_CHARS = 64  # hex sha256


class SealError(RuntimeError):
    """The public phase's state is missing, malformed, or no longer what was sealed."""


@dataclasses.dataclass
class PublicState:
    """Everything the hidden phase needs from the public phase (see the module docstring)."""

    submission: str  # the submission as given to the public phase (a check, never read again)
    exercises: list[str]
    time_scale: float
    elapsed_s: float  # wall time of the public phase, intake included
    notes: list[str]  # about the submission as a whole (autograder.runtime.intake)
    found: dict[str, Found]  # exercise id -> the file located for it (paths under DIR/submission)
    reports: dict[str, ChildReport | None | str]  # public phase: report, None (no file) or traceback
    spec_digests: dict[str, str] = dataclasses.field(default_factory=dict)  # exercise id -> digest of the specs run
    failure: str = ""  # the public phase itself failed (traceback): the hidden phase writes a grader failure


def digest(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def file_digest(path: Path) -> str:
    hasher = hashlib.sha256()
    with open(path, "rb") as fh:
        while chunk := fh.read(2**20):
            hasher.update(chunk)
    return hasher.hexdigest()


def report_to_data(report: ChildReport) -> dict[str, Any]:
    """A child report as JSON data (outcomes as `Outcome.to_json`, tuples as lists)."""
    data: dict[str, Any] = {}
    for field in dataclasses.fields(report):
        value = getattr(report, field.name)
        if field.name == "outcomes":
            value = {case_id: outcome.to_json() for case_id, outcome in value.items()}
        elif isinstance(value, tuple):
            value = list(value)
        data[field.name] = value
    return data


def report_from_data(data: dict[str, Any]) -> ChildReport:
    """The inverse of `report_to_data`; raises SealError on a field that is missing or of the wrong type."""
    report = ChildReport()
    for field in dataclasses.fields(report):
        if field.name not in data:
            raise SealError(f"{STATE_NAME}: a report has no {field.name!r}")
        value = data[field.name]
        if field.name == "outcomes":
            value = {str(k): Outcome.from_json(v) for k, v in value.items()}
        elif isinstance(getattr(report, field.name), tuple):
            value = tuple(value)
        setattr(report, field.name, value)
    return report


def _relative(path: Path, state: Path) -> str:
    return path.resolve().relative_to(state.resolve()).as_posix()


def write(state: Path, public: PublicState) -> str:
    """Write public.json and its seal into `state` (the files are already under `state/submission`); return the seal."""
    found: dict[str, Any] = {}
    files: dict[str, str] = {}
    for ex_id, item in public.found.items():
        rel = None
        if item.path is not None:
            rel = _relative(item.path, state)
            files[rel] = file_digest(item.path)
        found[ex_id] = {"path": rel, "shown": item.shown, "note": item.note}
    reports: dict[str, Any] = {}
    for ex_id, report in public.reports.items():
        if isinstance(report, str):
            reports[ex_id] = {"failure": report}
        elif report is None:
            reports[ex_id] = {"report": None}
        else:
            reports[ex_id] = {"report": report_to_data(report)}
    data = {
        "format": FORMAT,
        "submission": public.submission,
        "exercises": public.exercises,
        "time_scale": public.time_scale,
        "elapsed_s": public.elapsed_s,
        "notes": public.notes,
        "found": found,
        "reports": reports,
        "files": files,
        "spec_digests": public.spec_digests,
        "failure": public.failure,
    }
    # Compact: indentation would cost every element of a student's nested answer its depth in spaces (a 64 KiB
    # record nested 960 deep became 31 MB). Lone surrogates are escaped and read back as they are.
    body = json.dumps(data, separators=(",", ":"), sort_keys=True).encode("ascii")
    seal = digest(body)
    _write_private(state / STATE_NAME, body)
    _write_private(state / SEAL_NAME, seal.encode("ascii") + b"\n")
    return seal


def _write_private(path: Path, body: bytes) -> None:
    tmp = path.with_name(f".{path.name}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o600)
    with os.fdopen(fd, "wb") as fh:
        fh.write(body)
    os.replace(tmp, path)


def read_seal(state: Path) -> str:
    """The seal the public phase wrote (`state/seal`); SealError when it is not a hex sha256."""
    try:
        text = (state / SEAL_NAME).read_text(encoding="ascii").strip()
    except (OSError, UnicodeDecodeError) as exc:
        raise SealError(f"no readable seal in {state}: {type(exc).__name__}") from exc
    if len(text) != SEAL_CHARS or any(ch not in "0123456789abcdef" for ch in text):
        raise SealError(f"{state / SEAL_NAME} does not hold a sha256 in hex")
    return text


def state_digest(state: Path) -> str:
    """sha256 of public.json as it is now (compared with the seal)."""
    try:
        return digest((state / STATE_NAME).read_bytes())
    except OSError as exc:
        raise SealError(f"no readable {STATE_NAME} in {state}: {type(exc).__name__}") from exc


def read(state: Path, seal: str | None = None) -> PublicState:
    """The sealed public state in `state`, checked against `seal` (default: the seal file) and every
    file's digest; SealError when anything differs from what was sealed."""
    expected = read_seal(state) if seal is None else seal
    body = (state / STATE_NAME).read_bytes() if (state / STATE_NAME).is_file() else b""
    if digest(body) != expected:
        raise SealError(f"{state / STATE_NAME} is not what the public phase sealed ({expected[:12]}...)")
    data = json.loads(body)
    if data.get("format") != FORMAT:
        raise SealError(f"{STATE_NAME}: format {data.get('format')!r}, expected {FORMAT}")
    root = state.resolve()
    for rel, want in data["files"].items():
        path = (root / rel).resolve()
        if root not in path.parents or file_digest(path) != want:
            raise SealError(f"{rel} under {state} is not the file the public phase sealed")
    found: dict[str, Found] = {}
    for ex_id, item in data["found"].items():
        if item["path"] is not None and item["path"] not in data["files"]:
            raise SealError(f"{STATE_NAME}: {ex_id}'s file has no sealed digest")
        path = None if item["path"] is None else root / item["path"]
        found[ex_id] = Found(path, str(item["shown"]), str(item["note"]))
    reports: dict[str, ChildReport | None | str] = {}
    for ex_id, item in data["reports"].items():
        if "failure" in item:
            reports[ex_id] = str(item["failure"])
        elif item["report"] is None:
            reports[ex_id] = None
        else:
            reports[ex_id] = report_from_data(item["report"])
    return PublicState(
        submission=str(data["submission"]),
        exercises=[str(e) for e in data["exercises"]],
        time_scale=float(data["time_scale"]),
        elapsed_s=float(data["elapsed_s"]),
        notes=[str(n) for n in data["notes"]],
        found=found,
        reports=reports,
        spec_digests={str(k): str(v) for k, v in data["spec_digests"].items()},
        failure=str(data.get("failure") or ""),
    )


def prepare(state: Path) -> Path:
    """Create the state folder (mode 0700; it must be absent or empty) and its submission/ folder; return that."""
    state.mkdir(mode=0o700, parents=True, exist_ok=True)
    state.chmod(0o700)
    if any(state.iterdir()):
        raise SealError(f"{state} is not empty: the public phase writes into a fresh folder")
    files = state / FILES_NAME
    files.mkdir(mode=0o700)
    return files
