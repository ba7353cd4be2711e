"""Student notebooks generated from the exercise files (the rule that reads one back is the runtime's).

One notebook per exercise, built from the same sources as the `.py` release:
- a markdown cell with the exercise's title, lecture section and points (manifest) and the exercise
  file's module docstring;
- the EXERCISE CELL: the released stub of `solutions/exNN_<name>.py` (solution blocks replaced by
  `# TODO(exNN)` + `raise NotImplementedError`), tagged `a2-exercise` and starting with the marker line
  `# a2-exercise exNN: ...`;
- one cell per exercise function checking its public cases (`hetero.checks.check_call` on the
  notebook's own namespace).

The grading rule that reads a notebook submission back (`extract_code`) lives with the grader:
`autograder.runtime.notebook_code`.

The nbgrader and Otter exports (`export_nbgrader.py`, `export_otter.py`) reuse the pieces here: the case
literals (`case_source`, `entry_source`) and the test-cell code (`group_cell_code`: one cell per
exercise function, scored by `hetero.grading.score_cases` with the native grader's exact shares and
live-function rule), so every channel grades with the same `hetero.checks.judge` and pays the same
cases.
"""

from __future__ import annotations

import argparse
import ast
import json
import math
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from autograder.core import cases as case_store
from autograder.core import scoring
from autograder.core.manifest import BY_ID, EXERCISES, ROOT, Exercise, public_cases_in
from autograder.runtime.notebook_code import (
    EXERCISE_TAG,
    NotebookError,
    cell_tags,
)
from hetero.checks import NO_EXPECT, Case, Gen

KERNELSPEC = {"name": "python3", "display_name": "Python 3", "language": "python"}
LANGUAGE_INFO = {"name": "python"}


# ---------------------------------------------------------------------------------------------
# The sources of one exercise.


@dataclass(frozen=True)
class ExerciseSources:
    """Everything the notebooks of one exercise are built from (trusted side: includes the answer key)."""

    exercise: Exercise
    solution: str  # text of solutions/exNN_<name>.py
    stub: str  # the released stub of that file
    docstring: str  # its module docstring
    public: tuple[Case, ...]
    hidden: tuple[Case, ...]  # empty when the exercise has no hidden cases yet
    expected: dict[str, Any]  # {case_id: {"expect": encoded, "class": int, "echo": bool, "mistakes": {...}}}
    rules: dict[str, Any] = field(default_factory=dict)  # group -> {"rule": ..., "uses": [...]} (stored)

    @property
    def cents(self) -> dict[str, int]:
        """Case id -> share in hundredths of a point (autograder.core.scoring, as the native grader)."""
        return scoring.case_cents(self.exercise.points, self.exercise.public_share, self.public, self.hidden)

    def groups(self) -> list[str]:
        """Scoring groups in the order their first case comes (public cases first)."""
        from hetero.grading import group_key

        keys: list[str] = []
        for case in self.public + self.hidden:
            if group_key(case) not in keys:
                keys.append(group_key(case))
        return keys


def available_exercises(root: Path = ROOT) -> list[Exercise]:
    """Manifest exercises whose solution file and public cases exist under `root`."""
    return [
        ex
        for ex in EXERCISES
        if (root / "solutions" / ex.filename).is_file() and public_cases_in(root / "solutions", ex.id).is_file()
    ]


def gradable_exercises(root: Path = ROOT) -> list[Exercise]:
    """Available exercises that also have hidden cases and their stored expected values."""
    return [ex for ex in available_exercises(root) if (root / "autograder" / "expected" / f"{ex.id}.json").is_file()]


def chosen_exercises(ex_ids: list[str] | None, root: Path = ROOT) -> list[Exercise]:
    """The gradable exercises an export writes (all, or those of `ex_ids`); ValueError naming any that
    cannot be exported, or when none can."""
    chosen = [ex for ex in gradable_exercises(root) if ex_ids is None or ex.id in ex_ids]
    if ex_ids is not None:
        unknown = sorted(set(ex_ids) - {ex.id for ex in chosen})
        if unknown:
            raise ValueError(
                f"not exportable (no solution, public cases, hidden cases or expected values): {', '.join(unknown)}"
            )
    if not chosen:
        raise ValueError("no exercise has a solution, public and hidden cases and expected values yet")
    return chosen


def exercise_ids_option(parser: argparse.ArgumentParser, value: str | None) -> list[str] | None:
    """An export's --exercises value (comma-separated ids) as a list, None when not given; an unknown id
    ends the command through `parser.error`, naming it."""
    ex_ids = value.split(",") if value else None
    bad = [e for e in ex_ids or [] if e not in BY_ID]
    if bad:
        parser.error(f"unknown exercise ids: {', '.join(bad)}")
    return ex_ids


def load_sources(ex_id: str, root: Path = ROOT, with_hidden: bool = True) -> ExerciseSources:
    """Read the solution, stub, public and (if asked and present) hidden cases of one exercise."""
    from autograder.authoring.release import strip_solutions  # imported here: release is a sibling tool

    ex = BY_ID[ex_id]
    path = root / "solutions" / ex.filename
    solution = path.read_text(encoding="utf-8")
    hidden: list[Case] = []
    expected: dict[str, Any] = {}
    rules: dict[str, Any] = {}
    if with_hidden:
        hidden = case_store.hidden_cases(ex_id, root)
        expected = case_store.expected_values(ex_id, root)
        rules = case_store.stored(ex_id, root)["rules"]
        missing = [c.id for c in hidden if c.id not in expected]
        if missing:
            raise ValueError(
                f"{ex_id}: no stored expected value for hidden cases {missing}; run `python -m autograder expected`"
            )
    return ExerciseSources(
        ex,
        solution,
        strip_solutions(solution, ex_id, str(path)),
        ast.get_docstring(ast.parse(solution)) or "",
        tuple(case_store.public_cases(ex_id, root)),
        tuple(hidden),
        expected,
        rules,
    )


# ---------------------------------------------------------------------------------------------
# Python literals for cases: readable in the notebook, exact (every value round-trips).


def value_source(value: Any) -> str:
    """Python source that evaluates (with `Gen`, `np` and `torch` in scope) to `value`."""
    kind = type(value)
    if value is None or kind in (bool, int, str):
        return repr(value)
    if kind is float:
        return repr(value) if math.isfinite(value) else f"float({str(value)!r})"
    if kind is list:
        return "[" + ", ".join(value_source(v) for v in value) + "]"
    if kind is tuple:
        inner = ", ".join(value_source(v) for v in value)
        return f"({inner},)" if len(value) == 1 else f"({inner})"
    if kind is dict:
        if not all(type(k) is str for k in value):
            raise TypeError("only dicts with str keys can be written into a notebook")
        return "{" + ", ".join(f"{k!r}: {value_source(v)}" for k, v in value.items()) + "}"
    if kind is Gen:
        return f"Gen({value.name!r}, {value_source(dict(value.params))})"
    if isinstance(value, np.generic):
        return value_source(value.item())
    if kind is np.ndarray:
        return f"np.array({value_source(value.tolist())}, dtype={value.dtype.str!r}).reshape({tuple(value.shape)!r})"
    if kind.__module__ == "torch" and kind.__name__ == "Tensor":
        array = value.detach().cpu().numpy()
        return f"torch.tensor({value_source(array.tolist())}, dtype={value.dtype!s}).reshape({tuple(array.shape)!r})"
    raise TypeError(f"cannot write a value of type {kind.__name__} into a notebook")


def needed_imports(source: str) -> list[str]:
    return [line for token, line in (("np.", "import numpy as np"), ("torch.", "import torch")) if token in source]


def case_source(case: Case, with_expect: bool = True) -> str:
    """`Case(...)` source for `case`; fields at their default are left out."""
    fields: list[str] = [f"id={case.id!r}", f"func={case.func!r}"]
    if case.args:
        fields.append(f"args={value_source(tuple(case.args))}")
    if case.kwargs:
        fields.append(f"kwargs={value_source(dict(case.kwargs))}")
    if with_expect and not (isinstance(case.expect, str) and case.expect == NO_EXPECT):
        fields.append(f"expect={value_source(case.expect)}")
    defaults = Case(id="", func="")
    for name in ("raises", "rel_tol", "abs_tol", "tol_note", "unit", "hint", "harness", "kind"):
        value = getattr(case, name)
        if value != getattr(defaults, name):
            fields.append(f"{name}={value_source(value)}")
    return "Case(\n    " + ",\n    ".join(fields) + ",\n)"


def entry_source(src: ExerciseSources, case: Case, hidden: bool, cents: int) -> str:
    """`Entry(...)` source of one case for a test cell: its known mistakes' outputs (named when the
    returned value matches one, as in grading and in the public tests: `hetero.checks.diagnosis`), and for
    a hidden case its stored value."""
    stored = src.expected.get(case.id, {})
    fields = [case_source(case, with_expect=not hidden), repr(hidden), repr(cents), repr(stored.get("class", 0))]
    mistakes = json.dumps(stored.get("mistakes") or {}, ensure_ascii=False)
    if hidden:
        expect = json.dumps(stored.get("expect"))
        fields += [repr(bool(stored.get("echo"))), f"json.loads({expect!r})", f"json.loads({mistakes!r})"]
    elif stored.get("mistakes"):  # public inputs only: a literal, as the public tests ship them
        fields.append(f"mistakes={stored['mistakes']!r}")
    return "Entry(" + ", ".join(fields) + ")"


def rules_source(src: ExerciseSources, keys: list[str]) -> str:
    """`{group: Rule(...)}` source for the groups a cell scores."""
    items = [
        f"{k!r}: Rule({src.rules[k]['rule']!r}, {tuple(src.rules[k]['uses'])!r}, "
        f"{int(src.rules[k].get('min_passed', 0))!r})"
        for k in keys
        if k in src.rules
    ]
    return "{" + ", ".join(items) + "}"


def group_cases(src: ExerciseSources, key: str) -> tuple[list[Case], list[Case], list[Case]]:
    """(public, hidden, support) cases of one group; support: the hidden cases of the groups it uses,
    run at 0 points only to decide whether those groups are live."""
    from hetero.grading import group_key

    public = [c for c in src.public if group_key(c) == key]
    hidden = [c for c in src.hidden if group_key(c) == key]
    uses = tuple(src.rules.get(key, {}).get("uses", ()))
    support = [c for c in src.hidden if group_key(c) in uses]
    return public, hidden, support


def cell_groups(src: ExerciseSources) -> list[list[str]]:
    """The groups each test cell scores: one cell per function with public cases; a group without public
    cases (a simulator driven by the functions) joins the cell of the first function it uses, so no
    cell of the students' copy is empty."""
    cells = [[key] for key in src.groups() if group_cases(src, key)[0]]
    for key in src.groups():
        if group_cases(src, key)[0]:
            continue
        uses = src.rules.get(key, {}).get("uses", ())
        home = next((cell for cell in cells if cell[0] in uses), cells[-1])
        home.append(key)
    return cells


def _header(literals: str) -> list[str]:
    return [
        *needed_imports(literals),
        "import json",
        "from types import SimpleNamespace",
        "from hetero.checks import Case, Gen",
        "from hetero.grading import Entry, Rule, score_cases",
    ]


def group_cell_code(src: ExerciseSources, keys: list[str], hidden_begin: str = "", hidden_end: str = "") -> str:
    """One test cell scoring the public and hidden cases of `keys` (one function, and the simulators it
    drives). nbgrader: the hidden ones sit between `hidden_begin` / `hidden_end`, which nbgrader strips
    from the students' copy. The cell's last expression is the points earned (nbgrader's partial credit)."""
    cents = src.cents
    public = [c for key in keys for c in group_cases(src, key)[0]]
    hidden = [c for key in keys for c in group_cases(src, key)[1]]
    hidden_ids = {c.id for c in hidden}
    support: list[Case] = []
    for key in keys:
        support += [c for c in group_cases(src, key)[2] if c.id not in hidden_ids and c not in support]
    public_lines = [f"    {entry_source(src, c, False, cents[c.id])}," for c in public]
    hidden_lines = [f"    {entry_source(src, c, True, cents[c.id])}," for c in hidden]
    hidden_lines += [f"    {entry_source(src, c, True, 0)}," for c in support]
    rule_keys = list(dict.fromkeys([*keys, *(u for k in keys for u in src.rules.get(k, {}).get("uses", ()))]))
    body = "\n".join(public_lines + hidden_lines)
    total = sum(cents[c.id] for c in public + hidden)
    lines = [
        f"# {src.exercise.id} {', '.join(keys)}: {len(public)} public and {len(hidden)} hidden cases, "
        f"{total / 100:g} points",
        *_header(body),
        "_a2_entries = [",
        *public_lines,
        "]",
    ]
    if hidden_lines:
        lines += [hidden_begin, "_a2_entries += [", *hidden_lines, "]", hidden_end]
    lines += [
        f"_a2_score = score_cases(SimpleNamespace(**globals()), _a2_entries, {rules_source(src, rule_keys)}, "
        f"{src.exercise.case_timeout_s!r})",
        "print('\\n'.join(_a2_score.lines))",
        "_a2_score.points",
    ]
    return "\n".join(line for line in lines if line != "")


def public_check_code(src: ExerciseSources, key: str) -> str:
    """A student notebook's check of one function's public cases (no points: those need the hidden ones)."""
    public, _, _ = group_cases(src, key)
    entries = [f"    {entry_source(src, c, False, 0)}," for c in public]
    body = "\n".join(entries)
    return "\n".join(
        [
            *_header(body),
            "from hetero.checks import check_call",
            "_a2_failed = []",
            "for _a2_entry in [",
            *entries,
            "]:",
            "    _a2_verdict = check_call(_a2_entry.case, SimpleNamespace(**globals()))",
            "    print('[passed] ' + _a2_verdict.message) if _a2_verdict.passed else None",
            "    _a2_failed += [] if _a2_verdict.passed else [_a2_verdict.message]",
            "assert not _a2_failed, '\\n'.join(_a2_failed)",
        ]
    )


# ---------------------------------------------------------------------------------------------
# Notebook cells.


def marker_line(ex: Exercise) -> str:
    return (
        f"# a2-exercise {ex.id}: this cell is your {ex.filename}; "
        "the grader takes it (keep this line and the cell's tag)"
    )


def exercise_cell_source(ex: Exercise, code: str) -> str:
    return marker_line(ex) + "\n" + code.rstrip("\n")


def intro_markdown(src: ExerciseSources) -> str:
    ex = src.exercise
    public_cents, hidden_cents = scoring.exercise_cents(ex.points, ex.public_share, bool(src.public))
    return "\n".join(
        [
            f"# {ex.id}: {ex.title}",
            "",
            f"Lecture A2 (LLM Serving on Heterogeneous Hardware: Mooncake and KTransformers), {ex.lecture}. "
            f"{ex.points:g} points: {scoring.points_text(public_cents)} from the public tests below, "
            f"{scoring.points_text(hidden_cents)} from hidden tests.",
            "",
            "```text",
            src.docstring.strip(),
            "```",
            "",
            f"Fill in the functions of the exercise cell (the one tagged `{EXERCISE_TAG}`, which is your "
            f"`{ex.filename}`), then run the test cells. The grader extracts that cell and grades it exactly "
            "like the `.py` file; other cells are yours to use.",
        ]
    )


def new_notebook(cells: list[dict[str, Any]], metadata: dict[str, Any] | None = None) -> dict[str, Any]:
    meta = {"kernelspec": dict(KERNELSPEC), "language_info": dict(LANGUAGE_INFO)}
    meta.update(metadata or {})
    return {"cells": cells, "metadata": meta, "nbformat": 4, "nbformat_minor": 5}


def markdown_cell(source: str, cell_id: str, metadata: dict[str, Any] | None = None) -> dict[str, Any]:
    return {"cell_type": "markdown", "id": cell_id, "metadata": metadata or {}, "source": source}


def code_cell(source: str, cell_id: str, metadata: dict[str, Any] | None = None) -> dict[str, Any]:
    return {
        "cell_type": "code",
        "execution_count": None,
        "id": cell_id,
        "metadata": metadata or {},
        "outputs": [],
        "source": source,
    }


def raw_cell(source: str, cell_id: str) -> dict[str, Any]:
    return {"cell_type": "raw", "id": cell_id, "metadata": {}, "source": source}


def cell_id_for(text: str) -> str:
    """A valid nbformat cell id (1-64 chars of [A-Za-z0-9_-]) derived from a case id or label."""
    return re.sub(r"[^A-Za-z0-9_-]", "-", text)[:64]


def student_notebook(src: ExerciseSources, code: str | None = None) -> dict[str, Any]:
    """The student notebook of one exercise; `code` replaces the released stub (e.g. a filled file)."""
    ex = src.exercise
    cells = [
        markdown_cell(intro_markdown(src), "intro"),
        code_cell(exercise_cell_source(ex, src.stub if code is None else code), "exercise", {"tags": [EXERCISE_TAG]}),
        markdown_cell(
            "## Public tests\n\nEach cell checks one case; a failing cell says what was expected, "
            "in which unit, and the likely mistake.",
            "public-tests",
        ),
    ]
    cells += [
        code_cell(public_check_code(src, keys[0]), cell_id_for(f"{ex.id}-{keys[0]}")) for keys in cell_groups(src)
    ]
    return new_notebook(cells, {"a2": {"exercise": ex.id, "module": ex.module}})


def write_notebook(notebook: dict[str, Any], path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(notebook, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    return path


def write_student_notebooks(dest: Path, root: Path = ROOT) -> list[Path]:
    """`dest/exNN_<name>.ipynb` for every available exercise; returns the paths written."""
    return [
        write_notebook(student_notebook(load_sources(ex.id, root, with_hidden=False)), dest / f"{ex.module}.ipynb")
        for ex in available_exercises(root)
    ]


def fill_exercise_cell(notebook: dict[str, Any], ex: Exercise, code: str) -> dict[str, Any]:
    """A copy of `notebook` whose exercise cell (tagged `a2-exercise`) holds `code`: a filled submission."""
    filled = json.loads(json.dumps(notebook))
    cells = [c for c in filled["cells"] if EXERCISE_TAG in cell_tags(c)]
    if len(cells) != 1:
        raise NotebookError(f"expected one cell tagged {EXERCISE_TAG}, found {len(cells)}")
    cells[0]["source"] = exercise_cell_source(ex, code)
    cells[0]["outputs"] = []
    return filled


# ---------------------------------------------------------------------------------------------
# Reading a submission back.


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m autograder.exports.notebooks", description="write one student notebook per exercise"
    )
    parser.add_argument("dest", type=Path, help="folder to write exNN_<name>.ipynb into")
    args = parser.parse_args(argv)
    for path in write_student_notebooks(args.dest):
        print(path)
    return 0


if __name__ == "__main__":
    import sys

    sys.exit(main(sys.argv[1:]))
