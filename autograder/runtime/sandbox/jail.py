"""Start the sandboxed harness (`child.py`): the trusted code between the grader and student code.

`autograder.runtime.sandbox.runner` runs this file with the child's environment, stdin (the control pipe),
stdout/stderr (the output pipe), the result fd and the status fd, and the setup as one JSON argument.
It imports only the standard library (it runs before any student code, with the grader's privileges).
Two ways, as `sandbox.isolation_mode` found here:

- "bwrap": the grader runs `bwrap ARGS -- python -I -S -B /sandbox/code/jail.py SETUP`. bubblewrap
  makes the namespaces (mount, PID, network, IPC, UTS, cgroup; a user namespace too when the grader
  is not root) and a new root that holds only an allow-list, read-only (`sandbox.bwrap_args`: /usr
  and the /lib, /bin symlinks, a few files of /etc, the interpreter, the venv, `hetero`, the child's
  own copies of its exercise file, child.py and this file under /sandbox/code), with a fresh /proc
  and a minimal /dev; it dies with the grader (--die-with-parent). This file then runs as PID 1 of
  the new PID namespace (--as-pid-1), the namespace's init, with the capabilities bwrap leaves root
  inside: it caps the size of the tmpfs bwrap made (/tmp, /var/tmp, /dev/shm and the work folder
  /sandbox/work) by remounting them (bubblewrap 0.6, Ubuntu 22.04's, has no --size, so the sizes are
  set here, the same way on every version), hands the work folder to the child's uid, takes the
  loopback device down, starts the harness, writes the line `SETUP {json}` on the result fd once the
  harness's exec succeeded, and reaps every orphan until the harness exits. It then writes the
  harness's raw wait status (4 bytes) on the status fd and exits; the kernel kills every process left
  in the namespace (double forks, `setsid`, relays that re-fork every few milliseconds). Without
  root, bwrap sizes those tmpfs itself (--size, from bubblewrap 0.8 on) and this init needs no
  capability (bwrap drops them all: --cap-drop ALL).
- "none" (no bubblewrap, or it fails here): the grader runs `python -I -S -B jail.py SETUP` on the
  host: this launcher starts the harness itself, writes SETUP and the status the same way; the grader
  ends leftovers by uid (`sandbox.kill_uid`) and says what is not isolated.

The harness (a fork of init or of the launcher): resource limits, then (as root) the sandbox uid
without groups, PR_SET_NO_NEW_PRIVS, a seccomp filter (`keyring_filter`: add_key, request_key, keyctl
and foreign ABIs fail with EPERM, since keyrings are not namespaced and a uid's persistent keyring
outlives the child), PR_SET_PDEATHSIG, RLIMIT_AS last, and exec of the interpreter on child.py. The
uid change drops every capability, so student code can undo no mount. The harness tells its parent
how the filter went (a note for the SETUP line: "keyrings: not isolated (...)" where there is no filter
for this architecture or the kernel refused it; grading goes on).

`jail.py --probe SETUP` (run inside bwrap by `sandbox.isolation_mode`, once per grader process) does
what init does before the harness (the size caps, the work folder, the loopback) and prints "ok".
"""

from __future__ import annotations

import ctypes
import errno
import json
import os
import resource
import signal
import sys

MS_NOSUID, MS_NODEV, MS_REMOUNT = 2, 4, 32
PR_SET_PDEATHSIG = 1
PR_SET_NO_NEW_PRIVS = 38
PR_SET_SECCOMP, SECCOMP_MODE_FILTER = 22, 2
SIOCGIFFLAGS, SIOCSIFFLAGS, IFF_UP = 0x8913, 0x8914, 0x1

# The seccomp filter: classic BPF over struct seccomp_data {int nr; u32 arch; u64 ip; u64 args[6]}
BPF_LD_W_ABS, BPF_JEQ_K, BPF_JGE_K, BPF_RET_K = 0x20, 0x15, 0x35, 0x06  # BPF_LD|BPF_W|BPF_ABS, BPF_JMP|...
SECCOMP_DATA_NR, SECCOMP_DATA_ARCH = 0, 4  # offsets in struct seccomp_data
SECCOMP_RET_ALLOW, SECCOMP_RET_ERRNO = 0x7FFF0000, 0x00050000
X32_SYSCALL_BIT = 0x40000000
# os.uname().machine: (AUDIT_ARCH_*, the numbers of add_key, request_key, keyctl, whether x32 numbers exist)
SECCOMP_ARCHES = {
    "x86_64": (0xC000003E, (248, 249, 250), True),
    "aarch64": (0xC00000B7, (217, 218, 219), False),
}

_libc = ctypes.CDLL(None, use_errno=True)


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


class _SockFilter(ctypes.Structure):
    _fields_ = [("code", ctypes.c_uint16), ("jt", ctypes.c_uint8), ("jf", ctypes.c_uint8), ("k", ctypes.c_uint32)]


class _SockFprog(ctypes.Structure):
    _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.POINTER(_SockFilter))]


def keyring_filter(machine: str | None = None) -> list[tuple[int, int, int, int]] | None:
    """The seccomp program (code, jt, jf, k) for `machine` (default: this one's), None where unknown.

    A foreign ABI (i386 `int 0x80` on x86_64), an x32 number, add_key, request_key and keyctl return
    EPERM; everything else is allowed. Jumps go to the last instruction, the denial.
    """
    if machine is None:
        machine = os.uname().machine
    if machine not in SECCOMP_ARCHES:
        return None
    arch, keyring_nrs, x32 = SECCOMP_ARCHES[machine]
    tests = [(BPF_JGE_K, X32_SYSCALL_BIT)] if x32 else []
    tests += [(BPF_JEQ_K, nr) for nr in keyring_nrs]
    deny = 3 + len(tests) + 1  # ld arch, jeq arch, ld nr, the tests, ret allow, then ret deny
    program = [
        (BPF_LD_W_ABS, 0, 0, SECCOMP_DATA_ARCH),
        (BPF_JEQ_K, 0, deny - 2, arch),
        (BPF_LD_W_ABS, 0, 0, SECCOMP_DATA_NR),
    ]
    for code, k in tests:
        program.append((code, deny - (len(program) + 1), 0, k))
    program += [(BPF_RET_K, 0, 0, SECCOMP_RET_ALLOW), (BPF_RET_K, 0, 0, SECCOMP_RET_ERRNO | errno.EPERM)]
    return program


def install_filter(program: list[tuple[int, int, int, int]]) -> None:
    """Install a seccomp program on this process (needs PR_SET_NO_NEW_PRIVS or CAP_SYS_ADMIN); for good."""
    filters = (_SockFilter * len(program))(*(_SockFilter(*insn) for insn in program))
    fprog = _SockFprog(len(program), filters)
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


def install_keyring_filter() -> str:
    """Install `keyring_filter` on this process; the isolation note saying whether it is there."""
    machine = os.uname().machine
    program = keyring_filter(machine)
    if program is None:
        return f"keyrings: not isolated (no seccomp filter for the {machine} architecture)"
    try:
        install_filter(program)
    except OSError as exc:
        return f"keyrings: not isolated (the seccomp filter was refused: {exc})"
    return "keyrings: denied (seccomp filter on add_key, request_key, keyctl)"


def probe_keyring_filter() -> str:
    """The note `install_keyring_filter` gives here, from a forked process (this one stays unfiltered)."""
    read_fd, write_fd = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(read_fd)
        try:
            prctl(PR_SET_NO_NEW_PRIVS, 1)
            os.write(write_fd, install_keyring_filter().encode("utf-8", "replace"))
        except BaseException as exc:
            os.write(write_fd, f"keyrings: not isolated ({exc})".encode("utf-8", "replace"))
        os._exit(0)
    os.close(write_fd)
    with os.fdopen(read_fd, "rb") as handle:
        note = handle.read().decode("utf-8", "replace")
    _wait_for(pid)
    return note


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
    """Inside the new namespaces, before the harness: the size caps of `setup["resize"]` ({"path",
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


def _set_limits(limits: dict) -> None:
    resource.setrlimit(resource.RLIMIT_CPU, (limits["cpu_s"], limits["cpu_s"] + 2))
    resource.setrlimit(resource.RLIMIT_FSIZE, (limits["file_bytes"],) * 2)
    resource.setrlimit(resource.RLIMIT_NOFILE, (limits["open_files"],) * 2)
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    resource.setrlimit(resource.RLIMIT_NPROC, (limits["processes"],) * 2)


def _harness(setup: dict, exec_fd: int) -> None:
    """Limits, identity, filter, exec of the harness. On `exec_fd` (closed by a good exec), one JSON line
    each: {"note": the filter's note}, then {"failure": why it did not start} if it did not."""
    try:
        _set_limits(setup["limits"])
        if setup["uid"] is not None:
            os.setgroups([])
            os.setgid(setup["gid"])
            os.setuid(setup["uid"])
        prctl(PR_SET_NO_NEW_PRIVS, 1)
        _send(exec_fd, {"note": install_keyring_filter()})
        prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
        resource.setrlimit(resource.RLIMIT_AS, (setup["limits"]["memory_bytes"],) * 2)
        os.chdir(setup["cwd"])
        os.execve(setup["argv"][0], setup["argv"], dict(os.environ))
    except BaseException as exc:
        _send(exec_fd, {"failure": f"the harness could not start: {exc}"})
    os._exit(126)


def _send(fd: int, message: dict) -> None:
    os.write(fd, json.dumps(message).encode("utf-8", "replace") + b"\n")


def _start_harness(setup: dict, notes: list[str]) -> int:
    """Fork and exec the harness, then write the SETUP line (ok only if exec succeeded, with the
    harness's notes after `notes`); its pid.

    The grader sends the harness its first message only after this line, so student code never runs
    before it and nothing the student writes can pass for it.
    """
    exec_r, exec_w = os.pipe()  # close-on-exec: end-of-file means the exec succeeded or failed
    harness = os.fork()
    if harness == 0:
        os.close(exec_r)
        _harness(setup, exec_w)
    os.close(exec_w)
    data = b""
    while True:
        chunk = os.read(exec_r, 4096)
        if not chunk:
            break
        data += chunk
    os.close(exec_r)
    told, failed = [], False
    for line in data.decode("utf-8", "replace").splitlines():
        try:
            message = json.loads(line)
        except ValueError:
            message = None
        if isinstance(message, dict) and isinstance(message.get("note"), str):
            told.append(message["note"])
        else:
            told.append(message["failure"] if isinstance(message, dict) and "failure" in message else line)
            failed = True
    if failed:
        _setup_line(setup["result_fd"], False, notes + told)
        os._exit(125)
    _setup_line(setup["result_fd"], True, notes + told)
    return harness


def _setup_line(fd: int, ok: bool, notes: list[str]) -> None:
    data = b"SETUP " + json.dumps({"ok": ok, "notes": notes}).encode("utf-8", "replace") + b"\n"
    os.write(fd, data)


def _report_status(setup: dict, status: int) -> None:
    """Write the harness's raw wait status on the status fd (the grader reads it once this process is gone)."""
    os.write(setup["status_fd"], status.to_bytes(4, "little"))


def _init(setup: dict) -> None:
    """PID 1 of bwrap's PID namespace: mounts, SETUP line, harness, reaping; reports the harness's status.

    When it exits (or is killed: it dies with bwrap, bwrap with the grader), the kernel kills every
    other process of the namespace."""
    try:
        prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
        os.set_inheritable(setup["status_fd"], False)  # the harness's exec closes it
        notes = prepare(setup)
    except BaseException as exc:
        _setup_line(setup["result_fd"], False, [f"the sandbox could not be prepared: {exc}"])
        os._exit(125)
    harness = _start_harness(setup, notes)
    os.close(setup["result_fd"])
    for fd in (0, 1, 2):  # the pipes stay with the harness only
        os.close(fd)
    while True:
        try:
            pid, status = os.wait()
        except ChildProcessError:
            os._exit(125)
        except InterruptedError:
            continue
        if pid == harness:
            _report_status(setup, status)
            os._exit(0)  # the kernel now kills everything else in the namespace


def launch(setup: dict) -> None:
    """Mode "none", on the host: start the harness, report its status, exit."""
    prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
    if os.getppid() != setup["grader_pid"]:
        os._exit(125)  # the grader is already gone
    os.set_inheritable(setup["status_fd"], False)
    harness = _start_harness(setup, [])
    os.close(setup["result_fd"])
    for fd in (0, 1, 2):
        os.close(fd)
    _report_status(setup, _wait_for(harness))
    os._exit(0)


def _wait_for(pid: int) -> int:
    while True:
        try:
            return os.waitpid(pid, 0)[1]
        except InterruptedError:
            continue


def main(argv: list[str]) -> None:
    """`jail.py SETUP_JSON` starts a child (init inside bwrap, or the launcher for mode "none");
    `jail.py --probe SETUP_JSON` only prepares the namespace and prints "ok"."""
    if argv[1:2] == ["--probe"]:
        notes = prepare(json.loads(argv[2]))
        print(json.dumps({"ok": True, "notes": notes}), flush=True)
        return
    setup = json.loads(argv[1])
    if setup["mode"] == "bwrap":
        _init(setup)
    else:
        launch(setup)


if __name__ == "__main__":
    main(sys.argv)
