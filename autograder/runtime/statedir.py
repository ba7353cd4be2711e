"""The grader's own state in a shared folder, kept where nobody else can prepare it: a folder made here, owned by
this process's effective uid and writable by nobody else (checked on the open folder after creation; refused
otherwise, with a message saying what is wrong), in a parent no other user can replace it in, and every file in it
opened relative to the checked folder's fd, never through a link.

Used for the sandbox uid locks (`autograder.runtime.sandbox.users.SandboxUser`), which every grader of the machine
shares: as root under /run, where only root writes; otherwise under /tmp (never TMPDIR: grade-all gives each grader
a TMPDIR of its own). Random-named folders (`tempfile.mkdtemp`: mode 0700, made with O_EXCL semantics) need none of
this; a fixed name in a folder others write in (/tmp) does.
"""

from __future__ import annotations

import errno
import os
import stat
from pathlib import Path

DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
FILE_FLAGS = os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NOCTTY | os.O_NONBLOCK  # NONBLOCK: a FIFO never blocks the open


def created_mode(mode: int = 0o666) -> int:
    """The mode a file made with `mode` gets under this process's umask (077 in the commands that handle grades:
    `autograder.__main__.PRIVATE_OUTPUT`), for a file written through mkstemp (always 0600) and then renamed into
    place, or a file rewritten in place (which keeps its old mode). Read from /proc/self/status: os.umask would
    change it for a moment under every thread."""
    try:
        with open("/proc/self/status", encoding="ascii") as handle:
            mask = next((int(line.split()[1], 8) for line in handle if line.startswith("Umask:")), 0o022)
    except OSError:
        mask = 0o022
    return mode & ~mask


class UnsafeFolder(RuntimeError):
    """A state folder that another user made, could write in, or could replace."""


def machine_parent() -> Path:
    """Where state shared by every grader of the machine lives: /run as root (only root writes there), else /tmp."""
    if os.geteuid() == 0 and os.path.isdir("/run") and os.access("/run", os.W_OK):
        return Path("/run")
    return Path("/tmp")


def _replaceable(info: os.stat_result) -> str | None:
    """Why another user could rename or replace an entry of the folder `info` describes, or None."""
    if info.st_uid not in (0, os.geteuid()):
        return f"belongs to uid {info.st_uid}"
    if info.st_mode & 0o022 and not info.st_mode & stat.S_ISVTX:
        return f"other users may write in it without the sticky bit (mode {stat.S_IMODE(info.st_mode):04o})"
    return None


def open_private_folder(path: Path) -> int:
    """An fd (O_DIRECTORY, close-on-exec) of `path`, a folder of this process's own: made here with mode 0700
    when missing. The caller closes it.

    UnsafeFolder when `path` is a link or not a folder, belongs to another uid, or may be written by group or
    others (mode & 0o022); or when a folder on the way to it (links on the way resolved) belongs to a user other
    than root and us, or lets others write in it without the sticky bit (/tmp has it: nobody but the owner renames
    an entry there). The checks are made on the opened folder, so a swap between the check and the use changes
    nothing.
    """
    path = Path(os.path.abspath(path))
    parent = path.parent.resolve()
    for folder in (parent, *parent.parents):
        try:
            why = _replaceable(os.stat(folder))
        except OSError as exc:
            raise UnsafeFolder(
                f"{path}: the folder {folder} on the way to it cannot be read ({exc.strerror})"
            ) from None
        if why is not None:
            raise UnsafeFolder(f"{path}: the folder {folder} on the way to it {why}: another user could replace it")
    parent_fd = os.open(parent, DIR_FLAGS)
    try:
        try:
            os.mkdir(path.name, 0o700, dir_fd=parent_fd)
        except FileExistsError:
            pass
        try:
            fd = os.open(path.name, DIR_FLAGS, dir_fd=parent_fd)
        except OSError as exc:
            raise UnsafeFolder(
                f"{path}: {_what_is(parent_fd, path.name, exc)}, not a folder of the grader's own"
            ) from None
    finally:
        os.close(parent_fd)
    info = os.fstat(fd)
    mode = stat.S_IMODE(info.st_mode)
    problem = None
    if info.st_uid != os.geteuid():
        problem = f"it belongs to uid {info.st_uid}, not to this grader (uid {os.geteuid()}), mode {mode:04o}"
    elif mode & 0o022:
        problem = f"other users may write in it (mode {mode:04o})"
    if problem is not None:
        os.close(fd)
        raise UnsafeFolder(f"{path}: {problem}; whoever made it could plant links or swap files in it")
    return fd


def _what_is(dir_fd: int, name: str, exc: OSError) -> str:
    try:
        return "a link" if stat.S_ISLNK(os.stat(name, dir_fd=dir_fd, follow_symlinks=False).st_mode) else "not a folder"
    except OSError:
        return f"cannot be opened ({exc.strerror})"


def open_file(dir_fd: int, name: str, flags: int = os.O_RDWR | os.O_CREAT, mode: int = 0o600) -> int:
    """An fd (close-on-exec) of the regular file `name` in the folder open as `dir_fd`, created with `mode`
    under O_CREAT. Never opens through a link (OSError ELOOP) nor anything but a regular file (OSError EINVAL)."""
    if name in ("", ".", "..") or "/" in name:
        raise ValueError(f"not a file name: {name!r}")
    fd = os.open(name, flags | FILE_FLAGS, mode, dir_fd=dir_fd)
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        raise OSError(errno.EINVAL, f"{name} is not a regular file")
    return fd
