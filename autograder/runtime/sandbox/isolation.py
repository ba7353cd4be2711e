"""Which isolation works on this machine (bubblewrap or none, probed once per grader process) and the
child's root: the allow-list of host paths it sees read-only, its private tmpfs folders, and the
command that starts jail.py inside it.

The rules are in `autograder.runtime.sandbox.runner`'s docstring (files, network, mode "none").
"""

from __future__ import annotations

import json
import logging
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from autograder.runtime.sandbox.users import remove_tree

JAIL_SOURCE = Path(__file__).with_name("jail.py")

PACKAGE_ROOT = Path(__file__).resolve().parents[3]

# The grader's own package (hidden cases in tests/, expected values in expected/). After a non-editable
# `pip install .` it lies inside the venv, which the child's root binds: then an empty tmpfs covers it.
AUTOGRADER_DIR = Path(__file__).resolve().parents[2]

PRIVATE_FOLDERS = ("/tmp", "/var/tmp", "/dev/shm")  # each child gets its own empty, size-capped tmpfs

SANDBOX_CODE = "/sandbox/code"  # in the child's root: its exercise file, child.py, jail.py (read-only)

SANDBOX_WORK = "/sandbox/work"  # in the child's root: its work folder (cwd, HOME; TMPDIR is tmp/ in it)

TMPFS_BYTES = 64 * 2**20  # each private tmpfs (the work folder too): nothing of it reaches the disk

TMPFS_INODES = 16384

ETC_FILES = ("ld.so.cache", "ld.so.conf", "ld.so.conf.d", "localtime")  # all of /etc the child sees

SYSTEM_LINKS = ("bin", "sbin", "lib", "lib32", "lib64", "libx32")  # merged-/usr symlinks, or folders

BWRAP_MISSING = "bubblewrap missing: apt-get install bubblewrap"

BWRAP_SIZE_VERSION = (0, 8, 0)  # the first bubblewrap with --size

log = logging.getLogger(__name__)


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
