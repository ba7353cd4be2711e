"""Mutation testing of the answer key against the public + hidden cases (`make mutation`).

Each mutant changes one thing inside a `# BEGIN SOLUTION` block of `solutions/exNN_*.py`: an arithmetic
operator (+ -, * /, // /, ** *), a comparison (< <=, > >=, == !=, < >), a boolean operator (and or),
a dropped `not`, a number (n -> n + 1; 0.5 -> 1.5), or a `return x` -> `return None`. A mutant is
*killed* when at least one case's verdict (hetero.checks.judge against the stored answer-key values in
autograder/expected/) fails, or when it raises where a value is expected, or runs past its time limit.
Survivors are listed with their line and change; `autograder/authoring/mutation_notes.json` explains the ones
that are equivalent (they cannot change any result), keyed by "<exNN>:<line>:<change>".

The exercise files are loaded by path and graded through stored values, not as importable packages run
by pytest, so this runner mutates the AST directly instead of driving mutmut's import trampolines.

`python -m autograder.authoring.mutation [exNN ...] [--report out/mutation.md]` prints the kill rate per exercise
and in total, every survivor, and every killed mutant that the public cases alone do not kill (a term of a
formula the public tests are blind to: a student's mistake there passes `make test` and loses points only
in grading).
"""

from __future__ import annotations

import argparse
import ast
import copy
import json
import signal
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from autograder.authoring.expected import all_cases
from autograder.core.cases import expected_values
from autograder.core.manifest import BY_ID, EXERCISES, ROOT
from hetero.checks import judge, run_call
from hetero.impl import load_module_from_path

NOTES = Path(__file__).with_name("mutation_notes.json")
MUTANT_TIMEOUT_S = 60

_BINOPS = {
    ast.Add: ast.Sub,
    ast.Sub: ast.Add,
    ast.Mult: ast.Div,
    ast.Div: ast.Mult,
    ast.FloorDiv: ast.Div,
    ast.Pow: ast.Mult,
    ast.Mod: ast.FloorDiv,
}
_CMPOPS = {
    ast.Lt: ast.LtE,
    ast.LtE: ast.Lt,
    ast.Gt: ast.GtE,
    ast.GtE: ast.Gt,
    ast.Eq: ast.NotEq,
    ast.NotEq: ast.Eq,
    ast.Is: ast.IsNot,
    ast.IsNot: ast.Is,
    ast.In: ast.NotIn,
    ast.NotIn: ast.In,
}
_BOOLOPS = {ast.And: ast.Or, ast.Or: ast.And}


@dataclass(frozen=True)
class Mutant:
    ex_id: str
    index: int  # position of the mutated node in the walk order
    line: int
    change: str

    @property
    def key(self) -> str:
        return f"{self.ex_id}:{self.line}:{self.change}"


def solution_line_ranges(source: str) -> list[tuple[int, int]]:
    """1-based inclusive line ranges strictly inside BEGIN/END SOLUTION markers."""
    ranges, start = [], None
    for no, line in enumerate(source.splitlines(), start=1):
        if line.strip().startswith("# BEGIN SOLUTION"):
            start = no
        elif line.strip().startswith("# END SOLUTION") and start is not None:
            ranges.append((start + 1, no - 1))
            start = None
    return ranges


def _located(tree: ast.AST, ranges: list[tuple[int, int]]) -> list[tuple[ast.AST, int]]:
    """The nodes of `tree` (walk order) that start on a line inside `ranges`, each with that line."""
    return [
        (node, line)
        for node in ast.walk(tree)
        if (line := getattr(node, "lineno", None)) is not None and any(lo <= line <= hi for lo, hi in ranges)
    ]


Mutation = Callable[[Any], None]  # mutates a copy of the node in place


def _new_op(new: type[ast.AST]) -> Mutation:
    return lambda n: setattr(n, "op", new())


def _mutations(node: ast.AST) -> list[tuple[str, Mutation]]:
    """Possible single changes of `node`, each as (description, function mutating a copy in place)."""
    out: list[tuple[str, Mutation]] = []
    if isinstance(node, ast.BinOp) and type(node.op) in _BINOPS:
        new: type[ast.AST] = _BINOPS[type(node.op)]
        out.append((f"{type(node.op).__name__}->{new.__name__}", _new_op(new)))
    if isinstance(node, ast.AugAssign) and type(node.op) in _BINOPS:
        new = _BINOPS[type(node.op)]
        out.append((f"aug {type(node.op).__name__}->{new.__name__}", _new_op(new)))
    if isinstance(node, ast.Compare):
        for i, op in enumerate(node.ops):
            if type(op) in _CMPOPS:
                new = _CMPOPS[type(op)]

                def swap(n: Any, i: int = i, new: type[ast.AST] = new) -> None:
                    n.ops[i] = new()

                out.append((f"{type(op).__name__}->{new.__name__}", swap))
    if isinstance(node, ast.BoolOp):
        new = _BOOLOPS[type(node.op)]
        out.append((f"{type(node.op).__name__}->{new.__name__}", _new_op(new)))
    if isinstance(node, ast.Constant) and isinstance(node.value, (int, float)) and not isinstance(node.value, bool):
        out.append((f"{node.value!r}->{node.value + 1!r}", lambda n: setattr(n, "value", n.value + 1)))
    if isinstance(node, ast.Return) and node.value is not None:
        out.append(("return->None", lambda n: setattr(n, "value", None)))
    return out


def enumerate_mutants(ex_id: str, source: str) -> list[tuple[Mutant, str]]:
    """All single-change mutants of a solution file, with their source text."""
    tree = ast.parse(source)
    ranges = solution_line_ranges(source)
    mutants = []
    for index, (node, line) in enumerate(_located(tree, ranges)):
        for change, apply in _mutations(node):
            mutated = copy.deepcopy(tree)
            apply(_located(mutated, ranges)[index][0])
            mutants.append((Mutant(ex_id, index, line, change), ast.unparse(mutated)))
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
            mutated = copy.deepcopy(tree)
            if _drop_not(mutated, index, ranges):
                mutants.append((Mutant(ex_id, index, line, "drop not"), ast.unparse(mutated)))
    return mutants


def _drop_not(tree: ast.AST, index: int, ranges: list[tuple[int, int]]) -> bool:
    target = _located(tree, ranges)[index][0]
    if not isinstance(target, ast.UnaryOp):
        return False
    for parent in ast.walk(tree):
        for field, value in ast.iter_fields(parent):
            if value is target:
                setattr(parent, field, target.operand)
                return True
            if isinstance(value, list) and target in value:
                value[value.index(target)] = target.operand
                return True
    return False


class _Timeout(Exception):
    pass


def _alarm(signum, frame):
    raise _Timeout()


def killed_by(mutant_source: str, ex_id: str, cases, stored) -> str | None:
    """The id of the first case that kills the mutant (or a reason), None if it survives."""
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / BY_ID[ex_id].filename
        path.write_text(mutant_source, encoding="utf-8")
        name = f"_a2_mutant_{ex_id}_{abs(hash(mutant_source))}"
        signal.signal(signal.SIGALRM, _alarm)
        signal.alarm(MUTANT_TIMEOUT_S)
        try:
            module = load_module_from_path(path, name)
            for _, case in cases:
                entry = stored[case.id]
                verdict = judge(case, run_call(case, module), entry["expect"] if not case.raises else None)
                if not verdict.passed:
                    return case.id
        except _Timeout:
            return "timeout"
        except Exception as exc:  # a mutant that cannot even import is killed
            return f"import failed: {type(exc).__name__}"
        finally:
            signal.alarm(0)
    return None


def run(ex_ids: list[str]) -> dict:
    notes = json.loads(NOTES.read_text(encoding="utf-8")) if NOTES.is_file() else {}
    report = {}
    for ex_id in ex_ids:
        source = (ROOT / "solutions" / BY_ID[ex_id].filename).read_text(encoding="utf-8")
        cases, stored = all_cases(ex_id), expected_values(ex_id)
        start = time.perf_counter()
        public = [c for c in cases if c[0] == "public"]
        survivors, hidden_only, total = [], [], 0
        for mutant, text in enumerate_mutants(ex_id, source):
            total += 1
            by = killed_by(text, ex_id, cases, stored)
            if by is not None and not by.startswith("import failed") and killed_by(text, ex_id, public, stored) is None:
                # a change only hidden cases see: the public cases are blind to this term of the formula
                hidden_only.append({"key": mutant.key, "line": mutant.line, "change": mutant.change, "by": by})
            if by is None:
                survivors.append(
                    {
                        "key": mutant.key,
                        "line": mutant.line,
                        "change": mutant.change,
                        "explained": notes.get(mutant.key),
                    }
                )
        report[ex_id] = {
            "mutants": total,
            "killed": total - len(survivors),
            "survivors": survivors,
            "hidden_only": hidden_only,
            "seconds": time.perf_counter() - start,
        }
        print(
            f"{ex_id}: {total - len(survivors)}/{total} killed "
            f"({(total - len(survivors)) / max(total, 1):.1%}), {len(hidden_only)} by hidden cases only, "
            f"in {report[ex_id]['seconds']:.1f} s",
            flush=True,
        )
    return report


def render(report: dict) -> str:
    total = sum(r["mutants"] for r in report.values())
    killed = sum(r["killed"] for r in report.values())
    lines = [
        "# Mutation testing of solutions/ against the public + hidden cases",
        "",
        f"Total: {killed}/{total} mutants killed ({killed / max(total, 1):.1%}).",
        "",
        "| exercise | mutants | killed | kill rate | killed by hidden cases only |",
        "|---|---|---|---|---|",
    ]
    for ex_id, r in report.items():
        lines.append(
            f"| {ex_id} | {r['mutants']} | {r['killed']} | {r['killed'] / max(r['mutants'], 1):.1%} "
            f"| {len(r.get('hidden_only', []))} |"
        )
    lines += ["", "## Survivors", ""]
    for r in report.values():
        for s in r["survivors"]:
            why = (
                s["explained"]
                or "NOT EXPLAINED: add a case that kills it, or explain it in autograder/authoring/mutation_notes.json"
            )
            lines.append(f"- `{s['key']}`: {why}")
    lines += ["", "## Changes the public cases do not see (a hidden case kills them)", ""]
    for r in report.values():
        lines += [f"- `{h['key']}` (killed by {h['by']})" for h in r.get("hidden_only", [])]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m autograder.authoring.mutation", description=__doc__.split("\n")[0])
    parser.add_argument("exercises", nargs="*", help="exercise ids (default: all)")
    parser.add_argument("--report", type=Path, default=ROOT / "out" / "mutation.md")
    args = parser.parse_args(argv)
    ids = args.exercises or [e.id for e in EXERCISES]
    report = run(ids)
    text = render(report)
    args.report.parent.mkdir(parents=True, exist_ok=True)
    args.report.write_text(text, encoding="utf-8")
    print(text)
    unexplained = [s for r in report.values() for s in r["survivors"] if not s["explained"]]
    return 1 if unexplained else 0


if __name__ == "__main__":
    sys.exit(main())
