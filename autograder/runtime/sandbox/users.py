"""Who a child runs as, and what it leaves behind: sandbox uids handed out once per grader process (lock
files keep parallel graders apart), ending every process of a uid, reaping orphans as a subreaper,
and removing a child's files at any depth.

The rules are in `autograder.runtime.sandbox.runner`'s docstring (uids, processes, mode "none").
"""

from __future__ import annotations

import fcntl
import grp
import os
import pwd
import signal
import time
from collections.abc import Iterator
from pathlib import Path

from autograder.runtime import statedir

# One uid per child (two or more per exercise). Below 65000: Debian reserves 65000-65533, and 65534 is
# `nobody`, whose processes kill_uid would end; a uid with an account on this machine is skipped too.
SANDBOX_UIDS = range(63000, 65000)

# One lock folder for every grader on the machine, whatever its TMPDIR (grade-all gives each grader a
# TMPDIR of its own; locks kept there would let two graders hold the same uid at once). Under /run as root,
# where only root writes; A2_UID_LOCK_DIR replaces the parent (graders in containers that share no /run but
# one host's uids: a folder they all mount). A folder another user made or may write in is refused
# (`autograder.runtime.statedir`): planted links would make a root grader create files where they point.
UID_LOCK_DIR = Path(os.environ.get("A2_UID_LOCK_DIR") or statedir.machine_parent()) / "a2grader-uids"

KILL_ROUNDS = 5000  # kill(-1) passes before kill_uid gives up on a uid


class SandboxError(RuntimeError):
    """The sandbox itself could not be set up (the grader's fault, never the student's)."""


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
    """A uid from SANDBOX_UIDS held (by a flock on its file in UID_LOCK_DIR) for one child; root only.

    SandboxError when UID_LOCK_DIR is not the grader's own (`statedir.open_private_folder`); lock files are
    opened relative to the checked folder, never through a link (a link or anything but a file there: that
    uid is skipped)."""

    def __init__(self) -> None:
        try:
            folder = statedir.open_private_folder(UID_LOCK_DIR)
        except statedir.UnsafeFolder as exc:
            raise SandboxError(
                f"the sandbox uid lock folder is refused: {exc}. Remove it, or set A2_UID_LOCK_DIR to a folder "
                "that only root can write in (the lock folder is made there)"
            ) from None
        try:
            self.uid, self.gid, self._fd = self._take(folder)
        finally:
            os.close(folder)

    @staticmethod
    def _take(folder: int) -> tuple[int, int, int]:
        def released_at(uid: int) -> float:
            try:
                return os.stat(f"{uid}.lock", dir_fd=folder, follow_symlinks=False).st_mtime
            except OSError:
                return 0.0

        for uid in sorted((u for u in SANDBOX_UIDS if u not in _USED_UIDS), key=lambda u: (released_at(u), u)):
            try:
                pwd.getpwuid(uid)
                continue  # an account of this machine: never run student code as it, never kill its processes
            except KeyError:
                pass
            try:
                grp.getgrgid(uid)
                continue  # a group of this machine (the child's gid is its uid): its members would read ro/
            except KeyError:
                pass
            try:
                fd = statedir.open_file(folder, f"{uid}.lock")
            except OSError:
                continue  # a link, a folder, ...: never followed, and not this uid
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
            return uid, uid, fd
        raise SandboxError(
            "no free sandbox uid (too many graders in parallel, or more than "
            f"{len(SANDBOX_UIDS)} children in one grader process)"
        )

    def release(self) -> None:
        os.utime(self._fd)
        os.close(self._fd)
