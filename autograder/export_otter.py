"""`python -m autograder export-otter DIR`: write Otter-Grader master notebooks, one per exercise.

Layout written:

    DIR/<exNN_name>/<exNN_name>.ipynb      master notebook of one exercise (Otter Assign format v1)
    DIR/requirements.txt                    only with --package (what the grading image must install)

One master notebook per exercise (not one notebook for all ten), because each exercise is one file
with its own module namespace: two exercises may define helpers with the same name, which would
overwrite each other in a single notebook. `otter assign DIR/<ex>/<ex>.ipynb OUT/<ex>` turns each into
a student notebook and an autograder zip (`OUT/<ex>/autograder/<ex>-autograder_*.zip`).

Each master notebook holds:
- `# ASSIGNMENT CONFIG` (name `a2-exNN`, Otter's init cell, no export cell, no PDFs);
- one question named `exNN` (`all_or_nothing: false`: each test case scores its own points);
- the solution cell: the whole `solutions/exNN_<name>.py`, whose `# BEGIN SOLUTION` / `# END SOLUTION`
  lines are already Otter's syntax (the student version gets `...` in their place), tagged
  `a2-exercise` so `autograder.notebooks.extract_code` also reads Otter submissions;
- `# BEGIN TESTS`: one test cell per public case and one per hidden case, each with a
  `# BEGIN TEST CONFIG` block holding its points (manifest rule, `autograder.notebooks.case_points`)
  and `hidden: true` for hidden cases. Tests are `assert` statements (no bare expressions, which
  Otter would turn into doctests needing saved outputs) deciding with `hetero.checks.judge`, exactly
  as the native grader decides.

The grading environment needs the `hetero` package (`pip install -e .` of this repository locally;
`--package SPEC` puts a pip requirement for it in requirements.txt for Gradescope images).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

from autograder import notebooks as nb
from autograder.manifest import BY_ID, ROOT

POINT_DIGITS = 6  # points are written rounded to 1e-6; a 10-case exercise drifts by at most 5e-6


def assignment_config(ex_id: str, requirements: bool, run_tests: bool = True) -> str:
    lines = [
        "# ASSIGNMENT CONFIG",
        f"name: a2-{ex_id}",
        "init_cell: true",
        "check_all_cell: false",
        "export_cell: false",
        "solutions_pdf: false",
        "template_pdf: false",
        f"run_tests: {str(run_tests).lower()}",
        "generate:",
        "  pdf: false",
        "  show_stdout: true",
    ]
    if requirements:
        lines.append("requirements: ../requirements.txt")
    return "\n".join(lines)


def test_cell_source(code: str, points: float, hidden: bool) -> str:
    config = ['""" # BEGIN TEST CONFIG']
    if hidden:
        config.append("hidden: true")
    config += [f"points: {round(points, POINT_DIGITS)!r}", '""" # END TEST CONFIG']
    return "\n".join(config + [code])


def master_notebook(src: nb.ExerciseSources, requirements: bool = False, run_tests: bool = True) -> dict[str, Any]:
    """The Otter master notebook of one exercise (`run_tests`: `otter assign` checks the solution)."""
    ex = src.exercise
    points = nb.case_points(ex, src.public, src.hidden)
    cells: list[dict[str, Any]] = [
        nb.raw_cell(assignment_config(ex.id, requirements, run_tests), "assignment-config"),
        nb.markdown_cell(nb.intro_markdown(src), "intro"),
        nb.raw_cell(f"# BEGIN QUESTION\nname: {ex.id}\nmanual: false\nall_or_nothing: false", "begin-question"),
        nb.markdown_cell(f"**{ex.id}.** Fill in the functions below; the public tests run with "
                         f"`grader.check(\"{ex.id}\")`.", "question-text"),
        nb.raw_cell("# BEGIN SOLUTION", "begin-solution"),
        nb.code_cell(nb.exercise_cell_source(ex, src.solution), "exercise", {"tags": [nb.EXERCISE_TAG]}),
        nb.raw_cell("# END SOLUTION", "end-solution"),
        nb.raw_cell("# BEGIN TESTS", "begin-tests"),
    ]
    for case in src.public:
        cells.append(nb.code_cell(test_cell_source(nb.public_test_code(case), points[case.id], False),
                                  nb.cell_id_for(case.id)))
    for number, case in enumerate(src.hidden, start=1):
        code = nb.hidden_test_code(case, src.expected[case.id])
        cells.append(nb.code_cell(test_cell_source(code, points[case.id], True),
                                  nb.cell_id_for(f"{ex.id}.hidden.{number:03d}")))
    cells += [nb.raw_cell("# END TESTS", "end-tests"), nb.raw_cell("# END QUESTION", "end-question")]
    return nb.new_notebook(cells, {"a2": {"exercise": ex.id, "module": ex.module}})


def export(dest: Path, ex_ids: list[str] | None = None, package: str | None = None,
           root: Path = ROOT, run_tests: bool = True) -> list[Path]:
    """Write the master notebooks (and requirements.txt with --package) into `dest`."""
    chosen = [ex for ex in nb.gradable_exercises(root) if ex_ids is None or ex.id in ex_ids]
    if ex_ids is not None:
        unknown = sorted(set(ex_ids) - {ex.id for ex in chosen})
        if unknown:
            raise ValueError(f"not exportable (no solution, public cases, hidden cases or expected values): "
                             f"{', '.join(unknown)}")
    if not chosen:
        raise ValueError("no exercise has a solution, public and hidden cases and expected values yet")
    dest.mkdir(parents=True, exist_ok=True)
    written: list[Path] = []
    if package:
        requirements = dest / "requirements.txt"
        requirements.write_text(package.strip() + "\n", encoding="utf-8")
        written.append(requirements)
    for ex in chosen:
        src = nb.load_sources(ex.id, root)
        written.append(nb.write_notebook(master_notebook(src, bool(package), run_tests),
                                         dest / ex.module / f"{ex.module}.ipynb"))
    return written


def _otter(args: list[str], timeout_s: float) -> None:
    from autograder.export_nbgrader import tool_env

    cmd = [str(Path(sys.executable).parent / "otter"), *args]
    done = subprocess.run(cmd, env=tool_env(), capture_output=True, text=True, timeout=timeout_s)
    if done.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} failed ({done.returncode}):\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}")


def assign(master: Path, out: Path, timeout_s: float = 600) -> tuple[Path, Path]:
    """`otter assign master out`; returns (autograder zip, student notebook)."""
    _otter(["assign", str(master), str(out)], timeout_s)
    zips = sorted((out / "autograder").glob("*-autograder_*.zip"))
    if len(zips) != 1:
        raise RuntimeError(f"otter assign wrote {len(zips)} autograder zips into {out / 'autograder'}")
    return zips[0], out / "student" / master.name


def run(autograder_zip: Path, submission: Path, out: Path, timeout_s: float) -> dict[str, float]:
    """`otter run` (no Docker) of one submission; returns {question: points}. Otter has no timeout of
    its own, so the call is bounded by `timeout_s` (subprocess timeout)."""
    out.mkdir(parents=True, exist_ok=True)
    _otter(["run", "-a", str(autograder_zip), "-o", str(out), str(submission)], timeout_s)
    results = json.loads((out / "results.json").read_text(encoding="utf-8"))
    # results.json has no top-level score: each question is one entry with score / max_score
    return {t["name"]: float(t["score"]) for t in results["tests"] if "score" in t}


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="python -m autograder export-otter", description=__doc__.split("\n")[0])
    parser.add_argument("dest", type=Path, help="folder to write the master notebooks into")
    parser.add_argument("--exercises", help="comma-separated exercise ids (default: every exportable one)")
    parser.add_argument("--no-run-tests", action="store_true",
                        help="do not let `otter assign` run the tests against the solution")
    parser.add_argument("--package", help="pip requirement for this package in the grading image "
                                          "(e.g. a wheel URL); written to requirements.txt")
    args = parser.parse_args(argv)
    ex_ids = args.exercises.split(",") if args.exercises else None
    if ex_ids:
        bad = [e for e in ex_ids if e not in BY_ID]
        if bad:
            parser.error(f"unknown exercise ids: {', '.join(bad)}")
    try:
        written = export(args.dest, ex_ids, args.package, run_tests=not args.no_run_tests)
    except ValueError as exc:
        print(f"export-otter: {exc}", file=sys.stderr)
        return 1
    for path in written:
        print(path)
    return 0
