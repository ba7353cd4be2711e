"""Build the Gradescope autograder zip: `python -m autograder build [--out dist/autograder.zip]`.

The zip holds, at its root, Gradescope's two entry points (setup.sh, run_autograder), the pinned
requirements and fallback.py; beside them, laid out as in the repository so that every path the
grader computes from its own location still holds:

    autograder/             the grader modules (the import closure of autograder.runtime.grader), the
                            hidden cases stored as data with their expected values
                            (expected/exNN.json) and the results schema
    shared/hetero/          the reference library (simulators, case format, case generators, the
                            small MoE grading checkpoints in data/)
    assignments/tests/      the public cases (public_exNN.py)

It never holds solution source: nothing from solutions/, nothing from autograder/fixtures/, not
autograder/authoring/wrong_fixtures.py (the wrong fixtures are edits of answer-key lines), no file containing
the answer-key marker text
and no file byte-identical to an answer-key file. `build()` checks all of this on the finished
archive and refuses to write one that fails. The requirements are derived, not listed by hand: every
third-party module the shipped code imports must have a pin in pyproject.toml, and the zip's
requirements.txt is the Gradescope lock file (locks/gradescope.txt: those pins and everything they need,
each at one version), which must agree with them; torch's pin ships separately (requirements-torch.txt),
so setup.sh can take it from the CPU-only index first.
"""

from __future__ import annotations

import argparse
import ast
import hashlib
import importlib.metadata
import re
import sys
import zipfile
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from autograder.core import closure
from autograder.core.cases import check_files
from autograder.core.manifest import EXERCISES, ROOT, public_cases_in
from autograder.packaging import pins

GRADESCOPE_DIR = ROOT / "autograder" / "gradescope"
ROOT_FILES = {"setup.sh": 0o755, "run_autograder": 0o755, "fallback.py": 0o644}
# What Gradescope runs: `python -m autograder grade` (autograder/__main__.py) starts autograder.runtime.
# The zip ships this sub-package whole (the sandbox copies its child.py and jail.py by path) and the
# import closure of its modules, which may reach autograder/__init__.py and the core sub-package only.
SHIPPED_PACKAGE = "runtime"
ENTRY_FILES = ("__init__.py", "__main__.py")  # __main__'s command table is strings: not followed
CLOSURE_MAY_REACH = ("core", "runtime")  # sub-packages the runtime may import; any other is a build error
LOCAL_PACKAGES = {"autograder", "hetero"}
SOLUTION_MARKER = b"BEGIN SOLUTION"
FORBIDDEN_PREFIXES = (
    "solutions/",
    "autograder/fixtures/",
    "autograder/gradescope/",
    "autograder/authoring/",
)
ZIP_DATE = (1980, 1, 1, 0, 0, 0)  # fixed timestamps: the same sources give the same zip bytes


class BuildError(RuntimeError):
    """The zip cannot be built, or would ship something it must not."""


@dataclass(frozen=True)
class BuildReport:
    path: Path
    files: int
    size_bytes: int
    requirements: tuple[str, ...]


# ---------------------------------------------------------------------------------------------
# What ships.


def _python_files(folder: Path) -> list[Path]:
    return sorted(
        p
        for p in folder.rglob("*")
        if p.is_file() and "__pycache__" not in p.parts and p.suffix not in (".pyc", ".pyo")
    )


def grader_modules(package: Path = ROOT / "autograder") -> list[Path]:
    """The autograder files the zip ships: the runtime sub-package whole, plus the import closure of it
    and of the package's entry files (`autograder.core.closure`: also imports inside functions, since
    grading may call them).

    Every module reached must lie in a sub-package of CLOSURE_MAY_REACH (or be autograder/__init__.py):
    a runtime module that imports authoring, packaging, batch, exports or selftest code is a build error
    naming both files, since the zip's grader would fail (or ship authoring code) there.
    """
    shipped = package / SHIPPED_PACKAGE
    if not (shipped / "__init__.py").is_file():
        raise BuildError(f"{shipped}/__init__.py is missing: the grader cannot run without its runtime")
    starts = [p for p in _python_files(shipped) if p.suffix == ".py"] + [package / name for name in ENTRY_FILES]
    try:
        reached = closure.closure(starts, package.parent, follow_not=[package / "__main__.py"])
    except closure.ClosureError as exc:
        raise BuildError(str(exc)) from None
    mine = {path: importer for path, importer in reached.items() if path.is_relative_to(package)}

    def allowed(path: Path) -> bool:
        rel = path.relative_to(package).parts
        return len(rel) == 1 or rel[0] in CLOSURE_MAY_REACH

    for path, importer in sorted(mine.items()):
        if not allowed(path) and importer is not None and importer.is_relative_to(package) and allowed(importer):
            rel = path.relative_to(package.parent).with_suffix("")
            dotted = ".".join(rel.parts[:-1] if rel.name == "__init__" else rel.parts)
            raise BuildError(
                f"{importer.relative_to(package.parent)} imports {dotted} ({rel.parts[1]}): the grader in the "
                f"zip may import only autograder's {' and '.join(CLOSURE_MAY_REACH)} sub-packages"
            )
    return sorted(mine)


def _exercise_files(root: Path) -> dict[str, Path]:
    """Per-exercise data the grader reads; a missing one is a build error (it would grade wrongly).

    The hidden case files (autograder/tests/) do not ship: the grader reads the hidden cases as data
    from autograder/expected/exNN.json, so the image needs neither them nor Hypothesis.
    """
    files: dict[str, Path] = {}
    missing: list[str] = []
    for ex in EXERCISES:
        for rel in (public_cases_in(Path("assignments"), ex.id).as_posix(), f"autograder/expected/{ex.id}.json"):
            path = root / rel
            if path.is_file():
                files[rel] = path
            else:
                missing.append(rel)
    if missing:
        raise BuildError(
            "missing grading data (run `python -m autograder release` and "
            f"`python -m autograder expected` first?): {', '.join(missing)}"
        )
    return files


# ---------------------------------------------------------------------------------------------
# Requirements: pins from pyproject.toml for exactly the third-party modules the shipped code imports.


def _norm(dist: str) -> str:
    return re.sub(r"[-_.]+", "-", dist).lower()


def project_arrays(pyproject: Path = ROOT / "pyproject.toml") -> dict[str, list[str]]:
    """{"dependencies": [...], "<extra>": [...]} from pyproject.toml (the package's one list of pins)."""
    if sys.version_info >= (3, 11):
        import tomllib  # novermin (guarded: Python 3.11+)
    else:
        import tomli as tomllib

    project = tomllib.loads(pyproject.read_text(encoding="utf-8"))["project"]
    return {"dependencies": list(project["dependencies"]), **project["optional-dependencies"]}


def pyproject_pins(pyproject: Path = ROOT / "pyproject.toml") -> dict[str, list[str]]:
    """{normalized distribution: [requirement strings]} from [project] and its optional dependencies."""
    pins: dict[str, list[str]] = {}
    for req in (r for array in project_arrays(pyproject).values() for r in array):
        name = re.match(r"[A-Za-z0-9][A-Za-z0-9._-]*", req)
        if name:
            pins.setdefault(_norm(name.group(0)), []).append(req)
    return pins


def third_party_imports(files: list[Path]) -> set[str]:
    """Top-level module names imported anywhere in `files` that are neither stdlib nor local."""
    stdlib = set(sys.stdlib_module_names)
    names: set[str] = set()
    for path in files:
        if path.suffix != ".py":
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), filename=str(path))):
            if isinstance(node, ast.Import):
                names.update(alias.name.split(".")[0] for alias in node.names)
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                names.add(node.module.split(".")[0])
    return {n for n in names if n not in stdlib and n not in LOCAL_PACKAGES}


def requirements_for(modules: set[str], pins: dict[str, list[str]]) -> tuple[list[str], list[str]]:
    """(requirements.txt lines without torch, torch's lines) for the imported `modules`."""
    dists = importlib.metadata.packages_distributions()
    lines: list[str] = []
    unpinned: list[str] = []
    for module in sorted(modules):
        found = [_norm(d) for d in dists.get(module, [module])]
        pinned = [d for d in found if d in pins]
        if not pinned:
            unpinned.append(f"{module} (distribution {', '.join(found)})")
            continue
        for dist in pinned:
            lines.extend(req for req in pins[dist] if req not in lines)
    if unpinned:
        raise BuildError("the shipped code imports modules with no pin in pyproject.toml: " + "; ".join(unpinned))
    torch = [r for r in lines if _norm(re.split(r"[=<>!~;\[ ]", r, maxsplit=1)[0]) == "torch"]
    return sorted(r for r in lines if r not in torch), torch


# ---------------------------------------------------------------------------------------------
# The archive.


def _shipped(root: Path) -> dict[str, bytes | Path]:
    """{archive name: source path} of everything but the requirement files."""
    members: dict[str, bytes | Path] = {}
    for name in ROOT_FILES:
        members[name] = GRADESCOPE_DIR / name
    for path in grader_modules(root / "autograder"):
        members[path.relative_to(root).as_posix()] = path
    for rel, path in _exercise_files(root).items():
        members[rel] = path
    schema_dir = root / "autograder" / "schema"
    if schema_dir.is_dir():
        for path in _python_files(schema_dir):
            members[path.relative_to(root).as_posix()] = path
    for path in _python_files(root / "shared" / "hetero"):
        members[path.relative_to(root).as_posix()] = path
    return members


def shipped_files(root: Path = ROOT) -> dict[str, Path]:
    """{archive name: repository file} of every zip member that is a file of the repository (all but the
    requirement files, which `collect` generates from the locks): what the Gradescope run can execute or read."""
    return {name: path for name, path in _shipped(root).items() if isinstance(path, Path)}


GRADER_DATA = ("autograder/expected/*.json", "autograder/schema/*", "shared/hetero/data/*")


def grader_files(root: Path = ROOT) -> list[Path]:
    """Every repository file one grading runs or reads, the submission aside: the grader's modules
    (`grader_modules`), the public cases, and the `hetero` modules they import (the harness whole:
    `autograder.core.closure.BY_NAME`), the stored expected values, the results schema and hetero's data
    files (the MoE grading checkpoints). The slow proofs that grade take them as inputs and their
    `fingerprint` as part of their key."""
    starts = grader_modules(root / "autograder") + [
        path for rel, path in _exercise_files(root).items() if rel.endswith(".py")
    ]
    reached = closure.closure(starts, root, follow_not=[root / "autograder" / "__main__.py"])
    return sorted(set(reached) | set(closure.files_under(root, GRADER_DATA)))


def fingerprint(files: Iterable[Path], root: Path = ROOT) -> str:
    """sha256 over the repository paths and bytes of `files`."""
    digest = hashlib.sha256()
    for path in sorted(files):
        digest.update(path.relative_to(root).as_posix().encode() + b"\0" + hashlib.sha256(path.read_bytes()).digest())
    return digest.hexdigest()


def shipped_requirements(root: Path = ROOT) -> tuple[list[str], list[str]]:
    """(pins without torch, torch's pins) of the third-party modules the shipped code imports."""
    shipped_py = [p for p in _shipped(root).values() if isinstance(p, Path) and p.suffix == ".py"]
    reqs, torch = requirements_for(third_party_imports(shipped_py), pyproject_pins(root / "pyproject.toml"))
    if not torch:
        raise BuildError("the shipped code does not import torch: the image would lack it (unexpected)")
    return reqs, torch


def collect(root: Path = ROOT) -> tuple[dict[str, bytes | Path], tuple[str, ...]]:
    """({archive name: source path or bytes}, requirement lines).

    requirements.txt is the Gradescope lock file (locks/gradescope.txt) without torch, which must agree
    with the pins of the shipped imports; requirements-torch.txt holds torch's pin. An answer key whose
    files disagree with the manifest is not built (`autograder.core.cases.check_files`).
    """
    if (root / "solutions").is_dir():
        disagree = check_files(root)
        if disagree:
            raise BuildError("the manifest does not hold:\n  " + "\n  ".join(disagree))
    members = _shipped(root)
    reqs, torch = shipped_requirements(root)
    lock_file = root / "locks" / "gradescope.txt"
    if not lock_file.is_file():
        raise BuildError(f"{lock_file} is missing: run `make lock`")
    lock_text = lock_file.read_text(encoding="utf-8")
    stale = pins.mismatches(reqs + torch, lock_text)
    if stale:
        raise BuildError(f"{lock_file} does not match the pins (run `make lock`): " + "; ".join(stale))
    locked = [
        line.split("#", 1)[0].strip()
        for line in lock_text.splitlines()
        if any(name != "torch" for name, _, _ in pins.parse(line))
    ]
    header = "# Generated by `python -m autograder build`: locks/gradescope.txt less the pin setup.sh installs first.\n"
    members["requirements.txt"] = (header + "\n".join(locked) + "\n").encode()
    header = "# Generated by `python -m autograder build` from pyproject.toml pins.\n"
    members["requirements-torch.txt"] = (header + "\n".join(torch) + "\n").encode()
    return members, tuple(reqs + torch)


def _solution_digests(root: Path) -> set[str]:
    folder = root / "solutions"
    return {hashlib.sha256(p.read_bytes()).hexdigest() for p in folder.glob("*.py")} if folder.is_dir() else set()


def audit(zip_path: Path, root: Path = ROOT) -> None:
    """Raise BuildError if the archive ships solution source or lacks an entry point."""
    digests = _solution_digests(root)
    problems: list[str] = []
    with zipfile.ZipFile(zip_path) as zf:
        names = zf.namelist()
        for required in ("setup.sh", "run_autograder"):
            if required not in names:
                problems.append(f"{required} is not at the zip's root")
        for name in names:
            if name.startswith(FORBIDDEN_PREFIXES):
                problems.append(f"{name}: path must not ship")
            data = zf.read(name)
            if SOLUTION_MARKER in data:
                problems.append(f"{name}: contains the answer-key marker text")
            if hashlib.sha256(data).hexdigest() in digests:
                problems.append(f"{name}: identical to a file in solutions/")
            if name.endswith(".py"):
                try:
                    compile(data, name, "exec", dont_inherit=True)
                except SyntaxError as exc:
                    problems.append(f"{name}: does not compile ({exc})")
    if problems:
        raise BuildError("refusing to ship this zip:\n  " + "\n  ".join(problems))


def build(out: Path, root: Path = ROOT) -> BuildReport:
    """Write the zip to `out` (atomically) after auditing it; return what was built."""
    members, requirements = collect(root)
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.with_name(out.name + ".tmp")
    with zipfile.ZipFile(tmp, "w", compression=zipfile.ZIP_DEFLATED, compresslevel=9) as zf:
        for name in sorted(members):
            source = members[name]
            data = source.read_bytes() if isinstance(source, Path) else source
            info = zipfile.ZipInfo(name, date_time=ZIP_DATE)
            info.compress_type = zipfile.ZIP_DEFLATED
            info.external_attr = (0o100000 | ROOT_FILES.get(name, 0o644)) << 16
            zf.writestr(info, data)
    try:
        audit(tmp, root)
    except BuildError:
        tmp.unlink()
        raise
    tmp.replace(out)
    return BuildReport(out, len(members), out.stat().st_size, requirements)


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="python -m autograder build", description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=Path("dist/autograder.zip"), help="zip to write")
    args = parser.parse_args(argv)
    try:
        report = build(args.out)
    except BuildError as exc:
        print(f"build failed: {exc}", file=sys.stderr)
        return 1
    print(f"wrote {report.path} ({report.files} files, {report.size_bytes / 1e6:.2f} MB)")
    print(f"  requirements: {', '.join(report.requirements)}")
    print("  upload it as the autograder of a Gradescope programming assignment (Ubuntu 22.04 base image)")
    return 0
