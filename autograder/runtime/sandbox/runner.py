"""Run one exercise's cases on a student's file in limited child processes, and collect its results.

The grader calls `run_exercise` with the student's file and the cases' *call specs* (function name
and encoded arguments, never an expected value); it returns the Outcome of each case that produced a
valid result record, and why the others did not. Normally one child runs all of an exercise's
cases; a case that runs longer than its per-case limit is stopped with its child, and a fresh child
re-imports the file and goes on with the next case, skipping the other cases of the function that
was stopped (with the manifest's limits, ex02: 10 s per case, 20 s in all, a second stop of one
function would leave no time for the others).

How a child is started (`autograder.runtime.sandbox.jail`, autograder/runtime/sandbox/jail.py, does the privileged part, before any
student code): the grader runs bubblewrap (`bwrap`), which makes the child's namespaces (mount, PID,
network, IPC, UTS, cgroup; plus a user namespace when the grader is not root) and a new root holding
only an allow-list (`bwrap_args`); jail.py runs in it as the namespace's init, mounts the size-capped
tmpfs, reaps orphans and starts the harness (`autograder/runtime/sandbox/child.py`), which runs as the sandbox uid
under resource limits. Without a working bubblewrap (mode "none") jail.py starts the harness on the
host. `isolation_mode` probes once per grader process which of these works here.

Limits and isolation of the child
- wall clock: `timeout_s` for the whole exercise, `case_timeout_s` for one case's call; both are
  measured by the parent, which then kills the child's process group.
- CPU time: RLIMIT_CPU (what is left of `cpu_s` for a restarted child), hard limit 2 s later.
- memory: RLIMIT_AS = `memory_mib`. Measured here: importing torch 2.13 (CPU) peaks at ~600 MB of
  address space with OMP_NUM_THREADS=1 and MALLOC_ARENA_MAX=2 (both set), and torch runs under
  RLIMIT_AS = 768 MiB, so the manifest's 2-4 GiB leave room; RLIMIT_DATA is not needed.
- output: stdout and stderr are one pipe that the parent drains as the child writes (the child
  cannot seek back and rewrite what it printed). The parent keeps the first `kept_output_bytes`,
  counts the rest, and stops the child past `output_bytes`. Output printed before the first hidden
  case was sent is the "public output"; the rest may contain hidden inputs. RLIMIT_FSIZE caps every
  file the child writes at `output_bytes` (SIGXFSZ).
- result channel: a pipe parsed in linear time; at most `result_bytes` for all the children of an
  exercise (a restarted child gets no fresh allowance) and `junk_lines` lines that are not valid
  records, then the child is stopped; a record longer than `record_bytes` is dropped unread and its
  case refused.
- processes: everything the student's code starts lives in the child's PID namespace and dies with
  its init (jail.py as PID 1), which dies with bwrap (PR_SET_PDEATHSIG; the grader kills bwrap's
  process group, and bwrap dies with the grader): double forks, `setsid`, relays. As root,
  every process of the child's uid is then killed as well (kill(-1) from that uid until none is
  left; the only mechanism when no namespace works). RLIMIT_NPROC bounds a fork bomb.
- uids (root only, as on Gradescope): each child runs as its own uid from SANDBOX_UIDS (a range with
  no login), with no supplementary groups, PR_SET_NO_NEW_PRIVS and PR_SET_PDEATHSIG. A grader
  process never hands out the same uid twice, and among free uids it takes the one released longest
  ago (lock files in UID_LOCK_DIR keep parallel graders apart).
- files (mode "bwrap"): the child's root is a new, read-only one that holds only an allow-list: /usr
  and the /bin, /sbin, /lib* links (or folders) as the host has them, ld.so.cache, ld.so.conf(.d) and
  localtime of /etc, the interpreter and its standard library (sys.base_prefix), the venv (sys.prefix),
  `hetero` (with an editable install, only its folder shared/hetero of the checkout), each bound
  read-only at its own path (the folders on the way to them hold nothing else), its own copies of the
  exercise file, child.py and jail.py (SANDBOX_CODE, read-only), a fresh /proc of its PID namespace and
  a minimal /dev. /tmp, /var/tmp, /dev/shm and the work folder (SANDBOX_WORK: cwd, HOME, TMPDIR in it)
  are tmpfs of its own, TMPFS_BYTES each: whatever it writes, at any depth, never reaches the disk.
  Nothing else of the host exists for it: not the repository (hidden cases, expected values, answer key,
  .git), not another checkout or clone on the machine, not /home, /root, /work, /autograder
  (submission_metadata.json, results/), not grade-all's outputs or other students' files; where the
  venv holds the grader's own package (a non-editable install), an empty tmpfs covers that folder.
  bwrap makes the tmpfs before the binds (a venv under /tmp stays reachable); as root jail.py caps
  their size by a remount (bubblewrap before 0.8, Ubuntu 22.04's 0.6, has no --size); without root
  bwrap's --size does, from 0.8 on (before, the note says they are not capped).
  Mode "none" (no bubblewrap): no namespace at all; the work folder is on disk and `remove_tree` deletes
  it at any depth, and only the sandbox uid and the file modes keep the child from the host's files
  (`run_autograder` sets them in Gradescope's copy). Nothing of the instructor's checkout is changed.
- network: the child's network namespace has only a loopback device, down as root (without root,
  bwrap leaves it up, reaching nothing outside the namespace). In mode "none" the report, the grader's
  note and the log say "network: not isolated" and "files: not isolated" and why ("bubblewrap missing:
  apt-get install bubblewrap", or how it failed).
- kernel keyrings (not namespaced: a key stored under a sandbox uid outlives the child and is there for
  the next run with that uid): a seccomp filter installed by the harness makes add_key, request_key
  and keyctl fail with EPERM; where it cannot be installed the report and the results' staff entry say
  "keyrings: not isolated" and why.

Threat model (what the result channel does and does not guarantee)
The student's code runs inside the child, in the same process as the harness (`autograder.runtime.sandbox.child`),
so it can do anything the harness can: write to the result fd, find the MAC key in memory
(gc, /proc/self/mem), patch `hetero.checks`, print fake records. None of that can raise a score:
- the parent judges every result (`hetero.checks.judge`) against expected values that never enter
  the child; a forged record can only claim "the function returned X", which the student could have
  achieved by returning X. Records are plain JSON decoded without running student code (no pickle);
  `encode` refuses subclasses, `judge` checks exact types.
- the MAC (per-child random key, sent on the control pipe, never in argv or the environment) stops
  records not produced with the key: stdout (a different pipe), stray writes, records replayed from
  another run. Records must come in order, each case at most once: a duplicate or a record in the
  wrong place fails that case. Exit codes and stdout are never read as results.
- the child is sent case n+1 only after case n's record, so no hidden input is in the process while
  public cases run.
- what is NOT prevented: a student who recovers the key can make their cases' records say whatever
  they like (no more than returning it); their code sees each hidden case's inputs when it is called
  with them, and can steer which fixed phrase each visible hidden entry gets (a few bits per hidden
  case and submission; docs/gradescope.md) and its timing. Without root there is no uid
  change: where bubblewrap works (in a user namespace) the child still sees only the allow-list,
  where it does not (mode "none") student code can read anything the instructor can; use root (or
  Gradescope) with bubblewrap for untrusted submissions.
"""

from __future__ import annotations

import fcntl
import hashlib
import hmac
import json
import logging
import os
import pwd
import secrets
import selectors
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

from hetero.checks import Outcome

CHILD_SOURCE = Path(__file__).with_name("child.py")
JAIL_SOURCE = Path(__file__).with_name("jail.py")
PACKAGE_ROOT = Path(__file__).resolve().parents[3]
# The grader's own package (hidden cases in tests/, expected values in expected/). After a non-editable
# `pip install .` it lies inside the venv, which the child's root binds: then an empty tmpfs covers it.
AUTOGRADER_DIR = Path(__file__).resolve().parents[2]
# One uid per child (two or more per exercise). Below 65000: Debian reserves 65000-65533, and 65534 is
# `nobody`, whose processes kill_uid would end; a uid with an account on this machine is skipped too.
SANDBOX_UIDS = range(63000, 65000)
# One lock folder for every grader on the machine, whatever its TMPDIR (grade-all gives each grader a
# TMPDIR of its own; locks kept there would let two graders hold the same uid at once).
UID_LOCK_DIR = Path(os.environ.get("A2_UID_LOCK_DIR", "/tmp")) / "a2grader-uids"
PRIVATE_FOLDERS = ("/tmp", "/var/tmp", "/dev/shm")  # each child gets its own empty, size-capped tmpfs
SANDBOX_CODE = "/sandbox/code"  # in the child's root: its exercise file, child.py, jail.py (read-only)
SANDBOX_WORK = "/sandbox/work"  # in the child's root: its work folder (cwd, HOME; TMPDIR is tmp/ in it)
TMPFS_BYTES = 64 * 2**20  # each private tmpfs (the work folder too): nothing of it reaches the disk
TMPFS_INODES = 16384
ETC_FILES = ("ld.so.cache", "ld.so.conf", "ld.so.conf.d", "localtime")  # all of /etc the child sees
SYSTEM_LINKS = ("bin", "sbin", "lib", "lib32", "lib64", "libx32")  # merged-/usr symlinks, or folders
BWRAP_MISSING = "bubblewrap missing: apt-get install bubblewrap"
BWRAP_SIZE_VERSION = (0, 8, 0)  # the first bubblewrap with --size
PASSED_ENV_PREFIXES = ("A2_", "HETERO_")  # configuration of hetero (data locations) reaches the child
KILL_ROUNDS = 5000  # kill(-1) passes before kill_uid gives up on a uid
EXIT_GRACE_S = 2.0  # after the last record: time the child gets to exit by itself
READ_CHUNK_BYTES = 1 << 16

log = logging.getLogger(__name__)


class SandboxError(RuntimeError):
    """The sandbox itself could not be set up (the grader's fault, never the student's)."""


@dataclass(frozen=True)
class Limits:
    timeout_s: float  # wall clock for the whole exercise (every child, import + every case)
    cpu_s: float  # RLIMIT_CPU, shared by the children of one exercise
    memory_mib: int  # RLIMIT_AS
    case_timeout_s: float | None = None  # wall clock for one case's call (None: only timeout_s)
    output_bytes: int = 4 * 2**20  # printed output in all, and RLIMIT_FSIZE for files the child writes
    kept_output_bytes: int = 64 * 2**10  # how much printed output the parent keeps (the rest is counted)
    shown_output_chars: int = 4000  # how much of the public output feedback shows
    max_processes: int = 64  # RLIMIT_NPROC for the sandbox uid (threads count too)
    open_files: int = 1024  # RLIMIT_NOFILE
    result_bytes: int = 64 * 2**20  # result records of the exercise's children in all, then the child is stopped
    # One record at most: the answer key's largest is ~5 KB (messages are cut at 2,000 characters); a
    # longer one is refused unread, as its case's result, so no record can make the grader decode
    # (and keep) millions of JSON values.
    record_bytes: int = 64 * 2**10
    junk_lines: int = 1000  # lines on the result channel that are not valid records, then it is stopped


@dataclass
class ChildReport:
    """What the children of one exercise produced. `outcomes` holds only records that passed every check."""

    imported: bool | None = None  # None: the child never reported its import
    import_error: str = ""
    outcomes: dict[str, Outcome] = field(default_factory=dict)
    refused: dict[str, str] = field(default_factory=dict)  # case id -> why it has no accepted record
    ended: str = "finished"  # finished | timeout | cpu | output | memory | exited | signal | result_size | junk
    detail: str = ""  # one sentence for feedback when not finished
    returncode: int | None = None
    wall_s: float = 0.0
    cpu_s: float = 0.0
    bad_records: int = 0  # lines on the result channel without a valid MAC or shape
    result_bytes: int = 0  # bytes read from the result channels of all the exercise's children
    output_public: str = ""  # output printed before the first hidden case was sent (bounded)
    output_all: str = ""  # the whole output (bounded)
    output_bytes: int = 0  # how many bytes were printed in all
    survivors_killed: int = 0  # processes of the sandbox uid found alive after a child and killed
    stopped_cases: tuple[str, ...] = ()  # cases stopped at the per-case limit (a fresh child went on)
    isolation: tuple[str, ...] = ()  # one note per kind of isolation, "network: not isolated (...)" included


# ---------------------------------------------------------------------------------------------
# Platform helpers


def is_root() -> bool:
    return os.geteuid() == 0


_MODE: dict[str, dict] = {}


def isolation_mode() -> dict:
    """How children are isolated here, probed once per grader process (and again if root-ness changes):

    {"mode": "bwrap" | "none", "failures": [why bubblewrap is not used], "bwrap": its path,
    "version": its version, "user": True when it runs in a user namespace (grader not root),
    "sized": whether the private tmpfs are size-capped}.

    "bwrap" when `bwrap` is on PATH and a probe child starts in the allow-list root; "none" otherwise
    (no namespace: only the uid and file modes protect). A2_SANDBOX_NAMESPACES=0 forces "none" (to test
    that route, or where probing misbehaves).
    """
    if "probe" not in _MODE or _MODE["probe"]["root"] != is_root():
        if os.environ.get("A2_SANDBOX_NAMESPACES") == "0":
            found = {"mode": "none", "failures": ["namespaces disabled by A2_SANDBOX_NAMESPACES=0"]}
        else:
            found = _probe_bwrap()
        if found["mode"] == "none":
            log.warning(
                "sandbox: files not isolated, network not isolated, processes ended by uid only: %s",
                "; ".join(found["failures"]),
            )
        _MODE["probe"] = {**found, "root": is_root()}
    return _MODE["probe"]


def bwrap_version(path: str) -> tuple[int, ...] | None:
    """The version `bwrap --version` prints ("bubblewrap 0.8.0" -> (0, 8, 0)); None if it prints none."""
    try:
        out = subprocess.run([path, "--version"], capture_output=True, text=True, timeout=30).stdout
        return tuple(int(x) for x in out.split()[-1].split("."))
    except (OSError, subprocess.SubprocessError, ValueError, IndexError):
        return None


def _probe_bwrap() -> dict:
    """Start `jail.py --probe` in the allow-list root, as a child would start (see isolation_mode)."""
    path = shutil.which("bwrap")
    if path is None:
        return {"mode": "none", "failures": [BWRAP_MISSING]}
    version = bwrap_version(path)
    user = not is_root()
    mode: dict = {
        "mode": "bwrap",
        "failures": [],
        "bwrap": path,
        "version": version,
        "user": user,
        "sized": not user or (version or (0,)) >= BWRAP_SIZE_VERSION,
    }
    shown = ".".join(map(str, version)) if version else "(version unknown)"
    base = Path(tempfile.mkdtemp(prefix="a2probe-"))
    try:
        code = base / "code"
        code.mkdir()
        shutil.copyfile(JAIL_SOURCE, code / "jail.py")
        prepared = _namespace_setup(mode, (os.getuid(), os.getgid()))
        cmd = [path, *bwrap_args(mode, code), "--", *_jail_command(mode), "--probe", json.dumps(prepared)]
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL, cwd=base)
        lines = proc.stdout.strip().splitlines()
        if proc.returncode == 0 and lines and json.loads(lines[-1]).get("ok") is True:
            return mode
        why = (proc.stderr.strip() or proc.stdout.strip())[-300:] or f"status {proc.returncode}"
    except (OSError, subprocess.SubprocessError, ValueError) as exc:
        why = str(exc)
    finally:
        remove_tree(base)
    return {"mode": "none", "failures": [f"bubblewrap {shown} does not work here: {why}"]}


def _isolation_notes(mode: dict, uid: int | None) -> list[str]:
    why = "; ".join(mode["failures"]) or "no reason recorded"
    if mode["mode"] == "none":
        notes = [
            f"network: not isolated ({why})",
            f"files: not isolated ({why})",
            "processes: " + ("ended by uid" if uid is not None else "ended by process group only"),
        ]
    else:
        notes = [
            "network: none (own network namespace)",
            "files: allow-list root (bubblewrap): the interpreter, the venv, hetero and the exercise file, read-only",
            "processes: own PID namespace",
        ]
        if not mode["sized"]:
            notes.append(
                "temporary folders: not size-capped (bubblewrap "
                + ".".join(map(str, mode["version"] or ("?",)))
                + " has no --size and the grader is not root)"
            )
    notes.append(f"uid: {uid}" if uid is not None else "uid: unchanged (grader not root)")
    return notes


def proc_status() -> Iterator[tuple[int, dict[str, str]]]:
    """(pid, the fields of /proc/PID/status) of every process still there; nothing where there is no /proc."""
    try:
        entries = os.listdir("/proc")
    except OSError:
        return
    for entry in entries:
        if not entry.isdigit():
            continue
        try:
            text = Path(f"/proc/{entry}/status").read_text()
        except OSError:
            continue
        yield int(entry), dict(line.split(":", 1) for line in text.splitlines() if ":" in line)


def _process_table() -> list[tuple[int, set[int], str, int]]:
    """(pid, {real, effective, saved, fs uid}, state letter, threads) for every process in /proc."""
    table = []
    for pid, fields in proc_status():
        try:
            uids = {int(u) for u in fields["Uid"].split()}
            table.append((pid, uids, fields["State"].split()[0], int(fields.get("Threads", "1"))))
        except (KeyError, ValueError, IndexError):
            continue
    return table


def live_processes(uids: set[int]) -> list[int]:
    """Pids of live (not zombie) processes whose real, effective, saved or fs uid is in `uids`."""
    return [pid for pid, owners, state, _ in _process_table() if owners & uids and state not in "ZX"]


def _owned(uid: int, zombies: bool = False) -> list[int]:
    """Pids of processes owned by `uid` (the owner of /proc/PID), live ones only unless `zombies`:
    a cheap scan for kill loops."""
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            if os.stat(f"/proc/{entry}").st_uid != uid:
                continue
            with open(f"/proc/{entry}/stat", "rb") as handle:
                state = handle.read().rsplit(b")", 1)[1].split()[0]
        except (OSError, IndexError):
            continue
        if zombies or state not in (b"Z", b"X"):
            found.append(int(entry))
    return found


def kill_uid(uid: int) -> int:
    """As root: SIGKILL every process of `uid` until none is left; returns how many a scan saw alive.

    A helper forked as `uid` calls kill(-1, SIGKILL) until it returns ESRCH: the kernel signals every
    process of that uid in one pass and a process killed mid-fork leaves no child, so a relay that
    forks its successor every few milliseconds (which a /proc scan never catches alive) is ended too.
    The helper always runs: that the scan saw nothing proves nothing. It stops when two scans in a row,
    each after a kill, find no live process of `uid` but itself.
    """
    alive = len(_owned(uid))
    helper = os.fork()
    if helper == 0:
        try:
            os.setgroups([])
            os.setgid(uid)
            os.setuid(uid)
            quiet = 0
            for _ in range(KILL_ROUNDS):
                try:
                    os.kill(-1, signal.SIGKILL)
                except ProcessLookupError:
                    os._exit(0)
                quiet = quiet + 1 if _owned(uid) == [os.getpid()] else 0
                if quiet >= 2:  # kill(-1) succeeds while any other process exists: a scan decides
                    os._exit(0)
                time.sleep(0.001)
        except BaseException:
            pass
        os._exit(1)
    _, status = os.waitpid(helper, 0)
    if os.waitstatus_to_exitcode(status) != 0:
        raise SandboxError(f"processes of uid {uid} survive repeated kill(-1, SIGKILL)")
    if _SUBREAPER:
        _reap_orphans(uid)
    return alive


PR_SET_CHILD_SUBREAPER = 36
_SUBREAPER: list[bool] = []


def become_subreaper() -> None:
    """Make this process the reaper of its orphaned descendants (once): without PID namespaces the
    orphans of student code come here, are killed by uid and reaped (`_reap_orphans`), so no zombie
    of a sandbox uid is left to count against that uid's RLIMIT_NPROC under an init that never reaps."""
    if not _SUBREAPER:
        import ctypes

        ctypes.CDLL(None, use_errno=True).prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)
        _SUBREAPER.append(True)


def _reap_orphans(uid: int) -> None:
    """Reap the zombies of `uid` whose parent is this process (orphans adopted as subreaper)."""
    me = str(os.getpid())
    for pid, fields in proc_status():
        if (
            fields.get("PPid", "").strip() == me
            and str(uid) in fields.get("Uid", "").split()
            and fields.get("State", "").strip().startswith("Z")
        ):
            try:
                os.waitpid(pid, os.WNOHANG)
            except ChildProcessError:
                pass


def _inside(path: str, folder: str) -> bool:
    return path == folder or path.startswith(folder.rstrip("/") + "/")


def _link_chain(path: str) -> list[str]:
    """`path` and every path its symlinks lead through, to the file itself (the child follows them too)."""
    chain = [path]
    for _ in range(40):
        try:
            target = os.readlink(path)
        except OSError:
            break
        path = os.path.normpath(os.path.join(os.path.dirname(path), target))
        chain.append(path)
    return chain


def allow_list() -> list[tuple[str, str]]:
    """(host path, path in the child's root) of what the child needs beside /usr: the interpreter and its
    standard library (sys.base_prefix), the venv (sys.prefix) with its packages, `hetero` (with an editable
    install its checkout's shared/hetero, that folder only), and the links from sys.executable to the
    interpreter. Each at the same path as on the host (the venv and the editable finder name them there),
    none inside another, none under /usr (bound whole)."""
    import hetero

    wanted = [sys.base_prefix, sys.prefix, os.path.dirname(os.path.abspath(hetero.__file__))]
    wanted += _link_chain(os.path.abspath(sys.executable))
    binds: list[tuple[str, str]] = []
    for dest in sorted({os.path.abspath(p) for p in wanted}, key=lambda p: (p.count("/"), p)):
        real = os.path.realpath(dest)
        if _inside(real, "/usr") or any(_inside(dest, d) or _inside(real, r) for r, d in binds):
            continue
        binds.append((real, dest))
    return binds


def _system_args() -> list[str]:
    """bwrap arguments for the system part of the child's root: /usr, the /bin, /lib... links (or folders)
    as the host has them, and ETC_FILES."""
    args = ["--ro-bind", "/usr", "/usr"]
    for name in SYSTEM_LINKS:
        path = "/" + name
        if os.path.islink(path):
            args += ["--symlink", os.readlink(path), path]
        elif os.path.isdir(path):
            args += ["--ro-bind", path, path]
    args += ["--dir", "/etc"]
    for name in ETC_FILES:
        path = "/etc/" + name
        if os.path.exists(path):
            args += ["--ro-bind", path, path]
    return args


def _folders_to(dest: str) -> list[str]:
    """`--dir` for each folder above `dest` (mode 0755: bwrap would make the folders on the way to a
    bind mode 0700, which the sandbox uid could not pass)."""
    args = []
    for parent in reversed(Path(dest).parents):
        if str(parent) != "/":
            args += ["--dir", str(parent)]
    return args


def bwrap_args(mode: dict, code: Path) -> list[str]:
    """bubblewrap's arguments for one child (before `--` and the command): namespaces, the allow-list
    root read-only (with the grader's own package covered where the venv holds it), /proc, /dev, the
    private tmpfs (size-capped by bwrap's --size without root, from 0.8 on; by jail.py's remount as
    root), and `code` (the host folder with the child's copies) at SANDBOX_CODE. The tmpfs come before
    the binds: a venv or a checkout under /tmp stays reachable."""
    args = ["--die-with-parent", "--new-session", "--as-pid-1"]
    if mode["user"]:
        args += ["--unshare-all", "--cap-drop", "ALL"]  # a user namespace (the grader is not root); no capability in it
    else:  # as root: no user namespace, so jail.py keeps the capabilities to resize the tmpfs and to change uid
        args += ["--unshare-ipc", "--unshare-pid", "--unshare-net", "--unshare-uts", "--unshare-cgroup-try"]
    args += _system_args() + ["--proc", "/proc", "--dev", "/dev"]
    size = ["--size", str(TMPFS_BYTES)] if mode["user"] and mode["sized"] else []
    for folder in PRIVATE_FOLDERS:
        args += ["--perms", "1777", *size, "--tmpfs", folder]
    args += [*_folders_to(SANDBOX_WORK), "--perms", "0700", *size, "--tmpfs", SANDBOX_WORK]
    args += ["--perms", "0700", "--dir", SANDBOX_WORK + "/tmp"]
    binds = allow_list()
    for source, dest in binds:
        args += [*_folders_to(dest), "--ro-bind", source, dest]
    for source, dest in binds:  # the grader's package installed in the venv: not for the child
        if _inside(str(AUTOGRADER_DIR), source):
            covered = dest + str(AUTOGRADER_DIR)[len(source) :]
            args += ["--tmpfs", covered, "--remount-ro", covered]
    args += [*_folders_to(SANDBOX_CODE), "--ro-bind", str(code), SANDBOX_CODE]
    return args + ["--remount-ro", "/", "--chdir", "/"]


def _namespace_setup(mode: dict, owner: tuple[int, int]) -> dict:
    """What jail.py does inside the namespaces before the harness (`jail.prepare`): as root, the size
    caps of the private tmpfs (a remount), the work folder handed to `owner`, and the loopback device
    down; nothing without root (bwrap sized the tmpfs where it can, and the loopback stays up in a
    network namespace of its own)."""
    if mode["user"]:
        return {"resize": [], "owned": [], "loopback_down": False}
    uid, gid = owner
    return {
        "resize": [
            {"path": p, "data": f"size={TMPFS_BYTES},nr_inodes={TMPFS_INODES}"}
            for p in (*PRIVATE_FOLDERS, SANDBOX_WORK)
        ],
        "owned": [{"path": p, "uid": uid, "gid": gid} for p in (SANDBOX_WORK, SANDBOX_WORK + "/tmp")],
        "loopback_down": True,
    }


def _jail_command(mode: dict) -> list[str]:
    """The interpreter on jail.py: the child's copy at SANDBOX_CODE under bwrap, the package's otherwise."""
    jail = f"{SANDBOX_CODE}/jail.py" if mode["mode"] == "bwrap" else str(JAIL_SOURCE)
    return [sys.executable, "-I", "-S", "-B", jail]


def unreachable_folders() -> list[str]:
    """Folders on the way to the interpreter, the venv or `hetero` that other users cannot traverse
    (pyenv under /root, mode 0700). Without bubblewrap the sandbox uid then cannot start Python at all."""
    blocked = []
    for source, _ in allow_list():
        for folder in list(reversed(Path(source).parents))[1:]:
            if not folder.stat().st_mode & 0o001 and str(folder) not in blocked:
                blocked.append(str(folder))
                break
    return blocked


def remove_tree(path: Path) -> None:
    """Delete a file, or a folder tree of any depth and any path length, never following symlinks.

    Iterative, with one directory fd at a time (a 3000-level tree made by student code defeats a
    recursive delete and PATH_MAX); a folder that cannot be opened is made readable first (a child may
    leave mode 000 folders); what still cannot be removed is left, never raised.
    """
    flags = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW
    try:
        fd = os.open(path, flags)
    except FileNotFoundError:
        return
    except OSError:  # a file or a link, not a folder
        try:
            os.unlink(path)
        except OSError:
            pass
        return
    names: list[str] = []  # the path from `path` down to the folder open as fd
    while True:
        sub = None
        with os.scandir(fd) as entries:
            for entry in entries:
                if entry.is_dir(follow_symlinks=False):
                    sub = entry.name
                    break
                try:
                    os.unlink(entry.name, dir_fd=fd)
                except OSError:
                    pass
        if sub is not None:
            child = _open_folder(sub, flags, fd)
            if child is not None:
                os.close(fd)
                fd, names = child, names + [sub]
                continue
        if not names:
            os.close(fd)
            break
        parent = os.open("..", flags, dir_fd=fd)
        os.close(fd)
        fd = parent
        try:
            os.rmdir(names.pop(), dir_fd=fd)
        except OSError:
            os.close(fd)
            return  # cannot make progress here: leave the rest
    try:
        os.rmdir(path)
    except OSError:
        pass


def _open_folder(name: str, flags: int, dir_fd: int) -> int | None:
    """An fd of the folder `name` inside `dir_fd`, made readable if need be; None if it cannot be opened."""
    try:
        return os.open(name, flags, dir_fd=dir_fd)
    except PermissionError:
        try:
            os.chmod(name, 0o700, dir_fd=dir_fd)
            return os.open(name, flags, dir_fd=dir_fd)
        except OSError:
            return None
    except OSError:
        return None


def _own_task_count() -> int:
    uid = os.getuid()
    return sum(threads for _, uids, _, threads in _process_table() if uid in uids)


_USED_UIDS: set[int] = set()  # every uid this process has handed out: none is handed out twice


def used_uids() -> set[int]:
    """The sandbox uids this process has handed out so far."""
    return set(_USED_UIDS)


class SandboxUser:
    """A uid from SANDBOX_UIDS held (by an fcntl lock) for one child; root only."""

    def __init__(self) -> None:
        UID_LOCK_DIR.mkdir(mode=0o700, parents=True, exist_ok=True)

        def released_at(uid: int) -> float:
            try:
                return (UID_LOCK_DIR / f"{uid}.lock").stat().st_mtime
            except OSError:
                return 0.0

        for uid in sorted((u for u in SANDBOX_UIDS if u not in _USED_UIDS), key=lambda u: (released_at(u), u)):
            try:
                pwd.getpwuid(uid)
                continue  # an account of this machine: never run student code as it, never kill its processes
            except KeyError:
                pass
            lock = UID_LOCK_DIR / f"{uid}.lock"
            fd = os.open(lock, os.O_CREAT | os.O_RDWR, 0o600)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError:
                os.close(fd)
                continue
            _USED_UIDS.add(uid)
            os.utime(fd)
            kill_uid(uid)  # a leftover from a grader that died must not share this uid
            if _owned(uid, zombies=True):
                os.close(fd)  # zombies nobody reaps: they would count against this uid's RLIMIT_NPROC
                continue
            self.uid = self.gid = uid
            self._fd = fd
            return
        raise SandboxError(
            "no free sandbox uid (too many graders in parallel, or more than "
            f"{len(SANDBOX_UIDS)} children in one grader process)"
        )

    def release(self) -> None:
        os.utime(self._fd)
        os.close(self._fd)


# ---------------------------------------------------------------------------------------------
# The child process


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


class _Output:
    """Printed output of an exercise's children: the first `keep` bytes, the count of all of them."""

    def __init__(self, keep: int):
        self.keep = keep
        self.data = bytearray()
        self.total = 0
        self.public_bytes: int | None = None  # the count when the first hidden case was sent

    def feed(self, chunk: bytes) -> None:
        room = self.keep - len(self.data)
        if room > 0:
            self.data += chunk[:room]
        self.total += len(chunk)

    def text(self, upto: int, limit_chars: int) -> str:
        data = bytes(self.data[:upto])
        text = data.decode("utf-8", errors="replace")
        if len(text) > limit_chars or upto > len(data):
            text = text[:limit_chars] + f"\n... (output truncated; {upto} bytes in all)"
        return text


def _describe_exit(returncode: int, cpu_used: float, limits: Limits) -> tuple[str, str]:
    if returncode < 0:
        sig = -returncode
        name = signal.Signals(sig).name if sig in signal.valid_signals() else str(sig)
        if sig == signal.SIGXCPU or (sig == signal.SIGKILL and cpu_used >= limits.cpu_s):
            return "cpu", f"the CPU-time limit ({limits.cpu_s:g} s) was exceeded"
        if sig == signal.SIGXFSZ:
            return "output", (
                f"the output limit ({limits.output_bytes // 2**20} MiB for printed output and files) was exceeded"
            )
        return "signal", f"the process was killed by signal {name} (crash, or memory exhausted)"
    return "exited", (
        f"the process exited with status {returncode} before finishing "
        "(sys.exit, os._exit or a fatal error in your code?)"
    )


class _Run:
    """State of one child: the record parser and the case-by-case sending of call specs.

    `first` is the index of the first case this child is sent (a restarted child skips the cases its
    predecessors ran); `on_hidden` is called before every hidden case is queued or skipped (it must act
    only the first time: the output printed up to then is the public output); the cases
    of `skipped_funcs` (functions already stopped at the per-case limit) are not sent at all.
    """

    def __init__(
        self,
        specs: list[dict],
        key: bytes,
        hidden_from: int,
        report: ChildReport,
        first: int = 0,
        on_hidden: Callable[[], None] = lambda: None,
        skipped_funcs: frozenset[str] = frozenset(),
    ):
        self.specs = specs
        self.skipped_funcs = skipped_funcs
        self.key = key
        self.hidden_from = hidden_from
        self.report = report
        self.on_hidden = on_hidden
        self.next_seq = first  # the record expected next
        self.sent = first  # call specs sent so far
        self.imported: bool | None = None
        self.ended_input = False
        self.pending = bytearray()
        self.sent_at = 0.0  # when the outstanding case was queued (monotonic)

    def queue(self, message: dict) -> None:
        self.pending += json.dumps(message, separators=(",", ":")).encode("utf-8") + b"\n"

    def outstanding(self) -> int | None:
        """The index of the case sent and not yet answered, if any."""
        return self.next_seq if self.next_seq < self.sent else None

    def send_next(self) -> None:
        while self.sent < len(self.specs) and self.specs[self.sent]["func"] in self.skipped_funcs:
            if self.sent >= self.hidden_from:  # skipping a hidden case also ends the public output
                self.on_hidden()
            case_id = self.specs[self.sent]["id"]
            self.report.refused[case_id] = (
                f"not run: {self.specs[self.sent]['func']} already ran longer than "
                "the per-case time limit on an earlier case"
            )
            self.sent += 1
            self.next_seq = self.sent
        if self.sent < len(self.specs):
            if self.sent >= self.hidden_from:  # on_hidden acts once: the first hidden case sent or skipped
                self.on_hidden()
            self.queue({"seq": self.sent, "case": self.specs[self.sent]})
            self.sent += 1
            self.sent_at = time.monotonic()
        elif not self.ended_input:
            self.queue({"end": True})
            self.ended_input = True

    def refuse_oversized(self, limit_bytes: int) -> None:
        """A record longer than `limit_bytes` was dropped unread: it counts as the waiting case's result."""
        waiting = self.outstanding()
        if waiting is None:
            self.report.bad_records += 1
            return
        self.report.refused[self.specs[waiting]["id"]] = (
            f"its result record was larger than {limit_bytes // 2**10} KiB (no answer here is that large), "
            "so it was not read"
        )
        self.next_seq = waiting + 1
        self.send_next()

    def record(self, line: bytes | bytearray) -> None:
        mac, _, payload = line.partition(b" ")
        if len(mac) != 64:  # cheap refusal of junk before any HMAC is computed
            self.report.bad_records += 1
            return
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
            if self.imported is None:
                self.imported = bool(data.get("ok"))
                if self.report.imported is None:
                    self.report.imported = self.imported
                    self.report.import_error = str(data.get("error", ""))[:8000]
                if self.imported:
                    self.send_next()
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
        self.send_next()


def run_exercise(
    student_file: Path,
    module_name: str,
    specs: list[dict],
    hidden_from: int,
    limits: Limits,
    skip_funcs: frozenset[str] = frozenset(),
) -> ChildReport:
    """Run `specs` (call specs, public first; hidden from index `hidden_from`) on `student_file`.

    skip_funcs: functions whose cases are not sent (stopped at the per-case limit in an earlier run)."""
    report = ChildReport()
    mode = isolation_mode()
    output = _Output(limits.kept_output_bytes)
    start = time.monotonic()
    deadline = start + limits.timeout_s
    first, stopped = 0, []
    notes: list[str] = []
    while True:
        child = _Child(student_file, module_name, specs, hidden_from, limits, report, output, mode)
        notes = notes or child.notes
        first_stopped = child.run(
            first,
            deadline,
            limits.cpu_s - report.cpu_s,
            skip_funcs | frozenset(s["func"] for s in specs if s["id"] in stopped),
        )
        if first_stopped is None:
            break
        stopped.append(specs[first_stopped]["id"])
        first = first_stopped + 1
        if first >= len(specs) or time.monotonic() >= deadline:
            break
    report.isolation = tuple(notes)
    report.stopped_cases = tuple(stopped)
    report.wall_s = time.monotonic() - start
    report.output_bytes = output.total
    public_bytes = output.public_bytes if output.public_bytes is not None else output.total
    report.output_public = output.text(public_bytes, limits.shown_output_chars)
    report.output_all = output.text(output.total, 4 * limits.shown_output_chars)
    return report


class _Child:
    """One child process: its folder, its uid, its pipes; `run` exchanges specs and records with it."""

    def __init__(
        self,
        student_file: Path,
        module_name: str,
        specs: list[dict],
        hidden_from: int,
        limits: Limits,
        report: ChildReport,
        output: _Output,
        mode: dict,
    ):
        self.student_file, self.module_name = student_file, module_name
        self.specs, self.hidden_from, self.limits = specs, hidden_from, limits
        self.report, self.output, self.mode = report, output, mode
        if mode["mode"] == "none":
            become_subreaper()
        self.user = SandboxUser() if is_root() else None
        self.notes = _isolation_notes(mode, self.user.uid if self.user else None)
        self.status_r = -1  # the read end of the status pipe of the child running now

    def run(self, first: int, deadline: float, cpu_left_s: float, skipped_funcs: frozenset[str]) -> int | None:
        """Run cases from index `first`; returns the index of a case stopped at the per-case limit, if any."""
        base = Path(tempfile.mkdtemp(prefix=f"a2grade-{os.getpid()}-"))
        proc: subprocess.Popen | None = None
        fds: list[int] = []
        jailed = self.mode["mode"] == "bwrap"
        try:
            ro, work = base / "ro", base / "work"
            ro.mkdir(mode=0o755)
            target = ro / f"{self.module_name}.py"
            shutil.copyfile(self.student_file, target)
            shutil.copyfile(CHILD_SOURCE, ro / "child.py")
            copies = [target, ro / "child.py"]
            if jailed:
                shutil.copyfile(JAIL_SOURCE, ro / "jail.py")
                copies.append(ro / "jail.py")
            for path in copies:
                path.chmod(0o644)
            ro.chmod(0o755)
            owner = (self.user.uid, self.user.gid) if self.user else (os.getuid(), os.getgid())
            if jailed:  # the child's paths inside its root; its work folder is a tmpfs there
                code, cwd = SANDBOX_CODE, SANDBOX_WORK
            else:  # on the host: its work folder is on disk, deleted at any depth by remove_tree
                code, cwd = str(ro), str(work)
                (work / "tmp").mkdir(parents=True)
                if self.user is not None:
                    blocked = unreachable_folders()
                    if blocked:
                        raise SandboxError(
                            f"the sandbox uid cannot reach the interpreter ({', '.join(blocked)} is private) "
                            "and without bubblewrap nothing opens a way"
                        )
                    base.chmod(0o711)
                    for path in (work, work / "tmp"):
                        os.chown(path, *owner)
                    work.chmod(0o700)
            result_r, result_w = os.pipe()
            out_r, out_w = os.pipe()
            status_r, status_w = os.pipe()
            fds = [result_r, result_w, out_r, out_w, status_r, status_w]
            key = secrets.token_bytes(32)

            def mark_public() -> None:
                if self.output.public_bytes is None:
                    self._drain(out_r)
                    self.output.public_bytes = self.output.total

            run = _Run(self.specs, key, self.hidden_from, self.report, first, mark_public, skipped_funcs)
            hello = {"key": key.hex(), "path": f"{code}/{target.name}", "name": self.module_name}  # sent after SETUP
            nproc = self.limits.max_processes if self.user else _own_task_count() + self.limits.max_processes
            setup = {
                "mode": self.mode["mode"],
                "grader_pid": os.getpid(),
                "result_fd": result_w,
                "status_fd": status_w,
                "cwd": cwd,
                "uid": self.user.uid if self.user else None,
                "gid": self.user.gid if self.user else None,
                "argv": [sys.executable, "-s", "-B", "-u", f"{code}/child.py", str(result_w)],
                "limits": {
                    "cpu_s": max(1, int(cpu_left_s + 0.999)),
                    "file_bytes": self.limits.output_bytes,
                    "open_files": self.limits.open_files,
                    "processes": nproc,
                    "memory_bytes": self.limits.memory_mib * 2**20,
                },
            }
            if jailed:
                setup.update(_namespace_setup(self.mode, owner))
                command = [self.mode["bwrap"], *bwrap_args(self.mode, ro), "--", *_jail_command(self.mode)]
            else:
                command = _jail_command(self.mode)
            command.append(json.dumps(setup))
            proc = subprocess.Popen(
                command,
                stdin=subprocess.PIPE,
                stdout=out_w,
                stderr=out_w,
                pass_fds=(result_w, status_w),
                cwd=str(base),
                env=_child_env(Path(cwd)),
                start_new_session=True,
            )
            for fd in (result_w, out_w, status_w):
                os.close(fd)
                fds.remove(fd)
            self.status_r = status_r
            stopped = self._pump(proc, run, hello, result_r, out_r, deadline)
            self.report.survivors_killed += self._reap(proc)
            self._drain(out_r)
            return stopped
        finally:
            for fd in fds:
                os.close(fd)
            if proc is not None and proc.returncode is None:
                self._reap(proc)
            if self.user is not None:
                self.user.release()
            remove_tree(base)

    def _drain(self, out_r: int) -> bool:
        """Read whatever printed output is waiting in the pipe, without blocking; False at its end."""
        while True:
            try:
                chunk = os.read(out_r, READ_CHUNK_BYTES)
            except BlockingIOError:
                return True
            except OSError:
                return False
            if not chunk:
                return False
            self.output.feed(chunk)

    def _stop(self, ended: str, detail: str) -> None:
        self.report.ended, self.report.detail = ended, detail

    def _pump(
        self, proc: subprocess.Popen, run: _Run, hello: dict, result_r: int, out_r: int, deadline: float
    ) -> int | None:
        """Exchange specs and records until the child is done, dies, or a limit is hit.

        `hello` (the key and the file) is sent once jail.py's SETUP line has arrived: the harness
        waits for it, so no student code runs before that line, and none can forge it."""
        report, limits = self.report, self.limits
        assert proc.stdin is not None
        stdin_fd = proc.stdin.fileno()
        for fd in (stdin_fd, result_r, out_r):
            os.set_blocking(fd, False)
        selector = selectors.DefaultSelector()
        selector.register(result_r, selectors.EVENT_READ)
        selector.register(out_r, selectors.EVENT_READ)
        buffer = bytearray()
        record_limit = limits.record_bytes + 65  # the MAC (64 hex digits) and its space
        skipping = False  # inside a record longer than record_limit: dropped up to its newline
        setup_seen = False
        stdin_open = True
        exit_deadline: float | None = None
        exited = eof = False
        while True:
            now = time.monotonic()
            if exited and (eof or not _readable(result_r)):
                break
            if now >= deadline:
                self._stop("timeout", f"the time limit ({limits.timeout_s:g} s wall clock) was exceeded")
                return None
            waiting = run.outstanding()
            if waiting is not None and limits.case_timeout_s is not None and now - run.sent_at >= limits.case_timeout_s:
                report.refused[self.specs[waiting]["id"]] = (
                    f"stopped after {limits.case_timeout_s:g} s (the per-case "
                    "time limit); the other cases ran in a fresh process"
                )
                return waiting
            if exit_deadline is not None and now >= exit_deadline:
                return None  # every record is in; the child did not exit by itself and is killed by _reap
            if stdin_open and run.pending:
                if stdin_fd not in selector.get_map():
                    selector.register(stdin_fd, selectors.EVENT_WRITE)
            elif stdin_fd in selector.get_map():
                selector.unregister(stdin_fd)
            for key, _ in selector.select(timeout=min(0.05, max(0.0, deadline - now))):
                if key.fd == out_r:
                    if not self._drain(out_r):
                        selector.unregister(out_r)
                    if self.output.total > limits.output_bytes:
                        self._stop(
                            "output",
                            f"the output limit ({limits.output_bytes // 2**20} MiB for printed "
                            "output and files) was exceeded",
                        )
                        return None
                elif key.fd == result_r and not eof:
                    try:
                        chunk = os.read(result_r, READ_CHUNK_BYTES)
                    except BlockingIOError:
                        continue
                    if not chunk:
                        eof = True
                        selector.unregister(result_r)
                        continue
                    report.result_bytes += len(chunk)
                    if report.result_bytes > limits.result_bytes:
                        self._stop("result_size", f"the results were larger than {limits.result_bytes // 2**20} MiB")
                        return None
                    if skipping:
                        end = chunk.find(b"\n")
                        if end < 0:
                            continue
                        chunk, skipping = chunk[end + 1 :], False
                        run.refuse_oversized(limits.record_bytes)
                    buffer += chunk
                    if b"\n" not in chunk:
                        if len(buffer) > record_limit:
                            buffer.clear()
                            skipping = True
                        continue
                    lines = buffer.split(b"\n")
                    buffer = bytearray(lines.pop())
                    if len(buffer) > record_limit:
                        buffer.clear()
                        skipping = True
                    for line in lines:
                        if len(line) > record_limit:
                            run.refuse_oversized(limits.record_bytes)
                            continue
                        if not setup_seen:
                            self.notes += _setup_notes(line)
                            setup_seen = True
                            run.queue(hello)
                            continue
                        run.record(line)
                    if report.bad_records > limits.junk_lines:
                        self._stop(
                            "junk",
                            f"more than {limits.junk_lines} lines that are not result records were "
                            "written to the result channel",
                        )
                        return None
                elif key.fd == stdin_fd:
                    try:
                        written = os.write(stdin_fd, run.pending)
                        del run.pending[:written]
                    except BlockingIOError:
                        pass
                    except OSError:
                        stdin_open = False
                        run.pending.clear()
                        selector.unregister(stdin_fd)
            if run.ended_input and not run.pending and exit_deadline is None:
                exit_deadline = time.monotonic() + EXIT_GRACE_S
            if not exited and self._wait(proc):
                exited = True
        if not setup_seen:
            raise SandboxError(
                f"the sandbox launcher ended (status {proc.returncode}) before setting up the child: "
                f"{self.output.text(self.output.total, 2000)}"
            )
        if run.next_seq < len(run.specs) or run.imported is None:
            self._stop(*_describe_exit(report.returncode or 0, report.cpu_s, limits))
        return None

    def _wait(self, proc: subprocess.Popen) -> bool:
        """Reap the child if it has exited (recording status and CPU time); True once it has."""
        try:
            pid, status, usage = os.wait4(proc.pid, os.WNOHANG)
        except ChildProcessError:
            return True
        if pid == 0:
            return False
        proc.returncode = os.waitstatus_to_exitcode(self._harness_status(status))
        self.report.returncode = proc.returncode
        self.report.cpu_s += usage.ru_utime + usage.ru_stime
        return True

    def _harness_status(self, status: int) -> int:
        """The harness's raw wait status as jail.py reported it on the status pipe (so the grader sees
        SIGXCPU, SIGXFSZ or an exit code whatever bwrap's own status is); `status` when none came."""
        os.set_blocking(self.status_r, False)
        try:
            raw = os.read(self.status_r, 4)
        except OSError:
            raw = b""
        return int.from_bytes(raw, "little") if len(raw) == 4 else status

    def _reap(self, proc: subprocess.Popen) -> int:
        """Kill bwrap's process group (so, by PR_SET_PDEATHSIG, the namespace's init, so everything in it;
        in mode "none" the launcher's), reap it, and as root kill every process left with the child's uid;
        returns how many were left."""
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
        if proc.returncode is None:
            try:
                _, status, usage = os.wait4(proc.pid, 0)
                proc.returncode = os.waitstatus_to_exitcode(status)
                self.report.cpu_s += usage.ru_utime + usage.ru_stime
            except ChildProcessError:
                proc.returncode = -signal.SIGKILL
        if proc.stdin is not None:
            try:
                proc.stdin.close()
            except OSError:
                pass
        return kill_uid(self.user.uid) if self.user is not None else 0


def _setup_notes(line: bytes | bytearray) -> list[str]:
    """jail.py's first line on the result channel, SETUP {"ok": true, "notes": [...]}: its notes."""
    try:
        data = json.loads(line[len(b"SETUP ") :]) if line.startswith(b"SETUP ") else {}
        if data.get("ok") is True:
            return [str(n) for n in data.get("notes", [])]
    except (ValueError, TypeError, AttributeError):
        data = {}
    raise SandboxError(f"the sandbox could not be set up: {data.get('notes') or line[:500]!r}")


def _readable(fd: int) -> bool:
    selector = selectors.DefaultSelector()
    selector.register(fd, selectors.EVENT_READ)
    try:
        return bool(selector.select(timeout=0))
    finally:
        selector.close()
