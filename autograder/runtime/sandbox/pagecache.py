"""No hidden input carried from one grading to a later one through what the kernel caches of shared files.

Every child reads the same interpreter, venv and libraries, and what the page cache holds of them is
shared by every process on the machine and outlives the child. The seccomp filter (`syscalls`) takes
away the calls that tell or change it directly (mincore, cachestat, fadvise, readahead, madvise's cold
and pageout advice, RWF_NOWAIT reads), but a child can still load pages by reading and time reads to
see what is cached. So the state is reset between a hidden phase and any later public phase:

- `mark()` before a hidden phase starts a child: a marker in the grader's private state folder says
  that hidden inputs may have touched the cache since the last reset;
- `reset_if_marked()` before a public phase starts a child: when marked, the page cache is emptied of
  everything a child could read, and the marker removed. As root, where /proc/sys/vm/drop_caches is
  writable (not in a container), the kernel drops every clean page and every unused dentry and inode
  of the machine (`3`): complete, whatever the rung. Elsewhere each file of the allow-list
  (`allowlist.files`) is evicted with posix_fadvise(DONTNEED); pages that a running process maps stay,
  which do not depend on any child (every child's processes are gone by then).

Between the children of one phase nothing is reset: a public phase holds no hidden input, and hidden
phases show nothing. What this does not cover (with numbers) is in docs/DESIGN.md's table of layers:
concurrent batches on one machine, and on the seccomp-uid rung (no Landlock) files outside the
allow-list where drop_caches is not writable.
"""

from __future__ import annotations

import fcntl
import os
import time
from dataclasses import dataclass
from pathlib import Path

from autograder.runtime.sandbox import allowlist

MARKER = "hidden-phase-since-reset"
DROP_CACHES = Path("/proc/sys/vm/drop_caches")


@dataclass
class Reset:
    how: str  # "drop_caches" | "fadvise" | "" (nothing to do)
    files: int = 0
    seconds: float = 0.0


def state_dir() -> Path:
    """The grader's private folder for machine-wide state: /run/a2grader as root where /run exists, else
    a2grader-<uid> in the temporary folder; made with mode 0700 and refused unless it is a real folder
    owned by this uid that no one else can write."""
    if os.geteuid() == 0 and os.path.isdir("/run"):
        folder = Path("/run/a2grader")
    else:
        folder = Path(os.environ.get("TMPDIR", "/tmp")) / f"a2grader-{os.geteuid()}"
    try:
        folder.mkdir(mode=0o700)
    except FileExistsError:
        pass
    info = os.lstat(folder)
    import stat

    if not stat.S_ISDIR(info.st_mode) or info.st_uid != os.geteuid() or info.st_mode & 0o022:
        raise PermissionError(
            f"{folder} is not a private folder of this user (a link, another owner, or writable by others): "
            "remove it, or set TMPDIR to a private folder"
        )
    return folder


def _locked(folder: Path) -> int:
    fd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW)
    fcntl.flock(fd, fcntl.LOCK_EX)
    return fd


def mark() -> None:
    """Before a hidden phase's child: hidden inputs may reach the cache from now on."""
    folder = state_dir()
    fd = _locked(folder)
    try:
        marker = os.open(MARKER, os.O_WRONLY | os.O_CREAT | os.O_NOFOLLOW, 0o600, dir_fd=fd)
        os.close(marker)
    finally:
        os.close(fd)


def marked() -> bool:
    try:
        os.lstat(state_dir() / MARKER)
        return True
    except FileNotFoundError:
        return False


def reset_if_marked() -> Reset:
    """Before a public phase's child: empty the cache of what a child could read if a hidden phase ran since
    the last reset (module docstring)."""
    folder = state_dir()
    fd = _locked(folder)
    try:
        try:
            os.lstat(folder / MARKER)
        except FileNotFoundError:
            return Reset("")
        done = reset()
        os.unlink(MARKER, dir_fd=fd)
        return done
    finally:
        os.close(fd)


def reset() -> Reset:
    start = time.monotonic()
    if os.geteuid() == 0:
        try:
            os.sync()
            with open(DROP_CACHES, "w") as handle:
                handle.write("3")
            return Reset("drop_caches", 0, time.monotonic() - start)
        except OSError:
            pass  # a container's read-only /proc/sys: evict file by file
    count = 0
    for path in allowlist.files():
        try:
            fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_NOCTTY)
        except OSError:
            continue
        try:
            os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
            count += 1
        except OSError:
            pass  # not a regular file (a fifo, a device): nothing cached to evict
        finally:
            os.close(fd)
    return Reset("fadvise", count, time.monotonic() - start)
