"""Grade a whole class: `python -m autograder grade-all SUBMISSIONS --csv grades.csv [--out DIR] [--workers N | --cluster ADDRESS] [--force]`.

How to use it is in README.md ("Grading a folder locally"); why a batch is sealed, and what that closes,
in docs/DESIGN.md ("Reading submissions and grading a batch"). `grade_all` does, in order:
1. finds what to grade (`autograder.batch.submissions`: folders, zips, Gradescope exports, each student's
   output folder); an entry refused is printed, with its reason, and listed in DIR/refused.txt;
2. skips a submission whose content hash is unchanged since it was last graded successfully by a grader
   with the same inputs (`grader_fingerprint`, with the exercises graded), unless `force`, and writes its
   files again from the gradebook (one whose files cannot be written is graded again);
3. grades the others (`_grade`), each in grader subprocesses (`autograder.batch.processes`: time limit,
   TMPDIR, the process tree ended), `workers` at once: sealed, every submission's public phase (`grade SUB
   --phase public --state STATE`), then, once the last one has ended and is sealed, every hidden phase
   (`grade SUB --phase hidden --state STATE --seal SEAL`). The states live in one grader-only folder (mode
   0700, removed at the end) beside the public cases' call specs, computed once for the batch; a
   submission whose public phase fails gets that failure and no hidden phase. With `cluster` the same
   processes run on Dask workers (`autograder.batch.cluster`);
4. records each grading as soon as it is complete (`_record`): the SQLite gradebook DIR/gradebook.sqlite
   with the history of every graded version, so that a rerun after any failure grades only what is left,
   and DIR/<student>/ results.json, grader.log, feedback.md, feedback_instructor.md
   (`autograder.batch.outputs`). A grading that cannot be recorded or written is recorded as grade-all's
   own failure for that student (0 points, said as such); the batch goes on;
5. returns a `BatchReport`; `autograder.batch.cli` prints the summary and writes the CSV, and
   `autograder.batch.regrade` runs `--dry-run`.
"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from tqdm import tqdm

from autograder.batch.cluster import Cluster, Remote, connect
from autograder.batch.gradebook import Gradebook, Record
from autograder.batch.outputs import write_outputs
from autograder.batch.processes import (
    Graded,
    Job,
    Scratch,
    Sealed,
    grade_hidden,
    grade_one,
    grade_public,
    sweep_stale_scratch,
)
from autograder.batch.submissions import (
    GRADEBOOK_NAME,
    REFUSED_NAME,
    Refused,
    Submission,
    content_hash,
    discover,
    grader_fingerprint,
    names_under,
)
from autograder.core.manifest import EXERCISES
from autograder.core.safetext import clean_text, terminal_text
from autograder.gradescope.fallback import failure_results
from autograder.runtime.sandbox import ladder
from autograder.runtime.sandbox.users import remove_tree

DEFAULT_TIMEOUT_S = sum(e.timeout_s for e in EXERCISES) + 120.0  # every exercise at its limit, plus start-up


@dataclass(frozen=True)
class BatchReport:
    graded: list[str]
    skipped: list[str]
    failed: list[str]
    records: list[Record]
    wall_s: float
    refused: list[Refused] = field(default_factory=list)


def _failure(student: str, reason: str) -> Graded:
    return Graded(student, failure_results(reason), 0.0, True)


def _record(book: Gradebook, sub: Submission, digest: str, result: Graded, out: Path, fingerprint: str) -> Graded:
    """Store one grading and write its files; a failure here costs only this student, and is recorded
    for them as the batch's own failure (not the submission's)."""
    try:
        book.record(
            sub.student, str(sub.path), digest, result.results, result.duration_s, result.grader_failed, fingerprint
        )
        if sub.name or sub.email:
            book.set_identity(sub.student, sub.name, sub.email)
        book.set_folder(sub.student, sub.out_folder)
        write_outputs(out / sub.out_folder, sub.name or sub.student, result.results)
        return result
    except Exception as exc:  # e.g. a results file the feedback writer cannot read, a folder it cannot write
        failed = _failure(
            sub.student,
            "grade-all itself failed, not the submission: it could not record this grading or write its "
            f"output files ({type(exc).__name__})",
        )
        print(
            f"grade-all: recording {terminal_text(sub.student)} into {terminal_text(out / sub.out_folder)} failed: "
            f"{type(exc).__name__}: {terminal_text(exc)}; recorded as the batch's own failure",
            file=sys.stderr,
        )
    try:
        book.record(sub.student, str(sub.path), digest, failed.results, result.duration_s, True)
    except Exception as exc:
        print(f"grade-all: {terminal_text(sub.student)} was not recorded ({type(exc).__name__})", file=sys.stderr)
    try:
        write_outputs(out / sub.out_folder, sub.student, failed.results)
    except Exception as exc:  # the other students go on
        print(
            f"grade-all: the failure files of {terminal_text(sub.student)} were not written either "
            f"({type(exc).__name__}: {terminal_text(exc)})",
            file=sys.stderr,
        )
    return failed


Store = Callable[[Job, Graded], None]  # records one grading: the gradebook, the student's files


@dataclass(frozen=True)
class Batch:
    """What every grader process of one batch shares: where the students' folders are, how many run at once,
    the time limit of a submission (both phases), the progress bar, the interpreter, the exercises graded
    and, with --cluster, where the processes run."""

    out: Path
    n_workers: int
    timeout_s: float
    progress: bool
    python: str
    exercises: Sequence[str] | None
    cluster: Cluster | None = None

    def folder(self, job: Job) -> Path:
        return self.out / job.sub.out_folder


def _failed_to_start(sub: Submission, exc: Exception) -> Graded:
    return _failure(sub.student, f"could not run grading ({type(exc).__name__}: {clean_text(exc)})")


def _each_in_pool(
    jobs: Sequence[Job],
    run: Callable[[Job], Any],
    done: Callable[[Job, Any], None],
    desc: str,
    batch: Batch,
    remote: Remote | None = None,
) -> None:
    """`run(job)` for every job, `batch.n_workers` at once, with a progress bar; `done(job, result)` as each
    ends. A job that raised (the submission could not even be handed to the grader) ends with the student's
    failure. With `remote` (a phase on a Dask cluster, `autograder.batch.cluster`) each job goes to the
    cluster's executor instead: `remote.ship(job)` is run there by `remote.run`, and `remote.receive` turns
    the answer into what `run` would have returned."""
    with (
        ThreadPoolExecutor(max_workers=batch.n_workers) if remote is None else remote.executor() as pool,
        tqdm(total=len(jobs), desc=desc, unit="submission", file=sys.stderr, disable=not batch.progress) as bar,
    ):
        futures = {}
        for job in jobs:
            try:
                futures[pool.submit(run, job) if remote is None else pool.submit(remote.run, remote.ship(job))] = job
            except Exception as exc:
                done(job, _failed_to_start(job.sub, exc))
                bar.update(1)
        for future in as_completed(futures):
            job = futures.pop(future)  # the last reference to it: a cluster forgets a result once received
            try:
                result = future.result() if remote is None else remote.receive(job, future.result())
            except Exception as exc:
                result = _failed_to_start(job.sub, exc)
            del future
            done(job, result)
            bar.update(1)


def _grade(todo: Sequence[Job], batch: Batch, store: Store, sealed: bool) -> None:
    """Grade every job and `store` each grading once it is complete.

    Sealed: every submission's public phase (`grade_public`), then, once the last has ended and is sealed
    (the barrier), every hidden phase (`grade_hidden`). The public cases' call specs are computed once,
    here, and handed to every public phase; the sealed states live in one grader-only folder (mode 0700,
    a `Scratch`, locked while the batch lives: a killed batch's is swept by the next), removed at the end,
    also on an error.
    Unsealed: each submission in one grader process (`grade_one`), side by side with the others.
    """
    cluster = batch.cluster
    if not sealed:
        _each_in_pool(
            todo,
            lambda job: grade_one(job.sub, batch.folder(job), batch.timeout_s, batch.python, batch.exercises),
            store,
            "grading",
            batch,
            None if cluster is None else cluster.one(batch.out, batch.timeout_s, batch.python, batch.exercises),
        )
        return
    held = Scratch(0o700)
    states = held.path
    try:
        specs: Path | None = states / "public_specs.json"
        try:  # once for the batch (ex10's cases import torch: 1.5 s of CPU in every process that loads them)
            from autograder.runtime import grader

            grader.write_public_specs(states / "public_specs.json", batch.exercises)
        except Exception as exc:  # each public phase computes them then
            print(f"grade-all: the public call specs were not computed ({type(exc).__name__})", file=sys.stderr)
            specs = None
        ready: list[Job] = []

        def public_done(job: Job, first: Sealed | Graded) -> None:
            if isinstance(first, Sealed):
                ready.append(replace(job, state=None, sealed=first))
            else:  # no hidden phase: its failure is what the student sees
                store(job, first)

        def hidden_done(job: Job, result: Graded) -> None:
            assert job.sealed is not None
            remove_tree(job.sealed.state)
            store(job, result)

        def public(job: Job) -> Sealed | Graded:
            assert job.state is not None
            return grade_public(
                job.sub, batch.folder(job), job.state, batch.timeout_s, batch.python, batch.exercises, specs
            )

        def hidden(job: Job) -> Graded:
            assert job.sealed is not None
            return grade_hidden(job.sub, batch.folder(job), job.sealed, batch.timeout_s, batch.python)

        public_jobs = [replace(job, state=states / f"s{index:06d}") for index, job in enumerate(todo)]
        _each_in_pool(
            public_jobs,
            public,
            public_done,
            "public phases",
            batch,
            None
            if cluster is None
            else cluster.public(batch.out, batch.timeout_s, batch.python, batch.exercises, specs),
        )
        # the barrier: every public phase above has ended and is sealed; no hidden case ran before this line
        if cluster is not None:  # and none runs anywhere in the cluster (a worker's rerun, say)
            try:
                cluster.close_public(batch.timeout_s)
            except Exception as exc:  # a hung or unreachable worker: no hidden phase may start, each sealed
                # student gets the batch's own failure (a valid results.json) and a regrade grades them
                for job in ready:
                    hidden_done(job, _failure(job.sub.student, f"grade-all itself failed, not the submission: {exc}"))
                return
        _each_in_pool(
            sorted(ready, key=lambda job: job.sub.student),
            hidden,
            hidden_done,
            "hidden phases",
            batch,
            None if cluster is None else cluster.hidden(batch.out, batch.timeout_s, batch.python),
        )
    finally:
        held.remove()


def _private_paths(out: Path, submissions: Path) -> None:
    """Refuse an input or output folder other users can read where only file modes keep student code from it
    (`ladder.exposed`: the other students' submissions, results, feedback and the gradebook)."""
    for path, what in ((submissions, "the submissions"), (out, "the output folder")):
        why = ladder.exposed(path, what)
        if why:
            raise ValueError(why)


def grade_all(
    submissions: Path,
    out: Path,
    workers: int | None = None,
    force: bool = False,
    timeout_s: float = DEFAULT_TIMEOUT_S,
    progress: bool = True,
    python: str = sys.executable,
    exercises: Sequence[str] | None = None,
    also_writes: Sequence[Path] = (),
    not_submissions: Sequence[Path] = (),
    sealed: bool = True,
    cluster: str | None = None,
) -> BatchReport:
    """Grade every submission under `submissions` into `out` (see the module docstring).

    `python` is the interpreter that runs `-m autograder grade` (the current one by default);
    `exercises` limits grading to these exercise ids (default: all); `also_writes` are further files
    the caller writes after the batch (the --csv export): where one lies in `out`, no student's folder
    takes its name; `not_submissions`: further output folders that are never graded as students (the
    real --out of a dry run, which grades into a temporary folder; like every folder outside the
    sandbox's allow-list, the children do not see it). `sealed=False` grades each submission with both phases in one grader process, side by side
    with the others (the batch before the seal: one student's public phase may run while another's
    hidden phase does), for measurements and for the tests that show what the seal closes. `cluster`: a Dask
    scheduler's address, or `local:N`, for the grader processes (`autograder.batch.cluster`; `workers` unused).
    """
    out.mkdir(mode=0o700, parents=True, exist_ok=True)  # results, feedback, the gradebook: not other users'
    _private_paths(out, submissions)
    sweep_stale_scratch()
    subs, refused = discover(submissions, out, names_under(out, also_writes), not_submissions)
    for item in refused:
        print(f"grade-all: refused {terminal_text(item.entry)}: {terminal_text(item.reason)}", file=sys.stderr)
    refused_path = out / REFUSED_NAME
    if refused:
        listed = "".join(f"{terminal_text(r.entry)}\t{terminal_text(r.reason)}\n" for r in refused)
        refused_path.write_text(listed, encoding="utf-8")
    else:
        refused_path.unlink(missing_ok=True)
    start = time.perf_counter()
    graded: list[str] = []
    skipped: list[str] = []
    failed: list[str] = []
    # the exercises graded are part of it: a full run after an --exercises run grades everything again
    fingerprint = grader_fingerprint() + ("" if exercises is None else ":" + ",".join(sorted(exercises)))
    with Gradebook(out / GRADEBOOK_NAME) as book:
        todo: list[Job] = []
        for sub in subs:
            digest = content_hash(sub.path)
            if (
                not force
                and book.known_hash(sub.student) == digest
                and book.status(sub.student) == "graded"
                and book.fingerprint(sub.student) == fingerprint
            ):
                skipped.append(sub.student)
                stored = book.results(sub.student)
                try:
                    if stored is not None:
                        write_outputs(out / sub.out_folder, sub.name or sub.student, stored)
                    continue
                except Exception:  # its files cannot be rewritten: graded again, and any failure recorded
                    skipped.pop()
            todo.append(Job(sub, digest))
        batch = Batch(out, max(1, workers or os.cpu_count() or 1), timeout_s, progress, python, exercises)

        def store(job: Job, result: Graded) -> None:
            result = _record(book, job.sub, job.digest, result, out, fingerprint)
            graded.append(job.sub.student)
            if result.grader_failed:
                failed.append(job.sub.student)

        if cluster is None or not todo:
            _grade(todo, batch, store, sealed)
        else:
            with connect(cluster) as where:  # distributed: in the instructor's extra only
                _grade(todo, replace(batch, cluster=where), store, sealed)
        wanted = {s.student for s in subs}
        records = [r for r in book.records() if r.student in wanted]
    return BatchReport(sorted(graded), skipped, sorted(failed), records, time.perf_counter() - start, refused)
