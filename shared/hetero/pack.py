"""Zip a student's exercise files for upload: `python -m hetero.pack [--from FOLDER] [--out submission.zip]`.

`--from` defaults to the `assignments/` folder found from the current directory upward (the same folder
the public tests and the lecture drivers read); the folder used is printed. The zip holds the exercise files (`hetero.exercises`: `ex01_cost_per_gb.py`, ...) at its
root, which is the layout the autograder expects. Before zipping, each file is inspected
statically, by parsing it, never by importing it (importing would run the student's code): a file
that is missing, does not parse, or still has functions whose body raises the release stub's
`NotImplementedError("exNN: <function>")` gets a warning naming those functions. Warnings do not
stop the pack: a partial submission earns partial credit.
"""

from __future__ import annotations

import argparse
import ast
import sys
import zipfile
from dataclasses import dataclass
from pathlib import Path

from hetero.impl import EXERCISES as MODULES
from hetero.impl import find_named_folder

ZIP_DATE = (1980, 1, 1, 0, 0, 0)


@dataclass(frozen=True)
class ExerciseFile:
    """One exercise's id and the file name a submission must use."""

    id: str
    filename: str


EXERCISES: tuple[ExerciseFile, ...] = tuple(ExerciseFile(ex_id, f"{module}.py") for ex_id, module in MODULES.items())


@dataclass(frozen=True)
class FileStatus:
    exercise: str
    filename: str
    present: bool
    parse_error: str = ""  # "line 12: invalid syntax" when the file does not parse
    functions: tuple[str, ...] = ()  # top-level and method names defined in the file
    stubs: tuple[str, ...] = ()  # functions still raising NotImplementedError("exNN: ...")

    @property
    def complete(self) -> bool:
        return self.present and not self.parse_error and not self.stubs

    def describe(self) -> str:
        if not self.present:
            return "MISSING: file not found (that exercise will score 0)"
        if self.parse_error:
            return f"DOES NOT PARSE ({self.parse_error}): the grader will score it 0"
        if self.stubs:
            return f"UNFILLED: still raising NotImplementedError: {', '.join(self.stubs)}"
        return f"ok ({len(self.functions)} functions)"


def _is_stub_raise(node: ast.AST, ex_id: str) -> bool:
    """`raise NotImplementedError("exNN: ...")` (or the bare class / no message) for this exercise."""
    if not isinstance(node, ast.Raise) or node.exc is None:
        return False
    exc = node.exc
    if isinstance(exc, ast.Name):
        return exc.id == "NotImplementedError"
    if not (isinstance(exc, ast.Call) and isinstance(exc.func, ast.Name) and exc.func.id == "NotImplementedError"):
        return False
    if not exc.args:
        return True
    first = exc.args[0]
    return isinstance(first, ast.Constant) and isinstance(first.value, str) and first.value.startswith(f"{ex_id}:")


def stub_functions(tree: ast.Module, ex_id: str) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """(all function names, those whose own body raises the stub's NotImplementedError)."""
    names: list[str] = []
    stubs: list[str] = []

    def visit(body: list[ast.stmt], prefix: str) -> None:
        for node in body:
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                name = prefix + node.name
                names.append(name)
                own = [n for n in node.body if not isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))]
                if any(_is_stub_raise(n, ex_id) for stmt in own for n in ast.walk(stmt)):
                    stubs.append(name)
            elif isinstance(node, ast.ClassDef):
                visit(node.body, f"{prefix}{node.name}.")

    visit(tree.body, "")
    return tuple(names), tuple(stubs)


def inspect_file(exercise: ExerciseFile, folder: Path) -> FileStatus:
    """The status of one exercise's file in `folder` (anything with `.id` and `.filename` will do)."""
    path = folder / exercise.filename
    if not path.is_file():
        return FileStatus(exercise.id, exercise.filename, False)
    try:
        tree = ast.parse(path.read_bytes(), filename=str(path))
    except (SyntaxError, ValueError) as exc:
        where = f"line {exc.lineno}: " if isinstance(exc, SyntaxError) and exc.lineno else ""
        message = exc.msg if isinstance(exc, SyntaxError) else str(exc)
        return FileStatus(exercise.id, exercise.filename, True, parse_error=f"{where}{message}")
    functions, stubs = stub_functions(tree, exercise.id)
    return FileStatus(exercise.id, exercise.filename, True, functions=functions, stubs=stubs)


def inspect_folder(folder: Path) -> list[FileStatus]:
    return [inspect_file(e, folder) for e in EXERCISES]


def pack(folder: Path, out: Path) -> list[FileStatus]:
    """Zip the exercise files found in `folder` into `out`; return every exercise's status."""
    statuses = inspect_folder(folder)
    present = [s for s in statuses if s.present]
    if not present:
        raise FileNotFoundError(f"no exercise files (ex01_*.py ... ex10_*.py) in {folder}")
    out.parent.mkdir(parents=True, exist_ok=True)
    with zipfile.ZipFile(out, "w", compression=zipfile.ZIP_DEFLATED) as zf:
        for status in present:
            info = zipfile.ZipInfo(status.filename, date_time=ZIP_DATE)
            info.compress_type = zipfile.ZIP_DEFLATED
            info.external_attr = 0o100644 << 16
            zf.writestr(info, (folder / status.filename).read_bytes())
    return statuses


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m hetero.pack", description=__doc__.splitlines()[0])
    parser.add_argument(
        "--from",
        dest="folder",
        type=Path,
        default=None,
        help="folder holding your exercise files (default: the assignments/ folder found from "
        "the current directory upward)",
    )
    parser.add_argument("--out", type=Path, default=Path("submission.zip"), help="zip to write")
    args = parser.parse_args(argv)
    folder = args.folder if args.folder is not None else find_named_folder("assignments")
    if folder is None:
        print(
            f"pack: no exercise files: no assignments/ folder with exercise files in {Path.cwd()} or above; "
            "pass --from FOLDER",
            file=sys.stderr,
        )
        return 1
    print(f"exercise files: {Path(folder).resolve()}")
    try:
        statuses = pack(Path(folder), args.out)
    except FileNotFoundError as exc:
        print(f"pack: {exc}", file=sys.stderr)
        return 1
    for status in statuses:
        print(f"  {status.exercise}  {status.filename:<30} {status.describe()}")
    incomplete = [s.exercise for s in statuses if not s.complete]
    packed = sum(s.present for s in statuses)
    print(f"wrote {args.out.resolve()} ({packed} of {len(statuses)} exercise files)")
    if incomplete:
        print(
            f"warning: {len(incomplete)} exercise(s) missing or not finished: {', '.join(incomplete)}. "
            "Upload anyway for partial credit, or finish them and pack again.",
            file=sys.stderr,
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
