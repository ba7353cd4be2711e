"""The import closure: which of this repository's Python files a set of files runs, read from their
import statements (those inside functions too), never by importing anything.

Two packages live in the repository: `autograder` (autograder/) and `hetero` (shared/hetero/). Importing
`a.b.c` runs the `__init__.py` of `a` and `a.b` too, so they are reached as well. A package whose
modules are imported by name at run time is in BY_NAME: reaching it reaches every module in it
(`hetero.harness.resolve` imports "<module>.<function>" strings). An import statement written inside a
string (a notebook cell, a configuration file that one of the files generates) counts as an import.
Files loaded by path (the exercise files, a test's helper) are not imports: callers name them as
starting files.

Used where "what does this depend on" must be computed rather than listed: the Gradescope zip ships the
grader's closure (`autograder.packaging.build`), the stored expected values and reference figures are
recomputed when the closure of what computes them changed (`autograder.authoring.digests`), and a slow
proof's inputs are the closure of what it runs (tests/proofs.py).
"""

from __future__ import annotations

import ast
import functools
import re
from collections.abc import Iterable
from pathlib import Path

from autograder.core.manifest import ROOT

PACKAGES = {"autograder": ("autograder",), "hetero": ("shared", "hetero")}  # import name -> folder under ROOT
BY_NAME = ("hetero.harness",)


class ClosureError(ValueError):
    """A file the closure cannot follow (a relative import): names the file."""


# An import statement written inside a string, on a line of its own: code this file writes for another
# process (notebook cells, a configuration file).
GENERATED_IMPORT = re.compile(
    r"""(?m)^\s*[rbf]?["']{1,3}\s*(?:from\s+((?:autograder|hetero)[\w.]*)\s+import\s+([\w, ]+)|import\s+((?:autograder|hetero)[\w.]*))"""
)
BODIES = ("body", "orelse", "finalbody", "handlers", "cases")  # where statements nest (imports are statements)


def _statements(tree: ast.Module) -> list[ast.AST]:
    found: list[ast.AST] = []
    stack: list[ast.AST] = [tree]
    while stack:
        node = stack.pop()
        found.append(node)
        for name in BODIES:
            children = getattr(node, name, None)
            if isinstance(children, list):
                stack.extend(c for c in children if isinstance(c, ast.AST))
    return found


@functools.lru_cache(maxsize=4096)
def _imports_cached(path: Path, mtime_ns: int, size: int) -> frozenset[str]:
    source = path.read_bytes()
    try:
        tree = ast.parse(source, filename=str(path))
    except (SyntaxError, ValueError):  # a test submission that does not parse imports nothing
        return frozenset()
    names: set[str] = set()
    for module, items, plain in GENERATED_IMPORT.findall(source.decode("utf-8", "replace")):
        names.update([plain] if plain else [module, *(f"{module}.{i.strip()}" for i in items.split(","))])
    for node in _statements(tree):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                raise ClosureError(
                    f"{path}:{node.lineno}: relative import; the repository's modules import by full name"
                )
            module = node.module or ""
            names.add(module)
            names.update(f"{module}.{alias.name}" for alias in node.names if alias.name != "*")
    return frozenset(name for name in names if name.split(".")[0] in PACKAGES)


def imported_names(path: Path) -> frozenset[str]:
    """Dotted names of `autograder` and `hetero` that `path` imports anywhere in it (`from a.b import c`
    gives a.b and a.b.c: c may be a module or a name defined in a.b); none when it does not parse."""
    stat = path.stat()
    return _imports_cached(path, stat.st_mtime_ns, stat.st_size)


def module_file(dotted: str, root: Path = ROOT) -> Path | None:
    """The file of a dotted module (`a/b.py` or `a/b/__init__.py`), or None when it is no module here."""
    top, *rest = dotted.split(".")
    if top not in PACKAGES:
        return None
    base = root.joinpath(*PACKAGES[top], *rest)
    for candidate in ((base.with_suffix(".py"),) if rest else ()) + (base / "__init__.py",):
        if candidate.is_file():
            return candidate
    return None


def _package_modules(dotted: str, root: Path) -> list[Path]:
    init = module_file(dotted, root)
    if init is None or init.name != "__init__.py":
        return []
    return sorted(p for p in init.parent.rglob("*.py") if "__pycache__" not in p.parts)


def closure(
    starts: Iterable[Path], root: Path = ROOT, follow_not: Iterable[Path] = (), by_name: bool = True
) -> dict[Path, Path | None]:
    """{file: the file that first imported it (None for a starting file)} for every repository file the
    Python files `starts` run through their imports, the starting files included; `follow_not`: files
    reached but whose own imports are not followed (`autograder/__main__.py`'s command table names every
    command's module as a string, yet one run imports one of them); `by_name=False`: a BY_NAME package
    reaches only its `__init__.py` (the caller adds the modules it knows are named)."""
    unfollowed = {Path(p) for p in follow_not}
    files: dict[str, Path | None] = {}

    def file_of(dotted: str) -> Path | None:
        if dotted not in files:
            files[dotted] = module_file(dotted, root)
        return files[dotted]

    reached: dict[Path, Path | None] = {}
    todo: list[tuple[Path, Path | None]] = [(Path(p), None) for p in sorted(starts, reverse=True)]
    while todo:
        path, importer = todo.pop()
        if path in reached:
            continue
        reached[path] = importer
        if path in unfollowed or path.suffix != ".py":
            continue
        for dotted in sorted(imported_names(path), reverse=True):
            parts = dotted.split(".")
            targets = [file_of(".".join(parts[:depth])) for depth in range(1, len(parts) + 1)]
            if by_name and dotted in BY_NAME:
                targets += _package_modules(dotted, root)
            todo.extend((t, path) for t in targets if t is not None and t not in reached)
    return reached


def files_under(root: Path, patterns: Iterable[str]) -> list[Path]:
    """The files (no caches, no bytecode) matching glob `patterns` relative to `root`, sorted."""
    found: set[Path] = set()
    for pattern in patterns:
        for path in root.glob(pattern):
            if path.is_file() and "__pycache__" not in path.relative_to(root).parts and path.suffix != ".pyc":
                found.add(path)
    return sorted(found)
