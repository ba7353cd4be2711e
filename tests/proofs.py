"""Slow proofs and their committed records: a proof re-runs only when its inputs change.

A proof is a set of slow tests that exercise a route through real tools (a fresh Gradescope venv made
by setup.sh on Python 3.10, the student copy set up from nothing, nbgrader and Otter for real, pip's
resolver against the package index). Its result depends on the files it runs and reads, computed
from what PROOFS declares (the import closure of the Python files it runs, the data it reads, the
members of the artefact it installs, and for a proof that grades every file of the grader); the tests
carry `@pytest.mark.proof("<name>")`.

Each proof keeps a record, `tests/proofs/<name>.json` (committed): what ran, on which Python, the
sha256 of every input file, each test's outcome and duration, and what the tests printed (their
measured figures). At collection:
- record present and its digest equal to the inputs' digest now: the proof's tests are deselected and
  the record is checked instead (`tests/test_proofs.py`; the terminal summary lists what was checked);
- record missing, or an input changed (the summary names the files): the proof's tests run in full,
  and when every one of them passes the record is rewritten, for you to commit;
- `A2_PROOFS=rerun` (what `make proofs` sets) runs every proof whatever its record says.

A record is written only when all the proof's tests ran in this session and passed: a `-k` or `-m`
selection that runs part of a proof, a skip, or a failure leaves the old record (and so the proof
stays due). The digest covers file contents and paths, the Python (major.minor) that runs pytest, the
grader's fingerprint (a proof that grades) and each proof's own extra keys (such as the Python 3.10
interpreter used).
"""

from __future__ import annotations

import datetime
import functools
import hashlib
import json
import os
import platform
import re
import shutil
import subprocess
import sys
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
RECORDS = ROOT / "tests" / "proofs"
RERUN_ENV = "A2_PROOFS"  # "rerun": every proof runs, whatever its record says


def python310() -> str | None:
    """A working Python 3.10 interpreter (pyenv's, or python3.10 on PATH), or None: the one the
    Gradescope-layout proof makes its venv with, and whose version its record keeps."""
    pyenv_root = Path(os.environ.get("PYENV_ROOT", Path.home() / ".pyenv"))
    candidates = sorted(str(p) for p in pyenv_root.glob("versions/3.10*/bin/python3.10"))
    candidates += [c for c in [shutil.which("python3.10")] if c]
    for candidate in candidates:
        try:
            probe = subprocess.run(
                [candidate, "-c", "import platform; print(platform.python_version())"],
                capture_output=True,
                text=True,
                timeout=30,
            )
        except (OSError, subprocess.TimeoutExpired):
            continue
        if probe.stdout.startswith("3.10."):
            return candidate
    return None


def _python310_version() -> str:
    """major.minor.micro of `python310()`, or "none"."""
    exe = python310()
    if exe is None:
        return "none"
    return subprocess.run(
        [exe, "-c", "import platform; print(platform.python_version())"], capture_output=True, text=True, timeout=30
    ).stdout.strip()


def local_torch_index(dest: Path, version: str) -> str | None:
    """A PEP 503 file index under `dest` (`file://.../simple`, whose torch/index.html links this machine's
    local CPU wheels of torch `version`, found in pip's find-links folders), standing in for PyTorch's CPU
    index where that cannot be reached: the proofs set A2_TORCH_INDEX_URL to it, so torch goes through
    install_torch.py's index route. None when there is no such wheel here (then the real index is used)."""
    folders = os.environ.get("PIP_FIND_LINKS", "").split()
    listed = subprocess.run(
        [sys.executable, "-m", "pip", "config", "list"], capture_output=True, text=True, timeout=60
    ).stdout
    for line in listed.splitlines():
        key, _, value = line.partition("=")
        if key.endswith("find-links"):
            folders += value.strip().strip("'\"").split()
    wheels = sorted({w for f in folders if Path(f).is_dir() for w in Path(f).glob(f"torch-{version}+cpu-*.whl")})
    if not wheels:
        return None
    page = dest / "simple" / "torch"
    page.mkdir(parents=True, exist_ok=True)
    links = "".join(f'<a href="{w.resolve().as_uri()}">{w.name}</a>\n' for w in wheels)
    (page / "index.html").write_text(f"<!DOCTYPE html>\n<html><body>\n{links}</body></html>\n", encoding="utf-8")
    return (dest / "simple").resolve().as_uri()


MACHINERY = ("tests/conftest.py", "tests/proofs.py")  # every proof runs under them (what conftest imports too)
GRADED = "tests/graded.py"  # conftest's `graded` fixture: the grader, for the proofs that grade
MAIN = ROOT / "autograder" / "__main__.py"  # its command table names every command's module: one run imports one


@dataclass(frozen=True)
class Proof:
    """A slow proof: what it shows, and what it runs and reads (its inputs are computed from these).

    runs:   glob patterns of the Python files the proof runs: its test files, the modules it starts by
            name (`python -m ...`), the exercise files it grades. Their import closure within autograder
            and hetero (`autograder.core.closure`) is an input, and so is every tests/ helper a test
            file loads by path.
    reads:  glob patterns of the other files it reads: data, configuration, templates, locks.
    grades: it grades with the repository's grader: every file a grading runs or reads
            (`autograder.packaging.build.grader_files`) is an input, and their fingerprint is in the key.
    ships:  the files of a built artefact it installs and runs (the Gradescope zip's members), all inputs.
    extra:  more of the key: what the files do not say (the Python 3.10 interpreter's version).
    """

    name: str
    what: str
    runs: tuple[str, ...]
    reads: tuple[str, ...] = ()
    grades: bool = False
    ships: Callable[[], Iterable[Path]] | None = None
    extra: Callable[[], dict[str, str]] = field(default=lambda: {})


@functools.lru_cache(maxsize=1)
def _zip_members() -> list[Path]:
    from autograder.packaging import build

    return list(build.shipped_files().values())


@functools.lru_cache(maxsize=1)
def _grader_files() -> list[Path]:
    from autograder.packaging import build

    return build.grader_files()


PROOFS = {
    p.name: p
    for p in (
        Proof(
            "gradescope_layout",
            "setup.sh builds a fresh venv (this Python, and Python 3.10 from the image's own wheels) and "
            "run_autograder grades the key 100, the stubs 0, two do-nothing submissions 0 and a wrong fixture "
            "as the in-repo grader does",
            runs=("tests/test_build.py", "solutions/ex*.py", "assignments/ex*.py"),
            reads=("locks/gradescope.txt", "locks/excludes.txt", "pyproject.toml", "autograder/fixtures/nothing/**/*"),
            grades=True,
            ships=_zip_members,
            extra=lambda: {"python3.10": _python310_version()},
        ),
        Proof(
            "gradescope_container",
            "in the emulated Gradescope container (podman + runc, Ubuntu 22.04, root, Docker's default capabilities "
            "and seccomp profile) setup.sh makes the venv with the image's Python 3.10 and run_autograder, one "
            "container per submission, grades the key 100, the stubs 0 and a wrong fixture as the in-repo grader; "
            "read_hidden, network_probe, write_outside, background_process, fill_disk, dask_scheduler and "
            "fork_memory (5 GiB container) get nothing and leave nothing running, on the rung 'landlock', and "
            "'seccomp-uid' without Landlock",
            runs=("tests/test_gradescope_proof.py", "solutions/ex*.py", "assignments/ex*.py"),
            reads=(
                "locks/gradescope.txt",
                "locks/excludes.txt",
                "pyproject.toml",
                *(
                    f"autograder/fixtures/adversarial/{attack}/*"
                    for attack in (
                        "read_hidden",
                        "network_probe",
                        "write_outside",
                        "background_process",
                        "fill_disk",
                        "dask_scheduler",
                        "fork_memory",
                    )
                ),
            ),
            grades=True,
            ships=_zip_members,
        ),
        Proof(
            "student_copy",
            "the student's copy, from nothing: `make setup` in a fresh venv, its public tests fail on the stubs "
            "with NotImplementedError and pass on the key, `make demo` names the missing exercises, the "
            "drivers give the repository's figures, the packing tool packs the exercise files",
            runs=("tests/test_bundle.py", "shared/hetero/**/*.py", "solutions/**/*.py"),
            reads=(
                "autograder/student_bundle/**/*",
                "shared/hetero/data/*",
                "solutions/**/*",
                "autograder/expected/*.json",
                "assignments/reference_figures.json",
                "pyproject.toml",
            ),
        ),
        Proof(
            "package_install",
            "a non-editable `pip install .` and a built wheel carry every file of hetero and autograder, and "
            "the installed package runs a driver",
            runs=("tests/test_bundle.py", "autograder/**/*.py", "shared/hetero/**/*.py"),
            reads=("pyproject.toml", "autograder/**/*", "shared/hetero/**/*"),
        ),
        Proof(
            "real_exports",
            "nbgrader (generate_assignment, autograde, generate_feedback) and Otter (assign, run), each student's "
            "run in the sandbox through nbgrader-autograde's and otter-grade's own functions, grade the key, the "
            "release, do-nothing and wrong submissions to the native grader's points; a hostile notebook earns 0 in "
            "the points both commands report (its own tool points flagged), changes nothing outside their output "
            "and leaves no process",
            runs=(
                "tests/test_exports.py",
                "tests/test_tool_routes.py",
                "autograder/exports/*.py",
                "autograder/batch/otter_grade.py",
                "autograder/batch/nbgrader_grade.py",
                "autograder/batch/crosscheck.py",
                "solutions/ex*.py",
                "assignments/ex*.py",
                "solutions/tests/public_ex*.py",
            ),
            reads=("locks/instructor.txt", "pyproject.toml", "autograder/fixtures/nothing/**/*"),
            grades=True,
        ),
        Proof(
            "resolvers",
            "pip's resolver installs every audience's pins on its Python (3.10-3.13), uv recompiles the locks "
            "unchanged, and each lock resolves to itself",
            runs=("tests/test_pins_resolve.py", "tests/test_locks.py"),
            reads=("pyproject.toml", "locks/*"),
        ),
        Proof(
            "report_browser",
            "the class report of a class graded for real (key, wrong fixtures, stubs, an HTML-tag name), rendered "
            "by headless Chromium, shows the gradebook's ex04 figures, the known mistakes and hidden case ids, "
            "escapes the name, and draws its plots (screenshot)",
            runs=("tests/test_report.py", "autograder/batch/report.py", "solutions/ex*.py", "assignments/ex*.py"),
            grades=True,
        ),
    )
}


def _loaded_helpers(test_files: Iterable[Path]) -> list[Path]:
    """tests/ files that test files load by path (`Path(__file__).with_name("proofs.py")`); conftest's
    graded.py is the grader's, taken by the proofs that grade."""
    helpers = {p.name: p for p in (ROOT / "tests").glob("*.py")}
    found = []
    for path in test_files:
        if path.parent == ROOT / "tests":
            found += [
                helpers[name] for name in re.findall(r'["\'](\w+\.py)["\']', path.read_text("utf-8")) if name in helpers
            ]
    return found


def input_paths(proof: Proof) -> list[Path]:
    """Every input file of `proof` (see `Proof`)."""
    from autograder.core import closure

    starts = closure.files_under(ROOT, proof.runs + MACHINERY + ((GRADED,) if proof.grades else ()))
    starts += [p for p in _loaded_helpers(starts) if p.name != "graded.py"]
    data = closure.files_under(ROOT, proof.reads)
    if proof.grades:
        data += _grader_files()
    if proof.ships is not None:
        data += list(proof.ships())
    starts += [p for p in data if p.suffix == ".py"]
    return sorted(set(closure.closure(starts, ROOT, follow_not=[MAIN])) | set(data))


def file_sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def input_files(proof: Proof) -> dict[str, str]:
    """{relative path: sha256 of its bytes} for every input file of `proof`."""
    return {p.relative_to(ROOT).as_posix(): file_sha256(p) for p in input_paths(proof)}


def environment(proof: Proof) -> dict[str, str]:
    """The key beside the files: the Python running pytest, the grader's fingerprint (a proof that grades)
    and the proof's `extra`."""
    env = {"python": f"{sys.version_info.major}.{sys.version_info.minor}"}
    if proof.grades:
        from autograder.packaging import build

        env["grader"] = build.fingerprint(_grader_files())
    return {**env, **proof.extra()}


def digest(files: dict[str, str], env: dict[str, str]) -> str:
    return hashlib.sha256(json.dumps({"files": files, "environment": env}, sort_keys=True).encode()).hexdigest()


def record_path(name: str) -> Path:
    return RECORDS / f"{name}.json"


def _shown(path: Path) -> str:
    return path.relative_to(ROOT).as_posix() if path.is_relative_to(ROOT) else str(path)


def read_record(name: str) -> dict | None:
    try:
        return json.loads(record_path(name).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None


@dataclass
class Status:
    """Where one proof stands at collection time."""

    proof: Proof
    files: dict[str, str]
    env: dict[str, str]
    digest: str
    record: dict | None
    reason: str  # "" when the record holds; else why the proof runs

    @property
    def holds(self) -> bool:
        return not self.reason


def status(proof: Proof, rerun: bool | None = None) -> Status:
    files, env = input_files(proof), environment(proof)
    now = digest(files, env)
    record = read_record(proof.name)
    rerun = os.environ.get(RERUN_ENV) == "rerun" if rerun is None else rerun
    if rerun:
        reason = f"{RERUN_ENV}=rerun"
    elif record is None:
        reason = f"no record ({_shown(record_path(proof.name))})"
    elif record.get("inputs_sha256") != now:
        old = record.get("input_files", {})
        changed = sorted(f for f in set(old) | set(files) if old.get(f) != files.get(f))
        env_changed = sorted(
            k
            for k in set(env) | set(record.get("environment", {}))
            if env.get(k) != record.get("environment", {}).get(k)
        )
        parts = []
        if changed:
            parts.append(
                "inputs changed: " + ", ".join(changed[:8]) + (f" (+{len(changed) - 8})" if len(changed) > 8 else "")
            )
        if env_changed:
            parts.append(
                "environment changed: "
                + ", ".join(f"{k} {record.get('environment', {}).get(k)} -> {env.get(k)}" for k in env_changed)
            )
        reason = "; ".join(parts) or "digest differs"
    else:
        reason = ""
    return Status(proof, files, env, now, record, reason)


def write_record(st: Status, tests: dict[str, dict], output: list[str]) -> Path:
    """The record of a proof that has just run in full and passed."""
    data = {
        "proof": st.proof.name,
        "what": st.proof.what,
        "proven_at": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "ran_on": {
            "python": platform.python_version(),
            "platform": platform.platform(),
            "machine": platform.machine(),
            "cpus": os.cpu_count(),
        },
        "environment": st.env,
        "inputs_sha256": st.digest,
        "input_files": st.files,
        "tests": dict(sorted(tests.items())),
        "tests_s": round(sum(t["duration_s"] for t in tests.values()), 1),  # summed over its tests
        "output": output,
    }
    RECORDS.mkdir(parents=True, exist_ok=True)
    path = record_path(st.proof.name)
    path.write_text(json.dumps(data, indent=1, sort_keys=False) + "\n", encoding="utf-8")
    return path
