"""The grading glue: inputs built where a call runs (`Gen`) and harnesses that drive a simulator with an
exercise module. Everything the cases name lives in this package, under one naming rule:

    "<module>.<function>"  ->  hetero.harness.<module>.<function>, listed in that module's __all__

`Gen("kvcache.cluster", {...})` is an input built by `build`; a case's `harness="kvcache.dispatch"` is
called as `hetero.harness.kvcache.dispatch(exercise_module, *args, **kwargs)`. Each builder is a pure
function of its parameters (seeded generators only), so the answer key, the grader's child process and a
student's pytest all build bit-identical inputs. Submodules are imported on first use: `moe` imports torch.
This package imports nothing from `hetero` at import time, so `hetero.checks` can import it.
"""

from __future__ import annotations

import importlib
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

MODULES = ("kvcache", "overload", "moe")
_NAME = re.compile(r"^(?P<module>[a-z_]+)\.(?P<function>[a-z_][a-z0-9_]*)$")


@dataclass(frozen=True)
class Gen:
    """An input built by `hetero.harness.build(name, **params)` in the process that runs the call."""

    name: str
    params: Mapping[str, Any] = field(default_factory=dict)


def resolve(name: str) -> Callable[..., Any]:
    """The function a case names ("kvcache.cluster"); ValueError for a name outside this package."""
    match = _NAME.match(name) if isinstance(name, str) else None
    if match is None or match["module"] not in MODULES:
        raise ValueError(
            f"{name!r} is not a grading name: expected '<module>.<function>' with module one of {', '.join(MODULES)}"
        )
    module = importlib.import_module(f"{__name__}.{match['module']}")
    if match["function"] not in module.__all__:
        raise ValueError(
            f"{name!r}: hetero.harness.{match['module']} has no {match['function']!r}; "
            f"it has {', '.join(module.__all__)}"
        )
    return getattr(module, match["function"])


def build(name: str, **params: Any) -> Any:
    """The input that `Gen(name, params)` describes."""
    return resolve(name)(**params)


def expand(value: Any) -> Any:
    """Replace `Gen` specs (also nested in lists, tuples and dicts) by the inputs they describe."""
    if isinstance(value, Gen):
        return build(value.name, **{k: expand(v) for k, v in dict(value.params).items()})
    if isinstance(value, list):
        return [expand(v) for v in value]
    if isinstance(value, tuple):
        return tuple(expand(v) for v in value)
    if isinstance(value, dict):
        return {k: expand(v) for k, v in value.items()}
    return value
