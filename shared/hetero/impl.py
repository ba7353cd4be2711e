"""Where exercise functions come from: `--impl solutions|assignments|PATH`.

The simulators in `hetero` never implement an exercise themselves. They ask this module for the
exercise module (`ex02_kv_capacity.py`, ...) of the chosen implementation directory and call its
functions. A function that still raises NotImplementedError("exNN: name") is reported as a
`MissingExercise`, so drivers can say which exercise is missing and print everything else; any other
exception from an exercise's code is reported as an `ExerciseError` naming the student's file and line.

The names `assignments` and `solutions` are looked up from the current directory upward (the first
`assignments/` holding an exercise file, in the current directory or one of its parents), never next
to wherever `hetero` is installed: the public tests, the lecture drivers and the packing tool all read
the student's own files, and each prints the absolute folder it uses.
"""

from __future__ import annotations

import argparse
import hashlib
import importlib.util
import sys
from collections.abc import Callable
from pathlib import Path
from types import ModuleType
from typing import Any

from hetero.exercises import EXERCISES

REPO_ROOT = Path(__file__).resolve().parents[2]
NAMED_IMPLS = ("solutions", "assignments")


class MissingExercise(RuntimeError):
    """An exercise function is not implemented yet (its stub raises NotImplementedError)."""

    def __init__(self, ex_id: str, detail: str):
        super().__init__(f"{ex_id} is not implemented yet ({detail}); fill it in {EXERCISES[ex_id]}.py")
        self.ex_id = ex_id


class ExerciseError(MissingExercise):
    """An exercise's code failed: it does not import (SyntaxError, NameError at import, ...) or one of
    its functions raised. The message names the exercise, the student's file:line and the exception.
    A MissingExercise, so every handler that skips the parts of a missing exercise skips these too."""

    def __init__(self, ex_id: str, where: str, exc: BaseException):
        RuntimeError.__init__(self, f"{ex_id} failed at {where}: {type(exc).__name__}: {_short(str(exc))}")
        self.ex_id = ex_id
        self.where = where


def _short(text: str, limit: int = 300) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 3] + "..."


def student_location(exc: BaseException, path: str | Path) -> str:
    """`file.py:LINE` of the deepest traceback frame inside `path` (the exercise file), else its name.

    A SyntaxError raised while importing the file carries its own line number."""
    path = Path(path)
    if isinstance(exc, SyntaxError) and exc.filename and Path(exc.filename).name == path.name:
        return f"{path.name}:{exc.lineno}"
    where = path.name
    tb = exc.__traceback__
    while tb is not None:
        if Path(tb.tb_frame.f_code.co_filename).resolve() == path.resolve():
            where = f"{path.name}:{tb.tb_lineno}"
        tb = tb.tb_next
    return where


def find_named_folder(name: str, start: Path | None = None) -> Path | None:
    """The first `<dir>/name` holding an exercise file, from `start` (default: the current directory)
    upward; None when there is none."""
    here = (start or Path.cwd()).resolve()
    for folder in (here, *here.parents):
        candidate = folder / name
        if candidate.is_dir() and any((candidate / f"{module}.py").is_file() for module in EXERCISES.values()):
            return candidate
    return None


def add_impl_argument(parser: argparse.ArgumentParser, what: str = "exercise functions") -> None:
    """The drivers' one `--impl` option: where `what` comes from (resolved by `resolve_impl_dir`), and
    `--trust-impl` (`untrusted_impl`)."""
    parser.add_argument(
        "--impl",
        default="assignments",
        help=f"where to load {what} from: assignments (default: the assignments/ folder found from the "
        "current directory upward), solutions, or a folder",
    )
    parser.add_argument(
        "--trust-impl",
        action="store_true",
        help="run a folder's code in this process even where the course's grader is installed (your own files)",
    )


def untrusted_impl(impl: str | Path, trusted: bool) -> str | None:
    """Why a driver will not import `impl` into its own process, or None. Where the course's grader is
    installed (an instructor's copy of the package: `autograder` importable), any folder but the course's
    own `assignments/` and `solutions/` (beside the grader's `autograder/` package) may be a student's:
    importing it would run their code with the instructor's rights, beside the answer key. That holds for
    `--impl assignments` too when the first `assignments/` found from the current directory upward is a
    student's copy; an installed package (not a repository) trusts no folder. `python -m autograder
    lecture` runs the same driver on such a folder in the grader's sandbox; `--trust-impl` says the
    folder's code is the caller's own. A student's copy of the package has no grader: their own folders
    are theirs to run."""
    course: Path | None = Path(__file__).resolve().parents[2]  # a repository: shared/hetero beside autograder/
    if course is not None and not (course / "autograder" / "__init__.py").is_file():
        course = None  # an installed package (or a student's copy): no course folder to trust
    if trusted or (course is None and importlib.util.find_spec("autograder") is None):
        return None
    found = find_named_folder(str(impl)) if str(impl) in NAMED_IMPLS else Path(impl).expanduser()
    if found is None or not found.is_dir():
        return None  # resolve_impl_dir says there is no such folder
    path = found.resolve()
    if course is not None and any(path == (course / name).resolve() for name in NAMED_IMPLS):
        return None
    where = f"cd {course} && " if course is not None else ""
    return (
        f"--impl {impl}: this runs the code of {path} in this process, with your rights, beside the answer key. "
        f"To look at a student's figures, run the driver in the grader's sandbox from the course's folder (never "
        f"from inside a student's folder, where python -m imports their files first): {where}python -m "
        f"autograder lecture EXPERIMENT --impl {path} (or add --trust-impl if the folder's code is your own)"
    )


def resolve_impl_dir(impl: str | Path) -> Path:
    """`solutions` / `assignments`: that folder found from the current directory upward (see the module
    docstring); anything else is a path to a folder."""
    if str(impl) in NAMED_IMPLS:
        found = find_named_folder(str(impl))
        if found is None:
            raise FileNotFoundError(
                f"--impl {impl!s}: no folder {impl!s}/ with exercise files in {Path.cwd().resolve()} or any "
                f"folder above it; run from your working copy, or pass --impl PATH"
            )
        return found.resolve()
    path = Path(impl).expanduser()
    if path.is_dir():
        return path.resolve()
    raise FileNotFoundError(f"--impl {impl!s}: no such folder ({path.resolve()})")


_CACHE: dict[tuple[str, str], ModuleType] = {}


def load_exercise(ex_id: str, impl: str | Path = "solutions") -> ModuleType:
    """Import `<impl>/<exNN_name>.py` under a private module name (no sys.path changes)."""
    if ex_id not in EXERCISES:
        raise KeyError(f"unknown exercise {ex_id!r}; expected one of {', '.join(EXERCISES)}")
    path = resolve_impl_dir(impl) / f"{EXERCISES[ex_id]}.py"
    key = (ex_id, str(path))
    if key in _CACHE:
        return _CACHE[key]
    if not path.is_file():
        raise MissingExercise(ex_id, f"file {path} not found")
    digest = hashlib.sha1(str(path).encode()).hexdigest()[:10]
    try:
        module = load_module_from_path(path, f"_a2impl_{digest}_{EXERCISES[ex_id]}")
    except Exception as exc:  # the student's file does not import: that exercise only is lost
        raise ExerciseError(ex_id, student_location(exc, path), exc) from exc
    _CACHE[key] = module
    return module


def load_module_from_path(path: str | Path, name: str) -> ModuleType:
    """Import the Python file `path` as module `name` (registered in sys.modules; no sys.path changes)."""
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise ImportError(f"cannot load {path}")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def exercise_function(ex_id: str, func: str, impl: str | Path = "solutions") -> Callable[..., Any]:
    """The function `func` of exercise `ex_id`; calling it turns NotImplementedError into MissingExercise."""
    module = load_exercise(ex_id, impl)
    try:
        target = getattr(module, func)
    except AttributeError:
        raise MissingExercise(ex_id, f"{EXERCISES[ex_id]}.py has no function {func}") from None

    path = getattr(module, "__file__", None) or f"{EXERCISES[ex_id]}.py"

    def call(*args: Any, **kwargs: Any) -> Any:
        try:
            return target(*args, **kwargs)
        except NotImplementedError as exc:
            raise MissingExercise(ex_id, str(exc) or func) from exc
        except Exception as exc:  # any other failure of the student's function costs only its parts
            raise ExerciseError(ex_id, student_location(exc, path), exc) from exc

    call.__name__ = func
    call.__doc__ = target.__doc__
    return call
