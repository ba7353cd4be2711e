"""Run one exercise's cases on a student's file in a limited child process, and collect its results.

One child process per exercise (`run_exercise`). The grader calls it with the student's file and the
cases' *call specs* (function name and encoded arguments, never an expected value); it returns the
Outcome of each case that produced a valid result record, and why the others did not.

Limits and isolation of the child
- wall clock: `timeout_s` from the manifest, measured by the parent; then the whole group is killed.
- CPU time: RLIMIT_CPU = `cpu_s` (SIGXCPU), hard limit 2 s later (SIGKILL).
- memory: RLIMIT_AS = `memory_mb`. Measured here: importing torch 2.13 (CPU) peaks at ~600 MB of
  address space with OMP_NUM_THREADS=1 and MALLOC_ARENA_MAX=2 (both set), and torch runs under
  RLIMIT_AS = 768 MB, so the manifest's 2-4 GB leave room; RLIMIT_DATA is not needed.
- output: stdout and stderr go to one file in a folder the child cannot open; RLIMIT_FSIZE caps it
  (and every file the child writes) at `output_bytes`: past it the child gets SIGXFSZ and stops.
- processes: a new session (its own process group); RLIMIT_NPROC bounds a fork bomb; at the end the
  group is killed and, as root, every process of the sandbox uid (found in /proc) until none is left.
- network: as root, unshare(CLONE_NEWNET) before exec (ctypes: os.unshare is Python 3.12+); the child
  sees only a loopback device that is down. Not root: an unprivileged user+network namespace when
  the kernel allows it, else no network isolation (said in the report's notes).
- identity (root only, as on Gradescope): each child runs as its own uid from SANDBOX_UIDS (a
  dedicated range with no login; a lock file per uid keeps parallel graders apart), with no
  supplementary groups, PR_SET_NO_NEW_PRIVS and PR_SET_PDEATHSIG. Its working copy is a fresh
  folder owned by that uid; `protect_sources` removes group/other access from everything in the
  package root except `shared/` and the venv, so the hidden cases, the expected values and the
  answer key (autograder/, solutions/, .git/) are unreadable to it.

Threat model (what the result channel does and does not guarantee)
The student's code runs inside the child, in the same process as the harness (`autograder.child`),
so it can do anything the harness can: write to the result fd, find the MAC key in memory
(gc, /proc/self/mem), patch `hetero.checks`, print fake records. None of that can raise a score:
- the parent judges every result (`hetero.checks.judge`) against expected values that never enter
  the child; a forged record can only claim "the function returned X", which the student could have
  achieved by returning X. Records are plain JSON decoded without running student code (no pickle);
  `encode` refuses subclasses, `judge` checks exact types.
- the MAC (per-run random key, sent on the control pipe, never in argv or the environment) stops
  records not produced with the key: stdout (a different fd), stray writes, records replayed from
  another run. Records must come in order, each case at most once: a duplicate or a record in the
  wrong place fails that case. Exit codes and stdout are never read as results.
- the child is sent case n+1 only after case n's record, so no hidden input is in the process while
  public cases run; output written before the first hidden case is the only output shown to the
  student (later output could contain hidden inputs and is shown with them, after the due date).
- what is NOT prevented: a student who recovers the key can make their cases' records say whatever
  they like (no more than returning it); their code sees each hidden case's inputs when it is called
  with them; timing and pass/fail bits leak one bit per hidden case. Not root (local instructor use):
  no uid change, so student code can read anything the instructor can (including the expected
  values) and a process that leaves the session is not found afterwards; use root (or Gradescope)
  for untrusted submissions. /tmp stays shared (TMPDIR points into the sandbox folder).
"""

from __future__ import annotations

import ctypes
import fcntl
import hashlib
import hmac
import json
import os
import resource
import secrets
import selectors
import shutil
import signal
import stat
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Optional

from hetero.checks import Outcome

CHILD_SOURCE = Path(__file__).with_name("child.py")
SANDBOX_UIDS = range(64000, 64500)  # one uid per concurrent child; none of them has a login
UID_LOCK_DIR = Path(tempfile.gettempdir()) / "a2grader-uids"
CHILD_READABLE = ("shared", ".venv", "venv")  # package-root entries the child may read (hetero, the venv)
PASSED_ENV_PREFIXES = ("A2_", "HETERO_")  # configuration of hetero (data locations) reaches the child

CLONE_NEWNS = 0x00020000
CLONE_NEWUSER = 0x10000000
CLONE_NEWNET = 0x40000000
MS_NOSUID, MS_NODEV, MS_BIND, MS_REC, MS_PRIVATE = 2, 4, 4096, 16384, 1 << 18
PR_SET_PDEATHSIG = 1
PR_SET_NO_NEW_PRIVS = 38
EXIT_GRACE_S = 2.0  # after the last record: time the child gets to exit by itself


@dataclass(frozen=True)
class Limits:
    timeout_s: float  # wall clock for the whole child (import + every case)
    cpu_s: float  # RLIMIT_CPU
    memory_mb: int  # RLIMIT_AS
    output_bytes: int = 4 * 2**20  # RLIMIT_FSIZE: stdout+stderr file and any file the child writes
    shown_output_chars: int = 4000  # how much of the output feedback shows
    max_processes: int = 64  # RLIMIT_NPROC for the sandbox uid (threads count too)
    open_files: int = 1024  # RLIMIT_NOFILE
    result_bytes: int = 64 * 2**20  # total size of result records before the child is stopped


@dataclass
class ChildReport:
    """What one child produced. `outcomes` holds only records that passed every check."""

    imported: Optional[bool] = None  # None: the child never reported its import
    import_error: str = ""
    outcomes: dict[str, Outcome] = field(default_factory=dict)
    refused: dict[str, str] = field(default_factory=dict)  # case id -> why its record was refused
    ended: str = "finished"  # finished | timeout | cpu | output | memory | exited | signal | result_size
    detail: str = ""  # one sentence for feedback when not finished
    returncode: Optional[int] = None
    wall_s: float = 0.0
    cpu_s: float = 0.0
    bad_records: int = 0  # lines on the result fd without a valid MAC or shape
    output_public: str = ""  # output written before the first hidden case (bounded)
    output_all: str = ""  # the whole output (bounded)
    survivors_killed: int = 0  # processes of the sandbox that outlived the child and were killed
    isolation: tuple[str, ...] = ()


# ---------------------------------------------------------------------------------------------
# Platform helpers

def is_root() -> bool:
    return os.geteuid() == 0


_libc = ctypes.CDLL(None, use_errno=True)


def _unshare(flags: int) -> None:
    if _libc.unshare(ctypes.c_int(flags)) != 0:
        err = ctypes.get_errno()
        raise OSError(err, f"unshare: {os.strerror(err)}")


def _mount(source: str, target: str, fstype: Optional[str], flags: int, data: Optional[str]) -> None:
    args = [None if x is None else x.encode() for x in (source, target, fstype)]
    if _libc.mount(args[0], args[1], args[2], ctypes.c_ulong(flags), None if data is None else data.encode()) != 0:
        err = ctypes.get_errno()
        raise OSError(err, f"mount {target}: {os.strerror(err)}")


def _prctl(option: int, value: int) -> None:
    _libc.prctl(ctypes.c_int(option), ctypes.c_ulong(value), ctypes.c_ulong(0), ctypes.c_ulong(0),
                ctypes.c_ulong(0))


_NETNS_FLAGS: dict[bool, Optional[int]] = {}


def network_isolation_flags() -> Optional[int]:
    """The unshare flags that give a child no network here (probed once), or None if none work."""
    root = is_root()
    if root not in _NETNS_FLAGS:
        flags = CLONE_NEWNET if root else CLONE_NEWUSER | CLONE_NEWNET
        try:
            probe = subprocess.run(["/bin/true"], preexec_fn=lambda: _unshare(flags), timeout=10,
                                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            _NETNS_FLAGS[root] = flags if probe.returncode == 0 else None
        except (OSError, subprocess.SubprocessError):
            _NETNS_FLAGS[root] = None
    return _NETNS_FLAGS[root]


def _process_table() -> list[tuple[int, set[int], str, int]]:
    """(pid, {real, effective, saved, fs uid}, state letter, threads) for every process in /proc."""
    table = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            text = Path(f"/proc/{entry}/status").read_text()
        except OSError:
            continue
        fields = dict(line.split(":", 1) for line in text.splitlines() if ":" in line)
        try:
            uids = {int(u) for u in fields["Uid"].split()}
            table.append((int(entry), uids, fields["State"].split()[0], int(fields.get("Threads", "1"))))
        except (KeyError, ValueError, IndexError):
            continue
    return table


def kill_uid(uid: int, rounds: int = 200) -> int:
    """SIGKILL every live process of `uid` until none is left; returns how many were killed."""
    killed = 0
    for _ in range(rounds):
        live = [pid for pid, uids, state, _ in _process_table() if uid in uids and state not in "ZX"]
        if not live:
            return killed
        for pid in live:
            try:
                os.kill(pid, signal.SIGKILL)
                killed += 1
            except ProcessLookupError:
                pass
        time.sleep(0.01)
    raise RuntimeError(f"processes of uid {uid} survive {rounds} rounds of SIGKILL")


def _needed_paths() -> list[Path]:
    """What the child must reach: the interpreter, its standard library, the venv, `hetero`."""
    import hetero

    paths = [Path(os.path.realpath(sys.executable)), Path(os.path.realpath(sys.base_prefix)),
             Path(os.path.realpath(sys.prefix)), Path(os.path.realpath(hetero.__file__)).parent]
    return sorted(set(paths))


def reachability_plan() -> dict[str, list[str]]:
    """Folders the sandbox uid cannot traverse -> the subfolders of them the child needs.

    Usually empty (Gradescope: /usr and /autograder are world-traversable). When the interpreter
    lives under a private folder (pyenv in /root, mode 0700), the child gets its own mount namespace
    in which that folder is an empty tmpfs holding bind mounts of just those subfolders: the
    interpreter becomes reachable and the rest of the private folder stays out of sight.
    """
    plan: dict[str, list[str]] = {}
    for path in _needed_paths():
        chain = list(reversed(path.parents))[1:] + [path]  # below "/", down to the path itself
        for i, folder in enumerate(chain[:-1]):
            if folder.stat().st_mode & 0o001:
                continue
            keep = chain[i + 1]
            blocked = [p for p in chain[i + 1:-1] if not p.stat().st_mode & 0o001]
            if blocked:
                raise RuntimeError(f"the sandbox user cannot reach {path}: {blocked[0]} is not traversable")
            if str(keep) not in plan.setdefault(str(folder), []):
                plan[str(folder)].append(str(keep))
            break
    return plan


def _apply_plan(plan: dict[str, list[str]], stash: Path) -> None:
    """In the child's new mount namespace: tmpfs over each blocked folder, needed subfolders bound back."""
    _mount("none", "/", None, MS_REC | MS_PRIVATE, None)
    n = 0
    for folder, keeps in plan.items():
        held = []
        for keep in keeps:
            slot = stash / str(n)
            n += 1
            _mount(keep, str(slot), None, MS_BIND | MS_REC, None)
            held.append((slot, keep))
        _mount("tmpfs", folder, "tmpfs", MS_NOSUID | MS_NODEV, "mode=0755,size=1m")
        for slot, keep in held:
            os.makedirs(keep, mode=0o755, exist_ok=True)
            _mount(str(slot), keep, None, MS_BIND | MS_REC, None)


def _own_task_count() -> int:
    uid = os.getuid()
    return sum(threads for _, uids, _, threads in _process_table() if uid in uids)


class SandboxUser:
    """A uid from SANDBOX_UIDS held (by an fcntl lock) for one child; root only."""

    def __init__(self) -> None:
        UID_LOCK_DIR.mkdir(mode=0o700, parents=True, exist_ok=True)
        start = secrets.randbelow(len(SANDBOX_UIDS))
        for i in range(len(SANDBOX_UIDS)):
            uid = SANDBOX_UIDS[(start + i) % len(SANDBOX_UIDS)]
            fd = os.open(UID_LOCK_DIR / f"{uid}.lock", os.O_CREAT | os.O_RDWR, 0o600)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError:
                os.close(fd)
                continue
            self.uid = self.gid = uid
            self._fd = fd
            kill_uid(uid)  # a leftover from a grader that died must not share this uid
            return
        raise RuntimeError("no free sandbox uid (too many graders in parallel)")

    def release(self) -> None:
        os.close(self._fd)


def protect_sources(root: Path) -> list[Path]:
    """As root: remove group/other access from every entry of `root` but CHILD_READABLE; returns them."""
    changed = []
    for entry in sorted(root.iterdir()):
        if entry.name in CHILD_READABLE or entry.is_symlink():
            continue
        mode = entry.stat().st_mode
        if mode & 0o077:
            entry.chmod(stat.S_IMODE(mode) & 0o700)
            changed.append(entry)
    return changed


# ---------------------------------------------------------------------------------------------
# The child process

def _preexec(limits: Limits, user: Optional[SandboxUser], netns: Optional[int], nproc: int,
             plan: dict[str, list[str]], stash: Path) -> Callable[[], None]:
    """Runs in the forked child before exec (after setsid): namespaces, limits, then identity."""
    cpu = max(1, int(limits.cpu_s + 0.999))

    def setup() -> None:
        if plan:
            _unshare(CLONE_NEWNS)
            _apply_plan(plan, stash)
        if netns is not None:
            _unshare(netns)
        resource.setrlimit(resource.RLIMIT_CPU, (cpu, cpu + 2))
        resource.setrlimit(resource.RLIMIT_FSIZE, (limits.output_bytes,) * 2)
        resource.setrlimit(resource.RLIMIT_NOFILE, (limits.open_files,) * 2)
        resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
        resource.setrlimit(resource.RLIMIT_NPROC, (nproc, nproc))
        if user is not None:
            os.setgroups([])
            os.setgid(user.gid)
            os.setuid(user.uid)
        _prctl(PR_SET_NO_NEW_PRIVS, 1)
        _prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
        # last: the forked grader may already map more than the limit; exec starts afresh under it
        resource.setrlimit(resource.RLIMIT_AS, (limits.memory_mb * 2**20,) * 2)

    return setup


def _child_env(work: Path) -> dict[str, str]:
    env = {
        "PATH": "/usr/local/bin:/usr/bin:/bin",
        "HOME": str(work),
        "TMPDIR": str(work / "tmp"),
        "LANG": "C.UTF-8",
        "LC_ALL": "C.UTF-8",
        "PYTHONHASHSEED": "0",  # set iteration order, hence results, identical on every run
        "PYTHONNOUSERSITE": "1",
        "OMP_NUM_THREADS": "1",
        "OPENBLAS_NUM_THREADS": "1",
        "MKL_NUM_THREADS": "1",
        "MALLOC_ARENA_MAX": "2",  # glibc reserves 64 MB of address space per arena: keep RLIMIT_AS honest
        "MPLBACKEND": "Agg",
        "MPLCONFIGDIR": str(work / ".config" / "matplotlib"),
    }
    env.update({k: v for k, v in os.environ.items() if k.startswith(PASSED_ENV_PREFIXES)})
    return env


def _read_head(path: Path, limit_chars: int, limit_bytes: Optional[int] = None) -> str:
    try:
        with open(path, "rb") as handle:
            data = handle.read(min(limit_bytes, 4 * limit_chars) if limit_bytes is not None else 4 * limit_chars)
    except OSError:
        return ""
    text = data.decode("utf-8", errors="replace")
    size = path.stat().st_size if limit_bytes is None else limit_bytes
    if len(text) > limit_chars or size > len(data):
        text = text[:limit_chars] + f"\n... (output truncated; {size} bytes in all)"
    return text


def _describe_exit(returncode: int, cpu_used: float, limits: Limits) -> tuple[str, str]:
    if returncode < 0:
        sig = -returncode
        name = signal.Signals(sig).name if sig in signal.valid_signals() else str(sig)
        if sig == signal.SIGXCPU or (sig == signal.SIGKILL and cpu_used >= limits.cpu_s):
            return "cpu", f"the CPU-time limit ({limits.cpu_s:g} s) was exceeded"
        if sig == signal.SIGXFSZ:
            return "output", (f"the output limit ({limits.output_bytes // 2**20} MiB for printed output and "
                              "files) was exceeded")
        return "signal", f"the process was killed by signal {name} (crash, or memory exhausted)"
    return "exited", (f"the process exited with status {returncode} before finishing "
                      "(sys.exit, os._exit or a fatal error in your code?)")


class _Run:
    """State of one child: the record parser and the case-by-case sending of call specs."""

    def __init__(self, specs: list[dict], key: bytes, hidden_from: int, report: ChildReport):
        self.specs = specs
        self.key = key
        self.hidden_from = hidden_from
        self.report = report
        self.next_seq = 0  # the record expected next
        self.sent = 0  # call specs sent so far
        self.ended_input = False
        self.pending = bytearray()
        self.public_output_bytes: Optional[int] = None

    def queue(self, message: dict) -> None:
        self.pending += json.dumps(message, separators=(",", ":")).encode("utf-8") + b"\n"

    def send_next(self, output_size: Callable[[], int]) -> None:
        if self.sent < len(self.specs):
            if self.sent == self.hidden_from and self.public_output_bytes is None:
                self.public_output_bytes = output_size()
            self.queue({"seq": self.sent, "case": self.specs[self.sent]})
            self.sent += 1
        elif not self.ended_input:
            self.queue({"end": True})
            self.ended_input = True

    def record(self, line: bytes, output_size: Callable[[], int]) -> None:
        mac, _, payload = line.partition(b" ")
        expected = hmac.new(self.key, payload, hashlib.sha256).hexdigest().encode("ascii")
        if not hmac.compare_digest(mac, expected):
            self.report.bad_records += 1
            return
        try:
            data = json.loads(payload)
            seq = data["seq"]
        except (ValueError, KeyError, TypeError, RecursionError):
            self.report.bad_records += 1
            return
        if seq == -1 and data.get("kind") == "import":
            if self.report.imported is None:
                self.report.imported = bool(data.get("ok"))
                self.report.import_error = str(data.get("error", ""))[:8000]
                if self.report.imported:
                    self.send_next(output_size)
            else:
                self.report.bad_records += 1
            return
        if type(seq) is not int or not 0 <= seq < len(self.specs):
            self.report.bad_records += 1
            return
        case_id = self.specs[seq]["id"]
        if seq < self.next_seq:
            self.report.outcomes.pop(case_id, None)
            self.report.refused[case_id] = "two result records arrived for this case"
            return
        if seq > self.next_seq or data.get("id") != case_id or seq >= self.sent:
            self.report.refused[case_id] = "its result record arrived out of order"
            self.next_seq = max(self.next_seq, seq + 1)
            return
        try:
            outcome = Outcome.from_json(data["outcome"])
            if outcome.error_type is not None and type(outcome.error_type) is not str:
                raise TypeError("error_type")
        except (KeyError, TypeError, AttributeError):
            self.report.refused[case_id] = "its result record was malformed"
            self.next_seq = seq + 1
            return
        self.report.outcomes[case_id] = outcome
        self.next_seq = seq + 1
        self.send_next(output_size)


def run_exercise(student_file: Path, module_name: str, specs: list[dict], hidden_from: int,
                 limits: Limits) -> ChildReport:
    """Run `specs` (call specs, public first; hidden from index `hidden_from`) on `student_file`."""
    root = is_root()
    report = ChildReport()
    netns = network_isolation_flags()
    notes = ["network: none" if netns is not None else "network: not isolated (no namespace support)"]
    user = SandboxUser() if root else None
    notes.append(f"uid: {user.uid}" if user else "uid: unchanged (grader not root)")
    nproc = limits.max_processes if root else _own_task_count() + limits.max_processes
    plan = reachability_plan() if root else {}
    if plan:
        notes.append("private folders hidden: " + ", ".join(sorted(plan)))
    report.isolation = tuple(notes)
    base = Path(tempfile.mkdtemp(prefix="a2grade-"))
    proc: Optional[subprocess.Popen] = None
    read_fd = write_fd = out_fd = -1
    try:
        private = base / "private"
        private.mkdir(mode=0o700)
        stash = private / "mounts"
        for i in range(sum(len(keeps) for keeps in plan.values())):
            (stash / str(i)).mkdir(parents=True)
        work = base / "work"
        (work / "tmp").mkdir(parents=True)
        target = work / f"{module_name}.py"
        shutil.copyfile(student_file, target)
        child_py = base / "child.py"
        shutil.copyfile(CHILD_SOURCE, child_py)
        child_py.chmod(0o644)
        if user is not None:
            base.chmod(0o711)
            for path in (work, work / "tmp", target):
                os.chown(path, user.uid, user.gid)
            work.chmod(0o700)
        output_path = private / "output.txt"
        out_fd = os.open(output_path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_APPEND, 0o600)
        read_fd, write_fd = os.pipe()
        key = secrets.token_bytes(32)
        run = _Run(specs, key, hidden_from, report)
        run.queue({"key": key.hex(), "path": str(target), "name": module_name})

        def output_size() -> int:
            return os.fstat(out_fd).st_size

        start = time.monotonic()
        proc = subprocess.Popen(
            [sys.executable, "-s", "-B", "-u", str(child_py), str(write_fd)],
            stdin=subprocess.PIPE, stdout=out_fd, stderr=out_fd, pass_fds=(write_fd,), cwd=work,
            env=_child_env(work), start_new_session=True,
            preexec_fn=_preexec(limits, user, netns, nproc, plan, stash))
        os.close(write_fd)
        write_fd = -1
        _pump(proc, run, read_fd, output_size, start, limits)
        report.wall_s = time.monotonic() - start
        report.survivors_killed = _reap(proc, user)
        size = output_size()
        public_bytes = run.public_output_bytes if run.public_output_bytes is not None else size
        report.output_public = _read_head(output_path, limits.shown_output_chars, public_bytes)
        report.output_all = _read_head(output_path, 4 * limits.shown_output_chars)
    finally:
        for fd in (read_fd, write_fd, out_fd):
            if fd >= 0:
                os.close(fd)
        if proc is not None and proc.returncode is None:
            _reap(proc, user)
        if user is not None:
            user.release()
        shutil.rmtree(base, ignore_errors=True)
    return report


def _pump(proc: subprocess.Popen, run: _Run, read_fd: int, output_size: Callable[[], int],
          start: float, limits: Limits) -> None:
    """Exchange specs and records until the child is done, dies, or a limit is hit."""
    report = run.report
    assert proc.stdin is not None
    stdin_fd = proc.stdin.fileno()
    os.set_blocking(stdin_fd, False)
    os.set_blocking(read_fd, False)
    selector = selectors.DefaultSelector()
    selector.register(read_fd, selectors.EVENT_READ)
    buffer = bytearray()
    received = 0
    stdin_open = True
    deadline = start + limits.timeout_s
    exit_deadline: Optional[float] = None
    exited = False
    eof = False
    while True:
        now = time.monotonic()
        if exited and (eof or not _readable(read_fd)):
            break
        if now >= deadline:
            report.ended, report.detail = "timeout", f"the time limit ({limits.timeout_s:g} s wall clock) was exceeded"
            return
        if exit_deadline is not None and now >= exit_deadline:
            return  # every record is in; the child did not exit by itself and is killed by _reap
        want_write = stdin_open and bool(run.pending)
        if want_write:
            try:
                selector.register(stdin_fd, selectors.EVENT_WRITE)
            except KeyError:
                pass
        elif stdin_open:
            try:
                selector.unregister(stdin_fd)
            except KeyError:
                pass
        for key, events in selector.select(timeout=min(0.05, max(0.0, deadline - now))):
            if key.fd == read_fd and not eof:
                try:
                    chunk = os.read(read_fd, 1 << 16)
                except BlockingIOError:
                    continue
                if not chunk:
                    eof = True
                    selector.unregister(read_fd)
                    continue
                received += len(chunk)
                if received > limits.result_bytes:
                    report.ended = "result_size"
                    report.detail = f"the results were larger than {limits.result_bytes // 2**20} MiB"
                    return
                buffer += chunk
                while b"\n" in buffer:
                    line, _, rest = bytes(buffer).partition(b"\n")
                    buffer = bytearray(rest)
                    run.record(line, output_size)
            elif key.fd == stdin_fd and events & selectors.EVENT_WRITE:
                try:
                    written = os.write(stdin_fd, run.pending)
                    del run.pending[:written]
                except BlockingIOError:
                    pass
                except (BrokenPipeError, OSError):
                    stdin_open = False
                    run.pending.clear()
                    selector.unregister(stdin_fd)
        if run.ended_input and not run.pending and exit_deadline is None:
            exit_deadline = time.monotonic() + EXIT_GRACE_S
        if not exited and _wait(proc, report):
            exited = True
    if run.next_seq < len(run.specs) or report.imported is None:
        report.ended, report.detail = _describe_exit(report.returncode or 0, report.cpu_s, limits)


def _readable(fd: int) -> bool:
    selector = selectors.DefaultSelector()
    selector.register(fd, selectors.EVENT_READ)
    try:
        return bool(selector.select(timeout=0))
    finally:
        selector.close()


def _wait(proc: subprocess.Popen, report: ChildReport) -> bool:
    """Reap the child if it has exited (recording status and CPU time); True once it has."""
    try:
        pid, status, usage = os.wait4(proc.pid, os.WNOHANG)
    except ChildProcessError:
        return True
    if pid == 0:
        return False
    proc.returncode = os.waitstatus_to_exitcode(status)
    report.returncode = proc.returncode
    report.cpu_s = usage.ru_utime + usage.ru_stime
    return True


def _reap(proc: subprocess.Popen, user: Optional[SandboxUser]) -> int:
    """Kill the child's process group and, as root, every process of its uid; reap the child."""
    killed = 0
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
    if proc.returncode is None:
        try:
            _, status, _ = os.wait4(proc.pid, 0)
            proc.returncode = os.waitstatus_to_exitcode(status)
        except ChildProcessError:
            proc.returncode = -signal.SIGKILL
    if user is not None:
        killed = kill_uid(user.uid)
    if proc.stdin is not None:
        try:
            proc.stdin.close()
        except OSError:
            pass
    return killed

