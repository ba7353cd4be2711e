"""The child's system calls: an allow-list per isolation rung, compiled to a seccomp program by libseccomp.

The grader builds the program here (libseccomp, through its ctypes binding `pyseccomp`) and hands the
bytes to `jail.py`, which installs them on the harness just before it execs the child's interpreter: no
hand-written BPF, and nothing third-party runs with the grader's privileges inside the jail.

Every rung starts from `BASE` (what Python, numpy, torch and matplotlib use); a call that is in no list
fails with ENOSYS (as on an older kernel, so the C library falls back where it can; clone3 included, so
threads are made with clone, whose flags can be checked). Some calls are refused with a clear errno
(`REFUSED`): sockets of any kind but a connected AF_UNIX pair (no network, no local services, no
listener anywhere: the Dask scheduler, a database, a desktop bus), memory files (memfd: memory no process
maps, which the memory watchdog would not see), namespaces and mounts, ptrace and
reading other processes' memory, keyrings (not namespaced: a key outlives the child), SysV IPC and POSIX
message queues (kernel objects that outlive the child), inotify/fanotify (watching other processes'
file accesses), io_uring (sockets and I/O past this filter), BPF and perf events, and every call that
tells or changes what the page cache holds (mincore, cachestat, fadvise, readahead, madvise's cold and
pageout advice, preadv2/pwritev2 with RWF_NOWAIT): state every child on the machine shares; and fallocate
(EOPNOTSUPP: glibc's posix_fallocate writes the blocks instead), which takes disk space faster than the
watch of a tool command's disk (`Limits.disk_floor_bytes`) can see.

Conditions: clone without a namespace flag; socketpair only for AF_UNIX; prlimit64 only on the caller, and on
the same-uid rung setpriority and the sched_set* calls too (its child could otherwise slow the grader or any
process of the instructor's uid, past its exercise); fcntl without F_NOTIFY and F_SETLEASE (dnotify and leases report other
processes' accesses, as inotify would); personality only as a query or PER_LINUX; madvise without
MADV_COLD/MADV_PAGEOUT. By rung, the calls that change files by path:
- "bwrap": all allowed (the child's root is read-only but for its own tmpfs);
- "landlock": allowed (Landlock decides), except utime and extended attributes, which Landlock does not
  cover and which would let a child mark a world-writable file outside its folder;
- "same-uid" (the child runs as the grader's own uid under Landlock): also no chmod/chown, which
  Landlock does not cover and which the owner of every file could otherwise use;
- "seccomp-uid" (no Landlock, no namespaces): a read-only world: no file can be created, written,
  renamed, removed or re-labelled anywhere (open with write or create flags fails with EROFS); the child
  keeps its pipes and memory.
"""

from __future__ import annotations

import errno
import functools
import tempfile

RUNGS = ("bwrap", "landlock", "same-uid", "seccomp-uid")

BASE = (
    # memory
    "brk mmap munmap mprotect mremap msync mbind get_mempolicy set_mempolicy membarrier mlock mlock2 munlock "
    "mlockall munlockall pkey_alloc pkey_free pkey_mprotect "
    # processes and threads (clone: below, with a condition)
    "set_tid_address set_robust_list get_robust_list rseq arch_prctl prctl futex futex_waitv fork vfork execve "
    "execveat exit exit_group wait4 waitid getpid getppid gettid getpgid getpgrp getsid setsid setpgid getuid "
    "geteuid getgid getegid getgroups getresuid getresgid setuid setgid setgroups setresuid setresgid setreuid "
    "setregid setfsuid setfsgid capget capset sched_getaffinity sched_yield sched_getparam "
    "sched_getscheduler sched_get_priority_max sched_get_priority_min "
    "sched_rr_get_interval sched_getattr getpriority getrlimit setrlimit getrusage "
    "times sysinfo uname umask getcpu restart_syscall kill tkill tgkill rt_sigqueueinfo rt_tgsigqueueinfo "
    "pidfd_open pidfd_send_signal getrandom "
    # signals and timers
    "rt_sigaction rt_sigprocmask rt_sigreturn rt_sigsuspend rt_sigpending rt_sigtimedwait sigaltstack signalfd "
    "signalfd4 pause alarm setitimer getitimer timer_create timer_settime timer_gettime timer_getoverrun "
    "timer_delete timerfd_create timerfd_settime timerfd_gettime clock_gettime clock_getres clock_nanosleep "
    "nanosleep gettimeofday time "
    # descriptors, reading, waiting
    "read readv pread64 preadv close close_range dup dup2 dup3 flock lseek fstat fstatfs ioctl poll ppoll "
    "select pselect6 epoll_create epoll_create1 epoll_ctl epoll_wait epoll_pwait epoll_pwait2 eventfd eventfd2 "
    "pipe pipe2 splice tee vmsplice sendfile copy_file_range write writev pwrite64 pwritev fsync fdatasync "
    "sync_file_range fgetxattr flistxattr "
    # paths, read-only (Landlock and the allow-list root decide what they reach)
    "stat lstat newfstatat statx statfs access faccessat faccessat2 readlink readlinkat getdents getdents64 "
    "getcwd chdir fchdir getxattr lgetxattr listxattr llistxattr "
    # a connected AF_UNIX pair (socketpair: below, with a condition) and what works on it
    "sendto recvfrom sendmsg recvmsg sendmmsg recvmmsg shutdown getsockopt setsockopt getsockname getpeername"
).split()

OPENS = "open openat creat".split()  # open/openat: unconditional, or read-only (seccomp-uid)
WRITE_FD = ["ftruncate"]
CREATE_PATHS = (
    "mkdir mkdirat rmdir rename renameat renameat2 link linkat symlink symlinkat unlink unlinkat truncate mknod mknodat"
).split()
OWNERS = "chmod fchmod fchmodat fchmodat2 chown fchown lchown fchownat".split()
MARKS = "utime utimes utimensat futimesat setxattr lsetxattr fsetxattr removexattr lremovexattr fremovexattr".split()

# Refused with an errno that says so (everything else not allowed: ENOSYS).
SOCKET_CALLS = "connect bind listen accept accept4".split()  # refused with socket() itself (EACCES)
REFUSED = {
    errno.EPERM: (
        "ptrace process_vm_readv process_vm_writev kcmp pidfd_getfd unshare setns mount umount2 pivot_root chroot "
        "move_mount open_tree fsopen fsmount fsconfig fspick mount_setattr add_key request_key keyctl bpf "
        "perf_event_open userfaultfd io_uring_setup io_uring_enter io_uring_register mincore fadvise64 readahead "
        "inotify_init inotify_init1 inotify_add_watch inotify_rm_watch fanotify_init fanotify_mark shmget shmat "
        "shmdt shmctl semget semop semtimedop semctl msgget msgsnd msgrcv msgctl mq_open mq_unlink mq_timedsend "
        "mq_timedreceive mq_notify mq_getsetattr memfd_create memfd_secret name_to_handle_at open_by_handle_at openat2 quotactl swapon "
        "swapoff reboot kexec_load kexec_file_load init_module finit_module delete_module acct settimeofday "
        "clock_settime clock_adjtime adjtimex sethostname setdomainname iopl ioperm vhangup syslog"
    ).split(),
    # blocks of any size at once, faster than a watch of the disk's free space can see (a tool's command:
    # `Limits.disk_floor_bytes`); glibc's posix_fallocate then writes them, as for a file system without it
    errno.EOPNOTSUPP: ["fallocate"],
}
CACHESTAT_NR = 451  # cachestat (Linux 6.5, the same number on every architecture); older libseccomp has no name

# Scheduling, on the same-uid rung: on the caller only (pid 0). Its child shares the grader's uid, and the kernel
# lets a uid re-schedule any of its processes: SCHED_IDLE, nice 19 or one CPU for the grader, a neighbour's grading
# or any process of the instructor's, which outlives the exercise (Landlock scopes signals, not these). Elsewhere
# the child has a uid of its own or a PID namespace of its own, and libraries re-schedule their own threads by
# thread id (ZeroMQ, in every Jupyter kernel of the Otter and nbgrader routes: EPERM there aborts it).
SCHED_SELF = "sched_setaffinity sched_setparam sched_setscheduler sched_setattr".split()  # the pid is argument 0
PRIO_PROCESS = 0  # setpriority(which, who, prio): allowed for (PRIO_PROCESS, 0) alone, not a group or a user
# fcntl commands that report other processes' accesses to a file or folder (what inotify would: refused). The
# kernel reads fcntl's command and madvise's advice as 32-bit ints while a seccomp rule compares 64 bits: a value
# with high bits set is none of those allowed below (F_SETLEASE + 2**32 must not pass as "greater than F_NOTIFY"),
# so the commands and advice above the refused ones are listed one by one and the refusals mask 32 bits.
F_SETLEASE, F_NOTIFY = 1024, 1026
F_ABOVE = (1025, *range(1027, 1039))  # F_GETLEASE, F_DUPFD_QUERY ... F_SET_FILE_RW_HINT (linux/fcntl.h)
MADV_ABOVE = (22, 23, 24, 25, 100, 101, 102, 103)  # POPULATE_READ/WRITE, DONTNEED_LOCKED, COLLAPSE, HWPOISON ...
LOW32 = 0xFFFFFFFF
CLONE_NAMESPACES = 0x7E020080  # CLONE_NEWNS|NEWCGROUP|NEWUTS|NEWIPC|NEWUSER|NEWPID|NEWNET|NEWTIME
AF_UNIX = 1
MADV_COLD, MADV_PAGEOUT = 20, 21
RWF_NOWAIT = 0x8
PER_LINUX, PER_QUERY = 0, 0xFFFFFFFF
O_WRITE_FLAGS = 0o1 | 0o2 | 0o100 | 0o1000 | 0o2000 | 0o20000000  # O_WRONLY O_RDWR O_CREAT O_TRUNC O_APPEND __O_TMPFILE


class Unavailable(RuntimeError):
    """libseccomp (or its binding) is not available here: no rung that needs the filter can run."""


def _lib():
    try:
        import pyseccomp
    except Exception as exc:  # the binding raises RuntimeError when libseccomp.so is missing
        raise Unavailable(f"libseccomp is not available ({exc})") from exc
    return pyseccomp


def _add(flt, action: int, name: str | int, *args) -> None:
    """One rule; a name this libseccomp or architecture does not know is skipped (there is nothing to
    allow or refuse: its number, if the kernel has one, falls to the default, ENOSYS)."""
    import pyseccomp

    if isinstance(name, str) and pyseccomp.resolve_syscall(pyseccomp.Arch.NATIVE, name) < 0:
        return
    flt.add_rule(action, name, *args)


SOCKETS = ("pair", "unix", "loopback")  # what socket() may make: nothing (a connected AF_UNIX pair only), ...
# ... AF_UNIX, or AF_UNIX, AF_INET, AF_INET6 and AF_NETLINK (a namespace's own interfaces, as ZeroMQ lists them)
FAMILIES = {"unix": (AF_UNIX,), "loopback": (AF_UNIX, 2, 10, 16)}


@functools.cache
def program(rung: str, sockets: str = "pair") -> bytes:
    """The seccomp program (struct sock_filter array, native byte order) for `rung`. `sockets`: "pair" (the
    grader's children: socketpair(AF_UNIX) only); "unix" (socket() of AF_UNIX too); "loopback" (AF_INET and
    AF_INET6 and AF_NETLINK too: only inside bubblewrap's network namespace, where nothing but its own loopback
    exists,
    for a trusted tool that talks to itself over TCP: Otter's log server, a Jupyter kernel)."""
    if rung not in RUNGS:
        raise ValueError(f"unknown rung {rung!r}; one of {RUNGS}")
    sc = _lib()
    flt = sc.SyscallFilter(defaction=sc.ERRNO(errno.ENOSYS))
    allow = sc.ALLOW
    for name in BASE:
        _add(flt, allow, name)
    for err, names in REFUSED.items():
        for name in names:
            _add(flt, sc.ERRNO(err), name)
    if sc.resolve_syscall(sc.Arch.NATIVE, "cachestat") < 0:
        _add(flt, sc.ERRNO(errno.EPERM), CACHESTAT_NR)
    else:
        _add(flt, sc.ERRNO(errno.EPERM), "cachestat")
    # clone3 is in no list: ENOSYS, the default, so glibc makes threads with clone, whose flags are checked
    _add(flt, allow, "clone", sc.Arg(0, sc.MASKED_EQ, CLONE_NAMESPACES, 0))  # with a namespace flag: ENOSYS
    _add(flt, allow, "socketpair", sc.Arg(0, sc.EQ, AF_UNIX))
    if sockets != "pair":  # socket() of these families; the calls on a socket then work on those alone
        families = FAMILIES[sockets]
        for family in families:
            _add(flt, allow, "socket", sc.Arg(0, sc.EQ, family))
        _add(flt, sc.ERRNO(errno.EACCES), "socket", sc.Arg(0, sc.GT, max(families)))
        for gap in sorted(set(range(max(families))) - set(families)):
            _add(flt, sc.ERRNO(errno.EACCES), "socket", sc.Arg(0, sc.EQ, gap))
        for name in SOCKET_CALLS:
            _add(flt, allow, name)
    else:
        for name in ("socket", *SOCKET_CALLS):
            _add(flt, sc.ERRNO(errno.EACCES), name)
    _add(flt, sc.ERRNO(errno.EAFNOSUPPORT), "socketpair", sc.Arg(0, sc.NE, AF_UNIX))
    self_only = ["prlimit64"]
    if rung == "same-uid":
        self_only += SCHED_SELF
        _add(flt, allow, "setpriority", sc.Arg(0, sc.EQ, PRIO_PROCESS), sc.Arg(1, sc.EQ, 0))
        _add(flt, sc.ERRNO(errno.EPERM), "setpriority", sc.Arg(0, sc.NE, PRIO_PROCESS))
        _add(flt, sc.ERRNO(errno.EPERM), "setpriority", sc.Arg(1, sc.NE, 0))
    else:
        for name in ("setpriority", *SCHED_SELF):
            _add(flt, allow, name)
    for name in self_only:
        _add(flt, allow, name, sc.Arg(0, sc.EQ, 0))
        _add(flt, sc.ERRNO(errno.EPERM), name, sc.Arg(0, sc.NE, 0))
    _int_values_but(sc, flt, "fcntl", 1, (F_SETLEASE, F_NOTIFY), F_ABOVE)
    for value in (PER_LINUX, PER_QUERY):
        _add(flt, allow, "personality", sc.Arg(0, sc.EQ, value))
    _int_values_but(sc, flt, "madvise", 2, (MADV_COLD, MADV_PAGEOUT), MADV_ABOVE)
    for name in ("preadv2", "pwritev2"):
        _add(flt, allow, name, sc.Arg(5, sc.MASKED_EQ, RWF_NOWAIT, 0))
        _add(flt, sc.ERRNO(errno.EPERM), name, sc.Arg(5, sc.MASKED_EQ, RWF_NOWAIT, RWF_NOWAIT))
    _files(sc, flt, rung)
    with tempfile.TemporaryFile() as out:
        flt.export_bpf(out)
        out.seek(0)
        return out.read()


def _int_values_but(sc, flt, name: str, index: int, refused: tuple[int, ...], above: tuple[int, ...]) -> None:
    """`name` with its int argument `index` below min(`refused`) or one of `above`, refused (EPERM) when the low
    32 bits the kernel reads are one of `refused` (module comment at F_ABOVE); anything else falls to ENOSYS."""
    _add(flt, sc.ALLOW, name, sc.Arg(index, sc.LT, min(refused)))
    for value in above:
        _add(flt, sc.ALLOW, name, sc.Arg(index, sc.EQ, value))
    for value in refused:
        _add(flt, sc.ERRNO(errno.EPERM), name, sc.Arg(index, sc.MASKED_EQ, LOW32, value))


def _files(sc, flt, rung: str) -> None:
    """The rules for calls that change files, by rung (module docstring)."""
    allow, refuse = sc.ALLOW, sc.ERRNO(errno.EPERM)
    if rung == "seccomp-uid":
        readonly = sc.ERRNO(errno.EROFS)
        _add(flt, allow, "open", sc.Arg(1, sc.MASKED_EQ, O_WRITE_FLAGS, 0))
        _add(flt, allow, "openat", sc.Arg(2, sc.MASKED_EQ, O_WRITE_FLAGS, 0))
        for bit in (0o1, 0o2, 0o100, 0o1000, 0o2000, 0o20000000):
            _add(flt, readonly, "open", sc.Arg(1, sc.MASKED_EQ, bit, bit))
            _add(flt, readonly, "openat", sc.Arg(2, sc.MASKED_EQ, bit, bit))
        for name in ["creat", *WRITE_FD, *CREATE_PATHS, *OWNERS, *MARKS]:
            _add(flt, readonly, name)
        return
    for name in [*OPENS, *WRITE_FD, *CREATE_PATHS]:
        _add(flt, allow, name)
    for name in OWNERS:
        _add(flt, refuse if rung == "same-uid" else allow, name)
    for name in MARKS:
        _add(flt, allow if rung == "bwrap" else refuse, name)
