"""`python -m autograder lecture 01|02|03|all --impl DIR_OR_ZIP [--json] [--plots OUT]`: a student's figures, safely.

The lecture's drivers (`python -m hetero.lecture`) import the exercise files of `--impl` into their own
process: run on a student's folder by an instructor, that is the student's code with the instructor's
rights beside the answer key, so there they refuse a folder that is not the course's own
(`hetero.impl.untrusted_impl`). This command runs the same driver on such a folder in the grader's
sandbox (`autograder.runtime.sandbox.command`: the machine's isolation rung, a uid of its own where the
grader is root, nothing writable but its work folder, every process ended, time and memory capped). The
student's exercise files are read as the grader reads a submission (`autograder.runtime.intake.locate`: a
folder or a zip, links and hard links never followed, sizes capped, notebooks through their exercise
cells) into a staging folder of the grader's own, and copied in from there with the course's reference
figures. The driver's text (or JSON) is printed as it printed it, terminal controls escaped; its PNG
plots are collected into that staging folder and copied to --plots, which may not lie inside the
student's folder (links planted there would steer the writes). What the student's code prints is shown as
the student's: the figures are theirs to shape, as on their own machine.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
from pathlib import Path

from autograder.core.manifest import EXERCISES, ROOT
from autograder.core.safetext import terminal_text
from autograder.runtime import intake
from autograder.runtime.sandbox import command, ladder
from autograder.runtime.sandbox.users import remove_tree

TIMEOUT_S = 1800.0  # experiment 03 trains the small MoE (about 70 s of CPU) before ex10 runs
MEMORY_MIB = 4096
REFERENCE = ROOT / "assignments" / "reference_figures.json"


def run(experiment: str, submission: Path, plots: Path | None, as_json: bool) -> tuple[command.CommandRun, list[str]]:
    """The driver on the submission's exercise files in the sandbox (module docstring); its PNG plots copied
    into `plots`. Returns the run and the intake's notes (what was skipped or not found, and why)."""
    staging = Path(tempfile.mkdtemp(prefix="a2lecture-"))
    try:
        found, notes = intake.locate(submission, EXERCISES, staging / "intake")
        notes += [f.note for f in found.values() if f.note]
        files = {f"impl/{ex.filename}": f.path for ex in EXERCISES if (f := found.get(ex.id)) and f.path is not None}
        if REFERENCE.is_file():
            files[f"impl/{REFERENCE.name}"] = REFERENCE
        argv = ["{python}", "-m", "hetero.lecture", experiment, "--impl", "{code}/impl", "--trust-impl"]
        argv += ["--json"] if as_json else []
        argv += ["--plots", "{work}/plots"] if plots is not None else []
        done = command.run_command(
            argv,
            files,
            collect=staging / "collected" if plots is not None else None,
            timeout_s=TIMEOUT_S,
            memory_mib=MEMORY_MIB,
            env={"PYTHONPATH": "{code}/site"},
            work_dirs=("plots",),
        )
        if plots is not None:
            plots.mkdir(parents=True, exist_ok=True)
            for png in sorted(staging.glob("collected/plots/*.png")):
                if png.is_file() and not png.is_symlink():
                    try:
                        fd = os.open(plots / png.name, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o666)
                    except OSError as exc:  # a link or a folder of that name in --plots: left as it is
                        notes.append(f"{plots / png.name} was not written: {exc.strerror or exc}")
                        continue
                    with os.fdopen(fd, "wb") as out:
                        out.write(png.read_bytes())
        return done, notes
    finally:
        remove_tree(staging)


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="python -m autograder lecture", description=__doc__.splitlines()[0])
    parser.add_argument("experiment", choices=["01", "02", "03", "all"])
    parser.add_argument("--impl", type=Path, required=True, help="the student's folder (or zip) of exercise files")
    parser.add_argument("--json", action="store_true", help="print the driver's one JSON object")
    parser.add_argument("--plots", type=Path, default=None, help="copy the driver's PNG plots into this folder")
    args = parser.parse_args(argv)
    if not args.impl.exists():
        parser.error(f"--impl {args.impl}: no such folder or zip")
    if args.plots is not None and intake.within(args.plots, args.impl, unresolved=True):
        parser.error(f"--plots {args.plots} lies inside the student's folder {args.impl}: choose a folder of your own")
    exposed = ladder.exposed(args.impl, "the student's folder")
    if exposed:
        print(f"lecture: refused: {exposed}", file=sys.stderr)
        return 2
    try:
        done, notes = run(args.experiment, args.impl, args.plots, args.json)
    except ladder.Refused as exc:
        print(f"lecture: {exc}", file=sys.stderr)
        return 2
    print(terminal_text(done.output, lines=True))
    for note in notes:
        print(f"[intake] {terminal_text(note)}", file=sys.stderr)
    print(f"[sandbox] {done.notes[0] if done.notes else ''}; ended: {done.ended}; {done.wall_s:.1f} s", file=sys.stderr)
    return 0 if done.ended == "finished" and done.returncode == 0 else 1
