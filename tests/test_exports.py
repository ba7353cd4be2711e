"""nbgrader and Otter exports: structure, points, verdicts equal to the native grader's, and (slow) the
real tools grading solutions, the unfilled release and wrong fixtures to the same points as
`python -m autograder grade` on the same code.

The fast tests run every exported test cell in-process (exec, as a kernel would) and compare each cell's
pass/fail and message with `hetero.checks.judge` on the same case, which is what the native grader
computes. The slow tests (`@pytest.mark.slow`, still in the default run) drive `nbgrader
generate_assignment` and `otter assign` for real, then grade through the sandboxed route commands' own
functions (`nbgrader-autograde`: `nbgrader autograde` of each student in the sandbox; `otter-grade`: each
`otter run` in the sandbox).
"""

from __future__ import annotations

import ast
import contextlib
import csv
import io
import json
import math
import shutil
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import nbformat
import pytest

from autograder.authoring.wrong_fixtures import for_exercise, materialise, source
from autograder.core.manifest import BY_ID, ROOT
from autograder.exports import export_nbgrader, export_otter
from autograder.exports import notebooks as nb
from autograder.fixtures import nothing
from autograder.runtime import notebook_code
from hetero.checks import judge, run_call
from hetero.impl import load_module_from_path as load_file_module

GRADABLE = list(BY_ID)


def test_every_exercise_is_gradable():
    assert [ex.id for ex in nb.gradable_exercises()] == GRADABLE, "hidden cases or stored expected values missing"


VENV_BIN = Path(sys.executable).parent
# Points are exact hundredths everywhere; the tools add them as floats, so a total may carry ~1e-13 of float
# residue, which is what this tolerance allows (a differing verdict moves a total by at least 0.01).
POINTS_TOL = 1e-9


@pytest.fixture(scope="module", params=GRADABLE)
def sources(request) -> nb.ExerciseSources:
    return nb.load_sources(request.param)


# Exercises driven through a simulator (manifest time limit above the default 20 s) take tens of
# seconds to run every case for every implementation; their verdict checks are marked slow.
VERDICT_PARAMS = [pytest.param(e, marks=pytest.mark.slow) if BY_ID[e].timeout_s > 20 else e for e in GRADABLE]


def _namespace(exercise_code: str) -> dict[str, Any]:
    namespace: dict[str, Any] = {"__name__": "__main__"}
    exec(compile(exercise_code, "<exercise cell>", "exec"), namespace)
    return namespace


def _nbgrader_cents(exercise_code: str, cells: list[str]) -> int:
    """Run grade cells as nbgrader does (one kernel namespace); the last expression is the partial credit."""
    namespace = _namespace(exercise_code)
    cents = 0
    for code in cells:
        *body, last = code.splitlines()
        with contextlib.redirect_stdout(io.StringIO()):
            exec(compile("\n".join(body), "<grade cell>", "exec"), namespace)
        cents += round(eval(last, namespace) * 100)
    return cents


def _otter_cents(exercise_code: str, tests: list[str]) -> int:
    """Run Otter test cells in order in one namespace; a test scores its points when no assert fails."""
    namespace = _namespace(exercise_code)
    cents = 0
    for test in tests:
        config, code = _strip_test_config(test)
        try:
            with contextlib.redirect_stdout(io.StringIO()):
                exec(compile(code, "<test cell>", "exec"), namespace)
        except AssertionError:
            continue
        cents += round(float(config["points"]) * 100)
    return cents


def _native_cents(src: nb.ExerciseSources, path: Path) -> int:
    """What the native grader pays on this code (its judge and scoring, without the sandbox)."""
    from autograder.core import scoring

    module = load_file_module(path, f"_a2_export_check_{path.parent.name}_{src.exercise.id}")
    passed = {c.id: judge(c, run_call(c, module)).passed for c in src.public}
    for case in src.hidden:
        stored = src.expected[case.id]
        passed[case.id] = judge(case, run_call(case, module), stored.get("expect"), stored.get("mistakes")).passed
    rules = {k: scoring.rule_from_data(v) for k, v in src.rules.items()}
    live = scoring.live_groups(
        rules,
        src.hidden,
        {k: v["class"] for k, v in src.expected.items()},
        passed,
        {k: bool(v.get("echo")) for k, v in src.expected.items()},
    )
    pays = scoring.paid(src.public + src.hidden, passed, live)
    return sum(c for cid, c in src.cents.items() if pays[cid])


def _implementations(src: nb.ExerciseSources, tmp_path: Path) -> list[Path]:
    ex = src.exercise
    stub = tmp_path / "release" / ex.filename
    stub.parent.mkdir(parents=True, exist_ok=True)
    stub.write_text(src.stub, encoding="utf-8")
    constant = nothing.build("public_table_raise", tmp_path / "nothing") / ex.filename
    wrong = [materialise(f.name, tmp_path / "wrong" / f.name) for f in for_exercise(ex.id)]
    return [ROOT / "solutions" / ex.filename, stub, constant] + wrong


def _check_same_points(src: nb.ExerciseSources, run, cells: list[str], tmp_path: Path) -> None:
    for path in _implementations(src, tmp_path):
        got, want = run(path.read_text(encoding="utf-8"), cells), _native_cents(src, path)
        assert got == want, (
            f"{src.exercise.id} with {path}: the exported cells pay {got / 100:.2f} points, "
            f"the native grader {want / 100:.2f} on the same code"
        )


# ---------------------------------------------------------------------------------------------
# nbgrader


def _nbgrader_cells(note: dict) -> list[dict]:
    return [c for c in note["cells"] if "nbgrader" in c["metadata"]]


def test_nbgrader_notebook_structure_and_points(sources):
    note = export_nbgrader.source_notebook(sources)
    nbformat.validate(nbformat.from_dict(note))
    ex = sources.exercise
    cells = _nbgrader_cells(note)
    assert len(cells) == len(note["cells"]), "every cell carries nbgrader metadata (markers alone fail)"
    assert all(c["metadata"]["nbgrader"]["schema_version"] == 3 for c in cells), [
        c["metadata"]["nbgrader"] for c in cells if c["metadata"]["nbgrader"]["schema_version"] != 3
    ][:3]
    ids = [c["metadata"]["nbgrader"]["grade_id"] for c in cells]
    assert len(set(ids)) == len(ids), "nbgrader grade_ids must be unique"
    solution = [c for c in cells if c["metadata"]["nbgrader"]["solution"]]
    assert len(solution) == 1 and notebook_code.EXERCISE_TAG in solution[0]["metadata"]["tags"]
    blocks = sources.solution.count("# BEGIN SOLUTION")
    assert solution[0]["source"].count("### BEGIN SOLUTION") == blocks, (
        "each solution block needs nbgrader's ### marker"
    )
    assert solution[0]["source"].count("### END SOLUTION") == blocks
    grades = [c for c in cells if c["metadata"]["nbgrader"]["grade"]]
    assert len(grades) == len(nb.cell_groups(sources)), "expected one grade cell per exercise function"
    for cell in grades:
        visible = cell["source"].split(export_nbgrader.BEGIN_HIDDEN)[0]
        assert "Entry(" in visible, f"{cell['id']}: every grade cell shows its public cases (no empty hidden cell)"
        assert "json.loads" not in visible, "hidden values must sit between the hidden-test markers"
    cents = sum(round(c["metadata"]["nbgrader"]["points"] * 100) for c in grades)
    assert cents == round(ex.points * 100), f"{ex.id} grade cells total {cents / 100}, manifest says {ex.points}"
    inexact = [
        c["metadata"]["nbgrader"]
        for c in grades
        if round(c["metadata"]["nbgrader"]["points"], 2) != c["metadata"]["nbgrader"]["points"]
    ]
    assert not inexact, f"grade cells whose points are not exact hundredths: {inexact[:3]}"


@pytest.mark.parametrize("ex_id", VERDICT_PARAMS)
def test_nbgrader_cells_pay_like_the_native_grader(ex_id, tmp_path):
    sources = nb.load_sources(ex_id)
    note = export_nbgrader.source_notebook(sources)
    cells = [c["source"] for c in _nbgrader_cells(note) if c["metadata"]["nbgrader"]["grade"]]
    _check_same_points(sources, _nbgrader_cents, cells, tmp_path)


def test_export_nbgrader_cli(tmp_path):
    from autograder.__main__ import main

    assert main(["export-nbgrader", str(tmp_path / "course")]) == 0
    assert "c.CourseDirectory.course_id" in (tmp_path / "course" / "nbgrader_config.py").read_text()
    written = sorted(p.name for p in (tmp_path / "course" / "source" / "a2").glob("*.ipynb"))
    assert written == sorted(f"{BY_ID[e].module}.ipynb" for e in GRADABLE)


def test_export_refuses_unknown_exercises(tmp_path, capsys):
    for export in (export_nbgrader, export_otter):
        with pytest.raises(SystemExit) as exc:
            export.main([str(tmp_path), "--exercises", "ex99"])
        assert exc.value.code == 2 and "unknown exercise ids: ex99" in capsys.readouterr().err


NBGRADER_CSV = (
    "assignment,duedate,timestamp,student_id,last_name,first_name,email,raw_score,late_submission_penalty,score,"
    "max_score\n"
    "a2,,2026-11-30 10:00:00,key,Key,Answer,,100.00000000000001,0.0,100.00000000000001,100.00000000000001\n"
    "a2,,,ghost,,,,0.0,0.0,0.0,100.00000000000001\n"
)


def test_grade_cell_points_are_written_in_exact_hundredths():
    """Each grade cell's points is the nearest float to a hundredth; only nbgrader's own float sum of
    them (SQL, over the whole assignment) shows 100.00000000000001, which the export rounds."""
    cells = []
    for ex_id in GRADABLE:
        note = export_nbgrader.source_notebook(nb.load_sources(ex_id))
        cells += [
            c["metadata"]["nbgrader"]["points"] for c in _nbgrader_cells(note) if c["metadata"]["nbgrader"]["grade"]
        ]
    assert all(p == round(p, 2) for p in cells) and round(sum(cells), 2) == sum(BY_ID[e].points for e in GRADABLE)
    noisy = 0.0
    for p in cells:  # what nbgrader's SUM over every grade cell of the assignment computes
        noisy += p
    rounded = export_nbgrader.round_grades_csv(NBGRADER_CSV.replace("100.00000000000001", repr(noisy)))
    assert "100.0000" not in rounded and rounded.splitlines()[1].endswith(",100.0,0.0,100.0,100.0"), rounded


def test_round_grades_csv_rounds_only_the_score_columns():
    rows = export_nbgrader.round_grades_csv(NBGRADER_CSV).splitlines()
    assert rows[0] == NBGRADER_CSV.splitlines()[0], "header kept"
    assert rows[1] == "a2,,2026-11-30 10:00:00,key,Key,Answer,,100.0,0.0,100.0,100.0", rows[1]
    assert rows[2] == "a2,,,ghost,,,,0.0,0.0,0.0,100.0", rows[2]
    odd = "student_id,score,note\n007,2.675000001,=1+1\nx,n/a,\n"
    assert export_nbgrader.round_grades_csv(odd) == "student_id,score,note\n007,2.68,=1+1\nx,n/a,\n"
    assert export_nbgrader.round_grades_csv("") == ""


def test_nbgrader_config_uses_the_rounding_exporter(tmp_path, monkeypatch):
    """The written nbgrader_config.py selects RoundedCsvExportPlugin; the plugin writes nbgrader's CSV
    with rounded scores (a stand-in gradebook: no nbgrader run)."""
    from types import SimpleNamespace

    from traitlets.config import Config

    from autograder.exports.nbgrader_export import RoundedCsvExportPlugin

    config = Config()
    exec(export_nbgrader.config_text([BY_ID["ex01"]]), {"c": config, "get_config": lambda: config})  # as traitlets does
    assert config.ExportApp.plugin_class is RoundedCsvExportPlugin
    noisy = 100.00000000000001  # what nbgrader's SUM over the answer key's grade cells gives
    assert noisy != 100
    gradebook = SimpleNamespace(
        assignments=[SimpleNamespace(name="a2", duedate=None, max_score=noisy)],
        students=[SimpleNamespace(id="key", first_name="Answer", last_name="Key", email=None)],
        find_submission=lambda a, s: SimpleNamespace(score=noisy, late_submission_penalty=0.0, timestamp="t"),
    )
    monkeypatch.chdir(tmp_path)
    RoundedCsvExportPlugin().export(gradebook)
    lines = (tmp_path / "grades.csv").read_text().splitlines()
    assert lines[1] == "a2,,t,key,Key,Answer,,100.0,0.0,100.0,100.0", lines


def test_autograded_points_are_rounded(tmp_path, monkeypatch):
    from types import SimpleNamespace

    import nbgrader.api

    notebooks = [SimpleNamespace(name=BY_ID["ex01"].module, score=0.7 + 4.4 + 0.9)]  # 6.000000000000001

    class FakeGradebook:
        students = [SimpleNamespace(id="key")]

        def __init__(self, url: str):
            assert url.endswith("gradebook.db")

        def __enter__(self):
            return self

        def __exit__(self, *exc):
            return None

        def find_submission(self, assignment, student):
            return SimpleNamespace(notebooks=notebooks)

    assert notebooks[0].score != 6.0
    monkeypatch.setattr(nbgrader.api, "Gradebook", FakeGradebook)
    assert export_nbgrader.autograded_points(tmp_path) == {"key": {"ex01": 6.0}}


# ---------------------------------------------------------------------------------------------
# Otter


def _otter_tests(note: dict) -> list[str]:
    sources = [c["source"] for c in note["cells"]]
    begin, end = sources.index("# BEGIN TESTS"), sources.index("# END TESTS")
    return sources[begin + 1 : end]


def _strip_test_config(source: str) -> tuple[dict[str, Any], str]:
    lines = source.splitlines()
    assert lines[0] == '""" # BEGIN TEST CONFIG', "each Otter test cell starts with its TEST CONFIG block"
    end = lines.index('""" # END TEST CONFIG')
    config = dict(line.split(": ", 1) for line in lines[1:end])
    return config, "\n".join(lines[end + 1 :])


def test_otter_master_structure_and_points(sources):
    note = export_otter.master_notebook(sources)
    nbformat.validate(nbformat.from_dict(note))
    ex = sources.exercise
    first = note["cells"][0]
    assert first["cell_type"] == "raw" and first["source"].startswith("# ASSIGNMENT CONFIG")
    raw = [c["source"].splitlines()[0] for c in note["cells"] if c["cell_type"] == "raw"]
    assert raw == [
        "# ASSIGNMENT CONFIG",
        "# BEGIN QUESTION",
        "# BEGIN SOLUTION",
        "# END SOLUTION",
        "# BEGIN TESTS",
        "# END TESTS",
        "# END QUESTION",
    ]
    tests = _otter_tests(note)
    assert len(tests) == len(sources.public) + len(sources.hidden)
    configs = [_strip_test_config(t)[0] for t in tests]
    assert [c.get("hidden") == "true" for c in configs] == [True] * len(sources.hidden) + [False] * len(
        sources.public
    ), "hidden tests come first: they score each function before the public tests ask whether they were paid"
    cents = sum(round(float(c["points"]) * 100) for c in configs)
    assert cents == round(ex.points * 100), f"{ex.id} tests total {cents / 100}, manifest says {ex.points}"
    for test in tests:
        body = ast.parse(_strip_test_config(test)[1]).body
        bare = [ast.unparse(s) for s in body if isinstance(s, ast.Expr)]
        assert not bare, f"bare expressions become doctests that need saved outputs: {bare}"


@pytest.mark.parametrize("ex_id", VERDICT_PARAMS)
def test_otter_tests_pay_like_the_native_grader(ex_id, tmp_path):
    sources = nb.load_sources(ex_id)
    _check_same_points(sources, _otter_cents, _otter_tests(export_otter.master_notebook(sources)), tmp_path)


def test_export_otter_cli(tmp_path):
    from autograder.__main__ import main

    assert main(["export-otter", str(tmp_path), "--package", "llmsys-a2-hetero @ file:///srv/a2"]) == 0
    assert (tmp_path / "requirements.txt").read_text() == "llmsys-a2-hetero @ file:///srv/a2\n"
    for ex_id in GRADABLE:
        module = BY_ID[ex_id].module
        note = json.loads((tmp_path / module / f"{module}.ipynb").read_text())
        assert "requirements: ../requirements.txt" in note["cells"][0]["source"]


# ---------------------------------------------------------------------------------------------
# The real tools against the native grader (slow)


def _submissions() -> dict[str, dict[str, Any]]:
    """{submission kind: {exercise id: code, or None for the tool's own unfilled release}}.

    "fixtures" holds one wrong fixture for each of two exercises (two fixtures of one exercise would
    need two submissions; a second kind is added only when a single exercise has fixtures)."""
    kinds: dict[str, dict[str, Any]] = {
        "solutions": {e: (ROOT / "solutions" / BY_ID[e].filename).read_text(encoding="utf-8") for e in GRADABLE},
        "release": {e: None for e in GRADABLE},
        "nothing": {e: (nothing.HERE / "public_table_raise.py").read_text(encoding="utf-8") for e in GRADABLE[:2]},
    }
    firsts = [(e, for_exercise(e)) for e in GRADABLE if for_exercise(e)]
    if len(firsts) >= 2:
        kinds["fixtures"] = {e: source(found[0].name) for e, found in firsts[:2]}
    else:
        for number, fixture in enumerate(firsts[0][1][:2] if firsts else []):
            kinds[f"fixtures-{number}"] = {firsts[0][0]: source(fixture.name)}
    assert sum(len(v) for k, v in kinds.items() if k.startswith("fixtures")) >= 2, "need two wrong fixtures"
    return kinds


_NATIVE_CACHE: dict[tuple, dict[str, float]] = {}


def _native_points(notebooks: dict[str, Path], workdir: Path) -> dict[str, float]:
    """`python -m autograder grade` on a folder holding the same notebooks (the grader extracts their code
    with `extract_code` and grades it as the .py file); points per exercise. Identical code (the
    solutions, the fixtures) is graded once for both tools."""
    from autograder.batch.gradebook import exercise_scores

    key = tuple(sorted((ex_id, notebook_code.extract_code(path)) for ex_id, path in notebooks.items()))
    if key in _NATIVE_CACHE:
        return _NATIVE_CACHE[key]

    folder = workdir / "submission"
    folder.mkdir(parents=True)
    for ex_id, path in notebooks.items():
        shutil.copyfile(path, folder / f"{BY_ID[ex_id].module}.ipynb")
    out = workdir / "results.json"
    subprocess.run(
        [sys.executable, "-m", "autograder", "grade", str(folder), "--out", str(out)],
        check=True,
        capture_output=True,
        text=True,
        timeout=900,
        cwd=ROOT,
    )
    scores = exercise_scores(json.loads(out.read_text(encoding="utf-8")))
    _NATIVE_CACHE[key] = {ex_id: scores[ex_id][0] for ex_id in notebooks}
    return _NATIVE_CACHE[key]


def _compare(
    tool: str,
    tool_points: dict[str, dict[str, float]],
    native: dict[str, dict[str, float]],
    kinds: dict[str, dict[str, Any]],
) -> None:
    for kind, exercises in kinds.items():
        for ex_id in exercises:
            got, want = tool_points[kind].get(ex_id, 0.0), native[kind][ex_id]
            assert round(got, 2) == round(want, 2) and abs(got - round(got, 2)) < 1e-9, (
                f"{tool} gives {got:.4f} points for {ex_id} on the '{kind}' submission, the native grader "
                f"{want:.4f} on the same code (expected equal, in exact hundredths)"
            )
    # the comparison must not be vacuous: full marks, zero, and a fixture below full marks
    for ex_id in kinds["solutions"]:
        assert math.isclose(native["solutions"][ex_id], BY_ID[ex_id].points, abs_tol=POINTS_TOL), (
            f"the answer key should earn all {BY_ID[ex_id].points} points of {ex_id}"
        )
        assert native["release"][ex_id] <= POINTS_TOL, f"the unfilled release should earn 0 points on {ex_id}"
    for ex_id in kinds["nothing"]:
        assert native["nothing"][ex_id] == 0 and tool_points["nothing"].get(ex_id, 0.0) == 0, (
            f"{tool}: a submission that computes nothing must earn 0 on {ex_id}"
        )
    for kind, exercises in kinds.items():
        for ex_id in exercises if kind.startswith("fixtures") else ():
            assert native[kind][ex_id] < BY_ID[ex_id].points - POINTS_TOL, f"the {kind} of {ex_id} should lose points"


@pytest.mark.slow
@pytest.mark.proof("real_exports")
def test_nbgrader_autograde_matches_native_grader(tmp_path):
    """`nbgrader-autograde`'s sandboxed autograde (each submission kind a student) gives the native grader's
    points; its feedback, generated from a student's collected gradebook copy, shows no hidden test."""
    from autograder.batch import nbgrader_grade

    course = tmp_path / "course"
    export_nbgrader.export(course)
    export_nbgrader.run_nbgrader(course, ["generate_assignment", "a2", "--force"], timeout_s=600)
    kinds = _submissions()
    submitted: dict[str, dict[str, Path]] = {}
    for kind, exercises in kinds.items():
        submitted[kind] = {}
        for ex_id, code in exercises.items():
            ex = BY_ID[ex_id]
            release = json.loads((course / "release" / "a2" / f"{ex.module}.ipynb").read_text(encoding="utf-8"))
            note = release if code is None else nb.fill_exercise_cell(release, ex, code)
            submitted[kind][ex_id] = nb.write_notebook(note, course / "submitted" / kind / "a2" / f"{ex.module}.ipynb")
    out = tmp_path / "out"
    table = nbgrader_grade.grade_course(course, "a2", out, workers=2)
    failed = {k: {e: why for e, (_, why) in row.items() if why and why != "missing"} for k, row in table.items()}
    assert not any(failed.values()), f"a sandboxed nbgrader autograde failed: {failed}"
    changed = sum(
        (out / kind / "nbgrader.log").read_text(encoding="utf-8").count("Attribute 'checksum' for cell")
        for kind in kinds
    )
    with_hidden = {
        ex_id: sum(
            export_nbgrader.BEGIN_HIDDEN in c["source"]
            for c in export_nbgrader.source_notebook(nb.load_sources(ex_id))["cells"]
        )
        for ex_id in GRADABLE
    }
    expected_warnings = sum(with_hidden[ex_id] for exercises in kinds.values() for ex_id in exercises)
    assert changed <= expected_warnings, (
        f"{changed} checksum warnings, more than the {expected_warnings} grade "
        "cells whose hidden tests nbgrader restores"
    )
    tool = {kind: {e: p for e, (p, _) in row.items()} for kind, row in table.items()}
    copy = out / "solutions" / "course"  # the answer key's collected course: its gradebook copy and autograded/
    export_nbgrader.run_nbgrader(copy, ["generate_feedback", "a2"], timeout_s=1800)
    feedback = list((copy / "feedback").rglob("*.html"))
    assert len(feedback) == len(GRADABLE), f"one feedback page per exercise expected, got {feedback}"
    for html in feedback:
        text = html.read_text(encoding="utf-8")
        assert "json.loads" not in text and "HIDDEN TESTS" not in text, (
            f"{html}: the feedback shows hidden tests (their inputs and expected values)"
        )
    assert tree_unchanged_by_grading(course), "the instructor's course must not be written by the sandboxed route"
    print(
        f"\nnbgrader autograde (sandboxed, {ladder_rung()}): {changed} 'checksum changed' warnings (one per grade "
        "cell holding hidden tests)"
    )
    with ThreadPoolExecutor(max_workers=2) as pool:
        native = dict(
            zip(
                submitted,
                pool.map(lambda k: _native_points(submitted[k], tmp_path / "native" / k), submitted),
                strict=True,
            )
        )
    _compare("nbgrader", tool, native, kinds)


def tree_unchanged_by_grading(course: Path) -> bool:
    """Nothing a grading writes is in the course: no autograded/ or feedback/, the gradebook without a
    submission (nbgrader's own `autograde` adds one per student)."""
    from nbgrader.api import Gradebook

    with Gradebook(f"sqlite:///{course / 'gradebook.db'}") as gradebook:
        submissions = sum(len(gradebook.assignment_submissions(a.name)) for a in gradebook.assignments)
    return not (course / "autograded").exists() and not (course / "feedback").exists() and submissions == 0


def ladder_rung() -> str:
    from autograder.runtime.sandbox import ladder

    return f"rung {ladder.current().name}"


@pytest.mark.slow
@pytest.mark.proof("real_exports")
def test_otter_run_matches_native_grader(tmp_path):
    """`otter-grade`'s sandboxed `otter run` of every notebook (each submission kind a student) gives the
    native grader's points."""
    from autograder.batch import otter_grade

    masters = tmp_path / "masters"
    export_otter.export(masters, run_tests=False)  # the solution is graded below anyway
    with ThreadPoolExecutor(max_workers=2) as pool:  # what otter_grade.assigned does, two at once
        built = dict(
            zip(
                GRADABLE,
                pool.map(
                    lambda e: export_otter.assign(
                        masters / BY_ID[e].module / f"{BY_ID[e].module}.ipynb", masters / "dist" / BY_ID[e].module
                    ),
                    GRADABLE,
                ),
                strict=True,
            )
        )
    kinds = _submissions()
    submitted: dict[str, dict[str, Path]] = {kind: {} for kind in kinds}
    for kind, exercises in kinds.items():
        for ex_id, code in exercises.items():
            ex = BY_ID[ex_id]
            student = json.loads(built[ex_id][1].read_text(encoding="utf-8"))
            note = student if code is None else nb.fill_exercise_cell(student, ex, code)
            submitted[kind][ex_id] = nb.write_notebook(note, tmp_path / "submissions" / kind / f"{ex.module}.ipynb")
    table = otter_grade.grade_class(masters, tmp_path / "submissions", tmp_path / "otter", workers=2)
    failed = {k: {e: why for e, (_, why) in row.items() if why and why != "missing"} for k, row in table.items()}
    logs = [
        (tmp_path / "otter" / k / e / "otter-error.log").read_text(encoding="utf-8")[-4000:]
        for k, row in failed.items()
        for e in row
    ]
    assert not any(failed.values()), f"a sandboxed otter run failed: {failed}\n" + "\n".join(logs)
    tool = {kind: {e: p for e, (p, _) in row.items()} for kind, row in table.items()}
    print(f"\notter run (sandboxed, {ladder_rung()}): {sum(len(r) for r in submitted.values())} notebooks")
    with ThreadPoolExecutor(max_workers=2) as pool:
        native = dict(
            zip(
                submitted,
                pool.map(lambda k: _native_points(submitted[k], tmp_path / "native" / k), submitted),
                strict=True,
            )
        )
    _compare("otter", tool, native, kinds)


def test_otter_grade_assigns_once_runs_every_notebook_and_totals(tmp_path):
    """`otter-grade` with stand-ins for `otter assign` / `otter run` (the real tools run in the
    real_exports proof): every master assigned once, every student's notebook run against its exercise's
    zip, a missing notebook and a failed run cost that exercise only, totals and CSV as stated."""
    from autograder.batch import crosscheck, otter_grade

    masters = tmp_path / "masters"
    ids = [ex for ex in GRADABLE][:2]
    for ex_id in ids:
        ex = BY_ID[ex_id]
        (masters / ex.module).mkdir(parents=True)
        (masters / ex.module / f"{ex.module}.ipynb").write_text("{}", encoding="utf-8")
    assigned: list[str] = []

    def fake_assign(master: Path, out: Path) -> tuple[Path, Path]:
        assigned.append(master.stem)
        (out / "autograder").mkdir(parents=True)
        zip_path = out / "autograder" / f"{master.stem}-autograder_1.zip"
        zip_path.write_bytes(b"zip")
        return zip_path, out / "student" / master.name

    def fake_run(zip_path: Path, notebook: Path, out: Path, timeout_s: float, memory_mib: int) -> dict[str, float]:
        assert zip_path.name.startswith(notebook.stem), "each notebook runs against its own exercise's zip"
        assert timeout_s > 0
        if "crash" in notebook.read_text(encoding="utf-8"):
            raise RuntimeError("kernel died")
        return {notebook.stem[:4]: float(notebook.read_text(encoding="utf-8"))}

    subs = tmp_path / "subs"
    first, second = (BY_ID[e].module for e in ids)
    for student, files in {
        "alice": {first: "1.5", second: "2.25"},
        "bob": {first: "crash"},
        "=cmd": {second: "3"},
    }.items():
        (subs / student).mkdir(parents=True)
        for module, text in files.items():
            (subs / student / f"{module}.ipynb").write_text(text, encoding="utf-8")
    (subs / "eve").mkdir()  # a link in place of her notebook (to any file of this machine) is not followed
    (subs / "eve" / f"{first}.ipynb").symlink_to(subs / "alice" / f"{first}.ipynb")
    (subs / "linked").symlink_to(subs / "alice", target_is_directory=True)  # nor a student folder that is a link
    table = otter_grade.grade_class(masters, subs, tmp_path / "out", 2, run=fake_run, assign=fake_assign)
    assert table["eve"][ids[0]] == (0.0, "a link, not a file: not followed") and "linked" not in table, table
    assert sorted(assigned) == sorted([first, second])
    assert table["alice"] == {ids[0]: (1.5, ""), ids[1]: (2.25, "")}
    assert table["bob"][ids[0]][0] == 0.0 and table["bob"][ids[0]][1].startswith(
        "otter run failed: RuntimeError: kernel died"
    )
    assert (tmp_path / "out" / "bob" / ids[0] / "otter-error.log").is_file() and table["bob"][ids[1]] == (
        0.0,
        "missing",
    )
    otter_grade.grade_class(masters, subs, tmp_path / "out", 1, run=fake_run, assign=fake_assign)
    assert len(assigned) == 2, "an exercise whose zip exists is not assigned again"
    crosscheck.write_csv(crosscheck.cross_check(table, None, "otter", "tool"), tmp_path / "grades.csv")
    rows = list(csv.reader((tmp_path / "grades.csv").open(encoding="utf-8")))
    assert rows[0] == ["student", *ids, "total"]
    assert ["alice", "1.50", "2.25", "3.75"] in rows and ["bob", "0.00", "0.00", "0.00"] in rows
    assert any(r[0] == "'=cmd" for r in rows), f"a student name is a CSV cell, not a formula: {rows}"
