"""`python -m autograder lecture 01|02|03|all --impl DIR [--json] [--plots OUT]`: a student's figures, safely.

The lecture's drivers (`python -m hetero.lecture`) import the exercise files of `--impl` into their own
process: run on a student's folder by an instructor, that is the student's code with the instructor's
rights beside the answer key, so there they refuse a folder that is not the course's own
(`hetero.impl.untrusted_impl`). This command runs the same driver on such a folder in the grader's
sandbox (`autograder.runtime.sandbox.command`: the machine's isolation rung, a uid of its own where the
grader is root, nothing writable but its work folder, every process ended, time and memory capped): the
folder's exercise files (the manifest's names only) and the course's reference figures are copied in, the
driver's text (or JSON) is printed as it printed it, and its plots are copied to --plots. What the
student's code prints is shown as the student's: the figures are theirs to shape, as on their own machine.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from autograder.core.manifest import EXERCISES, ROOT
from autograder.core.safetext import terminal_text
from autograder.runtime.sandbox import command, ladder

TIMEOUT_S = 1800.0  # experiment 03 trains the small MoE (about 70 s of CPU) before ex10 runs
MEMORY_MIB = 4096
REFERENCE = ROOT / "assignments" / "reference_figures.json"


def run(experiment: str, folder: Path, plots: Path | None, as_json: bool) -> command.CommandRun:
    """The driver on `folder`'s exercise files in the sandbox (module docstring)."""
    files = {f"impl/{ex.filename}": folder / ex.filename for ex in EXERCISES if (folder / ex.filename).is_file()}
    if REFERENCE.is_file():
        files[f"impl/{REFERENCE.name}"] = REFERENCE
    argv = ["{python}", "-m", "hetero.lecture", experiment, "--impl", "{code}/impl", "--trust-impl"]
    argv += ["--json"] if as_json else []
    argv += ["--plots", "{work}/plots"] if plots is not None else []
    return command.run_command(
        argv,
        files,
        collect=plots.parent / f".{plots.name}.collected" if plots is not None else None,
        timeout_s=TIMEOUT_S,
        memory_mib=MEMORY_MIB,
        env={"PYTHONPATH": "{code}/site"},
        work_dirs=("plots",),
    )


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="python -m autograder lecture", description=__doc__.splitlines()[0])
    parser.add_argument("experiment", choices=["01", "02", "03", "all"])
    parser.add_argument("--impl", type=Path, required=True, help="the student's folder of exercise files")
    parser.add_argument("--json", action="store_true", help="print the driver's one JSON object")
    parser.add_argument("--plots", type=Path, default=None, help="copy the driver's PNG plots into this folder")
    args = parser.parse_args(argv)
    if not args.impl.is_dir():
        parser.error(f"--impl {args.impl}: no such folder")
    exposed = ladder.exposed(args.impl, "the student's folder")
    if exposed:
        print(f"lecture: refused: {exposed}", file=sys.stderr)
        return 2
    try:
        done = run(args.experiment, args.impl, args.plots, args.json)
    except ladder.Refused as exc:
        print(f"lecture: {exc}", file=sys.stderr)
        return 2
    print(done.output if args.json else terminal_text(done.output, lines=True))
    if args.plots is not None:
        collected = args.plots.parent / f".{args.plots.name}.collected" / "plots"
        args.plots.mkdir(parents=True, exist_ok=True)
        for png in sorted(collected.glob("*.png")) if collected.is_dir() else []:
            (args.plots / png.name).write_bytes(png.read_bytes())
        from autograder.runtime.sandbox.users import remove_tree

        remove_tree(collected.parent)
    print(f"[sandbox] {done.notes[0] if done.notes else ''}; ended: {done.ended}; {done.wall_s:.1f} s", file=sys.stderr)
    return 0 if done.ended == "finished" and done.returncode == 0 else 1
