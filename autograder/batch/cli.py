"""`python -m autograder grade-all SUBMISSIONS [--out DIR] [--csv FILE] [--cluster ADDRESS] [--dry-run]`: the
command line of the batch grader.

It parses the arguments and runs `autograder.batch.bulk.grade_all` (the sealed two-phase batch;
what is graded: `autograder.batch.submissions`), or, with --dry-run, grades into a temporary folder and prints whose
grade would change against DIR's gradebook (`autograder.batch.regrade`), writing nothing under DIR.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import zipfile
from collections.abc import Sequence
from pathlib import Path

from autograder.batch import bulk, regrade
from autograder.batch.gradebook import Gradebook
from autograder.batch.outputs import isolation_summary, summary_table
from autograder.batch.submissions import RESERVED_NAMES
from autograder.core.manifest import BY_ID
from autograder.core.safetext import one_line, terminal_text
from autograder.runtime.grader import refusal
from autograder.runtime.sandbox import ladder


def dry_run(
    submissions: Path,
    out: Path,
    workers: int | None = None,
    timeout_s: float | None = None,
    progress: bool = True,
    python: str = sys.executable,
    exercises: Sequence[str] | None = None,
    cluster: str | None = None,
) -> tuple[list[regrade.StudentDiff], int]:
    """Grade `submissions` into a temporary folder and compare with `out`'s gradebook; return the
    students whose grade would change and the number of students graded. Nothing under `out` is written."""
    with tempfile.TemporaryDirectory(prefix="a2-dry-run-") as scratch:
        tmp_out = Path(scratch) / "graded"
        report = bulk.grade_all(
            submissions,
            tmp_out,
            workers,
            force=True,
            timeout_s=bulk.DEFAULT_TIMEOUT_S if timeout_s is None else timeout_s,
            progress=progress,
            python=python,
            exercises=exercises,
            not_submissions=[out],
            cluster=cluster,
        )
        for item in report.refused:
            print(f"refused {terminal_text(item.entry)}: {terminal_text(item.reason)}")
        students = [r.student for r in report.records]
        diffs = regrade.compare(out / bulk.GRADEBOOK_NAME, tmp_out / bulk.GRADEBOOK_NAME, students, exercises)
    return diffs, len(students)


def dry_run_cli(args: argparse.Namespace) -> int:
    """`grade-all --dry-run` (its arguments parsed by `main`): `dry_run`, then `print_dry_run`."""
    if args.csv is not None:
        print(
            "grade-all: --dry-run writes nothing: leave out --csv (it regrades everyone, as --force)", file=sys.stderr
        )
        return 2
    try:
        diffs, graded = dry_run(
            args.submissions,
            args.out,
            args.workers,
            args.timeout,
            not args.no_progress,
            args.python,
            args.exercises,
            args.cluster,
        )
    except (OSError, ValueError, zipfile.BadZipFile) as exc:
        print(f"grade-all: {terminal_text(exc)}", file=sys.stderr)
        return 2
    regrade.print_dry_run(diffs, graded, args.out)
    return 0


def _parser() -> argparse.ArgumentParser:
    """grade-all's options."""
    parser = argparse.ArgumentParser(
        prog="python -m autograder grade-all", description=bulk.__doc__.splitlines()[0] if bulk.__doc__ else None
    )
    parser.add_argument(
        "submissions",
        type=Path,
        help="folder with one sub-folder or .zip per student, or a Gradescope export (zip or folder)",
    )
    parser.add_argument("--csv", type=Path, help="export this batch's gradebook rows to this CSV file")
    parser.add_argument(
        "--out",
        type=Path,
        default=Path("out/graded"),
        help="per-student results, feedback and gradebook.sqlite (default out/graded)",
    )
    parser.add_argument("--workers", type=int, default=None, help="parallel graders (default: number of cores)")
    parser.add_argument(
        "--cluster",
        metavar="ADDRESS",
        help="grade on Dask: tcp://scheduler:8786, or local:N (autograder/batch/cluster.py)",
    )
    parser.add_argument("--force", action="store_true", help="regrade submissions whose content is unchanged")
    parser.add_argument(
        "--timeout",
        type=float,
        default=bulk.DEFAULT_TIMEOUT_S,
        help=f"wall-clock limit per submission, s (default {bulk.DEFAULT_TIMEOUT_S:.0f})",
    )
    parser.add_argument("--exercises", nargs="+", choices=list(BY_ID), help="grade only these exercises")
    parser.add_argument("--no-progress", action="store_true", help="no progress bar")
    parser.add_argument(
        "--dry-run",
        action="store_true",
        help="grade into a temporary folder and print whose grade would change (and which tests); "
        "writes nothing under --out",
    )
    parser.add_argument(
        "--python", default=sys.executable, help="interpreter that runs `-m autograder grade` (default: this one)"
    )
    parser.add_argument(
        "--unsafe-no-sandbox",
        action="store_true",
        help="where no isolation layer works, grade anyway with this user's rights (trusted files only; "
        "never with --cluster)",
    )
    return parser


def _check_options(parser: argparse.ArgumentParser, args: argparse.Namespace) -> int | None:
    """Applies --unsafe-no-sandbox; the exit status when the options or this machine refuse the batch (the
    reason printed), else None."""
    if args.unsafe_no_sandbox and args.cluster:
        parser.error("--unsafe-no-sandbox is never accepted with --cluster: a worker that cannot isolate refuses")
    ladder.allow_unsafe(args.unsafe_no_sandbox)
    if args.cluster is None:  # the workers check for themselves
        refused = refusal()
        if refused:
            print(f"grade-all: {refused}", file=sys.stderr)
            return 2
    if args.csv is not None and (
        args.csv.name.lower() in {n.lower() for n in RESERVED_NAMES}
        or args.csv.resolve() == (args.out / bulk.GRADEBOOK_NAME).resolve()
    ):
        print(f"grade-all: --csv {args.csv} would overwrite grade-all's own output", file=sys.stderr)
        return 2
    if args.csv is not None and args.csv.is_dir():
        print(f"grade-all: --csv {args.csv} is a folder, not a file to write", file=sys.stderr)
        return 2
    return None


def changed_grades(book: Gradebook, students: list[str]) -> list[str]:
    """One line per student graded in this run whose total moved from their previous grading, saying whether
    the submission changed or the same files were graded again (a changed grader, cases or expected values),
    and a count; nothing when no student had a previous grading."""
    lines = []
    for student in students:
        versions = book.history(student)
        if len(versions) < 2:
            continue
        before, now = versions[-2], versions[-1]
        if abs(before.score - now.score) < 0.005 and abs(before.max_score - now.max_score) < 0.005:
            continue
        why = "new files" if before.content_hash != now.content_hash else "same files, graded again"
        lines.append(
            f"  {terminal_text(one_line(student))}: {before.score:.2f} / {before.max_score:g} -> "
            f"{now.score:.2f} / {now.max_score:g} ({why})"
        )
    if lines:
        lines.insert(
            0,
            f"grades that moved since each student's previous grading ({len(lines)}; every version is kept "
            "in the gradebook's history):",
        )
    return lines


def _print_report(report: bulk.BatchReport, args: argparse.Namespace) -> int:
    """The batch's summary table, isolation, counts and refusals; the CSV export when asked. Exit status."""
    print(summary_table(report.records, args.exercises))
    with Gradebook(args.out / bulk.GRADEBOOK_NAME) as book:
        print(isolation_summary(book.results(r.student) for r in report.records))
        for line in changed_grades(book, report.graded):
            print(line)
    print(
        f"graded {len(report.graded)}, skipped {len(report.skipped)} unchanged, "
        f"grader failed on {len(report.failed)}, refused {len(report.refused)}; {report.wall_s:.1f} s; "
        f"gradebook {args.out / bulk.GRADEBOOK_NAME}"
    )
    for item in report.refused:
        print(f"refused {terminal_text(item.entry)}: {terminal_text(item.reason)}")
    if args.csv:
        try:
            with Gradebook(args.out / bulk.GRADEBOOK_NAME) as book:
                rows = book.export_csv(args.csv, [r.student for r in report.records])
        except OSError as exc:  # the gradebook holds every grading: export it again with another --csv
            print(f"grade-all: the CSV {args.csv} could not be written: {terminal_text(exc)}", file=sys.stderr)
            return 1
        print(f"wrote {args.csv} ({rows} rows)")
    return 0


def main(argv: list[str]) -> int:
    parser = _parser()
    args = parser.parse_args(argv)
    for stream in (sys.stdout, sys.stderr):  # student names in the summary never stop the report
        if hasattr(stream, "reconfigure"):
            stream.reconfigure(errors="backslashreplace")
    refused = _check_options(parser, args)
    if refused is not None:
        return refused
    if args.dry_run:
        return dry_run_cli(args)
    try:
        report = bulk.grade_all(
            args.submissions,
            args.out,
            args.workers,
            args.force,
            args.timeout,
            not args.no_progress,
            args.python,
            args.exercises,
            [args.csv] if args.csv is not None else [],
            cluster=args.cluster,
        )
    except (OSError, ValueError, zipfile.BadZipFile) as exc:
        print(f"grade-all: {terminal_text(exc)}", file=sys.stderr)
        return 2
    if args.exercises:
        print(
            f"grade-all: each graded student's latest grade in {terminal_text(args.out)} is now this grading of "
            f"{', '.join(args.exercises)} only (export-lms refuses such grades): grade every exercise again before "
            "exporting, or give --exercises runs an --out of their own",
            file=sys.stderr,
        )
    return _print_report(report, args)
