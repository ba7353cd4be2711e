"""No hidden input carried from one grading to a later one through what the kernel caches of shared files.

Every child reads the same interpreter, venv and libraries, and what the page cache holds of them is
shared by every process on the machine and outlives the child. The seccomp filter (`syscalls`) takes
away the calls that tell or change it directly (mincore, cachestat, fadvise, readahead, madvise's cold
and pageout advice, RWF_NOWAIT reads), but a child can still load pages by reading and time reads to
see what is cached. So the state is reset between a hidden phase and any later public phase:

- `mark()` before a hidden phase starts a child, and again when it has ended: a marker in the grader's
  private state folder says that hidden inputs may have touched the cache since the last reset (the second
  mark keeps it set when another grading on the machine reset the cache while the child ran);
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

from autograder.runtime import statedir
from autograder.runtime.sandbox import allowlist

MARKER = "hidden-phase-since-reset"
DROP_CACHES = Path("/proc/sys/vm/drop_caches")


@dataclass
class Reset:
    how: str  # "drop_caches" | "fadvise" | "" (nothing to do)
    files: int = 0
    seconds: float = 0.0


def state_folder() -> Path:
    """The marker's folder: shared by every root grader of the machine (under /run), else by this user's."""
    parent = statedir.machine_parent()
    return parent / ("a2grader-pagecache" if os.geteuid() == 0 else f"a2grader-pagecache-{os.geteuid()}")


def _locked() -> int:
    """The state folder's fd (`statedir.open_private_folder`), with an exclusive flock held on it."""
    fd = statedir.open_private_folder(state_folder())
    fcntl.flock(fd, fcntl.LOCK_EX)
    return fd


def mark() -> None:
    """Before a hidden phase's child: hidden inputs may reach the cache from now on."""
    fd = _locked()
    try:
        os.close(statedir.open_file(fd, MARKER, os.O_WRONLY | os.O_CREAT))
    finally:
        os.close(fd)


def marked() -> bool:
    fd = _locked()
    try:
        os.stat(MARKER, dir_fd=fd, follow_symlinks=False)
        return True
    except FileNotFoundError:
        return False
    finally:
        os.close(fd)


def reset_if_marked() -> Reset:
    """Before a public phase's child: empty the cache of what a child could read if a hidden phase ran since
    the last reset (module docstring)."""
    fd = _locked()
    try:
        try:
            os.stat(MARKER, dir_fd=fd, follow_symlinks=False)
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
