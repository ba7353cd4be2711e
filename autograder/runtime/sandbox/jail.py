"""Start one sandboxed child: the trusted code between the grader and student code, run as `jail.py SETUP`.

`autograder.runtime.sandbox.process` runs this file with the child's environment, stdin (the control
pipe), stdout/stderr (the output pipe), the result fd, the status fd and, on the Landlock rungs, a
Landlock ruleset fd; SETUP is one JSON argument the grader computed (`ladder`, `syscalls`, `cgroup`).
It imports only the standard library: it runs with the grader's privileges, before any student code.

Stages, in one process until the harness forks:
1. enter (on the host, as the grader's child): end with the grader (PR_SET_PDEATHSIG), join the exercise's
   cgroups (a memory cap for every process of the exercise, where the grader could make one), raise
   its own oom_score_adj to 1000 (inherited by everything it starts; a student cannot lower it), then
   - rung "bwrap": exec bubblewrap, which makes the namespaces and the allow-list root and runs this file
     again inside as PID 1 of the new PID namespace (stage 2, `init`): it resizes the private tmpfs,
     hands the work folder to the child's uid and takes the loopback device down (`prepare`);
   - any other rung: stay on the host as the launcher (stage 2, `launch`), a child subreaper: an orphan
     of student code (double fork, `setsid`) is re-parented here, never to the machine's init.
2. supervise: fork the harness, write the `SETUP {json}` line on the result fd once its exec succeeded
   (the grader sends the child nothing before it, so no student code runs before it and none can forge
   it), then until the harness exits: reap and, where no cgroup caps the exercise, every WATCH_S sum the
   memory of every descendant (`memory_bytes`); past the exercise's cap, kill them all; for a tool's command,
   whose work folder lies on the machine's disk, likewise when that disk's free space falls below
   `disk_floor_bytes` (the room the grader keeps for its own results). Then kill every descendant that is
   left, reap them, write the harness's raw wait status (4 bytes) and why it was ended (1 byte: `ENDED`) on
   the status fd, and exit. SIGTERM (from the grader, at a limit) ends it the same way. Inside bubblewrap the kernel also
   kills whatever is left in the PID namespace when this init exits.
3. harness (the forked child): resource limits; as root the sandbox uid without supplementary groups;
   PR_SET_NO_NEW_PRIVS; the Landlock ruleset (landlock_restrict_self on the fd the grader built);
   PR_SET_PDEATHSIG; RLIMIT_AS; the seccomp program the grader compiled with libseccomp
   (`autograder.runtime.sandbox.syscalls`), installed last; exec of the interpreter on child.py. Each
   layer reports one note (what it covers) on the exec pipe; a layer the rung requires that fails stops
   the child before any student code runs.

`jail.py --probe SETUP` (run inside bwrap by the ladder, once per grader process) does what init does
before the harness and prints "ok".
"""

from __future__ import annotations

import ctypes
import json
import os
import resource
import shutil
import signal
import sys
import time

MS_NOSUID, MS_NODEV, MS_REMOUNT = 2, 4, 32
PR_SET_PDEATHSIG = 1
PR_SET_NO_NEW_PRIVS = 38
PR_SET_SECCOMP, SECCOMP_MODE_FILTER = 22, 2
PR_SET_CHILD_SUBREAPER = 36
SIOCGIFFLAGS, SIOCSIFFLAGS, IFF_UP = 0x8913, 0x8914, 0x1
LANDLOCK_RESTRICT_SELF = 446  # the same number on every architecture (asm-generic)

WATCH_S = 0.01  # how often the memory of the child's processes is summed (and its disk's free space read)
ENDED = {"finished": 0, "memory": 1, "terminated": 2, "disk": 3}  # the byte after the wait status

_libc = ctypes.CDLL(None, use_errno=True)
_libc.syscall.restype = ctypes.c_long


def _check(result: int, what: str) -> None:
    if result != 0:
        err = ctypes.get_errno()
        raise OSError(err, f"{what}: {os.strerror(err)}")


def mount(source: str, target: str, fstype: str | None, flags: int, data: str | None) -> None:
    args = [None if x is None else x.encode() for x in (source, target, fstype, data)]
    _check(_libc.mount(args[0], args[1], args[2], ctypes.c_ulong(flags), args[3]), f"mount {target}")


def prctl(option: int, value: int) -> None:
    _check(
        _libc.prctl(
            ctypes.c_int(option), ctypes.c_ulong(value), ctypes.c_ulong(0), ctypes.c_ulong(0), ctypes.c_ulong(0)
        ),
        f"prctl {option}",
    )


class _SockFprog(ctypes.Structure):
    _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.c_void_p)]


def install_seccomp(program: bytes) -> None:
    """Install a compiled seccomp program (struct sock_filter[], as libseccomp exports it) on this process,
    for good; needs PR_SET_NO_NEW_PRIVS (or CAP_SYS_ADMIN)."""
    if not program or len(program) % 8:
        raise OSError(22, "seccomp: not a compiled filter")
    buffer = ctypes.create_string_buffer(program, len(program))
    fprog = _SockFprog(len(program) // 8, ctypes.cast(buffer, ctypes.c_void_p))
    _check(
        _libc.prctl(
            ctypes.c_int(PR_SET_SECCOMP),
            ctypes.c_ulong(SECCOMP_MODE_FILTER),
            ctypes.cast(ctypes.pointer(fprog), ctypes.c_void_p),
            ctypes.c_ulong(0),
            ctypes.c_ulong(0),
        ),
        "prctl PR_SET_SECCOMP",
    )


def landlock_restrict(ruleset_fd: int) -> None:
    """Enforce the Landlock ruleset `ruleset_fd` on this process and everything it starts, for good."""
    if _libc.syscall(ctypes.c_long(LANDLOCK_RESTRICT_SELF), ctypes.c_int(ruleset_fd), ctypes.c_uint(0)) != 0:
        err = ctypes.get_errno()
        raise OSError(err, f"landlock_restrict_self: {os.strerror(err)}")


def resize_tmpfs(path: str, data: str) -> None:
    """Remount the tmpfs on `path` (nosuid, nodev, as bwrap made it) with the options `data` (size, inodes)."""
    mount("none", path, None, MS_REMOUNT | MS_NOSUID | MS_NODEV, data)


def loopback_down() -> None:
    """Take the network namespace's loopback device down (bwrap brings it up): no network at all."""
    import fcntl
    import socket
    import struct

    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
        request = struct.pack("16sH14x", b"lo", 0)
        flags = struct.unpack("16sH14x", fcntl.ioctl(sock.fileno(), SIOCGIFFLAGS, request))[1]
        fcntl.ioctl(sock.fileno(), SIOCSIFFLAGS, struct.pack("16sH14x", b"lo", flags & ~IFF_UP))


def prepare(setup: dict) -> list[str]:
    """Inside bubblewrap's namespaces, before the harness: the size caps of `setup["resize"]` ({"path",
    "data"}: tmpfs bwrap made), the folders of `setup["owned"]` ({"path", "uid", "gid"}) made if need be
    and handed to that owner, mode 0700, and, if `setup["loopback_down"]`, the loopback device down.
    Returns notes (what could not be done and is not fatal)."""
    for item in setup.get("resize", []):
        resize_tmpfs(item["path"], item["data"])
    for item in setup.get("owned", []):
        os.makedirs(item["path"], 0o700, exist_ok=True)
        os.chown(item["path"], item["uid"], item["gid"])
        os.chmod(item["path"], 0o700)
    notes = []
    if setup.get("loopback_down"):
        try:
            loopback_down()
        except OSError as exc:
            notes.append(f"network: own namespace, its loopback device stays up ({exc.strerror})")
    return notes


# ---------------------------------------------------------------------------------------------
# The harness: the forked child that becomes the student's interpreter.


def _set_limits(limits: dict) -> None:
    resource.setrlimit(resource.RLIMIT_CPU, (limits["cpu_s"], limits["cpu_s"] + 2))
    resource.setrlimit(resource.RLIMIT_FSIZE, (limits["file_bytes"],) * 2)
    resource.setrlimit(resource.RLIMIT_NOFILE, (limits["open_files"],) * 2)
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    resource.setrlimit(resource.RLIMIT_NPROC, (limits["processes"],) * 2)


def _harness(setup: dict, exec_fd: int) -> None:
    """Limits, identity, Landlock, seccomp, exec. On `exec_fd` (closed by a good exec), one JSON line each:
    {"note": ...} per layer, then {"failure": why it did not start} if it did not."""
    harness = setup["harness"]
    try:
        _set_limits(harness["limits"])
        if harness["uid"] is not None:
            os.setgroups([])
            os.setgid(harness["gid"])
            os.setuid(harness["uid"])
        prctl(PR_SET_NO_NEW_PRIVS, 1)
        if harness.get("landlock_fd") is not None:
            landlock_restrict(harness["landlock_fd"])
            os.close(harness["landlock_fd"])
        prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
        resource.setrlimit(resource.RLIMIT_AS, (harness["limits"]["memory_bytes"],) * 2)
        os.chdir(harness["cwd"])
        os.close(setup["setup_fd"])
        if harness.get("seccomp"):
            install_seccomp(bytes.fromhex(harness["seccomp"]))
        os.execve(harness["argv"][0], harness["argv"], dict(os.environ))
    except BaseException as exc:
        _send(exec_fd, {"failure": f"the harness could not start: {exc}"})
    os._exit(126)


def _send(fd: int, message: dict) -> None:
    os.write(fd, json.dumps(message).encode("utf-8", "replace") + b"\n")


def _start_harness(setup: dict, notes: list[str]) -> int:
    """Fork and exec the harness, then write the SETUP line (ok only if exec succeeded); its pid."""
    exec_r, exec_w = os.pipe()  # close-on-exec: end-of-file means the exec succeeded or failed
    harness = os.fork()
    if harness == 0:
        os.close(exec_r)
        _harness(setup, exec_w)
    os.close(exec_w)
    landlock_fd = setup["harness"].get("landlock_fd")
    if landlock_fd is not None:
        os.close(landlock_fd)  # only the harness holds the ruleset
    data = b""
    while True:
        chunk = os.read(exec_r, 4096)
        if not chunk:
            break
        data += chunk
    os.close(exec_r)
    failures = []
    for line in data.decode("utf-8", "replace").splitlines():
        try:
            message = json.loads(line)
        except ValueError:
            message = {"failure": line}
        failures.append(str(message.get("failure", line)) if isinstance(message, dict) else line)
    if failures:
        _setup_line(setup["result_fd"], False, notes + failures)
        os._exit(125)
    _setup_line(setup["result_fd"], True, notes)
    return harness


def _setup_line(fd: int, ok: bool, notes: list[str]) -> None:
    data = b"SETUP " + json.dumps({"ok": ok, "notes": notes}).encode("utf-8", "replace") + b"\n"
    os.write(fd, data)


# ---------------------------------------------------------------------------------------------
# Supervising: every process the harness starts is a descendant of this process until it ends.


def _process_table() -> dict[int, int]:
    """{pid: parent pid} of every process this /proc shows."""
    table = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", "rb") as handle:
                fields = handle.read().rsplit(b")", 1)[1].split()
            table[int(entry)] = int(fields[1])
        except (OSError, IndexError, ValueError):
            continue
    return table


def _children(pid: int) -> list[int] | None:
    """The children of `pid` from /proc/PID/task/*/children (None where the kernel has no such file)."""
    found: list[int] = []
    try:
        tasks = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return found
    for tid in tasks:
        try:
            with open(f"/proc/{pid}/task/{tid}/children", "rb") as handle:
                found += [int(x) for x in handle.read().split()]
        except FileNotFoundError:
            if not os.path.exists(f"/proc/{pid}/task/{tid}"):
                continue
            return None
        except (OSError, ValueError):
            continue
    return found


def descendants(pid: int) -> list[int]:
    """Every live descendant of `pid` (orphans of a subreaper's descendants come back to it): a walk of the
    children files, else a scan of every process's parent."""
    walked, todo = [], [pid]
    while todo:
        children = _children(todo.pop())
        if children is None:
            return _scanned_descendants(pid)
        walked += children
        todo += children
    return walked


def _scanned_descendants(pid: int) -> list[int]:
    children: dict[int, list[int]] = {}
    for child, parent in _process_table().items():
        children.setdefault(parent, []).append(child)
    found, todo = [], list(children.get(pid, []))
    while todo:
        current = todo.pop()
        found.append(current)
        todo.extend(children.get(current, []))
    return found


def memory_bytes(pids: list[int]) -> int:
    """The memory `pids` hold of their own: RssAnon + RssShmem of each (kernel counters: O(1) to read, so the
    watch can be frequent; anonymous pages shared after a fork count in each process, which errs on the
    side of the cap)."""
    total = 0
    for pid in pids:
        try:
            with open(f"/proc/{pid}/status", "rb") as handle:
                for line in handle:
                    if line.startswith((b"RssAnon:", b"RssShmem:")):
                        total += int(line.split()[1]) * 1024
        except (OSError, ValueError, IndexError):
            continue
    return total


def free_bytes(path: str) -> int:
    """The space an unprivileged user may still take on the file system of `path` (0 when it cannot be read)."""
    try:
        return shutil.disk_usage(path).free
    except OSError:
        return 0


def kill_descendants() -> None:
    """SIGKILL every descendant and reap them, until this process has no child left: a process killed while
    forking leaves an orphan, which comes back here (a subreaper, or PID 1) and is caught next round."""
    me = os.getpid()
    while True:
        for pid in descendants(me):
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        try:
            while os.waitpid(-1, os.WNOHANG)[0] > 0:
                pass
        except ChildProcessError:
            return
        time.sleep(0.005)


_TERMINATE: list[bool] = []


def supervise(setup: dict, notes: list[str]) -> None:
    """Stage 2 (module docstring): run the harness, watch it, end everything it left; never returns."""
    signal.signal(signal.SIGTERM, lambda *_: _TERMINATE.append(True))
    harness = _start_harness(setup, notes)
    os.close(setup["result_fd"])
    for fd in (0, 1, 2):  # the pipes stay with the harness only
        os.close(fd)
    cap = setup.get("memory_bytes")
    floor = setup.get("disk_floor_bytes")  # a tool's command: the free space its work folder's disk keeps
    status, ended = None, "finished"
    next_watch = time.monotonic()
    while status is None:
        if _TERMINATE:
            ended = "terminated"
            break
        try:
            while True:
                pid, raw = os.waitpid(-1, os.WNOHANG)
                if pid == 0:
                    break
                if pid == harness:
                    status = raw
        except ChildProcessError:
            break
        if status is not None:
            break
        now = time.monotonic()
        if (cap or floor is not None) and now >= next_watch:
            next_watch = now + WATCH_S
            if cap and memory_bytes(descendants(os.getpid())) > cap:
                ended = "memory"
                break
            if floor is not None and free_bytes(setup["harness"]["cwd"]) < floor:
                ended = "disk"
                break
        time.sleep(WATCH_S)
    left = [pid for pid in descendants(os.getpid()) if pid != harness]  # what the student's code started
    kill_descendants()
    if status is None:
        status = signal.SIGKILL  # a raw wait status: killed by SIGKILL
    report = status.to_bytes(4, "little") + bytes([ENDED[ended]]) + len(left).to_bytes(4, "little")
    os.write(setup["status_fd"], report)
    os._exit(0)


def _join_cgroups(setup: dict) -> None:
    for procs in setup.get("cgroup", []):
        with open(procs, "w") as handle:
            handle.write(str(os.getpid()))


def enter(setup: dict) -> None:
    """Stage 1, on the host (module docstring). On the host rungs this process stays as the launcher:
    when the grader dies it gets SIGTERM (PR_SET_PDEATHSIG), so that it still kills every descendant
    before it exits; bwrap, exec'd in its place on the bwrap rung, dies with the namespace's init."""
    prctl(PR_SET_PDEATHSIG, signal.SIGTERM if setup["rung"] != "bwrap" else signal.SIGKILL)
    if os.getppid() != setup["grader_pid"]:
        os._exit(125)  # the grader is already gone
    try:
        _join_cgroups(setup)
        with open("/proc/self/oom_score_adj", "w") as handle:
            handle.write("1000")
    except OSError as exc:
        _setup_line(setup["result_fd"], False, [f"the sandbox could not be entered: {exc}"])
        os._exit(125)
    if setup["rung"] == "bwrap":
        fd = setup["setup_fd"]
        os.execv(
            setup["bwrap"][0], [*setup["bwrap"], setup["python"], "-I", "-S", "-B", setup["jail"], "--init", str(fd)]
        )
    os.set_inheritable(setup["status_fd"], False)  # the harness's exec closes it
    _libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)
    supervise(setup, [])


def init(setup: dict) -> None:
    """Stage 2 inside bubblewrap: PID 1 of its PID namespace."""
    try:
        prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
        os.set_inheritable(setup["status_fd"], False)
        notes = prepare(setup.get("prepare", {}))
    except BaseException as exc:
        _setup_line(setup["result_fd"], False, [f"the sandbox could not be prepared: {exc}"])
        os._exit(125)
    supervise(setup, notes)


def read_setup(fd: int) -> dict:
    """The setup the grader wrote into the memory file `fd` (read from its start: every stage reads it)."""
    size = os.fstat(fd).st_size
    return dict(json.loads(os.pread(fd, size, 0)), setup_fd=fd)


def main(argv: list[str]) -> None:
    """`jail.py --setup FD` starts a child (stage 1; `--init FD` is stage 2 inside bwrap), FD a memory file
    holding the setup (too long for a command line with a tool's allow-list); `jail.py --probe SETUP_JSON`
    only prepares bwrap's namespaces."""
    if argv[1:2] == ["--probe"]:
        notes = prepare(json.loads(argv[2]))
        print(json.dumps({"ok": True, "notes": notes}), flush=True)
        return
    setup = read_setup(int(argv[2]))
    if argv[1] == "--init":
        init(setup)
    else:
        enter(setup)


if __name__ == "__main__":
    main(sys.argv)
