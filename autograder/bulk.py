"""Grade a whole class: `python -m autograder grade-all SUBMISSIONS --csv grades.csv [--out DIR] [--workers N] [--force]`.

SUBMISSIONS holds one entry per student: a folder or a .zip (the student's name is the folder name or
the zip's stem). Each submission is graded by the single-submission grader in its own subprocess
(`python -m autograder grade SUB --out DIR/<student>/results.json`), several at once, so that a crash,
a hang or a runaway submission only ever affects that student: after the per-submission time limit
the process group is killed and the student gets a results.json saying the grader failed; the batch
goes on.

Per student, DIR/<student>/ receives results.json (Gradescope format), grader.log, feedback.md (what
the student may see now: tests whose visibility is "visible") and feedback_instructor.md (every test,
including hidden details). All results also go into the SQLite gradebook (DIR/gradebook.sqlite),
which makes the run resumable: a submission whose content hash is unchanged since it was last graded
is skipped unless --force. At the end, a summary table (per-exercise mean and distribution) is
printed and, with --csv, the gradebook rows of this batch are exported.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import signal
import statistics
import subprocess
import sys
import time
import zipfile
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tqdm import tqdm

from autograder.gradebook import Gradebook, Record, exercise_scores, test_exercise
from autograder.gradescope.fallback import failure_results, readable_results
from autograder.manifest import EXERCISES, ROOT

DEFAULT_TIMEOUT_S = sum(e.timeout_s for e in EXERCISES) + 120.0  # every exercise at its limit, plus start-up
IGNORED_NAMES = ("__pycache__", "__MACOSX", ".DS_Store")
LOG_TAIL_CHARS = 6000


@dataclass(frozen=True)
class Submission:
    student: str
    path: Path  # a folder or a .zip


@dataclass(frozen=True)
class Graded:
    student: str
    results: dict[str, Any]
    duration_s: float
    grader_failed: bool


# ---------------------------------------------------------------------------------------------
# Finding and fingerprinting submissions.

def discover(folder: Path) -> list[Submission]:
    """One Submission per sub-folder or .zip of `folder`, sorted by student; duplicates are an error."""
    if not folder.is_dir():
        raise FileNotFoundError(f"{folder} is not a folder of submissions")
    found: dict[str, Submission] = {}
    clashes: list[str] = []
    for entry in sorted(folder.iterdir()):
        if entry.name.startswith(".") or entry.name in IGNORED_NAMES:
            continue
        if entry.is_dir():
            student = entry.name
        elif entry.suffix.lower() == ".zip":
            student = entry.stem
        else:
            continue
        if student in found:
            clashes.append(student)
        found[student] = Submission(student, entry)
    if clashes:
        raise ValueError(f"more than one submission (folder and zip?) for: {', '.join(sorted(set(clashes)))}")
    return [found[k] for k in sorted(found)]


def content_hash(path: Path) -> str:
    """sha256 over a submission's content: a zip's bytes, or a folder's (relative path, file bytes) pairs."""
    digest = hashlib.sha256()
    if path.is_file():
        digest.update(b"zip\0")
        digest.update(path.read_bytes())
        return digest.hexdigest()
    digest.update(b"dir\0")
    for file in sorted(p for p in path.rglob("*") if p.is_file()):
        rel = file.relative_to(path)
        if any(part in IGNORED_NAMES or part.startswith(".") for part in rel.parts) or file.suffix == ".pyc":
            continue
        digest.update(rel.as_posix().encode() + b"\0")
        digest.update(hashlib.sha256(file.read_bytes()).digest())
    return digest.hexdigest()


def _zip_is_readable(path: Path) -> bool:
    try:
        with zipfile.ZipFile(path) as zf:
            return zf.testzip() is None
    except (zipfile.BadZipFile, OSError):
        return False


# ---------------------------------------------------------------------------------------------
# Grading one submission in a subprocess.

def grade_one(sub: Submission, student_dir: Path, timeout_s: float, python: str = sys.executable) -> Graded:
    """Run the grader CLI on one submission; never raises for anything the submission does."""
    student_dir.mkdir(parents=True, exist_ok=True)
    results_path = student_dir / "results.json"
    log_path = student_dir / "grader.log"
    results_path.unlink(missing_ok=True)
    cmd = [python, "-m", "autograder", "grade", str(sub.path.resolve()), "--out", str(results_path.resolve())]
    start = time.perf_counter()
    reason = ""
    with log_path.open("wb") as log:
        proc = subprocess.Popen(cmd, cwd=str(ROOT), stdout=log, stderr=subprocess.STDOUT,
                                stdin=subprocess.DEVNULL, start_new_session=True)
        try:
            status = proc.wait(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            _kill_group(proc)
            status = None
            reason = f"grading took longer than {timeout_s:.0f} s and was stopped"
    duration = time.perf_counter() - start
    results = readable_results(results_path)
    if results is None:
        if not reason:
            reason = (f"the grader exited with status {status} without writing a readable results.json"
                      + ("" if sub.path.is_dir() or _zip_is_readable(sub.path) else " (the zip file is damaged)"))
        tail = log_path.read_text(encoding="utf-8", errors="replace")[-LOG_TAIL_CHARS:]
        results = failure_results(reason, tail)
        results_path.write_text(json.dumps(results, indent=2), encoding="utf-8")
        return Graded(sub.student, results, duration, True)
    return Graded(sub.student, results, duration, False)


def _kill_group(proc: subprocess.Popen) -> None:
    """Kill the grader and every sandbox child it started (they share its session)."""
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    proc.wait()


# ---------------------------------------------------------------------------------------------
# Feedback.

def _visibility(test: dict[str, Any], results: dict[str, Any]) -> str:
    return str(test.get("visibility") or results.get("visibility") or "visible")


def feedback_markdown(student: str, results: dict[str, Any], instructor: bool) -> str:
    """Readable feedback: per-exercise score, then each failed test's message.

    The student copy shows only tests whose visibility is "visible" (what Gradescope shows before
    the due date); the instructor copy shows every test and marks its visibility.
    """
    tests = [t for t in results.get("tests", []) if instructor or _visibility(t, results) == "visible"]
    hidden_count = len(results.get("tests", [])) - len(tests)
    shown = {"tests": tests}
    per_ex = exercise_scores(shown)
    score = sum(float(t.get("score") or 0.0) for t in tests)
    max_score = sum(float(t.get("max_score") or 0.0) for t in tests)
    title = "instructor copy" if instructor else "student copy"
    lines = [f"# Feedback for {student} ({title})", ""]
    if instructor and results.get("score") is not None:
        lines.append(f"**Total: {float(results['score']):.2f} / {max_score:.2f}**")
    else:
        lines.append(f"**Score in the tests shown: {score:.2f} / {max_score:.2f}**")
    if hidden_count:
        lines.append(f"\n{hidden_count} further test entries are not visible to students yet (shown after the due date, or to staff only).")
    if results.get("output"):
        lines += ["", str(results["output"])]
    lines += ["", "| exercise | score | max |", "|---|---:|---:|"]
    by_ex: dict[str, list[dict[str, Any]]] = {}
    other: list[dict[str, Any]] = []
    for test in tests:
        ex_id = test_exercise(test)
        (by_ex.setdefault(ex_id, []) if ex_id else other).append(test)
    for e in EXERCISES:
        if e.id in by_ex:
            s, m = per_ex[e.id]
            lines.append(f"| {e.id} {e.title} | {s:.2f} | {m:.2f} |")
    for group, label in [(by_ex.get(e.id, []), f"{e.id}: {e.title}") for e in EXERCISES] + [(other, "other")]:
        failed = [t for t in group if _failed(t)]
        if not failed:
            continue
        lines += ["", f"## {label}", ""]
        for test in failed:
            vis = f" _[{_visibility(test, results)}]_" if instructor else ""
            output = str(test.get("output") or "").strip().replace("\n", "\n  ")
            lines.append(f"- **{test.get('name', '?')}** ({float(test.get('score') or 0):.2f} / "
                         f"{float(test.get('max_score') or 0):.2f}){vis}: {output}")
    return "\n".join(lines) + "\n"


def _failed(test: dict[str, Any]) -> bool:
    if test.get("status") in ("failed", "passed"):
        return test["status"] == "failed"
    return float(test.get("score") or 0.0) < float(test.get("max_score") or 0.0)


def write_outputs(student_dir: Path, student: str, results: dict[str, Any]) -> None:
    student_dir.mkdir(parents=True, exist_ok=True)
    results_path = student_dir / "results.json"
    if readable_results(results_path) is None:
        results_path.write_text(json.dumps(results, indent=2), encoding="utf-8")
    (student_dir / "feedback.md").write_text(feedback_markdown(student, results, False), encoding="utf-8")
    (student_dir / "feedback_instructor.md").write_text(feedback_markdown(student, results, True), encoding="utf-8")


# ---------------------------------------------------------------------------------------------
# Summary.

SCORE_EPS = 1e-6  # fraction of the maximum: scores are float sums of case points, off by rounding only


def _distribution(fractions: list[float]) -> str:
    """Counts of students at 0, below half, at least half, and full marks (fractions of the maximum)."""
    zero = sum(f <= SCORE_EPS for f in fractions)
    full = sum(f >= 1 - SCORE_EPS for f in fractions)
    low = sum(SCORE_EPS < f < 0.5 for f in fractions)
    high = len(fractions) - zero - full - low
    return f"{zero:>4} {low:>5} {high:>6} {full:>5}"


def summary_table(records: list[Record]) -> str:
    """Per-exercise and total mean / median / min / max and distribution over `records`."""
    if not records:
        return "no graded submissions"
    head = (f"{'exercise':<10}{'max':>6}{'mean':>8}{'median':>8}{'min':>7}{'max':>7}   "
            f"{'=0':>4} {'<50%':>5} {'>=50%':>6} {'full':>5}")
    lines = [head, "-" * len(head)]
    rows: list[tuple[str, float, list[float]]] = []
    for e in EXERCISES:
        rows.append((e.id, float(e.points), [r.exercises.get(e.id, (0.0, 0.0))[0] for r in records]))
    rows.append(("total", max(r.max_score for r in records), [r.score for r in records]))
    for name, top, scores in rows:
        fractions = [s / top if top > 0 else 0.0 for s in scores]
        lines.append(f"{name:<10}{top:>6.1f}{statistics.fmean(scores):>8.2f}{statistics.median(scores):>8.2f}"
                     f"{min(scores):>7.2f}{max(scores):>7.2f}   {_distribution(fractions)}")
    failed = [r.student for r in records if r.status == "grader_failed"]
    lines.append(f"{len(records)} submissions; grader failed on {len(failed)}"
                 + (f": {', '.join(failed)}" if failed else ""))
    return "\n".join(lines)


# ---------------------------------------------------------------------------------------------
# The batch.

@dataclass(frozen=True)
class BatchReport:
    graded: list[str]
    skipped: list[str]
    failed: list[str]
    records: list[Record]
    wall_s: float


def grade_all(submissions: Path, out: Path, workers: int | None = None, force: bool = False,
              timeout_s: float = DEFAULT_TIMEOUT_S, progress: bool = True,
              python: str = sys.executable) -> BatchReport:
    """Grade every submission under `submissions` into `out` (see the module docstring).

    `python` is the interpreter that runs `-m autograder grade` (the current one by default).
    """
    subs = discover(submissions)
    out.mkdir(parents=True, exist_ok=True)
    start = time.perf_counter()
    graded: list[str] = []
    skipped: list[str] = []
    failed: list[str] = []
    with Gradebook(out / "gradebook.sqlite") as book:
        todo: list[tuple[Submission, str]] = []
        for sub in subs:
            digest = content_hash(sub.path)
            if not force and book.known_hash(sub.student) == digest:
                skipped.append(sub.student)
                stored = book.results(sub.student)
                if stored is not None:
                    write_outputs(out / sub.student, sub.student, stored)
            else:
                todo.append((sub, digest))
        n_workers = max(1, workers or os.cpu_count() or 1)
        with ThreadPoolExecutor(max_workers=n_workers) as pool, \
                tqdm(total=len(todo), desc="grading", unit="submission", file=sys.stderr,
                     disable=not progress) as bar:
            futures = {pool.submit(grade_one, sub, out / sub.student, timeout_s, python): (sub, digest)
                       for sub, digest in todo}
            for future in as_completed(futures):
                sub, digest = futures[future]
                try:
                    result = future.result()
                except OSError as exc:  # the submission could not even be handed to the grader
                    result = Graded(sub.student, failure_results(f"could not start grading ({exc})"), 0.0, True)
                book.record(sub.student, str(sub.path), digest, result.results, result.duration_s,
                            result.grader_failed)
                write_outputs(out / sub.student, sub.student, result.results)
                graded.append(sub.student)
                if result.grader_failed:
                    failed.append(sub.student)
                bar.update(1)
        wanted = {s.student for s in subs}
        records = [r for r in book.records() if r.student in wanted]
    return BatchReport(sorted(graded), skipped, sorted(failed), records, time.perf_counter() - start)


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="python -m autograder grade-all", description=__doc__.splitlines()[0])
    parser.add_argument("submissions", type=Path, help="folder with one sub-folder or .zip per student")
    parser.add_argument("--csv", type=Path, help="export this batch's gradebook rows to this CSV file")
    parser.add_argument("--out", type=Path, default=Path("out/graded"),
                        help="per-student results, feedback and gradebook.sqlite (default out/graded)")
    parser.add_argument("--workers", type=int, default=None, help="parallel graders (default: number of cores)")
    parser.add_argument("--force", action="store_true", help="regrade submissions whose content is unchanged")
    parser.add_argument("--timeout", type=float, default=DEFAULT_TIMEOUT_S,
                        help=f"wall-clock limit per submission, s (default {DEFAULT_TIMEOUT_S:.0f})")
    parser.add_argument("--no-progress", action="store_true", help="no progress bar")
    parser.add_argument("--python", default=sys.executable,
                        help="interpreter that runs `-m autograder grade` (default: this one)")
    args = parser.parse_args(argv)
    try:
        report = grade_all(args.submissions, args.out, args.workers, args.force, args.timeout,
                           not args.no_progress, args.python)
    except (FileNotFoundError, ValueError) as exc:
        print(f"grade-all: {exc}", file=sys.stderr)
        return 2
    print(summary_table(report.records))
    print(f"graded {len(report.graded)}, skipped {len(report.skipped)} unchanged, "
          f"grader failed on {len(report.failed)}; {report.wall_s:.1f} s; gradebook {args.out / 'gradebook.sqlite'}")
    if args.csv:
        with Gradebook(args.out / "gradebook.sqlite") as book:
            rows = book.export_csv(args.csv, [r.student for r in report.records])
        print(f"wrote {args.csv} ({rows} rows)")
    return 0
