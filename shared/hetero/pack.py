"""Zip a student's exercise files for upload: `python -m hetero.pack [--from FOLDER] [--out submission.zip]`.

`--from` defaults to the `assignments/` folder found from the current directory upward (the same folder
the public tests and the lecture drivers read); the folder used is printed. The zip holds the exercise files (`hetero.exercises`: `ex01_cost_per_gb.py`, ...) at its
root, which is the layout the autograder expects. Before zipping, each file is inspected
statically, by parsing it, never by importing it (importing would run the student's code): a file
that is missing, does not parse, or still has functions whose body raises the release stub's
`NotImplementedError("exNN: <function>")` gets a warning naming those functions. Warnings do not
stop the pack: a partial submission earns partial credit.

A file the grader cannot import is refused, with the reason, and no zip is written: one that does not
parse, imports another exercise file (the grader runs each file alone), makes a relative import, or
imports a module that is not installed here (so not in the grader either; an import inside `try` is
left alone). Fix it, or move the file out of the folder to upload the others. A module that is installed
here but is neither the standard library nor numpy or torch gets a warning: the grader has only those.
"""

from __future__ import annotations

import argparse
import ast
import importlib.util
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
    import_errors: tuple[str, ...] = ()  # imports that fail in the grader (the file scores 0)
    import_warnings: tuple[str, ...] = ()  # imports the grader may lack

    @property
    def complete(self) -> bool:
        return self.present and not self.parse_error and not self.stubs and not self.import_errors

    @property
    def refused(self) -> bool:
        """The grader cannot import this file: pack writes no zip until it is fixed or moved away."""
        return self.present and bool(self.parse_error or self.import_errors)

    def describe(self) -> str:
        if not self.present:
            return "MISSING: file not found (that exercise will score 0)"
        if self.parse_error:
            return f"REFUSED: does not parse ({self.parse_error}); the grader could not import it"
        if self.import_errors:
            return f"REFUSED: {'; '.join(self.import_errors)}; the grader could not import it"
        warned = f"; warning: {'; '.join(self.import_warnings)}" if self.import_warnings else ""
        if self.stubs:
            return f"UNFILLED: still raising NotImplementedError: {', '.join(self.stubs)}{warned}"
        n = len(self.functions)
        return f"filled ({n} function{'s' if n != 1 else ''}; the public tests say whether they are right){warned}"


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


GRADER_PACKAGES = ("numpy", "torch", "hetero")  # besides the standard library, what the grader can import


def _guarded(tree: ast.Module) -> set[int]:
    """ids of the import nodes inside a `try` body (an optional import: the file handles its absence)."""
    return {
        id(node)
        for t in ast.walk(tree)
        if isinstance(t, ast.Try)
        for stmt in t.body
        for node in ast.walk(stmt)
        if isinstance(node, (ast.Import, ast.ImportFrom))
    }


def import_problems(tree: ast.Module, exercise_id: str) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """(imports the grader cannot satisfy, imports it may not) of one exercise file, read statically."""
    own = MODULES[exercise_id]
    others = {module: ex_id for ex_id, module in MODULES.items() if module != own}
    errors: list[str] = []
    warnings: list[str] = []
    guarded = _guarded(tree)
    for node in ast.walk(tree):
        if not isinstance(node, (ast.Import, ast.ImportFrom)) or id(node) in guarded:
            continue
        if isinstance(node, ast.ImportFrom) and node.level:
            errors.append(f"line {node.lineno}: a relative import (from {'.' * node.level}{node.module or ''} ...)")
            continue
        names = [a.name for a in node.names] if isinstance(node, ast.Import) else [node.module or ""]
        for name in names:
            top = name.split(".")[0]
            if top in others:
                errors.append(
                    f"line {node.lineno}: imports {top}, the file of {others[top]} (the grader runs each "
                    "exercise file alone: copy what you need into this file)"
                )
            elif top in sys.stdlib_module_names or top in GRADER_PACKAGES or top == "__future__":
                continue
            elif importlib.util.find_spec(top) is None:
                errors.append(f"line {node.lineno}: imports {top}, which is not installed (here or in the grader)")
            else:
                warnings.append(
                    f"line {node.lineno}: imports {top}; the grader has only the standard library, numpy and torch"
                )
    return tuple(dict.fromkeys(errors)), tuple(dict.fromkeys(warnings))


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
    errors, warnings = import_problems(tree, exercise.id) if exercise.id in MODULES else ((), ())
    return FileStatus(
        exercise.id,
        exercise.filename,
        True,
        functions=functions,
        stubs=stubs,
        import_errors=errors,
        import_warnings=warnings,
    )


def inspect_folder(folder: Path) -> list[FileStatus]:
    return [inspect_file(e, folder) for e in EXERCISES]


class Refused(ValueError):
    """A file the grader could not import: no zip is written."""

    def __init__(self, statuses: list[FileStatus]) -> None:
        self.statuses = statuses
        names = ", ".join(s.filename for s in statuses if s.refused)
        super().__init__(
            f"not packed: the grader could not import {names}. Fix it, or move it out of the folder to "
            "upload the other files (that exercise then scores 0)"
        )


def pack(folder: Path, out: Path) -> list[FileStatus]:
    """Zip the exercise files found in `folder` into `out`; return every exercise's status. Raises Refused
    (nothing written) when a file could not be imported by the grader."""
    statuses = inspect_folder(folder)
    present = [s for s in statuses if s.present]
    if not present:
        raise FileNotFoundError(f"no exercise files (ex01_*.py ... ex10_*.py) in {folder}")
    if any(s.refused for s in statuses):
        raise Refused(statuses)
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
    except Refused as exc:
        for status in exc.statuses:
            print(f"  {status.exercise}  {status.filename:<30} {status.describe()}")
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
