"""`python -m autograder export-otter DIR`: write Otter-Grader master notebooks, one per exercise.

Layout written:

    DIR/<exNN_name>/<exNN_name>.ipynb      master notebook of one exercise (Otter Assign format v1)
    DIR/requirements.txt                    only with --package (what the grading image must install)

One master notebook per exercise (not one notebook for all of them), because each exercise is one file
with its own module namespace: two exercises may define helpers with the same name, which would
overwrite each other in a single notebook. `otter assign DIR/<ex>/<ex>.ipynb OUT/<ex>` turns each into
a student notebook and an autograder zip (`OUT/<ex>/autograder/<ex>-autograder_*.zip`).

Each master notebook holds:
- `# ASSIGNMENT CONFIG` (name `a2-exNN`, Otter's init cell, no export cell, no PDFs);
- one question named `exNN` (`all_or_nothing: false`: each test case scores its own points);
- the solution cell: the whole `solutions/exNN_<name>.py`, whose `# BEGIN SOLUTION` / `# END SOLUTION`
  lines are already Otter's syntax (the student version gets `...` in their place), tagged
  `a2-exercise` so `autograder.runtime.notebook_code.extract_code` also reads Otter submissions;
- `# BEGIN TESTS`: one test cell per hidden case (first) and one per public case, each with a
  `# BEGIN TEST CONFIG` block holding its exact share in hundredths (`autograder.core.scoring`, as the
  native grader) and `hidden: true` for hidden cases. The first hidden test of each function scores
  the whole function with `hetero.grading.score_cases` (the native grader's judge and live-function
  rule, a per-case time limit) and leaves the paid case ids in the kernel process
  (`hetero.grading.remember_paid`: Otter runs each test on a fresh copy of the notebook's globals);
  every test asserts that its case passed and was paid. Tests are `assert` statements (no bare expressions, which Otter would
  turn into doctests needing saved outputs).

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

from autograder.core import scoring
from autograder.core.manifest import ROOT
from autograder.exports import notebooks as nb
from autograder.runtime import notebook_code
from hetero.checks import Case


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


def test_cell_source(code: str, cents: int, hidden: bool) -> str:
    config = ['""" # BEGIN TEST CONFIG']
    if hidden:
        config.append("hidden: true")
    config += [f"points: {cents / 100!r}", '""" # END TEST CONFIG']
    return "\n".join(config + [code])


def hidden_cell_code(src: nb.ExerciseSources, key: str, case: Case, first: bool) -> str:
    """A hidden test of one case. The group's first one scores the whole group once (every public, hidden
    and support case, as the native grader does) and keeps the paid case ids in the kernel's globals;
    each hidden test then asserts that its case was paid."""
    token = f"{src.exercise.id}:{key}"
    lines = []
    if first:
        scorer = nb.group_cell_code(src, [key]).splitlines()[:-2]  # without printing and the points expression
        lines += scorer + [
            "from hetero.grading import remember_paid",
            f"_a2_kept = remember_paid({token!r}, _a2_score.paid_ids)",
        ]
    lines += [
        "from hetero.grading import recall_paid",
        f"assert {case.id!r} in (recall_paid({token!r}) or ()), 'hidden case of {case.func}: failed, or its "
        "function is not yet shown to compute on the hidden inputs'",
    ]
    return "\n".join(lines)


def public_cell_code(src: nb.ExerciseSources, key: str, case: Case) -> str:
    """A public test of one case: the verdict with its message; when grading (the hidden tests ran
    first and left `_a2_paid`), it also requires the case to be paid."""
    literal = nb.case_source(case)
    return "\n".join(
        [
            *nb.needed_imports(literal),
            "from types import SimpleNamespace",
            "from hetero.checks import Case, Gen",
            "from hetero.grading import recall_paid, run_limited",
            "from hetero.checks import judge",
            f"_a2_case = {literal}",
            f"_a2_verdict = judge(_a2_case, run_limited(_a2_case, SimpleNamespace(**globals()), "
            f"{src.exercise.case_timeout_s!r}))",
            "assert _a2_verdict.passed, _a2_verdict.message",
            f"_a2_paid = recall_paid({f'{src.exercise.id}:{key}'!r})",
            f"assert _a2_paid is None or _a2_case.id in _a2_paid, {scoring.UNPAID_NOTE!r}",
        ]
    )


def master_notebook(src: nb.ExerciseSources, requirements: bool = False, run_tests: bool = True) -> dict[str, Any]:
    """The Otter master notebook of one exercise (`run_tests`: `otter assign` checks the solution).

    Hidden tests come first in the test file, so that when grading they have scored each group before
    the public tests ask whether their case was paid."""
    ex = src.exercise
    cents = src.cents
    cells: list[dict[str, Any]] = [
        nb.raw_cell(assignment_config(ex.id, requirements, run_tests), "assignment-config"),
        nb.markdown_cell(nb.intro_markdown(src), "intro"),
        nb.raw_cell(f"# BEGIN QUESTION\nname: {ex.id}\nmanual: false\nall_or_nothing: false", "begin-question"),
        nb.markdown_cell(
            f"**{ex.id}.** Fill in the functions below; the public tests run with "
            f'`grader.check("{ex.id}")`. Each case has a time limit of {ex.case_timeout_s:g} s.',
            "question-text",
        ),
        nb.raw_cell("# BEGIN SOLUTION", "begin-solution"),
        nb.code_cell(nb.exercise_cell_source(ex, src.solution), "exercise", {"tags": [notebook_code.EXERCISE_TAG]}),
        nb.raw_cell("# END SOLUTION", "end-solution"),
        nb.raw_cell("# BEGIN TESTS", "begin-tests"),
    ]
    number = 0
    for key in src.groups():
        _, hidden, _ = nb.group_cases(src, key)
        for i, case in enumerate(hidden):
            number += 1
            cells.append(
                nb.code_cell(
                    test_cell_source(hidden_cell_code(src, key, case, i == 0), cents[case.id], True),
                    nb.cell_id_for(f"{ex.id}.hidden.{number:03d}"),
                )
            )
    for key in src.groups():
        public, _, _ = nb.group_cases(src, key)
        for case in public:
            cells.append(
                nb.code_cell(
                    test_cell_source(public_cell_code(src, key, case), cents[case.id], False), nb.cell_id_for(case.id)
                )
            )
    cells += [nb.raw_cell("# END TESTS", "end-tests"), nb.raw_cell("# END QUESTION", "end-question")]
    return nb.new_notebook(cells, {"a2": {"exercise": ex.id, "module": ex.module}})


def export(
    dest: Path, ex_ids: list[str] | None = None, package: str | None = None, root: Path = ROOT, run_tests: bool = True
) -> list[Path]:
    """Write the master notebooks (and requirements.txt with --package) into `dest`."""
    chosen = nb.chosen_exercises(ex_ids, root)
    dest.mkdir(parents=True, exist_ok=True)
    written: list[Path] = []
    if package:
        requirements = dest / "requirements.txt"
        requirements.write_text(package.strip() + "\n", encoding="utf-8")
        written.append(requirements)
    for ex in chosen:
        src = nb.load_sources(ex.id, root)
        written.append(
            nb.write_notebook(master_notebook(src, bool(package), run_tests), dest / ex.module / f"{ex.module}.ipynb")
        )
    return written


def _otter(args: list[str], timeout_s: float) -> None:
    from autograder.exports.export_nbgrader import tool_env

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


OTTER_TOOLS = ("otter-grader", "ipykernel")  # what `otter run` imports, with everything they require
TOOL_MEMORY_MIB = 1024  # Otter, nbconvert and the kernel's own, beside the exercise's memory


def run(
    autograder_zip: Path, submission: Path, out: Path, timeout_s: float, memory_mib: int = 4096
) -> dict[str, float]:
    """`otter run` (no Docker) of one submission, in the grader's sandbox (`command.run_command`: the
    machine's isolation rung, a uid of its own where the grader is root, nothing writable but its work
    folder, every process ended with it, `timeout_s` and `memory_mib` + TOOL_MEMORY_MIB for all of
    them); returns {question: points}. Otter's checks run in the student's kernel: that is Otter's model,
    and the sandbox keeps the rest of the machine out of it, not the checks from the student's code
    (docs/instructors_nbgrader_otter.md). Otter's results.json and the run's output land in `out`."""
    from autograder.runtime.sandbox import command

    out.mkdir(parents=True, exist_ok=True)
    done = command.run_command(
        [
            "{python}",
            "-m",
            "otter",
            "run",
            "-a",
            "{code}/autograder.zip",
            "-o",
            "{work}/out",
            "{code}/" + submission.name,
        ],
        {"autograder.zip": autograder_zip, submission.name: submission},
        collect=out,
        timeout_s=timeout_s,
        memory_mib=memory_mib + TOOL_MEMORY_MIB,
        tools=OTTER_TOOLS,
        sockets="loopback",  # Otter's own log server and the kernel's channels: TCP on the child's own loopback
        env={
            "PYTHONPATH": "{code}:{code}/site",
            "JUPYTER_RUNTIME_DIR": "{work}/runtime",
            "IPYTHONDIR": "{work}/ipython",
        },
        work_dirs=("out", "runtime"),
    )
    (out / "otter-run.log").write_text(done.output, encoding="utf-8")
    if done.ended != "finished" or done.returncode != 0:
        raise RuntimeError(
            f"otter run ended ({done.ended}, status {done.returncode}) in the sandbox ({done.notes[0]}):\n{done.output[-3000:]}"
        )
    results = json.loads((out / "out" / "results.json").read_text(encoding="utf-8"))
    # results.json has no top-level score: each question is one entry with score / max_score
    return {t["name"]: float(t["score"]) for t in results["tests"] if "score" in t}


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="python -m autograder export-otter", description=__doc__.split("\n")[0])
    parser.add_argument("dest", type=Path, help="folder to write the master notebooks into")
    parser.add_argument("--exercises", help="comma-separated exercise ids (default: every exportable one)")
    parser.add_argument(
        "--no-run-tests", action="store_true", help="do not let `otter assign` run the tests against the solution"
    )
    parser.add_argument(
        "--package",
        help="pip requirement for this package in the grading image (e.g. a wheel URL); written to requirements.txt",
    )
    args = parser.parse_args(argv)
    ex_ids = nb.exercise_ids_option(parser, args.exercises)
    try:
        written = export(args.dest, ex_ids, args.package, run_tests=not args.no_run_tests)
    except ValueError as exc:
        print(f"export-otter: {exc}", file=sys.stderr)
        return 1
    for path in written:
        print(path)
    return 0
