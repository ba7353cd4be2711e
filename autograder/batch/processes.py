"""One student's grading as a process tree: start the single-submission grader (public or hidden phase) in a
subprocess with a TMPDIR of its own, stop it at its time limit, and end everything it started.

A crash, a hang or a runaway submission only ever affects its student: when a grader process exits or
reaches its time limit (one per submission, across both phases: the hidden phase gets what the public
phase left), it and every process it started that is still its descendant or in its process group are
stopped (SIGSTOP, so none can fork) and killed, while the grader is kept unreaped so that its pid and group
cannot be reused meanwhile; the student gets a results.json saying what happened. (A process that left both
the tree and the group is the sandbox's to end: its children die with the grader, see
`autograder.runtime.sandbox.runner`.) Its TMPDIR is removed once it has ended, killed or not, and on Linux
it dies with the batch process (PR_SET_PDEATHSIG), so a killed batch leaves no grader running; the TMPDIRs
and sealed states a killed batch left behind are removed by the next batch (`sweep_stale_scratch`). The
sealed two-phase order is the batch's (`autograder.batch.bulk`).
"""

from __future__ import annotations

import contextlib
import dataclasses
import fcntl
import os
import re
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from autograder.batch.submissions import Submission, zip_is_readable
from autograder.core.manifest import ROOT
from autograder.core.safetext import clean_data
from autograder.gradescope.fallback import failure_results, readable_results
from autograder.runtime import phases
from autograder.runtime.sandbox import ladder, turns
from autograder.runtime.sandbox.users import proc_status, remove_tree

LOG_TAIL_CHARS = 6000

WAIT_POLL_S = 0.05

SCRATCH_PREFIX = "a2batch-"  # + the pid of the process that made it + "-" + mkdtemp's random part (`Scratch`)

# Starts the grader so that it dies with the batch (PR_SET_PDEATHSIG survives execve): argv is the
# batch's pid, then the grader's command. The check after prctl closes the race with an early death.
DIE_WITH_BATCH = (
    "import ctypes, os, signal, sys\n"
    "ctypes.CDLL(None, use_errno=True).prctl(1, int(signal.SIGKILL), 0, 0, 0)\n"
    "if os.getppid() != int(sys.argv[1]):\n"
    "    os._exit(70)\n"
    "os.execvp(sys.argv[2], sys.argv[2:])\n"
)

KILL_ROUNDS = 100  # SIGSTOP sweeps over the grader's tree before the SIGKILL (a sweep finds new forks)


@dataclass(frozen=True)
class Graded:
    student: str
    results: dict[str, Any]
    duration_s: float
    grader_failed: bool


def _process_table() -> dict[int, int]:
    """{pid: parent pid} of every process visible in /proc (empty where there is no /proc)."""
    table: dict[int, int] = {}
    for pid, fields in proc_status():
        try:
            table[pid] = int(fields["PPid"])
        except (KeyError, ValueError):
            continue
    return table


def descendants(root_pid: int) -> set[int]:
    """The pids below `root_pid` in the process tree (children, their children ...)."""
    children: dict[int, list[int]] = {}
    for pid, ppid in _process_table().items():
        children.setdefault(ppid, []).append(pid)
    found: set[int] = set()
    todo = [root_pid]
    while todo:
        for child in children.get(todo.pop(), []):
            if child not in found:
                found.add(child)
                todo.append(child)
    return found


def _signal(pid: int, sig: int) -> None:
    try:
        os.kill(pid, sig)
    except (ProcessLookupError, PermissionError):
        pass


def end_process_tree(root_pid: int) -> int:
    """Stop then kill `root_pid`, its descendants and its process group; return how many were found.

    The caller keeps `root_pid` unreaped (a zombie at worst), so neither its pid nor its process
    group id can be reused by an unrelated process while this runs.
    """
    stopped: set[int] = set()
    for _ in range(KILL_ROUNDS):
        fresh = (descendants(root_pid) | {root_pid}) - stopped
        if not fresh:
            break
        for pid in fresh:
            _signal(pid, signal.SIGSTOP)
        stopped |= fresh
    try:
        os.killpg(root_pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
    for pid in stopped:
        _signal(pid, signal.SIGKILL)
    return len(stopped - {root_pid})


def _wait_unreaped(proc: subprocess.Popen, timeout_s: float) -> bool:
    """Wait up to `timeout_s` for `proc` to exit, leaving it unreaped where the system allows
    (os.waitid with WNOWAIT); True when it has exited."""
    if not hasattr(os, "waitid"):  # e.g. macOS: reaped here; its group id could then be reused, rarely
        try:
            proc.wait(timeout=timeout_s)
            return True
        except subprocess.TimeoutExpired:
            return False
    deadline = time.monotonic() + timeout_s
    while True:
        try:
            info = os.waitid(os.P_PID, proc.pid, os.WEXITED | os.WNOWAIT | os.WNOHANG)
        except ChildProcessError:
            return True
        if info is not None:
            return True
        if time.monotonic() >= deadline:
            return False
        time.sleep(WAIT_POLL_S)


class Scratch:
    """A scratch folder in the temporary folder (a grader's TMPDIR, a batch's sealed states, a worker's task
    folder), live while this object holds an exclusive flock on the folder itself.

    The lock is taken right after mkdtemp, before anything is put in the folder, and kept (on a close-on-exec
    fd) until `remove` has deleted the folder. A process that dies, in whatever PID namespace, drops it, and
    the next `sweep_stale_scratch` removes the folder; a live one never loses its folder to a sweep. A sweep
    that takes the lock of a fresh folder in the instant before its maker does wins it: the maker sees it
    lost (the lock is held or the folder is gone) and makes another.
    """

    def __init__(self, mode: int = 0o700) -> None:
        for _ in range(100):
            path = Path(tempfile.mkdtemp(prefix=f"{SCRATCH_PREFIX}{os.getpid()}-"))
            try:
                fd = os.open(path, _FOLDER_FLAGS)
            except FileNotFoundError:
                continue
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                held, there = os.fstat(fd), os.lstat(path)
                kept = (held.st_dev, held.st_ino) == (there.st_dev, there.st_ino)
            except OSError:  # a sweep holds it, or removed it meanwhile
                kept = False
            if kept:
                self.path, self._fd = path, fd
                try:
                    os.fchmod(fd, mode)
                except BaseException:
                    self.remove()
                    raise
                return
            os.close(fd)
        raise OSError(f"no scratch folder could be kept in {tempfile.gettempdir()} (100 were swept as made)")

    def remove(self) -> None:
        """Delete the folder at any depth (never following links), then drop the lock; once."""
        if self._fd < 0:
            return
        try:
            remove_tree(self.path)
        finally:
            os.close(self._fd)
            self._fd = -1

    def __enter__(self) -> Path:
        return self.path

    def __exit__(self, *exc: object) -> None:
        self.remove()


_FOLDER_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK

_SCRATCH_NAME = re.compile(re.escape(SCRATCH_PREFIX) + r"\d+-\w+")


def sweep_stale_scratch() -> int:
    """Remove the scratch folders (`Scratch`) that processes which died without cleaning up left in the
    temporary folder (a killed batch or worker); return how many.

    A folder is removed only when it is named like a Scratch, is a folder (never a link: the name is opened
    with O_NOFOLLOW), belongs to this process's effective uid (never another user's), and its lock can be
    taken without waiting: nobody holds it, whatever PID namespace made it (graders in containers that share
    /tmp). The lock is held, and the name checked to still be that folder, while it is removed.
    """
    top = tempfile.gettempdir()
    try:
        top_fd = os.open(top, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    except OSError:
        return 0
    removed = 0
    try:
        for name in os.listdir(top_fd):
            if _SCRATCH_NAME.fullmatch(name) is None:
                continue
            try:
                fd = os.open(name, _FOLDER_FLAGS, dir_fd=top_fd)
            except OSError:  # a link, a file, another user's private folder, gone
                continue
            try:
                held = os.fstat(fd)
                if held.st_uid != os.geteuid():
                    continue
                try:
                    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                except OSError:  # live: its maker holds the lock
                    continue
                there = os.stat(name, dir_fd=top_fd, follow_symlinks=False)
                if (there.st_dev, there.st_ino) != (held.st_dev, held.st_ino):
                    continue
                remove_tree(Path(top) / name)
                removed += 1
            except OSError:
                continue
            finally:
                os.close(fd)
    finally:
        os.close(top_fd)
    return removed


@dataclass(frozen=True)
class Ended:
    """How one grader process ended (`run_grader`)."""

    finished: bool  # it exited by itself within its time limit
    leftovers: int  # processes of its tree or group still there afterwards, all killed
    status: int  # its exit status (negative: the signal that killed it)
    duration_s: float


def run_grader(
    grade: Sequence[str],
    student_dir: Path,
    log_path: Path,
    timeout_s: float,
    append: bool = False,
) -> Ended:
    """Run one grader process (`grade`: its command) for a submission and end everything it started.

    Its output goes to `log_path` (appended to with `append`). The grader's temporary files (its copy
    of the submission's files, the sandbox folders) go to a folder of their own (TMPDIR), removed when
    the grader has ended, also after it was killed. On Linux the grader is killed by the kernel if the
    batch process dies first (PR_SET_PDEATHSIG). The sandboxed children see neither the batch's
    outputs (results, feedback, gradebook) nor the other students' submissions nor the sealed states:
    their root holds only what `autograder.runtime.sandbox.runner` allows.
    """
    cmd = [sys.executable, "-c", DIE_WITH_BATCH, str(os.getpid()), *grade] if sys.platform == "linux" else list(grade)
    try:
        rung: ladder.Rung | None = ladder.current()
    except ladder.Refused:
        rung = None  # the grader refuses by itself, before any student code runs
    takes_turns = rung is not None and not turns.side_by_side(rung)
    # Where exercises take turns (`turns`), the whole grader process takes one, before its time limit starts: a
    # neighbour whose exercises run into their limits then delays it without eating its time limit.
    with turns.turn(rung) if rung is not None else contextlib.nullcontext():
        start = time.perf_counter()
        held = Scratch(0o711)  # the sandbox user may pass through to its own folder, not list or write here
        try:
            env = {k: v for k, v in os.environ.items() if k != turns.HELD_ENV}
            env.update(TMPDIR=str(held.path), **({turns.HELD_ENV: "1"} if takes_turns else {}))
            with log_path.open("ab" if append else "wb") as log:
                proc = subprocess.Popen(
                    cmd,
                    cwd=str(ROOT),
                    stdout=log,
                    stderr=subprocess.STDOUT,
                    env=env,
                    stdin=subprocess.DEVNULL,
                    start_new_session=True,
                )
                finished = _wait_unreaped(proc, timeout_s)
                leftovers = end_process_tree(proc.pid)
                status = proc.wait()
        finally:
            held.remove()
        return Ended(finished, leftovers, status, time.perf_counter() - start)


def _ended_results(
    sub: Submission, results_path: Path | None, log_path: Path, ended: Ended, timeout_s: float, what: str
) -> Graded:
    """The student's grading from a grader process that ended: results.json as written (read from
    `results_path`), else a failure saying why (`what`: what the grader did not write)."""
    reason = ""
    if not ended.finished:
        reason = (
            f"grading took longer than {timeout_s:.0f} s and was stopped (the grader and the "
            f"{ended.leftovers} process(es) it had started were killed)"
        )
    results = None if reason or results_path is None else readable_results(results_path)
    if results is None:
        if not reason:
            reason = f"the grader exited with status {ended.status} without writing {what}" + (
                "" if sub.path.is_dir() or zip_is_readable(sub.path) else " (the zip file is damaged)"
            )
        tail = log_path.read_text(encoding="utf-8", errors="replace")[-LOG_TAIL_CHARS:]
        return Graded(sub.student, clean_data(failure_results(reason, tail)), ended.duration_s, True)
    return Graded(sub.student, clean_data(results), ended.duration_s, False)


def _grade_command(python: str, sub: Submission) -> list[str]:
    """The grader's command line; --unsafe-no-sandbox only when this process was allowed it (grade-all's own
    flag: never on a Dask worker, which never calls `ladder.allow_unsafe`).

    The submission is named by its class folder's real path and its own entry's name, never resolved: an
    entry swapped for a symbolic link after discovery reaches the grader as a link, which it refuses
    (`grader.refusal` with in_a_class, `intake.locate` with follow_link=False)."""
    unsafe = ["--unsafe-no-sandbox"] if ladder.unsafe_allowed() else []
    path = Path(os.path.abspath(sub.path))
    return [python, "-m", "autograder", "grade", str(path.parent.resolve() / path.name), *unsafe]


def grade_one(
    sub: Submission,
    student_dir: Path,
    timeout_s: float,
    python: str = sys.executable,
    exercises: Sequence[str] | None = None,
) -> Graded:
    """Grade one submission with both phases in one grader process (`grade SUB --out ...`); never raises
    for anything the submission does. A batch grades with `grade_public` and `grade_hidden` instead
    (`grade_all(sealed=False)` uses this: the batch before the seal, for measurements and tests).
    """
    student_dir.mkdir(parents=True, exist_ok=True)
    results_path = student_dir / "results.json"
    log_path = student_dir / "grader.log"
    results_path.unlink(missing_ok=True)
    grade = [*_grade_command(python, sub), "--in-class", "--out", str(results_path.resolve())]
    if exercises:
        grade += ["--exercises", *exercises]
    ended = run_grader(grade, student_dir, log_path, timeout_s)
    return _ended_results(sub, results_path, log_path, ended, timeout_s, "a readable results.json")


@dataclass(frozen=True)
class Sealed:
    """A submission whose public phase ended and is sealed (`autograder.runtime.phases`): what its hidden phase needs."""

    student: str
    state: Path  # the grader-only folder holding the sealed public phase
    seal: str  # sha256 of its public.json, taken by the batch when the public phase's process had ended
    duration_s: float  # the public phase's wall time


@dataclass(frozen=True)
class Job:
    """One submission on its way through a batch (`autograder.batch.bulk`): the submission, the content
    digest its grading is recorded with, and what its current phase needs: `state`, the grader-only folder
    a public phase seals into; `sealed`, the sealed public phase a hidden phase continues."""

    sub: Submission
    digest: str
    state: Path | None = None
    sealed: Sealed | None = None


def grade_public(
    sub: Submission,
    student_dir: Path,
    state: Path,
    timeout_s: float,
    python: str = sys.executable,
    exercises: Sequence[str] | None = None,
    specs: Path | None = None,
) -> Sealed | Graded:
    """Phase 1 of one submission in its own grader process (`grade SUB --phase public --state STATE`):
    intake and every exercise's public phase, sealed in `state` (absent or empty; grader-only).

    Returns the seal, fixed here once the process and everything it started have ended; or, when the
    grader timed out, crashed or left no sealed state, the student's failure (as `grade_one` would), which
    has no hidden phase. Never raises for anything the submission does. `specs`: the batch's public call specs
    (`grader.write_public_specs`), so that the process does not load the case files.
    """
    student_dir.mkdir(parents=True, exist_ok=True)
    results_path = student_dir / "results.json"
    log_path = student_dir / "grader.log"
    results_path.unlink(missing_ok=True)
    grade = [*_grade_command(python, sub), "--phase", "public", "--state", str(state.resolve())]
    if specs is not None:
        grade += ["--public-specs", str(specs.resolve())]
    if exercises:
        grade += ["--exercises", *exercises]
    ended = run_grader(grade, student_dir, log_path, timeout_s)
    if ended.finished:
        try:
            seal = phases.read_seal(state)
            if phases.state_digest(state) == seal:
                return Sealed(sub.student, state, seal, ended.duration_s)
        except phases.SealError:
            pass
    return _ended_results(sub, None, log_path, ended, timeout_s, "its sealed public phase")


def grade_hidden(
    sub: Submission,
    student_dir: Path,
    sealed: Sealed,
    timeout_s: float,
    python: str = sys.executable,
) -> Graded:
    """Phase 2 of one submission in its own grader process (`grade SUB --out results.json --phase hidden
    --state STATE --seal SEAL`): the hidden phases and results.json; never raises for anything the
    submission does.

    `timeout_s` is the submission's whole time limit: this process gets what the public phase left. A
    state that no longer matches its seal after this process ended is the batch's failure for the
    student, whatever results.json says.
    """
    results_path = student_dir / "results.json"
    log_path = student_dir / "grader.log"
    results_path.unlink(missing_ok=True)
    grade = [*_grade_command(python, sub), "--out", str(results_path.resolve())]
    grade += ["--phase", "hidden", "--state", str(sealed.state.resolve()), "--seal", sealed.seal]
    left_s = max(0.0, timeout_s - sealed.duration_s)
    ended = run_grader(grade, student_dir, log_path, left_s, append=True)
    ended = dataclasses.replace(ended, duration_s=sealed.duration_s + ended.duration_s)
    graded = _ended_results(sub, results_path, log_path, ended, timeout_s, "a readable results.json")
    try:
        intact = phases.state_digest(sealed.state) == sealed.seal
    except phases.SealError:
        intact = False
    if not intact:
        reason = "grade-all itself failed, not the submission: the sealed public phase changed during the hidden phase"
        return Graded(sub.student, failure_results(reason), graded.duration_s, True)
    return graded
