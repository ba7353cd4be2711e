"""autograder/ by job: each module in one sub-package, imports only downward, no cycle, none over 500
lines of code (declared data aside), each opening with what it is for; the zip ships the runtime's
import closure and nothing of the other jobs. Read from the source, not from a list kept by hand."""

from __future__ import annotations

import ast
import io
import tokenize
from pathlib import Path

import pytest

from autograder.core.manifest import ROOT
from autograder.packaging.build import grader_modules

PACKAGE = ROOT / "autograder"
# Each job may import its own and lower layers only: core is read by everyone; the runtime is what
# Gradescope runs; authoring turns solutions/ into derived files; exports and packaging build what
# leaves the instructor; batch grades a class; selftest drives all of them.
LAYERS = {
    "core": 0,
    "gradescope": 1,
    "runtime": 1,
    "authoring": 2,
    "exports": 3,
    "packaging": 3,
    "batch": 4,
    "selftest": 5,
}
DATA_DIRS = {"fixtures", "tests", "expected", "schema", "student_bundle"}  # data, not the package's code
MAX_LINES_OF_CODE = 500
DECLARED_DATA = {"authoring/wrong_fixtures.py": "FIXTURES"}  # a module whose bulk is one declared table


def _modules() -> list[Path]:
    return sorted(
        p
        for p in PACKAGE.rglob("*.py")
        if not ({*p.relative_to(PACKAGE).parts[:-1]} & DATA_DIRS) and "__pycache__" not in p.parts
    )


def _job(path: Path) -> str | None:
    parts = path.relative_to(PACKAGE).parts
    return parts[0] if len(parts) > 1 else None


def _module_name(path: Path) -> str:
    rel = path.relative_to(ROOT).with_suffix("")
    parts = rel.parts[:-1] if rel.name == "__init__" else rel.parts
    return ".".join(parts)


def _imports(path: Path) -> set[str]:
    """Dotted autograder modules `path` imports anywhere (in functions too)."""
    known = {_module_name(p) for p in _modules()}
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found.update(a.name for a in node.names if a.name.startswith("autograder."))
        elif isinstance(node, ast.ImportFrom) and (node.module or "").startswith("autograder"):
            assert node.level == 0, f"{path}: relative import"
            for alias in node.names:
                name = f"{node.module}.{alias.name}"
                found.add(name if name in known else node.module or "")
    return {name for name in found if name in known}


def test_every_module_lies_in_a_job():
    loose = [
        p.relative_to(ROOT).as_posix()
        for p in _modules()
        if _job(p) is None and p.name not in ("__init__.py", "__main__.py")
    ]
    assert not loose, f"modules outside the sub-packages {sorted(LAYERS)}: {loose}"
    unknown = sorted({_job(p) for p in _modules()} - {None, *LAYERS})
    assert not unknown, f"sub-packages without a layer in this test: {unknown}"


def test_imports_only_go_down_the_layers():
    wrong = []
    for path in _modules():
        job = _job(path)
        if job is None:
            continue
        for target in _imports(path):
            other = target.split(".")[1] if target.count(".") else None
            if other in LAYERS and LAYERS[other] > LAYERS[job]:
                wrong.append(f"{path.relative_to(ROOT)} ({job}) imports {target} ({other})")
    assert not wrong, "an import goes up the layers (the runtime must never need authoring code):\n" + "\n".join(wrong)


def test_no_import_cycle():
    graph = {_module_name(p): _imports(p) for p in _modules()}
    state: dict[str, int] = {}
    cycle: list[str] = []

    def visit(node: str, trail: list[str]) -> bool:
        state[node] = 1
        for nxt in sorted(graph.get(node, ())):
            if nxt.startswith(node + "."):
                continue  # a package importing its own module is no cycle
            if state.get(nxt) == 1:
                cycle.extend(trail[trail.index(nxt) :] + [nxt] if nxt in trail else [node, nxt])
                return True
            if state.get(nxt) is None and visit(nxt, [*trail, nxt]):
                return True
        state[node] = 2
        return False

    for name in sorted(graph):
        if state.get(name) is None and visit(name, [name]):
            break
    assert not cycle, f"import cycle: {' -> '.join(cycle)}"


def lines_of_code(path: Path, skip_assignment: str | None = None) -> int:
    """Lines holding code: not blank, not comments, not docstrings (nor the declared data table)."""
    source = path.read_text(encoding="utf-8")
    tree = ast.parse(source)
    skipped: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and node.body:
            first = node.body[0]
            if (
                isinstance(first, ast.Expr)
                and isinstance(first.value, ast.Constant)
                and isinstance(first.value.value, str)
            ):
                skipped.update(range(first.lineno, (first.end_lineno or first.lineno) + 1))
    for node in tree.body:
        target = (
            node.target
            if isinstance(node, ast.AnnAssign)
            else node.targets[0]
            if isinstance(node, ast.Assign)
            else None
        )
        if skip_assignment and isinstance(target, ast.Name) and target.id == skip_assignment:
            skipped.update(range(node.lineno, (node.end_lineno or node.lineno) + 1))
    lines: set[int] = set()
    ignored = (tokenize.COMMENT, tokenize.NL, tokenize.NEWLINE, tokenize.INDENT, tokenize.DEDENT, tokenize.ENDMARKER)
    for token in tokenize.generate_tokens(io.StringIO(source).readline):
        if token.type not in ignored:
            lines.update(n for n in range(token.start[0], token.end[0] + 1) if n not in skipped)
    return len(lines)


def test_no_module_over_500_lines_of_code():
    big = {}
    for path in _modules():
        rel = path.relative_to(PACKAGE).as_posix()
        count = lines_of_code(path, DECLARED_DATA.get(rel))
        if count > MAX_LINES_OF_CODE:
            big[rel] = count
    assert not big, f"modules over {MAX_LINES_OF_CODE} lines of code (split them by job): {big}"


def test_lines_of_code_counts_code_only(tmp_path):
    path = tmp_path / "m.py"
    path.write_text(
        '"""doc\nstring"""\n\n# comment\nX = 1\n\n\ndef f():\n    """doc"""\n    return (1,\n            2)\n'
    )
    assert lines_of_code(path) == 4


def test_every_module_opens_with_what_it_is_for():
    silent = [
        p.relative_to(ROOT).as_posix()
        for p in _modules()
        if not ast.get_docstring(ast.parse(p.read_text(encoding="utf-8")))
    ]
    assert not silent, f"modules without a docstring saying what they are for: {silent}"


def test_the_zip_ships_the_runtime_closure_only():
    shipped = {p.relative_to(PACKAGE).as_posix() for p in grader_modules()}
    runtime = {
        p.relative_to(PACKAGE).as_posix() for p in (PACKAGE / "runtime").rglob("*.py") if "__pycache__" not in p.parts
    }
    assert runtime <= shipped, f"runtime files left out of the zip: {sorted(runtime - shipped)}"
    outside = sorted(s for s in shipped if "/" in s and s.split("/")[0] not in ("core", "runtime"))
    assert not outside, f"the zip would ship other jobs' code: {outside}"


@pytest.mark.parametrize("job", ["authoring", "batch", "exports", "packaging", "selftest"])
def test_a_runtime_import_of_another_job_stops_the_build(tmp_path, job):
    from autograder.packaging.build import BuildError

    copy = tmp_path / "autograder"
    for path in _modules():
        dest = copy / path.relative_to(PACKAGE)
        dest.parent.mkdir(parents=True, exist_ok=True)
        dest.write_text(path.read_text(encoding="utf-8"), encoding="utf-8")
    intake = copy / "runtime" / "intake.py"
    target = next(p for p in (PACKAGE / job).glob("*.py") if p.name != "__init__.py")
    intake.write_text(
        intake.read_text(encoding="utf-8") + f"\n\ndef _late():\n    from autograder.{job} import {target.stem}\n"
    )
    with pytest.raises(BuildError, match=f"runtime/intake.py imports autograder.{job}"):
        grader_modules(copy)


def test_no_module_imports_another_modules_private_names():
    """What modules share has a public name: `from x import _y` across modules couples to an implementation
    detail (issue 30: split for size, the parts kept reaching into each other)."""
    found = []
    for path in [*_modules(), *sorted((ROOT / "shared" / "hetero").rglob("*.py"))]:
        rel = path.relative_to(ROOT).as_posix()
        if "__pycache__" in path.parts:
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] in ("autograder", "hetero"):
                private = [a.name for a in node.names if a.name.startswith("_") and not a.name.startswith("__")]
                found += [f"{rel}:{node.lineno}: from {node.module} import {', '.join(private)}"] if private else []
    assert not found, "private names imported across modules (give them a public name):\n" + "\n".join(found)
