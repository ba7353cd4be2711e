"""The exercise functions `hetero` calls by name, checked against the manifest before anything runs.

`hetero` reaches a student's code two ways: the lecture drivers call `exercise_function("exNN", "name",
impl)`, and a harness (`hetero/harness/<module>.py`, named by cases as "<module>.<function>") reads
`module.<name>` off the exercise module it is given. A function renamed in the manifest and the answer
key but not here fails minutes into a release, as a traceback far from the cause; this check names the
calling file and line and the manifest's entry instead, in a fraction of a second (no import, only the
source text).
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

from autograder.core.manifest import BY_ID, ROOT, Exercise, where

HARNESS_NAME = re.compile(r"""["']([a-z_]\w*)\.[a-z_]\w*["']""")  # "overload.run_scenario" in a case file
MODULE_PARAMETER = "module"  # the name a harness gives the exercise module it drives


def harness_users(root: Path, exercises: tuple[Exercise, ...]) -> dict[str, list[Exercise]]:
    """harness module name -> the exercises whose case files name one of its functions."""
    harness = {p.stem for p in (root / "shared" / "hetero" / "harness").glob("*.py") if p.stem != "__init__"}
    users: dict[str, list[Exercise]] = {}
    for ex in exercises:
        files = [
            root / "autograder" / "tests" / f"{ex.id}_hidden.py",
            root / "solutions" / "tests" / f"public_{ex.id}.py",
        ]
        named = {m for f in files if f.is_file() for m in HARNESS_NAME.findall(f.read_text(encoding="utf-8"))}
        for module in named & harness:
            users.setdefault(module, []).append(ex)
    return users


def _declared(candidates: list[Exercise]) -> str:
    return "; ".join(f"{ex.id} declares {', '.join(ex.functions)} ({where(ex.id)})" for ex in candidates)


def problems(root: Path = ROOT, exercises: tuple[Exercise, ...] | None = None) -> list[str]:
    """Every call by name in hetero that no manifest entry declares, as "file:line: ..." (empty: none)."""
    table = tuple(BY_ID.values()) if exercises is None else exercises
    by_id = {ex.id: ex for ex in table}
    users = harness_users(root, table)
    library = root / "shared" / "hetero"
    found: list[str] = []
    for path in sorted(library.rglob("*.py")):
        if "__pycache__" in path.parts:
            continue
        rel = path.relative_to(root).as_posix()
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=rel)
        users_here = users.get(path.stem) if path.parent.name == "harness" else None
        for node in ast.walk(tree):
            if isinstance(node, ast.Call) and getattr(node.func, "id", None) == "exercise_function":
                args = [a.value for a in node.args[:2] if isinstance(a, ast.Constant) and isinstance(a.value, str)]
                if len(args) < 2:
                    continue  # a computed name: nothing to check before it runs
                ex_id, name = str(args[0]), str(args[1])
                if ex_id not in by_id:
                    found.append(
                        f"{rel}:{node.lineno}: calls exercise {ex_id}, which has no manifest entry ({where()})"
                    )
                elif name not in by_id[ex_id].functions:
                    found.append(
                        f"{rel}:{node.lineno}: calls {ex_id}.{name}, which the manifest does not declare: "
                        f"{_declared([by_id[ex_id]])}"
                    )
        candidates = users_here if users_here is not None else list(table)
        for read in _module_reads(tree):
            if not any(read.attr in ex.functions for ex in candidates):
                found.append(
                    f"{rel}:{read.lineno}: reads {MODULE_PARAMETER}.{read.attr} off an exercise module, but no "
                    f"exercise {'using this harness ' if users_here is not None else ''}declares "
                    f"{read.attr}: {_declared(candidates) or 'no exercise names this harness in its cases'}"
                )
    return found


def _module_reads(tree: ast.AST) -> list[ast.Attribute]:
    """`module.<name>` inside the functions that take a parameter called `module` (an exercise module)."""
    reads: list[ast.Attribute] = []
    for func in ast.walk(tree):
        if not isinstance(func, (ast.FunctionDef, ast.AsyncFunctionDef)):
            continue
        if MODULE_PARAMETER not in {a.arg for a in func.args.posonlyargs + func.args.args + func.args.kwonlyargs}:
            continue
        reads += [
            node
            for node in ast.walk(func)
            if isinstance(node, ast.Attribute)
            and isinstance(node.value, ast.Name)
            and node.value.id == MODULE_PARAMETER
            and not node.attr.startswith("__")
        ]
    return reads
