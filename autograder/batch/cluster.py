"""grade-all on a Dask cluster (`grade-all SUBMISSIONS --cluster ADDRESS`, or `--cluster local:N`): each grader
process of the batch runs on a Dask worker instead of beside the batch; the batch, the coordinator, keeps the rest.

What goes where:
- A worker runs the very grader process a local batch runs (`autograder.batch.processes`: `grade_public`,
  `grade_hidden`, `grade_one`: the sandboxed `python -m autograder grade ... --phase public|hidden --state ...`,
  its time limit, the process-tree sweep, death with the worker through PR_SET_PDEATHSIG), in a scratch
  folder of its own (mode 0700, a `processes.Scratch`, locked while the worker process lives, removed after the
  task; a killed worker's is swept at the next batch's start, also by a worker in another PID namespace). It writes nothing else: it returns the grading, the grader's log and, for a
  sealed public phase, the sealed state's files (`Returned`).
- The coordinator alone writes the gradebook and every student's folder (grader.log from the returned log,
  results.json and the feedback from the returned grading, as a local batch does).

The sealed state travels with the tasks; no filesystem is shared for it. The public phase's worker reads the
seal the grader wrote once the grader's process tree has ended (as `grade_public` does locally) and sends the
state's files back; the coordinator unpacks them into its own grader-only states folder and accepts them only
if `phases.read_seal(state) == the returned seal == phases.state_digest(state)` (sha256 of public.json),
else the student gets grade-all's own failure. The hidden phase's task carries those files and the seal to a
worker, which unpacks them into a fresh 0700 folder and runs `grade --phase hidden --seal SEAL`: the grader
checks public.json and every located file against the seal before grading, and `grade_hidden` fails the
student if the state changed during the phase. So the sha256 check holds end to end whichever workers run
the two phases. A state is small (public.json and the located exercise files: at most
intake.MAX_EXTRACT_BYTES; typically tens of KB).

The submissions do not travel: every worker reads a student's submission at the absolute path the
coordinator sees (resolved there). With `local:N` that is the same machine; with a remote ADDRESS, SUBMISSIONS
(and, for a Gradescope export zip, --out, where it is unpacked) must be on a filesystem every worker mounts at
the same path (read-only is enough), and every worker must run the same checkout of this package at the same
path (`make setup` there; bubblewrap installed): a worker whose `grader_fingerprint` differs from the
coordinator's, or that cannot see the submission or the grader's interpreter, refuses the task (Dask retries
it elsewhere; failing everywhere, the student gets grade-all's failure, graded again on the next run).

The batch-wide seal across the cluster: the coordinator hands out the hidden phases only once every public
phase's result has come back (`bulk._grade`'s barrier). A worker that dies during a task costs that
task a rerun on another worker, and its grader processes die with it (Dask's scheduler reschedules the
task up to `ALLOWED_FAILURES` times with `local:N`, a remote scheduler's `distributed.scheduler.allowed-failures`
times otherwise, and fails it at the next death; a task that raised is tried `RETRIES` more times). Dask
would also recompute a finished task whose result was lost with its worker while a client still holds
it: each result is dropped as soon as it is received, and at the barrier (`Cluster.close_public`) the
coordinator closes the batch's public gate (a Dask Event) and waits until no worker runs one of its public
tasks. A public task counts itself as running before it reads the gate, and runs no grader once the gate
is closed: either the barrier's poll sees it or it sees the gate. So no hidden phase starts on a connected
worker while a public phase of the batch runs anywhere in the cluster. Not covered: a worker cut off from
the scheduler but still running (its public grader may go on until its time limit, on its own machine),
and other batches or programs on the same workers (give a batch its own workers, as one batch per machine
locally). A script calling `grade_all(cluster="local:N")` needs an `if __name__ == "__main__":` guard
(Dask starts its worker processes with multiprocessing's spawn).
"""

from __future__ import annotations

import dataclasses
import logging
import os
import shutil
import socket
import threading
import time
import uuid
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import Executor
from contextlib import contextmanager
from dataclasses import dataclass
from functools import partial
from pathlib import Path, PurePosixPath
from typing import Any

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
from autograder.batch.submissions import Submission, grader_fingerprint
from autograder.gradescope.fallback import failure_results
from autograder.runtime import phases
from autograder.runtime.sandbox import ladder

LOCAL_PREFIX = "local:"  # --cluster local:N: a LocalCluster of N worker processes, one thread each
RETRIES = 2  # further tries for a task that raised (a worker that cannot see the submission, ...)
ALLOWED_FAILURES = 3  # reruns of a task whose worker died; the next death fails it (local:N; Dask's default too)
CONNECT_TIMEOUT_S = 60.0  # to reach the scheduler, then to see a first worker
GATE_POLL_S = 0.2  # how often the barrier asks the workers whether a public task still runs
GATE_MARGIN_S = 120.0  # the barrier waits at most the grading time limit and this for the last public task
LOG_MAX_BYTES = 8 * 2**20  # a grader log sent back longer than this keeps its end only

StateFiles = tuple[tuple[str, bytes | None], ...]  # (posix path under the state, bytes; None: a folder)


@dataclass(frozen=True)
class Returned:
    """What a worker sends back for one grader process."""

    graded: Graded | None  # the grading (hidden phase, both phases), or the public phase's failure
    log: bytes = b""  # the grader's log (grader.log), the public phase's included for a hidden phase
    seal: str = ""  # a sealed public phase: its seal, read once its process tree had ended
    duration_s: float = 0.0  # a sealed public phase: its wall time
    state: StateFiles = ()  # a sealed public phase: the files of its state


@dataclass(frozen=True)
class Remote:
    """One phase on the cluster, as `bulk._each_in_pool` runs it: `ship(job)` on the coordinator gives what a
    worker needs, `run(shipped)` runs on the worker, `receive(job, returned)` turns its answer into what the
    local pool's call would have returned (writing the student's grader.log)."""

    executor: Callable[[], Executor]
    run: Callable[[Any], Any]
    ship: Callable[[Any], Any]
    receive: Callable[[Any, Any], Any]


# ---------------------------------------------------------------------------------------------
# The state's files, packed for a task and unpacked at the other end.


def pack_state(state: Path) -> StateFiles:
    """Every folder and regular file under `state` (links and anything else left out: a sealed state has none,
    and the seal check fails if a sealed file is missing)."""
    entries: list[tuple[str, bytes | None]] = []
    for dirpath, dirnames, filenames in os.walk(state):
        here = Path(dirpath)
        for name in sorted(dirnames):
            if not (here / name).is_symlink():
                entries.append(((here / name).relative_to(state).as_posix(), None))
        for name in sorted(filenames):
            path = here / name
            if path.is_file() and not path.is_symlink():
                entries.append((path.relative_to(state).as_posix(), path.read_bytes()))
    return tuple(entries)


def unpack_state(entries: StateFiles, state: Path) -> None:
    """Write `entries` into `state`, which must not exist yet (made with mode 0700, files 0600); a path that
    is absolute or climbs out (`..`) raises ValueError."""
    state.mkdir(mode=0o700)
    for rel, data in entries:
        parts = PurePosixPath(rel).parts
        if not parts or rel.startswith("/") or any(p in ("", ".", "..") for p in parts):
            raise ValueError(f"a state entry outside the state: {rel!r}")
        path = state.joinpath(*parts)
        if data is None:
            path.mkdir(mode=0o700, parents=True, exist_ok=True)
            continue
        path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)


# ---------------------------------------------------------------------------------------------
# On a worker.

_RUNNING: Counter[str] = Counter()  # public tasks of each batch (gate name) running in this worker process
_RUNNING_LOCK = threading.Lock()


def running_public(gate: str) -> int:
    """How many public tasks of the batch behind `gate` this worker process runs now (`Client.run`)."""
    with _RUNNING_LOCK:
        return _RUNNING[gate]


def _gate_closed(gate: str) -> bool:
    from distributed import Event

    return bool(Event(gate).is_set())


@contextmanager
def _scratch() -> Iterator[Path]:
    with Scratch(0o700) as folder:  # locked while this worker process lives (a killed worker's is swept)
        yield folder


def _check_worker(sub: Submission, python: str, fingerprint: str, needs_submission: bool) -> None:
    """Raise (Dask then retries the task elsewhere) when this worker cannot grade as the coordinator would."""
    host = socket.gethostname()
    if grader_fingerprint() != fingerprint:
        raise RuntimeError(f"worker {host} has another grader (its checkout differs from the coordinator's)")
    if shutil.which(python) is None:
        raise FileNotFoundError(f"worker {host} has no interpreter {python}")
    if needs_submission and not sub.path.exists():
        raise FileNotFoundError(
            f"worker {host} does not see {sub.path}: submissions must be at the same path on every worker"
        )
    try:
        ladder.current()  # a worker that cannot isolate student code refuses its tasks (never --unsafe-no-sandbox)
    except ladder.Refused as exc:
        raise RuntimeError(f"worker {host} cannot isolate student code: {exc}") from None


def _log(student_dir: Path) -> bytes:
    try:
        data = (student_dir / "grader.log").read_bytes()
    except OSError:
        return b""
    if len(data) <= LOG_MAX_BYTES:
        return data
    return b"[grader log cut: its first %d bytes are left out]\n" % (len(data) - LOG_MAX_BYTES) + data[-LOG_MAX_BYTES:]


def public_task(
    shipped: tuple[Submission, bytes | None],
    gate: str,
    fingerprint: str,
    timeout_s: float,
    python: str,
    exercises: Sequence[str] | None,
) -> Returned | None:
    """A public phase on a worker (`grade_public` in a scratch folder); None when the batch's public gate is
    closed (a rerun Dask started after the result was received: no grader is run)."""
    sub, specs = shipped
    with _RUNNING_LOCK:
        _RUNNING[gate] += 1  # counted before the gate is read: the barrier either sees this task or closed it out
    try:
        if _gate_closed(gate):
            return None
        _check_worker(sub, python, fingerprint, needs_submission=True)
        with _scratch() as scratch:
            specs_path = None
            if specs is not None:
                specs_path = scratch / "public_specs.json"
                specs_path.write_bytes(specs)
            student_dir = scratch / "student"
            first = grade_public(sub, student_dir, scratch / "state", timeout_s, python, exercises, specs_path)
            if isinstance(first, Graded):
                return Returned(first, _log(student_dir))
            return Returned(None, _log(student_dir), first.seal, first.duration_s, pack_state(first.state))
    finally:
        with _RUNNING_LOCK:
            _RUNNING[gate] -= 1
            if not _RUNNING[gate]:
                del _RUNNING[gate]


def hidden_task(
    shipped: tuple[Submission, str, float, StateFiles, bytes], fingerprint: str, timeout_s: float, python: str
) -> Returned:
    """A hidden phase on a worker: the shipped state unpacked into a fresh 0700 folder, `grade_hidden` on it
    (the grader checks it against the seal), the public phase's log continued."""
    sub, seal, public_s, state_files, log = shipped
    _check_worker(sub, python, fingerprint, needs_submission=False)
    with _scratch() as scratch:
        state = scratch / "state"
        unpack_state(state_files, state)
        student_dir = scratch / "student"
        student_dir.mkdir()
        (student_dir / "grader.log").write_bytes(log)
        graded = grade_hidden(sub, student_dir, Sealed(sub.student, state, seal, public_s), timeout_s, python)
        return Returned(graded, _log(student_dir))


def one_task(
    sub: Submission, fingerprint: str, timeout_s: float, python: str, exercises: Sequence[str] | None
) -> Returned:
    """Both phases in one grader process on a worker (`grade_one`: grade_all(sealed=False))."""
    _check_worker(sub, python, fingerprint, needs_submission=True)
    with _scratch() as scratch:
        graded = grade_one(sub, scratch / "student", timeout_s, python, exercises)
        return Returned(graded, _log(scratch / "student"))


def prepare_worker() -> int:
    """Run on every worker as the batch starts: remove the scratch folders of worker processes that died."""
    return sweep_stale_scratch()


# ---------------------------------------------------------------------------------------------
# On the coordinator.


def _resolved(sub: Submission) -> Submission:
    return dataclasses.replace(sub, path=sub.path.resolve())


def _write_log(out: Path, sub: Submission, returned: Returned) -> Path:
    student_dir = out / sub.out_folder
    student_dir.mkdir(parents=True, exist_ok=True)
    (student_dir / "grader.log").write_bytes(returned.log)
    return student_dir


def _not_returned(returned: Returned | None) -> Returned:
    if returned is None:  # only a task rerun after its result was received is refused, and nobody waits for it
        raise RuntimeError("the cluster refused a public phase: the batch's public gate was already closed")
    return returned


def _received_public(out: Path, job: Job, returned: Returned | None) -> Sealed | Graded:
    sub, state = job.sub, job.state
    assert state is not None
    returned = _not_returned(returned)
    _write_log(out, sub, returned)
    if returned.graded is not None:
        return returned.graded
    unpack_state(returned.state, state)
    try:
        if phases.read_seal(state) == returned.seal == phases.state_digest(state):
            return Sealed(sub.student, state, returned.seal, returned.duration_s)
    except phases.SealError:
        pass
    reason = (
        "grade-all itself failed, not the submission: the sealed public phase did not arrive intact from its worker"
    )
    return Graded(sub.student, failure_results(reason), returned.duration_s, True)


def _received(out: Path, job: Job, returned: Returned) -> Graded:
    _write_log(out, job.sub, returned)
    if returned.graded is None:
        raise RuntimeError("a worker returned no grading")
    return returned.graded


def _ship_hidden(out: Path, job: Job) -> tuple:
    sub, sealed = job.sub, job.sealed
    assert sealed is not None
    try:
        log = (out / sub.out_folder / "grader.log").read_bytes()
    except OSError:
        log = b""
    return (_resolved(sub), sealed.seal, sealed.duration_s, pack_state(sealed.state), log)


class Cluster:
    """A connected Dask cluster (`connect`): the phases of a batch as `Remote`s, and the barrier between them."""

    def __init__(self, client: Any) -> None:
        self.client = client
        self.fingerprint = grader_fingerprint()
        self.gate = ""
        self._specs: Any = None

    def executor(self) -> Executor:
        # pure=False: two identical payloads are two gradings, never one shared result
        return self.client.get_executor(retries=RETRIES, pure=False)

    def public(
        self, out: Path, timeout_s: float, python: str, exercises: Sequence[str] | None, specs: Path | None
    ) -> Remote:
        """Every public phase of one batch: opens the batch's gate (closed by `close_public`)."""
        self.gate = f"a2-public-{uuid.uuid4().hex}"
        self._specs = None if specs is None else self.client.scatter(specs.read_bytes(), broadcast=True)
        run = partial(public_task, gate=self.gate, fingerprint=self.fingerprint, timeout_s=timeout_s, python=python)
        return Remote(
            self.executor,
            partial(run, exercises=None if exercises is None else list(exercises)),
            lambda job: (_resolved(job.sub), self._specs),
            partial(_received_public, out),
        )

    def close_public(self, timeout_s: float) -> None:
        """The barrier across the cluster: close the batch's public gate, then wait until no connected worker
        runs one of its public tasks (see the module docstring); RuntimeError after `timeout_s` + GATE_MARGIN_S."""
        from distributed import Event

        self._specs = None
        Event(self.gate, client=self.client).set()
        deadline = time.monotonic() + timeout_s + GATE_MARGIN_S
        while True:
            counts = self.client.run(running_public, self.gate, on_error="return")
            busy = {w: n for w, n in counts.items() if not isinstance(n, int) or n > 0}
            if not busy:
                return
            if time.monotonic() > deadline:
                raise RuntimeError(f"public phases still running on {sorted(busy)}: no hidden phase is started")
            time.sleep(GATE_POLL_S)

    def hidden(self, out: Path, timeout_s: float, python: str) -> Remote:
        run = partial(hidden_task, fingerprint=self.fingerprint, timeout_s=timeout_s, python=python)
        return Remote(self.executor, run, partial(_ship_hidden, out), partial(_received, out))

    def one(self, out: Path, timeout_s: float, python: str, exercises: Sequence[str] | None) -> Remote:
        run = partial(one_task, fingerprint=self.fingerprint, timeout_s=timeout_s, python=python)
        return Remote(
            self.executor,
            partial(run, exercises=None if exercises is None else list(exercises)),
            lambda job: _resolved(job.sub),
            partial(_received, out),
        )


def local_workers(address: str) -> int | None:
    """N for `local:N` (ValueError unless N >= 1), None for any other address (a scheduler's)."""
    if not address.startswith(LOCAL_PREFIX):
        return None
    text = address[len(LOCAL_PREFIX) :]
    if not text.isdigit() or int(text) < 1:
        raise ValueError(f"--cluster {address}: local:N needs a number of workers N >= 1")
    return int(text)


@contextmanager
def connect(address: str) -> Iterator[Cluster]:
    """A `Cluster` on `address`: `local:N` starts a LocalCluster of N worker processes with one thread each
    (listening on 127.0.0.1 only, no dashboard), closed at the end; otherwise the scheduler at `address`
    (`tcp://host:8786`), whose workers are left running. Waits for a first worker (ValueError if none comes)
    and sweeps every worker's stale scratch folders."""
    import dask
    from distributed import Client, LocalCluster

    n_local = local_workers(address)
    local = None
    # Dask's default folder for a scheduler or worker is $TMPDIR/dask-scratch-space, a fixed name used whoever
    # made it, with lock files opened through links: a local cluster gets a folder of the batch's own instead.
    workspace = Scratch(0o700) if n_local is not None else None
    try:
        settings: dict[str, object] = {"distributed.scheduler.allowed-failures": ALLOWED_FAILURES}
        if workspace is not None:  # the local scheduler's folder too
            settings["temporary-directory"] = str(workspace.path)
        with dask.config.set(settings):
            if workspace is not None:
                local = LocalCluster(
                    local_directory=str(workspace.path),
                    n_workers=n_local,
                    threads_per_worker=1,
                    processes=True,
                    host="127.0.0.1",
                    dashboard_address=None,
                    memory_limit=0,  # the graders' own limits apply; the worker process itself stays small
                    silence_logs=logging.ERROR,
                )
        try:
            client = Client(local if local is not None else address, timeout=CONNECT_TIMEOUT_S)
            try:
                try:
                    client.wait_for_workers(1, timeout=CONNECT_TIMEOUT_S)
                except TimeoutError as exc:
                    raise ValueError(f"--cluster {address}: no worker connected in {CONNECT_TIMEOUT_S:.0f} s") from exc
                client.run(prepare_worker, on_error="return")
                yield Cluster(client)
            finally:
                client.close()
        finally:
            if local is not None:
                local.close()
    finally:
        if workspace is not None:
            workspace.remove()
