"""Where exercise functions come from: `--impl solutions|assignments|PATH`.

The simulators in `hetero` never implement an exercise themselves. They ask this module for the
exercise module (`ex02_kv_capacity.py`, ...) of the chosen implementation directory and call its
functions. A function that still raises NotImplementedError("exNN: name") is reported as a
`MissingExercise`, so drivers can say which exercise is missing and print everything else.
"""

from __future__ import annotations

import hashlib
import importlib.util
import sys
from pathlib import Path
from types import ModuleType
from typing import Any, Callable

EXERCISES: dict[str, str] = {
    "ex01": "ex01_cost_per_gb",
    "ex02": "ex02_kv_capacity",
    "ex03": "ex03_cache_pool",
    "ex04": "ex04_nic_line_rate",
    "ex05": "ex05_overload",
    "ex06": "ex06_expert_bytes",
    "ex07": "ex07_arithmetic_intensity",
    "ex08": "ex08_deferral_overlap",
    "ex09": "ex09_amx_tops",
    "ex10": "ex10_deferral_accuracy",
}

REPO_ROOT = Path(__file__).resolve().parents[2]
NAMED_IMPLS = ("solutions", "assignments")


class MissingExercise(RuntimeError):
    """An exercise function is not implemented yet (its stub raises NotImplementedError)."""

    def __init__(self, ex_id: str, detail: str):
        super().__init__(f"{ex_id} is not implemented yet ({detail}); fill it in {EXERCISES[ex_id]}.py")
        self.ex_id = ex_id


def resolve_impl_dir(impl: str | Path) -> Path:
    """`solutions` / `assignments` name the folders beside `shared/`; anything else is a path."""
    if str(impl) in NAMED_IMPLS:
        candidates = [REPO_ROOT / str(impl), Path.cwd() / str(impl)]
    else:
        candidates = [Path(impl).expanduser()]
    for path in candidates:
        if path.is_dir():
            return path.resolve()
    raise FileNotFoundError(
        f"--impl {impl!s}: no such folder (looked in {', '.join(str(c) for c in candidates)})"
    )


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
    module = load_module_from_path(path, f"_a2impl_{digest}_{EXERCISES[ex_id]}")
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

    def call(*args: Any, **kwargs: Any) -> Any:
        try:
            return target(*args, **kwargs)
        except NotImplementedError as exc:
            raise MissingExercise(ex_id, str(exc) or func) from exc

    call.__name__ = func
    call.__doc__ = target.__doc__
    return call
