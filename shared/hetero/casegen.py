"""Inputs that are too big to write as literals: `Gen(name, params)` expands here, where a call runs.

Each builder is a pure function of its parameters (seeded generators only), so the answer key, the
grader's child process and a student's pytest all build bit-identical inputs. Builders are added by
the modules that need them (`hetero.kvcache`, `hetero.overload`, `hetero.moe`) through `register`.
"""

from __future__ import annotations

import importlib
from typing import Any, Callable

from hetero.checks import Gen

_BUILDERS: dict[str, Callable[..., Any]] = {}
# Modules that register builders; imported lazily on the first expansion.
_PROVIDERS = ("hetero.kvcache", "hetero.overload", "hetero.moe")


def register(name: str) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    def wrap(fn: Callable[..., Any]) -> Callable[..., Any]:
        if name in _BUILDERS and _BUILDERS[name] is not fn:
            raise ValueError(f"input builder {name!r} registered twice")
        _BUILDERS[name] = fn
        return fn

    return wrap


def build(name: str, **params: Any) -> Any:
    if name not in _BUILDERS and "." in name:  # "kvcache.cluster": try its own module first
        owner = f"hetero.{name.split('.', 1)[0]}"
        if owner in _PROVIDERS:
            importlib.import_module(owner)
    if name not in _BUILDERS:
        for provider in _PROVIDERS:
            try:
                importlib.import_module(provider)
            except ModuleNotFoundError as exc:
                if exc.name != provider:
                    raise
    if name not in _BUILDERS:
        raise KeyError(f"unknown input builder {name!r}; known: {', '.join(sorted(_BUILDERS))}")
    return _BUILDERS[name](**params)


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
