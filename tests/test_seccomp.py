"""The child's seccomp programs (`autograder.runtime.sandbox.syscalls`), one per isolation rung, from inside.

Each check installs one rung's program in a forked child (a filter cannot be removed), after
PR_SET_NO_NEW_PRIVS, as jail.py's harness does (`jail.install_seccomp`), and reports through a pipe:
- on every program: keyrings (not namespaced: a key outlives the child), sockets of any family, a socket
  pair of any family but AF_UNIX, namespaces (clone's flags, clone3, unshare, setns) and mounts, ptrace
  and reading another process's memory, io_uring, every call that tells or changes what the page cache
  holds (mincore, cachestat, fadvise, readahead, madvise's cold and pageout advice, RWF_NOWAIT reads),
  SysV shared memory and message queues, POSIX message queues and inotify are refused; threads, fork,
  multiprocessing, a subprocess, numpy and torch work, and a program exec'd under the filter keeps it;
- by rung: "seccomp-uid" is a read-only world (every call that creates or changes a file fails with EROFS,
  reads work); "landlock" and "same-uid" refuse utime and extended attributes (which Landlock does not
  cover), "same-uid" also chmod and chown; "bwrap" allows them (its root is read-only anyway).
The system call numbers are written out here, independently of syscalls.py (which names the calls and
lets libseccomp number them). The answer key scores full marks on every rung (tests/rungs.py).
"""

from __future__ import annotations

import ctypes
import errno
import fcntl
import json
import os
import selectors
import subprocess
import sys
import time
import traceback
from pathlib import Path

import pytest

from autograder.core.manifest import BY_ID
from autograder.runtime import grader
from autograder.runtime import results as res
from autograder.runtime.sandbox import allowlist, jail, syscalls
from hetero.impl import load_module_from_path

_helpers = load_module_from_path(Path(__file__).with_name("test_grader.py"), "_a2_grader_test_helpers")
rungs = load_module_from_path(Path(__file__).with_name("rungs.py"), "_a2_rungs")
SCORE_TOL, root_for, submission_with = _helpers.SCORE_TOL, _helpers.root_for, _helpers.submission_with
exercise_score, autograder_failures = _helpers.exercise_score, _helpers.autograder_failures

MACHINE = os.uname().machine
# The kernel's numbers for each architecture, written out here (aarch64 has no open, mkdir, rename, unlink,
# symlink, link, chmod, chown, utime, creat nor inotify_init: only their *at forms).
NUMBERS = {
    "x86_64": {
        "add_key": 248,
        "request_key": 249,
        "keyctl": 250,
        "socket": 41,
        "socketpair": 53,
        "clone": 56,
        "clone3": 435,
        "unshare": 272,
        "setns": 308,
        "mount": 165,
        "ptrace": 101,
        "process_vm_readv": 310,
        "io_uring_setup": 425,
        "mincore": 27,
        "cachestat": 451,
        "fadvise64": 221,
        "readahead": 187,
        "madvise": 28,
        "fcntl": 72,
        "preadv2": 327,
        "shmget": 29,
        "shmctl": 31,
        "msgget": 68,
        "msgctl": 71,
        "mq_open": 240,
        "mq_unlink": 241,
        "inotify_init": 253,
        "inotify_init1": 294,
        "getpid": 39,
        "open": 2,
        "openat": 257,
        "creat": 85,
        "mkdir": 83,
        "mkdirat": 258,
        "rename": 82,
        "renameat": 264,
        "renameat2": 316,
        "unlink": 87,
        "unlinkat": 263,
        "symlink": 88,
        "symlinkat": 266,
        "link": 86,
        "linkat": 265,
        "chmod": 90,
        "fchmodat": 268,
        "chown": 92,
        "fchownat": 260,
        "utime": 132,
        "utimensat": 280,
        "setxattr": 188,
    },
    "aarch64": {
        "add_key": 217,
        "request_key": 218,
        "keyctl": 219,
        "socket": 198,
        "socketpair": 199,
        "clone": 220,
        "clone3": 435,
        "unshare": 97,
        "setns": 268,
        "mount": 40,
        "ptrace": 117,
        "process_vm_readv": 270,
        "io_uring_setup": 425,
        "mincore": 232,
        "cachestat": 451,
        "fadvise64": 223,
        "readahead": 213,
        "madvise": 233,
        "fcntl": 25,
        "preadv2": 286,
        "shmget": 194,
        "shmctl": 195,
        "msgget": 186,
        "msgctl": 187,
        "mq_open": 180,
        "mq_unlink": 181,
        "inotify_init1": 26,
        "getpid": 172,
        "openat": 56,
        "mkdirat": 34,
        "renameat": 38,
        "renameat2": 276,
        "unlinkat": 35,
        "symlinkat": 36,
        "linkat": 37,
        "fchmodat": 53,
        "fchownat": 54,
        "utimensat": 88,
        "setxattr": 5,
    },
}
NR = NUMBERS.get(MACHINE, {})
known_arch = pytest.mark.skipif(not NR, reason=f"no system call numbers written out for {MACHINE}")

PROGRAMS = ("bwrap", "landlock", "seccomp-uid", "same-uid")  # one per rung that runs student code isolated

KEY_SPEC_PROCESS_KEYRING, KEY_SPEC_SESSION_KEYRING, KEY_SPEC_USER_KEYRING = -2, -3, -4
KEYCTL_GET_KEYRING_ID, KEYCTL_GET_PERSISTENT = 0, 22
AF_UNIX, AF_INET, AF_INET6, AF_NETLINK, AF_PACKET = 1, 2, 10, 16, 17
SOCK_STREAM, SOCK_DGRAM, SOCK_RAW = 1, 2, 3
SIGCHLD = 17
CLONE_FLAGS = {
    "CLONE_NEWNS": 0x00020000,
    "CLONE_NEWCGROUP": 0x02000000,
    "CLONE_NEWUTS": 0x04000000,
    "CLONE_NEWIPC": 0x08000000,
    "CLONE_NEWUSER": 0x10000000,
    "CLONE_NEWPID": 0x20000000,
    "CLONE_NEWNET": 0x40000000,
    "CLONE_NEWTIME": 0x00000080,
}
PTRACE_TRACEME = 0
MADV_DONTNEED, MADV_COLD, MADV_PAGEOUT = 4, 20, 21
POSIX_FADV_DONTNEED = 4
RWF_NOWAIT = 0x8
F_SETLEASE, F_NOTIFY, DN_ACCESS = 1024, 1026, 0x1
HIGH_BIT = 1 << 32  # above the 32 bits the kernel reads of an int argument
NO_PROCESS_UID = 65533  # a uid no process of this machine runs as (setpriority(PRIO_USER) on it: ESRCH)
IPC_PRIVATE, IPC_CREAT, IPC_RMID = 0, 0o1000, 0
AT_FDCWD = -100
O_RDONLY, O_WRONLY, O_RDWR, O_CREAT, O_TRUNC, O_APPEND = 0, 0o1, 0o2, 0o100, 0o1000, 0o2000
EX = BY_ID["ex01"]

_libc = ctypes.CDLL(None, use_errno=True)
_libc.syscall.restype = ctypes.c_long


def syscall(name: str, *args) -> list[int]:
    """[result, errno] of the raw system call `name` (this machine's number from NUMBERS; errno 0 when it
    succeeded). Python ints are passed as C longs, bytes as pointers."""
    converted = [ctypes.c_long(a) if isinstance(a, int) else a for a in args]
    ctypes.set_errno(0)
    result = _libc.syscall(ctypes.c_long(NR[name]), *converted)
    return [result, ctypes.get_errno() if result < 0 else 0]


def in_child(work, timeout_s: float = 120.0):
    """Run `work()` in a forked child; its JSON answer, or the child's traceback as a test failure."""
    read_fd, write_fd = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(read_fd)
        try:
            answer = {"answer": work()}
        except BaseException:
            answer = {"error": traceback.format_exc()}
        with os.fdopen(write_fd, "wb") as handle:
            handle.write(json.dumps(answer).encode())
        os._exit(0)
    os.close(write_fd)
    data = b""
    deadline = time.monotonic() + timeout_s
    with selectors.DefaultSelector() as selector:
        selector.register(read_fd, selectors.EVENT_READ)
        while time.monotonic() < deadline:
            if selector.select(timeout=deadline - time.monotonic()):
                chunk = os.read(read_fd, 65536)
                if not chunk:
                    break
                data += chunk
        else:
            os.kill(pid, 9)
    os.close(read_fd)
    os.waitpid(pid, 0)
    assert data, f"the forked child answered nothing within {timeout_s:g} s"
    answer = json.loads(data)
    assert "error" not in answer, f"the forked child failed:\n{answer.get('error')}"
    return answer["answer"]


def filtered(rung: str, work):
    """`work` run after PR_SET_NO_NEW_PRIVS and `rung`'s program, as jail.py's harness installs them."""
    program = syscalls.program(rung)

    def run():
        jail.prctl(jail.PR_SET_NO_NEW_PRIVS, 1)
        jail.install_seccomp(program)
        return work()

    return run


def _errno(call) -> list[int]:  # type: ignore[no-untyped-def]
    """[0, 0] when `call()` succeeds, [-1, errno] when it raises OSError."""
    try:
        call()
        return [0, 0]
    except OSError as exc:
        return [-1, exc.errno or 0]


# ---------------------------------------------------------------------------------------------
# What every program refuses. `cache_probes` are also run without a filter (the control: each works
# here, so a refusal under the filter is the filter's).


def _page(size: int = 4096):  # type: ignore[no-untyped-def]
    import mmap

    area = mmap.mmap(-1, size)
    area.write(b"x" * size)
    return area, ctypes.addressof(ctypes.c_char.from_buffer(area))


def cache_probes(path: str) -> dict[str, list[int]]:
    """The calls that tell or change what the page cache holds of `path` (a file of a few pages), and the
    kernel objects that outlive a process, where making one can be undone at once."""
    got: dict[str, list[int]] = {}
    area, address = _page()
    vec = ctypes.create_string_buffer(1)
    got["mincore"] = syscall("mincore", ctypes.c_void_p(address), 4096, vec)
    for advice, name in ((MADV_COLD, "madvise MADV_COLD"), (MADV_PAGEOUT, "madvise MADV_PAGEOUT")):
        got[name] = syscall("madvise", ctypes.c_void_p(address), 4096, advice)
        # the kernel reads the advice as an int: with bit 32 set it is the same advice
        got[f"{name} + 2**32"] = syscall("madvise", ctypes.c_void_p(address), 4096, advice | HIGH_BIT)
    fd = os.open(path, os.O_RDONLY)
    try:
        got["fadvise64"] = syscall("fadvise64", fd, 0, 0, POSIX_FADV_DONTNEED)
        got["os.posix_fadvise"] = _errno(lambda: os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED))
        got["readahead"] = syscall("readahead", fd, 0, 4096)
        span = (ctypes.c_uint64 * 2)(0, 0)  # struct cachestat_range {off, len}: the whole file
        stat = (ctypes.c_uint64 * 5)()
        got["cachestat"] = syscall("cachestat", fd, span, stat, 0)
        buf = ctypes.create_string_buffer(1)
        iov = (ctypes.c_void_p * 2)(ctypes.cast(buf, ctypes.c_void_p), 1)  # struct iovec {base, len}
        nowait = syscall("preadv2", fd, iov, 1, 0, 0, RWF_NOWAIT)  # 1 byte read, or EAGAIN: not cached
        got["preadv2 RWF_NOWAIT"] = [0, 0] if nowait in ([1, 0], [-1, errno.EAGAIN]) else nowait
        got["os.preadv RWF_NOWAIT"] = _errno(lambda: os.preadv(fd, [bytearray(1)], 0, os.RWF_NOWAIT))
        if got["os.preadv RWF_NOWAIT"] == [-1, errno.EAGAIN]:
            got["os.preadv RWF_NOWAIT"] = [0, 0]
    finally:
        os.close(fd)
    inotify = syscall("inotify_init1", 0)
    got["inotify_init1"] = [min(inotify[0], 0), inotify[1]]
    if inotify[0] >= 0:
        os.close(inotify[0])
    if "inotify_init" in NR:
        inotify = syscall("inotify_init")
        got["inotify_init"] = [min(inotify[0], 0), inotify[1]]
        if inotify[0] >= 0:
            os.close(inotify[0])
    got["keyctl get id"] = syscall("keyctl", KEYCTL_GET_KEYRING_ID, KEY_SPEC_USER_KEYRING, 0)
    got["keyctl get id"][0] = min(got["keyctl get id"][0], 0)
    sock = syscall("socket", AF_UNIX, SOCK_STREAM, 0)
    got["socket AF_UNIX"] = [min(sock[0], 0), sock[1]]
    if sock[0] >= 0:
        os.close(sock[0])
    pair = (ctypes.c_int * 2)()
    got["socketpair AF_INET"] = syscall("socketpair", AF_INET, SOCK_STREAM, 0, pair)
    area.close()
    return got


def _made(result: list[int], undo) -> list[int]:  # type: ignore[no-untyped-def]
    """`result`, with what a call that should have been refused made undone (`undo(handle)`)."""
    if result[0] >= 0:
        undo(result[0])
        return [0, 0]
    return result


def _forked(result: list[int]) -> list[int]:
    """A clone that succeeded returns 0 in its child (which leaves at once) and a pid in the caller."""
    if result[0] == 0 and result[1] == 0:
        os._exit(0)
    if result[0] > 0:
        os.waitpid(result[0], 0)
        return [0, 0]
    return result


def refused_everywhere(folder: str) -> dict[str, list[int]]:
    """Under a filter: every call no program allows, each with [result, errno]."""
    got = cache_probes(os.path.join(folder, "pages"))
    got["add_key session"] = syscall(
        "add_key", b"user", b"a2-seccomp-test", b"x", ctypes.c_size_t(1), KEY_SPEC_SESSION_KEYRING
    )
    got["add_key user"] = syscall(
        "add_key", b"user", b"a2-seccomp-test", b"x", ctypes.c_size_t(1), KEY_SPEC_USER_KEYRING
    )
    got["request_key"] = syscall("request_key", b"user", b"a2-seccomp-test", None, 0)
    got["keyctl get persistent"] = syscall("keyctl", KEYCTL_GET_PERSISTENT, -1, KEY_SPEC_PROCESS_KEYRING)
    for family, kind, name in (
        (AF_INET, SOCK_STREAM, "AF_INET"),
        (AF_INET6, SOCK_STREAM, "AF_INET6"),
        (AF_UNIX, SOCK_STREAM, "AF_UNIX"),
        (AF_UNIX, SOCK_DGRAM, "AF_UNIX dgram"),
        (AF_NETLINK, SOCK_RAW, "AF_NETLINK"),
        (AF_PACKET, SOCK_RAW, "AF_PACKET"),
    ):
        got[f"socket {name}"] = _made(syscall("socket", family, kind, 0), os.close)
    got["socket.socket AF_INET"] = _errno(lambda: __import__("socket").socket().close())
    for flag, value in CLONE_FLAGS.items():
        got[f"clone {flag}"] = _forked(syscall("clone", value | SIGCHLD, 0, 0, 0, 0))
    args = (ctypes.c_uint64 * 11)()  # struct clone_args (88 bytes): flags, pidfd, child_tid, parent_tid, exit_signal
    args[0], args[4] = CLONE_FLAGS["CLONE_NEWUSER"], SIGCHLD
    got["clone3 CLONE_NEWUSER"] = _forked(syscall("clone3", args, ctypes.sizeof(args)))
    got["unshare CLONE_NEWUSER"] = syscall("unshare", CLONE_FLAGS["CLONE_NEWUSER"])
    got["unshare CLONE_NEWNS"] = syscall("unshare", CLONE_FLAGS["CLONE_NEWNS"])
    got["unshare CLONE_NEWNET"] = syscall("unshare", CLONE_FLAGS["CLONE_NEWNET"])
    ns = os.open("/proc/self/ns/net", os.O_RDONLY)
    got["setns"] = syscall("setns", ns, 0)
    os.close(ns)
    target = os.path.join(folder, "mountpoint").encode()
    got["mount"] = _made(syscall("mount", b"none", target, b"tmpfs", 0, None), lambda _: _libc.umount2(target, 2))
    got["ptrace PTRACE_TRACEME"] = syscall("ptrace", PTRACE_TRACEME, 0, 0, 0)
    got["process_vm_readv"] = syscall("process_vm_readv", os.getppid(), None, 0, None, 0, 0)
    params = ctypes.create_string_buffer(120)  # struct io_uring_params
    got["io_uring_setup"] = _made(syscall("io_uring_setup", 4, params), os.close)
    got["shmget"] = _made(
        syscall("shmget", IPC_PRIVATE, 4096, IPC_CREAT | 0o600), lambda shm: syscall("shmctl", shm, IPC_RMID, None)
    )
    got["msgget"] = _made(
        syscall("msgget", IPC_PRIVATE, IPC_CREAT | 0o600), lambda queue: syscall("msgctl", queue, IPC_RMID, None)
    )
    name = f"a2-seccomp-{os.getpid()}".encode()  # the kernel's mq_open takes the name without its "/"
    got["mq_open"] = _made(
        syscall("mq_open", name, O_CREAT | O_RDWR, 0o600, None), lambda fd: (os.close(fd), syscall("mq_unlink", name))
    )
    # another process's scheduling, each set to what it already is (allowed, nothing would change); a uid
    # without processes for PRIO_USER (allowed: ESRCH)
    parent = os.getppid()
    got["setpriority parent"] = _errno(
        lambda: os.setpriority(os.PRIO_PROCESS, parent, os.getpriority(os.PRIO_PROCESS, parent))
    )
    got["setpriority user"] = _errno(lambda: os.setpriority(os.PRIO_USER, NO_PROCESS_UID, 0))
    got["sched_setaffinity parent"] = _errno(lambda: os.sched_setaffinity(parent, os.sched_getaffinity(parent)))
    got["sched_setscheduler parent"] = _errno(
        lambda: os.sched_setscheduler(parent, os.sched_getscheduler(parent), os.sched_getparam(parent))
    )
    watched = os.open(folder, os.O_RDONLY)
    got["fcntl F_NOTIFY"] = _errno(lambda: fcntl.fcntl(watched, F_NOTIFY, DN_ACCESS))
    # the kernel reads fcntl's command as an int: with bit 32 set it is the same command
    got["fcntl F_NOTIFY + 2**32"] = syscall("fcntl", watched, F_NOTIFY | HIGH_BIT, DN_ACCESS)
    os.close(watched)
    leased = os.open(os.path.join(folder, "pages"), os.O_RDONLY)
    got["fcntl F_SETLEASE"] = _errno(lambda: fcntl.fcntl(leased, F_SETLEASE, fcntl.F_RDLCK))
    got["fcntl F_SETLEASE + 2**32"] = syscall("fcntl", leased, F_SETLEASE | HIGH_BIT, fcntl.F_RDLCK)
    os.close(leased)
    return got


# errno each refused call must get under every program (EPERM: "not allowed"; EACCES for sockets)
REFUSED = {
    "add_key session": errno.EPERM,
    "add_key user": errno.EPERM,
    "request_key": errno.EPERM,
    "keyctl get id": errno.EPERM,
    "keyctl get persistent": errno.EPERM,
    "socket AF_INET": errno.EACCES,
    "socket AF_INET6": errno.EACCES,
    "socket AF_UNIX": errno.EACCES,
    "socket AF_UNIX dgram": errno.EACCES,
    "socket AF_NETLINK": errno.EACCES,
    "socket AF_PACKET": errno.EACCES,
    "socket.socket AF_INET": errno.EACCES,
    "socketpair AF_INET": errno.EAFNOSUPPORT,
    "unshare CLONE_NEWUSER": errno.EPERM,
    "unshare CLONE_NEWNS": errno.EPERM,
    "unshare CLONE_NEWNET": errno.EPERM,
    "setns": errno.EPERM,
    "mount": errno.EPERM,
    "ptrace PTRACE_TRACEME": errno.EPERM,
    "process_vm_readv": errno.EPERM,
    "io_uring_setup": errno.EPERM,
    "mincore": errno.EPERM,
    "cachestat": errno.EPERM,
    "fadvise64": errno.EPERM,
    "os.posix_fadvise": errno.EPERM,
    "readahead": errno.EPERM,
    "madvise MADV_COLD": errno.EPERM,
    "madvise MADV_PAGEOUT": errno.EPERM,
    "madvise MADV_COLD + 2**32": errno.EPERM,
    "madvise MADV_PAGEOUT + 2**32": errno.EPERM,
    "preadv2 RWF_NOWAIT": errno.EPERM,
    "os.preadv RWF_NOWAIT": errno.EPERM,
    "shmget": errno.EPERM,
    "msgget": errno.EPERM,
    "mq_open": errno.EPERM,
    "inotify_init": errno.EPERM,
    "inotify_init1": errno.EPERM,
    "fcntl F_NOTIFY": errno.EPERM,
    "fcntl F_NOTIFY + 2**32": errno.EPERM,
    "fcntl F_SETLEASE": errno.EPERM,
    "fcntl F_SETLEASE + 2**32": errno.EPERM,
}
# and on the same-uid rung alone (its child shares the grader's uid): another process's scheduling
REFUSED_SAME_UID = {
    "setpriority parent": errno.EPERM,
    "setpriority user": errno.EPERM,
    "sched_setaffinity parent": errno.EPERM,
    "sched_setscheduler parent": errno.EPERM,
}
# namespaces through clone's flags or clone3: not in the allow-list (ENOSYS, the default) or refused
CLONE_REFUSALS = {errno.ENOSYS, errno.EPERM}


def _pages(folder: Path) -> None:
    (folder / "pages").write_bytes(os.urandom(4 * 4096))
    (folder / "mountpoint").mkdir()


@known_arch
def test_without_a_filter_the_cache_probes_work_here(tmp_path):
    """The control: each call the filters refuse below works in an unfiltered process on this machine
    (so a refusal under a filter is the filter's, not the kernel's), and a socket pair of AF_INET fails
    with the kernel's own errno, not the filter's EAFNOSUPPORT."""
    _pages(tmp_path)
    got = in_child(lambda: cache_probes(str(tmp_path / "pages")))
    pair = got.pop("socketpair AF_INET")
    assert pair[0] == -1 and pair[1] != errno.EAFNOSUPPORT, f"socketpair(AF_INET) unfiltered: {pair}"
    failing = {name: r for name, r in got.items() if r != [0, 0]}
    assert not failing, f"without a filter these calls should work here (their [result, errno]): {failing}"


@known_arch
@pytest.mark.parametrize("rung", PROGRAMS)
def test_every_program_refuses_what_outlives_or_watches_the_child(rung, tmp_path):
    """Keyrings, sockets, namespaces, mounts, ptrace, io_uring, page-cache probes, SysV and POSIX IPC,
    inotify: each refused with its errno under `rung`'s program."""
    _pages(tmp_path)
    got = in_child(filtered(rung, lambda: refused_everywhere(str(tmp_path))))
    refused = {**REFUSED, **(REFUSED_SAME_UID if rung == "same-uid" else {})}
    wrong = {
        name: (got[name], f"expected [-1, {errno.errorcode[want]}]")
        for name, want in refused.items()
        if name in got and got[name] != [-1, want]
    }
    assert not wrong, f"{rung}: calls not refused as they should be (got [result, errno]): {wrong}"
    missing = [
        name for name in REFUSED if name not in got and not (name == "inotify_init" and "inotify_init" not in NR)
    ]
    assert not missing, f"{rung}: the probe did not try {missing}"
    clones = {name: r for name, r in got.items() if name.startswith(("clone ", "clone3 "))}
    assert len(clones) == len(CLONE_FLAGS) + 1, clones
    made = {name: r for name, r in clones.items() if r[0] != -1 or r[1] not in CLONE_REFUSALS}
    assert not made, f"{rung}: a clone with a namespace flag must fail (ENOSYS or EPERM), got {made}"


def works_everywhere(folder: str) -> dict:
    """Under a filter: what student code (and the harness) needs."""
    import multiprocessing
    import socket
    import threading

    got: dict = {}
    box: list[int] = []
    thread = threading.Thread(target=lambda: box.append(threading.get_native_id()))
    thread.start()
    thread.join()
    got["thread"] = bool(box) and box[0] != threading.get_native_id()
    child = os.fork()
    if child == 0:
        os._exit(7)
    got["fork"] = os.waitstatus_to_exitcode(os.waitpid(child, 0)[1])
    context = multiprocessing.get_context("fork")
    receiver, sender = context.Pipe(duplex=False)
    process = context.Process(target=lambda: sender.send(sum(range(10))))
    process.start()
    got["multiprocessing Process"] = receiver.recv()
    process.join()
    try:
        with context.Pool(2) as pool:
            got["multiprocessing Pool"] = pool.map(abs, [-1, -2, -3])
    except OSError as exc:
        got["multiprocessing Pool"] = f"{type(exc).__name__}: {exc}"
    got["subprocess /bin/true"] = subprocess.run(["/bin/true"], timeout=60).returncode
    left, right = socket.socketpair()
    left.sendall(b"ping")
    got["socketpair AF_UNIX"] = right.recv(4).decode()
    left.close()
    right.close()
    got["read"] = len(Path(folder, "pages").read_bytes())
    got["getpid"] = syscall("getpid") + [os.getpid()]
    area, address = _page()
    got["madvise MADV_DONTNEED"] = syscall("madvise", ctypes.c_void_p(address), 4096, MADV_DONTNEED)
    area.close()
    fd = os.open(os.path.join(folder, "pages"), os.O_RDONLY)
    got["os.preadv"] = os.preadv(fd, [bytearray(8)], 0)
    got["fcntl F_GETLEASE"] = fcntl.fcntl(fd, fcntl.F_GETLEASE) == fcntl.F_UNLCK
    got["fcntl F_GETFL"] = fcntl.fcntl(fd, fcntl.F_GETFL) & os.O_ACCMODE == os.O_RDONLY
    os.close(fd)
    box.clear()
    thread = threading.Thread(
        target=lambda: box.append(  # what ZeroMQ's threads do (pthread_setschedparam: the thread's own id)
            _errno(lambda: os.sched_setscheduler(threading.get_native_id(), os.SCHED_OTHER, os.sched_param(0)))
        )
    )
    thread.start()
    thread.join()
    got["scheduling a thread by its id"] = box[0] if box else "no result"
    got["scheduling self"] = _errno(
        lambda: (
            os.setpriority(os.PRIO_PROCESS, 0, os.getpriority(os.PRIO_PROCESS, 0) + 1),
            os.sched_setaffinity(0, os.sched_getaffinity(0)),
            os.sched_setscheduler(0, os.SCHED_BATCH, os.sched_param(0)),
        )
    )
    # numpy and torch as a child imports them: python -S -s with its own site folder of links first
    matmul = (
        "import sys; sys.path.insert(0, sys.argv[1]); import numpy as np, torch; "
        "print(float((np.ones((64, 64)) @ np.ones((64, 64)))[3, 5]), "
        "float((torch.ones(32, 32) @ torch.ones(32, 32))[1, 2]))"
    )
    proc = subprocess.run(
        [sys.executable, "-S", "-s", "-B", "-c", matmul, os.path.join(folder, "site")],
        capture_output=True,
        text=True,
        timeout=240,
    )
    values = proc.stdout.split() if proc.returncode == 0 else [proc.stderr[-1500:]] * 2
    got["numpy matmul"], got["torch matmul"] = (float(v) if v.replace(".", "").isdigit() else v for v in values)
    script = (
        f"import ctypes; libc = ctypes.CDLL(None, use_errno=True); libc.syscall.restype = ctypes.c_long; "
        f"r = libc.syscall(ctypes.c_long({NR['keyctl']}), ctypes.c_long({KEYCTL_GET_KEYRING_ID}), "
        f"ctypes.c_long({KEY_SPEC_USER_KEYRING}), ctypes.c_long(0)); print(r, ctypes.get_errno())"
    )
    proc = subprocess.run([sys.executable, "-I", "-c", script], capture_output=True, text=True, timeout=60)
    got["exec keyctl"] = [proc.returncode, proc.stdout.strip(), proc.stderr[-300:]]
    got["seccomp"] = Path("/proc/self/status").read_text().split("Seccomp:")[1].split()[0]
    return got


@known_arch
@pytest.mark.parametrize("rung", PROGRAMS)
def test_every_program_lets_python_numpy_and_torch_work(rung, tmp_path):
    """Threads, fork, multiprocessing (a Process, and a Pool, whose locks are POSIX semaphores, but under the
    read-only seccomp-uid program), a subprocess,
    an AF_UNIX socket pair, reads, numpy and torch (imported as the child imports them, through a site
    folder of links to the allowed packages) all work under `rung`'s program; a program exec'd under the
    filter keeps it."""
    _pages(tmp_path)
    (tmp_path / "site").mkdir()
    for name, target in allowlist.site_links().items():
        os.symlink(target, tmp_path / "site" / name)
    got = in_child(filtered(rung, lambda: works_everywhere(str(tmp_path))), timeout_s=300)
    # A Pool's locks are POSIX semaphores, files in /dev/shm: the read-only world of seccomp-uid makes none
    # (EROFS, said in the rung's notes: "Pool and Queue ... do not"); the other programs leave files to Landlock.
    pool = "OSError: [Errno 30] Read-only file system" if rung == "seccomp-uid" else [1, 2, 3]
    expected = {
        "thread": True,
        "fork": 7,
        "multiprocessing Process": 45,
        "multiprocessing Pool": pool,
        "subprocess /bin/true": 0,
        "socketpair AF_UNIX": "ping",
        "read": 4 * 4096,
        "madvise MADV_DONTNEED": [0, 0],
        "os.preadv": 8,
        "fcntl F_GETLEASE": True,
        "fcntl F_GETFL": True,
        "scheduling self": [0, 0],
        # by thread id: another process's id as far as a filter can tell (same-uid refuses those)
        "scheduling a thread by its id": [-1, errno.EPERM] if rung == "same-uid" else [0, 0],
        "numpy matmul": 64.0,
        "torch matmul": 32.0,
    }
    wrong = {
        name: (got[name], want)
        for name, want in expected.items()
        if not (
            abs(got[name] - want) < 1e-9
            if isinstance(want, float) and isinstance(got[name], float)
            else got[name] == want
        )
    }
    assert not wrong, f"{rung}: under the filter these should work ((got, expected)): {wrong}"
    pid, err, real = got["getpid"]
    assert err == 0 and pid == real, f"{rung}: getpid expected {real} without an error, got {pid} (errno {err})"
    assert got["exec keyctl"][:2] == [0, f"-1 {errno.EPERM}"], (
        f"{rung}: a program exec'd under the filter keeps it: keyctl should print '-1 {errno.EPERM}', "
        f"got {got['exec keyctl']}"
    )
    assert got["seccomp"] == "2", f"{rung}: expected seccomp mode 2 (filter), /proc/self/status says {got['seccomp']}"


# ---------------------------------------------------------------------------------------------
# Calls that change files, by program.


TARGETS = (
    "f",
    "read",
    "rename",
    "rename2",
    "unlink",
    "symlink",
    "link",
    "chmod",
    "chown",
    "utime",
    "xattr",
    "old_rename",
    "old_unlink",
    "old_link",
    "old_chmod",
    "old_chown",
    "old_utime",
)


def file_changes(folder: str) -> dict[str, list[int]]:
    """Every way of creating or changing a file, by path or by an open with write flags, in `folder`
    (`_files`: one file of its own per call, a folder `d`, a file `read` never written); each call's
    [result, errno] (a file descriptor counts as 0), and whether `read` could be read."""

    def path(name: str) -> bytes:
        return os.path.join(folder, name).encode()

    got: dict[str, list[int]] = {}

    def opened(result: list[int]) -> list[int]:
        if result[0] >= 0:
            os.close(result[0])
            return [0, 0]
        return result

    for flags, name in (
        (O_WRONLY, "O_WRONLY"),
        (O_RDWR, "O_RDWR"),
        (O_WRONLY | O_TRUNC, "O_TRUNC"),
        (O_WRONLY | O_APPEND, "O_APPEND"),
        (O_RDONLY | O_APPEND, "O_RDONLY|O_APPEND"),
        (O_RDONLY | O_TRUNC, "O_RDONLY|O_TRUNC"),
    ):
        got[f"openat {name}"] = opened(syscall("openat", AT_FDCWD, path("f"), flags, 0))
        if "open" in NR:
            got[f"open {name}"] = opened(syscall("open", path("f"), flags, 0))
    got["openat O_CREAT"] = opened(syscall("openat", AT_FDCWD, path("new_openat"), O_CREAT | O_WRONLY, 0o600))
    got["openat O_RDONLY|O_CREAT"] = opened(syscall("openat", AT_FDCWD, path("new_openat_ro"), O_CREAT, 0o600))
    got["python open 'w'"] = _errno(lambda: open(os.path.join(folder, "new_python"), "w").close())
    got["python open 'a'"] = _errno(lambda: open(os.path.join(folder, "f"), "a").close())
    got["mkdirat"] = syscall("mkdirat", AT_FDCWD, path("new_mkdirat"), 0o700)
    got["renameat"] = syscall("renameat", AT_FDCWD, path("rename"), AT_FDCWD, path("new_renameat"))
    got["renameat2"] = syscall("renameat2", AT_FDCWD, path("rename2"), AT_FDCWD, path("new_renameat2"), 0)
    got["unlinkat"] = syscall("unlinkat", AT_FDCWD, path("unlink"), 0)
    got["unlinkat folder"] = syscall("unlinkat", AT_FDCWD, path("d"), 0x200)  # AT_REMOVEDIR
    got["symlinkat"] = syscall("symlinkat", path("symlink"), AT_FDCWD, path("new_symlinkat"))
    got["linkat"] = syscall("linkat", AT_FDCWD, path("link"), AT_FDCWD, path("new_linkat"), 0)
    got["fchmodat"] = syscall("fchmodat", AT_FDCWD, path("chmod"), 0o600)
    got["fchownat"] = syscall("fchownat", AT_FDCWD, path("chown"), os.getuid(), os.getgid(), 0)
    got["utimensat"] = syscall("utimensat", AT_FDCWD, path("utime"), None, 0)
    got["setxattr"] = syscall("setxattr", path("xattr"), b"user.a2", b"x", ctypes.c_size_t(1), 0)
    if "open" in NR:  # the calls aarch64 has only in their *at forms
        got["open O_CREAT"] = opened(syscall("open", path("new_open"), O_CREAT | O_WRONLY, 0o600))
        got["creat"] = opened(syscall("creat", path("new_creat"), 0o600))
        got["mkdir"] = syscall("mkdir", path("new_mkdir"), 0o700)
        got["rename"] = syscall("rename", path("old_rename"), path("new_rename"))
        got["unlink"] = syscall("unlink", path("old_unlink"))
        got["symlink"] = syscall("symlink", path("f"), path("new_symlink"))
        got["link"] = syscall("link", path("old_link"), path("new_link"))
        got["chmod"] = syscall("chmod", path("old_chmod"), 0o600)
        got["chown"] = syscall("chown", path("old_chown"), os.getuid(), os.getgid())
        got["utime"] = syscall("utime", path("old_utime"), None)
    got["openat O_RDONLY"] = opened(syscall("openat", AT_FDCWD, path("read"), O_RDONLY, 0))
    got["read"] = [0, 0] if Path(folder, "read").read_text() == "original" else [-1, 0]
    return got


def _files(folder: Path) -> Path:
    folder.mkdir()
    for name in TARGETS:
        (folder / name).write_text("original")
        (folder / name).chmod(0o644)
    (folder / "d").mkdir()
    return folder


def _listing(folder: Path) -> dict[str, tuple]:
    return {
        p.name: (p.read_text() if p.is_file() else "", p.stat().st_mode, p.stat().st_mtime_ns)
        for p in sorted(folder.iterdir())
    }


@known_arch
def test_seccomp_uid_program_is_a_read_only_world(tmp_path):
    """Without Landlock and namespaces only the filter keeps a child from writing where the file modes let
    its uid: every creation or change of a file fails with EROFS, whatever the call; reads work."""
    folder = _files(tmp_path / "files")
    before = _listing(folder)
    got = in_child(filtered("seccomp-uid", lambda: file_changes(str(folder))))
    reads = {name: got.pop(name) for name in ("read", "openat O_RDONLY")}
    assert reads == {"read": [0, 0], "openat O_RDONLY": [0, 0]}, f"reading must still work: {reads}"
    wrong = {name: r for name, r in got.items() if r != [-1, errno.EROFS]}
    assert not wrong, f"seccomp-uid: these calls must fail with EROFS (got [result, errno]): {wrong}"
    assert _listing(folder) == before, f"the folder changed under the read-only program: {_listing(folder)}"


@known_arch
@pytest.mark.parametrize("rung", ["bwrap", "landlock", "same-uid"])
def test_landlock_programs_refuse_what_landlock_does_not_cover(rung, tmp_path):
    """Landlock rules reads, writes, creation and removal, but not a file's times and extended attributes
    (refused on landlock and same-uid) nor its mode and owner (refused on same-uid, where the child runs
    as the owner of the grader's files): those fail with EPERM. Everything else that changes files is left
    to Landlock (or, on bwrap, to the read-only root): allowed by the filter, so it works here."""
    folder = _files(tmp_path / "files")
    got = in_child(filtered(rung, lambda: file_changes(str(folder))))
    marks = ["utimensat", "setxattr", *(["utime"] if "utime" in NR else [])]
    owners = ["fchmodat", "fchownat", *(["chmod", "chown"] if "chmod" in NR else [])]
    refused = (marks if rung != "bwrap" else []) + (owners if rung == "same-uid" else [])
    wrong = {name: got[name] for name in refused if got[name] != [-1, errno.EPERM]}
    assert not wrong, f"{rung}: these calls must fail with EPERM (got [result, errno]): {wrong}"
    unsupported = {errno.EOPNOTSUPP}  # user.* attributes where the file system of tmp_path has none
    allowed = {
        name: r
        for name, r in got.items()
        if name not in refused and r != [0, 0] and not (name == "setxattr" and r[1] in unsupported)
    }
    assert not allowed, f"{rung}: the filter must leave these calls to Landlock (they work here): {allowed}"


# ---------------------------------------------------------------------------------------------
# The answer key on every rung.


@pytest.mark.parametrize("rung", rungs.cli_rungs())
def test_answer_key_scores_full_marks_on_every_rung(rung, tmp_path, monkeypatch):
    """ex01's answer key graded on each rung (bwrap and landlock in this process, seccomp-uid and
    same-uid through the command line in their emulated views): full marks, and the staff-only entry
    names the rung and its filter."""
    submission = submission_with(tmp_path, [EX.id])
    if rung in rungs.IN_PROCESS:
        rungs.use(rung, monkeypatch)
        data = grader.grade_submission(
            submission, tmp_path / "results.json", exercises=[EX.id], root=root_for(tmp_path, [EX.id])
        )
    else:
        data = rungs.grade_cli(submission, tmp_path / "cli", [EX.id], rung)
        data.pop("_stderr")
        data.pop("_returncode", None)
    res.validate(data)
    score, max_score = exercise_score(data, EX.id)
    assert not autograder_failures(data), f"{rung}: the grader failed: {data['output'][-2000:]}"
    assert abs(score - EX.points) < SCORE_TOL and abs(max_score - EX.points) < SCORE_TOL, (
        f"{rung}: {EX.id} expected {EX.points} / {EX.points}, got {score} / {max_score}: {data['output'][-2000:]}"
    )
    environment = "\n".join(t["output"] for t in data["tests"] if t["name"] == "grading environment (staff only)")
    assert f"rung: {rung} " in environment, f"the staff-only entry must name the rung {rung}: {environment}"
    assert f"system calls: seccomp allow-list ({rung})" in environment, (
        f"the staff-only entry must say the system calls were filtered by {rung}'s program: {environment}"
    )
