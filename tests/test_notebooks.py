"""Student notebooks: built from the exercise sources, their test cells judge like the grader, and
`extract_code` reads a notebook submission back into exactly the exercise file it holds.

Parametrised over every exercise (each has a solution and public cases; a missing one fails). Everything here runs in-process
(no Jupyter kernel): the cells' code is executed with `exec`, the way a kernel would run it.
"""

from __future__ import annotations

import copy
import json
import math
from pathlib import Path
from typing import Any

import nbformat
import numpy as np
import pytest
import torch

from autograder.core.manifest import BY_ID
from autograder.exports import notebooks as nb
from autograder.runtime import notebook_code
from hetero.checks import Gen, encode

EXERCISES = list(BY_ID)


def test_every_exercise_has_notebook_sources():
    assert [ex.id for ex in nb.available_exercises()] == EXERCISES, "a solution or its public cases is missing"


@pytest.fixture(scope="module", params=EXERCISES)
def sources(request) -> nb.ExerciseSources:
    return nb.load_sources(request.param, with_hidden=False)


def _run_cells(code_cells: list[str], exercise_code: str) -> list[tuple[bool, str]]:
    """Run the exercise code, then each test cell, in one namespace (a notebook kernel's globals)."""
    namespace: dict[str, Any] = {"__name__": "__main__"}
    exec(compile(exercise_code, "<exercise cell>", "exec"), namespace)
    results = []
    for code in code_cells:
        try:
            exec(compile(code, "<test cell>", "exec"), namespace)
            results.append((True, ""))
        except AssertionError as exc:
            results.append((False, str(exc)))
    return results


def _test_cells(notebook: dict) -> list[str]:
    return [
        c["source"]
        for c in notebook["cells"]
        if c["cell_type"] == "code" and notebook_code.EXERCISE_TAG not in c["metadata"].get("tags", [])
    ]


# ---------------------------------------------------------------------------------------------
# Building


def test_student_notebook_is_valid_and_complete(sources):
    note = nb.student_notebook(sources)
    nbformat.validate(nbformat.from_dict(note))
    ex = sources.exercise
    intro = note["cells"][0]["source"]
    assert ex.title in intro and ex.lecture in intro, "the intro cell must name the exercise title and lecture section"
    assert sources.docstring.splitlines()[0] in intro, "the intro cell must quote the module docstring"
    exercise_cells = [c for c in note["cells"] if notebook_code.EXERCISE_TAG in c["metadata"].get("tags", [])]
    assert len(exercise_cells) == 1, f"expected exactly one cell tagged {notebook_code.EXERCISE_TAG}"
    assert exercise_cells[0]["source"] == nb.exercise_cell_source(ex, sources.stub)
    assert "# BEGIN SOLUTION" not in exercise_cells[0]["source"], "the student notebook leaks the solution"
    assert len(_test_cells(note)) == len(nb.cell_groups(sources)), "expected one test cell per exercise function"
    assert note["metadata"]["kernelspec"]["name"] == "python3", "Otter and nbgrader run the kernel named python3"


def test_public_cells_pass_on_the_solution_and_fail_on_the_stub(sources):
    note = nb.student_notebook(sources)
    solved = _run_cells(_test_cells(note), sources.solution)
    failing = [msg for ok, msg in solved if not ok]
    assert not failing, f"public test cells fail on the answer key: {failing[:2]}"
    stubbed = _run_cells(_test_cells(note), sources.stub)
    passing = [keys for keys, (ok, _) in zip(nb.cell_groups(sources), stubbed, strict=True) if ok]
    assert not passing, f"public test cells pass on the unfilled stub (they test nothing): {passing}"
    assert all("not implemented" in msg for _, msg in stubbed), "a stub's failure should say 'not implemented'"


def test_write_student_notebooks(tmp_path):
    paths = nb.write_student_notebooks(tmp_path)
    assert sorted(p.name for p in paths) == sorted(f"{BY_ID[e].module}.ipynb" for e in EXERCISES)
    for path in paths:
        nbformat.validate(nbformat.read(path, as_version=4))


@pytest.mark.parametrize(
    "value",
    [
        1.5,
        float("inf"),
        float("-inf"),
        0.1 + 0.2,
        -0.0,
        7,
        True,
        None,
        "GB",
        (3,),
        (1.0, "x"),
        [],
        {"a": [1, (2.0, None)], "b": {"c": 1e-300}},
        Gen("scenario", {"seed": 3, "sizes": (1, 2)}),
        np.arange(6, dtype=np.float32).reshape(2, 3) / 7,
        np.array([1, -2], dtype=np.int64),
        np.float64(2.5),
        torch.linspace(0, 1, 5, dtype=torch.float32),
        torch.tensor([[1, 2]], dtype=torch.int64),
    ],
)
def test_value_source_round_trips_exactly(value):
    text = nb.value_source(value)
    back = eval(text, {"Gen": Gen, "np": np, "torch": torch})  # the names a test cell imports
    assert encode(back) == encode(value), f"{value!r} written as {text} reads back as {back!r}"


def test_value_source_nan():
    assert math.isnan(eval(nb.value_source(float("nan"))))


def test_case_literals_round_trip(sources):
    namespace = {"Gen": Gen, "np": np, "torch": torch}
    exec("from hetero.checks import Case", namespace)
    for case in sources.public:
        back = eval(nb.case_source(case), namespace)
        assert back.__dict__.keys() == case.__dict__.keys()
        for field in case.__dict__:
            assert encode(getattr(back, field)) == encode(getattr(case, field)), f"{case.id}: field {field} changes"


def test_case_shares_follow_the_manifest(sources):
    ex = sources.exercise
    full = nb.load_sources(ex.id)
    cents = full.cents
    assert sum(cents[c.id] for c in full.public) == round(ex.points * ex.public_share * 100), (
        f"public cases of {ex.id} should carry {ex.points * ex.public_share} points"
    )
    assert sum(cents.values()) == round(ex.points * 100), f"{ex.id} cases should total {ex.points} points"
    heavy = max(full.public, key=lambda c: c.points)
    light = min(full.public, key=lambda c: c.points)
    # shares are whole hundredths: the ratio may miss the weights' by one hundredth on the lighter case
    assert abs(cents[heavy.id] - cents[light.id] * heavy.points / light.points) <= heavy.points / light.points, (
        "points inside a share must be proportional to Case.points"
    )


# ---------------------------------------------------------------------------------------------
# Reading a submission back


def _write(tmp_path: Path, note: dict, name: str = "sub.ipynb") -> Path:
    path = tmp_path / name
    path.write_text(json.dumps(note), encoding="utf-8")
    return path


def test_extract_code_returns_the_file_exactly(sources, tmp_path):
    for code in (sources.solution, sources.stub):
        path = _write(tmp_path, nb.student_notebook(sources, code=code))
        assert notebook_code.extract_code(path, sources.exercise.id) == code.rstrip("\n") + "\n"
    assert notebook_code.notebook_exercise_id(path) == sources.exercise.id


def test_extract_code_ignores_outputs_markdown_and_other_cells(sources, tmp_path):
    note = nb.student_notebook(sources, code=sources.solution)
    for cell in note["cells"]:
        if cell["cell_type"] == "code":
            cell["outputs"] = [{"output_type": "stream", "name": "stdout", "text": "printed\n"}]
            cell["execution_count"] = 3
            cell["source"] = cell["source"].splitlines(keepends=True)  # Jupyter stores lists of lines
    note["cells"].insert(0, nb.markdown_cell("my notes", "notes"))
    note["cells"].append(nb.code_cell("scratch = 1 + 1\nprint(scratch)", "scratch"))
    exercise = next(c for c in note["cells"] if notebook_code.EXERCISE_TAG in c["metadata"].get("tags", []))
    exercise["source"].insert(1, "%load_ext autoreload\n")
    code = notebook_code.extract_code(_write(tmp_path, note), sources.exercise.id)
    assert "scratch" not in code and "printed" not in code and "my notes" not in code
    assert "# (notebook only) %load_ext autoreload" in code, "top-level magics must become comments"
    assert code.replace("# (notebook only) %load_ext autoreload\n", "") == sources.solution.rstrip("\n") + "\n"


STRING_WITH_MAGIC_LINES = '''TEMPLATE = """
%.2f USD per GB
!not a shell command
%%not a cell magic either
"""
'''


def _exercise_cell_code(tmp_path, cell: str) -> str:
    """The code `extract_code` reads from a notebook whose one tagged exercise cell is `cell`."""
    note = {
        "nbformat": 4,
        "nbformat_minor": 5,
        "metadata": {},
        "cells": [{"cell_type": "code", "metadata": {"tags": [notebook_code.EXERCISE_TAG]}, "source": cell}],
    }
    return notebook_code.extract_code(_write(tmp_path, note), "ex01")


def test_extract_code_comments_magics_but_not_string_lines_that_look_like_them(tmp_path):
    # IPython (Otter's and nbgrader's kernel) runs `%`/`!` lines as magics only where a statement begins:
    # the lines of a triple-quoted string, a bracket or a backslash continuation are code, kept exactly.
    cell = (
        "# a2-exercise ex01\n%matplotlib inline\n!pip list\n"
        + STRING_WITH_MAGIC_LINES
        + "!echo don't\nMOD = (7\n% 4)\nREST = 9 \\\n% 5\n%time TEMPLATE % 1.0\n"
    )
    code = _exercise_cell_code(tmp_path, cell)
    commented = [line for line in code.splitlines() if line.startswith("# (notebook only) ")]
    assert commented == [
        "# (notebook only) %matplotlib inline",
        "# (notebook only) !pip list",
        "# (notebook only) !echo don't",
        "# (notebook only) %time TEMPLATE % 1.0",
    ], code
    assert STRING_WITH_MAGIC_LINES in code, f"the string's lines must survive exactly: {code}"
    namespace: dict[str, Any] = {}
    exec(code, namespace)
    assert namespace["TEMPLATE"] == "\n%.2f USD per GB\n!not a shell command\n%%not a cell magic either\n"
    assert (namespace["MOD"], namespace["REST"]) == (3, 4), "a % continuing an expression is code"


def test_an_indented_magic_is_a_magic_and_its_block_stays_a_block(tmp_path):
    # IPython also runs an indented `!`/`%` line that begins a statement (Colab's `except ImportError:` over
    # `    !pip install x`); as a bare comment its block would be empty, a SyntaxError costing the exercise.
    cell = "# a2-exercise ex01\ntry:\n    import no_such_module_a2\nexcept ImportError:\n    !pip install x\nOK = 1\n"
    code = _exercise_cell_code(tmp_path, cell)
    assert "    pass  # (notebook only) !pip install x" in code, code
    namespace: dict[str, Any] = {}
    exec(code, namespace)
    assert namespace["OK"] == 1


def test_extract_code_falls_back_to_the_marker_when_tags_are_lost(sources, tmp_path):
    note = nb.student_notebook(sources, code=sources.solution)
    for cell in note["cells"]:
        cell["metadata"].pop("tags", None)
    assert notebook_code.extract_code(_write(tmp_path, note)) == sources.solution.rstrip("\n") + "\n"


def test_extract_code_joins_several_exercise_cells_in_order(sources, tmp_path):
    note = nb.student_notebook(sources, code=sources.solution)
    extra = nb.code_cell("HELPER_CONSTANT = 3", "helper", {"tags": [notebook_code.EXERCISE_TAG]})
    note["cells"].append(extra)
    code = notebook_code.extract_code(_write(tmp_path, note))
    assert code.endswith("\n\nHELPER_CONSTANT = 3\n"), "tagged cells are joined in notebook order by a blank line"


@pytest.mark.parametrize(
    "damage, message",
    [
        (lambda n: "{not json", "invalid JSON"),
        (lambda n: {**n, "nbformat": 3}, "format 3"),
        (lambda n: {"metadata": {}}, "no list of cells"),
        (
            lambda n: {
                **n,
                "cells": [c for c in n["cells"] if notebook_code.EXERCISE_TAG not in c["metadata"].get("tags", [])],
            },
            "no exercise cell",
        ),
    ],
)
def test_malformed_notebooks_raise_a_clear_error(sources, tmp_path, damage, message):
    note = damage(copy.deepcopy(nb.student_notebook(sources)))
    path = tmp_path / "bad.ipynb"
    path.write_text(note if isinstance(note, str) else json.dumps(note), encoding="utf-8")
    with pytest.raises(notebook_code.NotebookError, match=message):
        notebook_code.extract_code(path)


def test_a_notebook_of_another_exercise_is_refused(sources, tmp_path):
    other = next(e for e in BY_ID if e != sources.exercise.id)
    path = _write(tmp_path, nb.student_notebook(sources))
    with pytest.raises(notebook_code.NotebookError, match=f"graded as {other}"):
        notebook_code.extract_code(path, other)


def test_binary_file_is_refused(tmp_path):
    path = tmp_path / "x.ipynb"
    path.write_bytes(b"\xff\xfe\x00binary")
    with pytest.raises(notebook_code.NotebookError, match="not UTF-8"):
        notebook_code.extract_code(path)
