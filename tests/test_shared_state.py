"""The grader's own state in shared folders (issue 35): nobody else can prepare it, and no grader removes another's.

- The sandbox uid lock folder (`autograder.runtime.sandbox.users.UID_LOCK_DIR`, checked by
  `autograder.runtime.statedir`): a folder planted by another user (world-writable, or theirs, with `NNNNN.lock`
  links to files of their choice) makes a root grader refuse with a message naming the folder and what is wrong,
  and no file appears where a link points; a folder of the grader's own is made 0700 and a link in it is never
  followed.
- The stale-scratch sweep (`autograder.batch.processes.sweep_stale_scratch`): a scratch folder is live while its
  maker holds the lock on it (`processes.Scratch`), whatever PID namespace the maker or the sweeper runs in
  (`unshare -p -f --mount-proc`, sharing the temporary folder); a dead one is removed; another user's folder and a
  link named like a scratch folder are left alone, and nothing behind the link is touched.

Every sweep here runs in a temporary folder of the test's own (TMPDIR), never in the machine's /tmp: other graders
on this machine keep their live batches there.
"""

from __future__ import annotations

import contextlib
import fcntl
import itertools
import os
import shutil
import stat
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from autograder.batch import processes
from autograder.core.manifest import ROOT
from autograder.runtime import statedir
from autograder.runtime.sandbox import cgroup, users

IS_ROOT = os.geteuid() == 0
needs_root = pytest.mark.skipif(
    not IS_ROOT,
    reason="needs root: the uid lock folder is the root grader's, and planting another user's folder needs chown",
)
NOBODY = 65534  # a uid that is not this grader's, for the planted folders
UNSHARE = shutil.which("unshare")
needs_pid_namespace = pytest.mark.skipif(
    not IS_ROOT or UNSHARE is None or sys.platform != "linux",
    reason="needs root on Linux and util-linux's unshare to start a process in a new PID namespace",
)
# uids this file's SandboxUser takes (from a lock folder of its own, not the one other graders on this machine
# share). Graders take the uid released longest ago, so on a machine that has graded much any uid may be in use:
# a test that takes these holds them in the machine's lock folder first (`_reserved`).
TEST_UIDS = range(64990, 65000)


def _test_uids() -> list[int]:
    """Two of TEST_UIDS this process has not handed out (a process never hands a uid out twice, and this test
    process may have graded as any uid by now)."""
    return [u for u in TEST_UIDS if u not in users.used_uids()][:2]


# ---------------------------------------------------------------------------------------------
# The uid lock folder.


def _plant(parent: Path, targets: Path, owner: int, mode: int) -> list[Path]:
    """A lock folder as another user would leave it: `parent/a2grader-uids`, with a `NNNNN.lock` link for every
    uid of SANDBOX_UIDS to a file (not there yet) in `targets`; returns the link targets."""
    folder = parent / "a2grader-uids"
    folder.mkdir()
    aims = []
    for uid in users.SANDBOX_UIDS:
        aim = targets / f"planted-{uid}"
        (folder / f"{uid}.lock").symlink_to(aim)
        aims.append(aim)
    os.lchown(folder, owner, owner)
    folder.chmod(mode)
    return aims


@needs_root
@pytest.mark.parametrize(
    "owner, mode",
    [(NOBODY, 0o777), (0, 0o777), (0, 0o1777), (NOBODY, 0o755)],
    ids=["theirs-world-writable", "roots-world-writable", "roots-sticky", "theirs-0755"],
)
def test_a_planted_uid_lock_folder_is_refused_and_no_link_is_followed(tmp_path, owner, mode):
    parent, targets = tmp_path / "locks", tmp_path / "targets"
    parent.mkdir()
    targets.mkdir()
    aims = _plant(parent, targets, owner, mode)
    # a grader process as the machine starts it: A2_UID_LOCK_DIR read at import
    code = (
        "from autograder.runtime.sandbox.users import SandboxUser, SandboxError\n"
        "try:\n    SandboxUser()\nexcept SandboxError as exc:\n    print(exc)\n    raise SystemExit(3)\n"
        "print('TOOK A UID')\n"
    )
    proc = subprocess.run(
        [sys.executable, "-c", code],
        cwd=str(ROOT),
        capture_output=True,
        text=True,
        timeout=120,
        env=dict(os.environ, A2_UID_LOCK_DIR=str(parent)),
    )
    folder = parent / "a2grader-uids"
    assert proc.returncode == 3, (
        f"a root grader given a lock folder planted by another user ({folder}, owner {owner}, mode {mode:04o}) "
        f"must refuse it with a SandboxError; it exited {proc.returncode}: {proc.stdout}{proc.stderr}"
    )
    message = proc.stdout
    assert str(folder) in message and "A2_UID_LOCK_DIR" in message, (
        f"the refusal must name the folder and how to fix it (remove it, or set A2_UID_LOCK_DIR): {message!r}"
    )
    expected_reason = "belongs to uid" if owner != 0 else "other users may write in it"
    assert expected_reason in message, f"the refusal must say what is wrong ({expected_reason!r}): {message!r}"
    created = [str(a) for a in aims if os.path.lexists(a)]
    assert not created, f"the grader created files through the planted links: {created}"
    assert not os.listdir(targets), f"something appeared in the links' target folder: {os.listdir(targets)}"


@needs_root
def test_a_lock_folder_under_a_folder_others_may_replace_is_refused(tmp_path):
    parent = tmp_path / "open"
    parent.mkdir()
    parent.chmod(0o777)  # no sticky bit: anyone may rename the grader's folder away and put theirs in its place
    with pytest.raises(statedir.UnsafeFolder, match="another user could replace it"):
        statedir.open_private_folder(parent / "a2grader-uids")
    assert not (parent / "a2grader-uids").exists(), "nothing may be made in a folder that was refused"


def test_a_lock_folder_that_is_a_link_is_refused(tmp_path):
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir(mode=0o700)
    (tmp_path / "a2grader-uids").symlink_to(elsewhere)
    with pytest.raises(statedir.UnsafeFolder, match="a link"):
        statedir.open_private_folder(tmp_path / "a2grader-uids")


@needs_root
def test_a_root_grader_makes_its_own_lock_folder_and_never_follows_a_link_in_it(tmp_path, monkeypatch):
    uids = _test_uids()
    if len(uids) < 2:
        pytest.skip("this process already handed out the uids this test uses")
    targets = tmp_path / "targets"
    targets.mkdir()
    with _reserved(uids):  # no other grading on the machine runs as them meanwhile, nor is killed here
        monkeypatch.setattr(users, "UID_LOCK_DIR", tmp_path / "a2grader-uids")
        monkeypatch.setattr(users, "SANDBOX_UIDS", uids)
        first = users.SandboxUser()  # makes the folder
        try:
            info = os.lstat(users.UID_LOCK_DIR)
            assert stat.S_ISDIR(info.st_mode) and info.st_uid == 0 and stat.S_IMODE(info.st_mode) == 0o700, (
                f"the lock folder must be root's own, mode 0700; got owner {info.st_uid}, mode "
                f"{stat.S_IMODE(info.st_mode):04o}"
            )
            lock = users.UID_LOCK_DIR / f"{first.uid}.lock"
            assert stat.S_ISREG(os.lstat(lock).st_mode), f"{lock} must be a regular file"
        finally:
            first.release()
        # a link where the next uid's lock file goes (as if left by an earlier version): that uid is skipped
        other = uids[1] if first.uid == uids[0] else uids[0]
        aim = targets / "through-the-link"
        (users.UID_LOCK_DIR / f"{other}.lock").symlink_to(aim)
        monkeypatch.setattr(users, "SANDBOX_UIDS", [other])
        with pytest.raises(users.SandboxError, match="no free sandbox uid"):
            users.SandboxUser()
        assert not os.path.lexists(aim), "the grader opened a lock file through a link"


@contextlib.contextmanager
def _reserved(uids: list[int]) -> Iterator[None]:
    """Hold `uids` in the machine's own uid lock folder (users.UID_LOCK_DIR), as a grader holds its child's:
    every grader on the machine skips them until the block ends (waits for a grading that holds one now)."""
    folder = statedir.open_private_folder(users.UID_LOCK_DIR)
    fds = []
    try:
        for uid in uids:
            fds.append(statedir.open_file(folder, f"{uid}.lock"))
            fcntl.flock(fds[-1], fcntl.LOCK_EX)
        yield
    finally:
        for fd in fds:
            os.close(fd)
        os.close(folder)


def test_the_uid_lock_folder_is_where_only_root_writes_whatever_the_tmpdir(tmp_path):
    env = {k: v for k, v in os.environ.items() if k != "A2_UID_LOCK_DIR"}
    env["TMPDIR"] = str(tmp_path)  # grade-all gives each grader a TMPDIR of its own: the locks must not follow it
    code = "from autograder.runtime.sandbox import users\nprint(users.UID_LOCK_DIR)\n"
    out = subprocess.run(
        [sys.executable, "-c", code], cwd=str(ROOT), env=env, capture_output=True, text=True, timeout=120, check=True
    ).stdout.strip()
    run_ok = os.path.isdir("/run") and os.access("/run", os.W_OK)
    expected = "/run/a2grader-uids" if IS_ROOT and run_ok else "/tmp/a2grader-uids"
    assert out == expected, (
        f"the default uid lock folder should be {expected} (root: /run, where only root writes; else /tmp), got {out}"
    )


@needs_root
def test_a_cgroup_left_by_a_killed_grader_with_this_pid_does_not_stop_grading(monkeypatch):
    """A grader killed mid-child leaves its (empty) group `<pid>-<n>` behind, and pids come back (pid_max is
    32768 here): a later grader with that pid takes the next free name, and leaves the other group alone. A
    fresh clone's make test lost a student's ex01 to "File exists: .../a2grader/21712-1" before."""
    groups, why = cgroup.probe()
    if groups is None:
        pytest.skip(f"no cgroup here: {why}")
    start = 10**6 + os.getpid()  # far from the counter's own values
    monkeypatch.setattr(cgroup, "_COUNTER", itertools.count(start))
    name = f"{os.getpid()}-{start}"
    stale = [root / name for root in (groups.memory_root, groups.pids_root, groups.cpu_root) if root is not None]
    for folder in stale:
        folder.mkdir()
    try:
        group = groups.make(64 * 2**20, 16)
        try:
            assert [f.name for f in group.folders] == [f"{os.getpid()}-{start + 1}"] * len(stale), (
                f"the new group should take the next free name after the stale {name}: {group.folders}"
            )
        finally:
            group.remove()
        assert all(folder.is_dir() for folder in stale), "a group the grader did not make must be left alone"
    finally:
        for folder in stale:
            folder.rmdir()


# ---------------------------------------------------------------------------------------------
# The stale-scratch sweep.


@pytest.fixture
def shared_tmp(tmp_path, monkeypatch) -> Path:
    """The temporary folder the makers and the sweepers of this test share (never the machine's /tmp)."""
    folder = tmp_path / "shared"
    folder.mkdir()
    folder.chmod(0o1777)
    monkeypatch.setattr(tempfile, "tempdir", str(folder))
    return folder


def _env(shared: Path) -> dict[str, str]:
    return dict(os.environ, TMPDIR=str(shared))


# Makes a scratch folder and holds it; removes it on a "remove" line, and ends without removing it (as a killed
# batch would: its lock dropped, its folder left) when its stdin closes.
HOLD = (
    "import sys\nfrom autograder.batch import processes\nheld = processes.Scratch()\n"
    "(held.path / 'state').write_text('live')\nprint(held.path, flush=True)\n"
    "if sys.stdin.readline() == 'remove\\n':\n    held.remove()\n"
)


def _holder(shared: Path, namespace: bool) -> tuple[subprocess.Popen, Path]:
    """A process holding a scratch folder (HOLD); in a new PID namespace (`unshare -p -f --mount-proc`: there it
    is PID 1, a pid that means nothing to the sweeper) or not."""
    cmd = [sys.executable, "-c", HOLD]
    if namespace:
        cmd = [str(UNSHARE), "-p", "-f", "--kill-child", "--mount-proc", *cmd]
    proc = subprocess.Popen(
        cmd, cwd=str(ROOT), env=_env(shared), stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    )
    assert proc.stdout is not None
    line = proc.stdout.readline().strip()
    assert line, f"the holder did not make its scratch folder (exit {proc.poll()})"
    return proc, Path(line)


def _end(proc: subprocess.Popen, remove: bool) -> None:
    if proc.poll() is None:
        assert proc.stdin is not None
        proc.stdin.write("remove\n" if remove else "")
        proc.stdin.close()
        proc.wait(timeout=60)


def _sweep_in_new_namespace(shared: Path) -> int:
    code = "from autograder.batch import processes\nprint(processes.sweep_stale_scratch())\n"
    proc = subprocess.run(
        [UNSHARE, "-p", "-f", "--mount-proc", sys.executable, "-c", code],
        cwd=str(ROOT),
        env=_env(shared),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, f"the sweep in a new PID namespace failed: {proc.stderr}"
    return int(proc.stdout.split()[-1])


@needs_pid_namespace
def test_a_live_batch_in_another_pid_namespace_survives_the_sweep_and_a_dead_one_is_removed(shared_tmp):
    live, live_path = _holder(shared_tmp, namespace=True)
    try:
        dead, dead_path = _holder(shared_tmp, namespace=True)
        _end(dead, remove=False)  # ended without cleaning up: lock dropped, folder left
        assert live_path.name.startswith(f"{processes.SCRATCH_PREFIX}1-") and dead_path.is_dir(), (
            f"each holder should run as PID 1 of its own namespace and the dead one leave its folder: "
            f"{live_path.name}, {dead_path.name} there: {dead_path.is_dir()}"
        )
        removed = processes.sweep_stale_scratch()
        assert (live_path / "state").read_text() == "live", (
            "a sweep removed (or emptied) the scratch folder of a live batch in another PID namespace: liveness "
            "must come from the lock its maker holds, not from whether its pid exists here"
        )
        assert not dead_path.exists() and removed == 1, (
            f"the folder of a batch that died (lock released) must be swept, even though its pid (1) is alive "
            f"here: removed {removed}, still there: {dead_path.exists()}"
        )
    finally:
        _end(live, remove=True)
    assert not live_path.exists(), "the holder removes its own folder when told to"


@needs_pid_namespace
def test_a_sweep_from_another_pid_namespace_leaves_a_live_batch_alone(shared_tmp):
    """The other way round: the sweeper cannot see the maker's pid at all (the former rule, "the pid is not
    alive", removed this live folder)."""
    held = processes.Scratch()
    (held.path / "state").write_text("live")
    try:
        removed = _sweep_in_new_namespace(shared_tmp)
        assert removed == 0 and (held.path / "state").read_text() == "live", (
            f"a grader in another PID namespace, which cannot see this process's pid, swept {removed} folder(s), "
            "this live batch's scratch folder among them: liveness must come from the lock its maker holds"
        )
    finally:
        held.remove()
    assert not held.path.exists()
    # dead, with the maker's pid alive here (this process): the lock decides, not the pid
    stale = shared_tmp / f"{processes.SCRATCH_PREFIX}{os.getpid()}-deadbeef"
    stale.mkdir(mode=0o700)
    (stale / "state").write_text("left")
    assert _sweep_in_new_namespace(shared_tmp) == 1 and not stale.exists(), (
        "a scratch folder nobody holds must be swept, whoever's pid its name carries"
    )


@needs_root
def test_the_sweep_never_touches_another_users_folder_or_a_link(shared_tmp, tmp_path):
    theirs = shared_tmp / f"{processes.SCRATCH_PREFIX}999999-theirs"
    theirs.mkdir()
    (theirs / "work").write_text("theirs")
    os.chown(theirs / "work", NOBODY, NOBODY)
    os.chown(theirs, NOBODY, NOBODY)
    behind = tmp_path / "behind"
    behind.mkdir()
    (behind / "precious").write_text("keep")
    link = shared_tmp / f"{processes.SCRATCH_PREFIX}999998-link"
    link.symlink_to(behind)
    file_named_like_one = shared_tmp / f"{processes.SCRATCH_PREFIX}999997-file"
    file_named_like_one.write_text("a file")
    ours = shared_tmp / f"{processes.SCRATCH_PREFIX}999996-ours"
    ours.mkdir()
    (ours / "escape").symlink_to(behind)  # a link inside a stale folder: removed, never followed
    assert processes.sweep_stale_scratch() == 1
    assert not ours.exists(), "a stale folder of our own (no lock held) must be swept"
    assert (theirs / "work").read_text() == "theirs", "the sweep touched another user's folder"
    assert link.is_symlink() and (behind / "precious").read_text() == "keep", (
        "the sweep followed (or removed) a link named like a scratch folder"
    )
    assert file_named_like_one.read_text() == "a file", "the sweep removed a file named like a scratch folder"


def test_a_scratch_folder_is_locked_while_held_and_removed_with_its_lock(shared_tmp):
    held = processes.Scratch(0o711)
    assert stat.S_IMODE(os.lstat(held.path).st_mode) == 0o711
    assert processes.sweep_stale_scratch() == 0 and held.path.is_dir(), (
        "a sweep in the very process that holds a scratch folder must leave it"
    )
    with processes.Scratch() as other:
        assert other != held.path and other.is_dir()
    assert not other.exists(), "leaving the `with` block removes the folder"
    held.remove()
    held.remove()  # once only: a second call does nothing
    assert not held.path.exists()


# ---------------------------------------------------------------------------------------------
# Dask's own folder (grade-all --cluster local:N).


def test_a_local_cluster_keeps_its_dask_folder_in_a_scratch_folder_of_its_own(shared_tmp, tmp_path, monkeypatch):
    """Dask's default folder is $TMPDIR/dask-scratch-space, a fixed name used whoever made it, whose lock files
    (global.lock, purge.lock) it opens through links: a local cluster must use a folder of the batch's own."""
    pytest.importorskip("distributed")
    from autograder.batch import cluster

    monkeypatch.setenv("TMPDIR", str(shared_tmp))  # the spawned worker processes read it
    targets = tmp_path / "targets"
    targets.mkdir()
    planted = shared_tmp / "dask-scratch-space"
    planted.mkdir()
    for name in ("global.lock", "purge.lock"):
        (planted / name).symlink_to(targets / name)
    planted.chmod(0o777)
    if IS_ROOT:
        os.lchown(planted, NOBODY, NOBODY)
    with cluster.connect("local:1"):
        during = sorted(os.listdir(shared_tmp))
    assert not os.listdir(targets), (
        f"the local cluster opened lock files through links planted in {planted}: {os.listdir(targets)}"
    )
    assert (
        during == sorted(["dask-scratch-space", *[n for n in during if n.startswith(processes.SCRATCH_PREFIX)]])
        and len(during) == 2
    ), f"while the cluster ran, the temporary folder held more than its Scratch: {during}"
    assert os.listdir(shared_tmp) == ["dask-scratch-space"] and sorted(os.listdir(planted)) == [
        "global.lock",
        "purge.lock",
    ], "the cluster's folder must be removed when it closes, the planted one untouched"
