"""Gradescope's container, emulated for tests (issue 28, item 4): a root filesystem like Gradescope's image,
a way to run a command in it as a container with Docker's default confinement, and a cheaper emulation of
that confinement on this machine's own root filesystem. A helper module; its own checks are in
tests/test_gradescope_container.py.

Gradescope runs an autograder zip's setup.sh and run_autograder as root in a Docker container with Docker's
defaults: moby's default seccomp profile, Docker's 14 default capabilities (CapEff 00000000a80425fb), no
NO_NEW_PRIVS, a network namespace of its own with the network reachable. Two emulations:

- `run_in_container(argv, ...)`: podman with runc (Debian packages) runs `argv` in `ensure_rootfs()` (Ubuntu 22.04,
  jammy, with its updates: the system python3 3.10, python3-venv, python3-pip, bubblewrap; built with
  debootstrap into a cache folder outside the repository, once) as root, with Docker's 14 capabilities and
  a Docker-equivalent seccomp profile (`docker_seccomp_profile`: podman's own default profile is much looser,
  see there), the rootfs mounted as an overlay (what a run writes to it is thrown away), and its own network
  namespace (slirp4netns: loopback plus the outside network, for setup.sh's pip; or loopback only).
- `run_emulated(argv, ...)`: no container runtime and no rootfs: this machine's own root filesystem, made
  read-only, in private mount/PID/IPC/UTS/network/cgroup namespaces (`unshare`) with private /tmp, /var/tmp,
  /run, /dev/shm, bwrap hidden (/dev/null bound over it), Docker's read-only and masked /proc and /sys paths,
  a libseccomp filter (PyPI `pyseccomp`) that refuses what Docker's profile refuses where it matters for a
  sandbox, and the capability bounding set cut to Docker's 14 (`setpriv`). Cheap enough for every run.

Both need root. Each returns a `Run` (exit status, stdout, stderr, seconds, whether the time limit ended it).

Where they differ from Docker's real defaults (what a test must not rely on):
- both: no CPU limit, and no memory limit unless `run_in_container(memory=...)` sets one (Gradescope sets
  both, from the assignment's autograder hardware setting); no AppArmor (Docker applies docker-default where
  the host has AppArmor; this kernel has none); minKernel conditions of moby's profile taken as met (ptrace,
  process_vm_*: kernel >= 4.8).
- podman: the seccomp profile resolves to moby's for x86_64 and Docker's caps (moby/moby b985e231, checked by
  the tests when $A2_MOBY_SECCOMP_JSON names moby's file); runc as in Docker, podman 4.3 instead of dockerd;
  RLIMIT_NOFILE this process's and RLIMIT_NPROC at most 32768 (Docker: dockerd's, often 1048576/unlimited);
  network through slirp4netns rather than a bridge with NAT; /run/.containerenv, not /.dockerenv; the image is
  jammy minbase plus the packages in RECIPE, not Gradescope's fuller base image.
- the cheap one: this machine's Debian and its python3 (3.11 here), a read-only root (Docker's is writable);
  the host's /dev and /sys read-only rather than the container's own; loopback only, no outside network; the
  filter refuses only the calls named in `_EPERM_CALLS` (everything else Docker's allow-list refuses but the
  kernel grants root with the 14 caps stays allowed, e.g. AF_ALG/AF_VSOCK sockets, mbind/set_mempolicy,
  kcmp, pidfd_getfd, any personality(), obsolete calls such as uselib, ustat, sysfs); non-native (i386,
  x32) calls get the same rules, as in Docker.
"""

from __future__ import annotations

import datetime
import errno
import fcntl
import hashlib
import json
import os
import platform
import resource
import shutil
import socket
import stat
import struct
import subprocess
import sys
import tempfile
import time
import urllib.request
import uuid
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

# --- Docker's defaults ----------------------------------------------------------------------------------
# moby daemon/pkg/oci/caps/defaults.go, in its order; their bits give CapEff 00000000a80425fb.
DOCKER_CAPS = (
    "CHOWN",
    "DAC_OVERRIDE",
    "FSETID",
    "FOWNER",
    "MKNOD",
    "NET_RAW",
    "SETGID",
    "SETUID",
    "SETFCAP",
    "SETPCAP",
    "NET_BIND_SERVICE",
    "SYS_CHROOT",
    "KILL",
    "AUDIT_WRITE",
)
DOCKER_CAPEFF = 0xA80425FB
# moby daemon/pkg/oci/defaults.go: paths a container sees read-only, and paths masked (files by /dev/null,
# folders by an empty read-only tmpfs). /sys is read-only as a whole.
DOCKER_READONLY_PATHS = ("/proc/bus", "/proc/fs", "/proc/irq", "/proc/sys", "/proc/sysrq-trigger")
DOCKER_MASKED_PATHS = (
    "/proc/acpi",
    "/proc/asound",
    "/proc/interrupts",
    "/proc/kcore",
    "/proc/keys",
    "/proc/latency_stats",
    "/proc/sched_debug",
    "/proc/scsi",
    "/proc/timer_list",
    "/proc/timer_stats",
    "/sys/devices/virtual/powercap",
    "/sys/firmware",
)
CONTAINER_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"  # Docker's PATH for an Ubuntu image

# --- the root filesystem --------------------------------------------------------------------------------
ROOTFS_ENV = "A2_GRADESCOPE_ROOTFS"  # where the rootfs is kept (default DEFAULT_ROOTFS)
DEFAULT_ROOTFS = Path("/var/cache/a2-gradescope-rootfs/jammy")
STAMP = ".a2-rootfs.json"  # in the rootfs: the recipe it was built from, when, how long it took, its size
MIRROR = "http://archive.ubuntu.com/ubuntu"
# What debootstrap makes: Gradescope's image is Ubuntu 22.04 with its updates (its python3 is 3.10.12) and
# python3/pip; python3-venv because setup.sh makes a venv, bubblewrap so that its refusal can be shown.
RECIPE: dict[str, Any] = {
    "suite": "jammy",
    "arch": "amd64",
    "variant": "minbase",
    "components": ["main", "universe"],
    "pockets": ["jammy", "jammy-updates", "jammy-security"],
    "packages": ["python3", "python3-venv", "python3-pip", "ca-certificates", "curl", "unzip", "bubblewrap"],
    "mirror": MIRROR,
    "version": 1,  # raise when the build steps change: every cached rootfs is then rebuilt
}
# debootstrap checks the archive's signature against a keyring: ubuntu-keyring is not a Debian package, so its
# .deb comes from the Ubuntu archive and only the key with this fingerprint is kept from it (the "Ubuntu
# Archive Automatic Signing Key (2018)" that signs jammy): the pin, not the download, is what is trusted.
UBUNTU_KEYRING_DEB = f"{MIRROR}/pool/main/u/ubuntu-keyring/ubuntu-keyring_2021.03.26_all.deb"
UBUNTU_ARCHIVE_KEY = "F6ECB3762474EDA9D21B7022871920D1991BC93C"


class HarnessError(RuntimeError):
    """The emulation could not be set up (missing root, tools, or a failed build): never the command's fault."""


@dataclass(frozen=True)
class Mount:
    """A host path bound into the container at `target` (read-write unless `read_only`)."""

    source: Path
    target: str
    read_only: bool = False


@dataclass(frozen=True)
class Run:
    """What one command did: exit status (negative: killed by that signal), output, wall time, and whether
    the time limit ended it (then `returncode` is whatever the kill left)."""

    returncode: int
    stdout: str
    stderr: str
    seconds: float
    timed_out: bool


def rootfs_path() -> Path:
    """Where the rootfs is kept: $A2_GRADESCOPE_ROOTFS, else /var/cache/a2-gradescope-rootfs/jammy."""
    return Path(os.environ.get(ROOTFS_ENV) or DEFAULT_ROOTFS)


def missing_for_container() -> str | None:
    """Why `run_in_container` cannot work here (for a test's skip), or None. Installs podman, runc and
    debootstrap with apt-get when they are missing and this is root on Debian or Ubuntu."""
    if os.geteuid() != 0:
        return "the Gradescope container emulation needs root (podman with --rootfs, debootstrap)"
    if platform.machine() != "x86_64":
        return f"the rootfs recipe is for x86_64 (amd64), this machine is {platform.machine()}"
    missing = [tool for tool in ("podman", "runc", "debootstrap") if shutil.which(tool) is None]
    if missing and shutil.which("apt-get"):
        env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
        install = [
            "apt-get",
            "install",
            "-y",
            "-q",
            "-o",
            "DPkg::Lock::Timeout=600",
            *missing,
        ]  # waits for a parallel one
        done = subprocess.run(install, capture_output=True, text=True, env=env)
        if done.returncode != 0:  # a machine that never ran apt-get update has no package lists
            subprocess.run(["apt-get", "update", "-q", "-o", "DPkg::Lock::Timeout=600"], capture_output=True, env=env)
            done = subprocess.run(install, capture_output=True, text=True, env=env)
        if done.returncode != 0:
            return f"apt-get install {' '.join(missing)} failed: {done.stderr.strip()[-500:]}"
        missing = [tool for tool in missing if shutil.which(tool) is None]
    if missing:
        return f"{' and '.join(missing)} missing and cannot be installed here (no apt-get)"
    return None


def missing_for_emulation() -> str | None:
    """Why `run_emulated` cannot work here (for a test's skip), or None."""
    if os.geteuid() != 0:
        return "the cheap emulation needs root (private namespaces, a seccomp filter without NO_NEW_PRIVS)"
    for tool in ("unshare", "setpriv", "mount"):
        if shutil.which(tool) is None:
            return f"{tool} (util-linux) is missing"
    try:
        import pyseccomp  # type: ignore[import-untyped]  # noqa: F401
    except (ImportError, RuntimeError) as exc:  # RuntimeError: the package is there, libseccomp is not
        return f"pyseccomp (PyPI, libseccomp's binding) is not usable: {exc}"
    return None


# --- building the rootfs ------------------------------------------------------------------------------


def ensure_rootfs(path: Path | None = None, *, log: Any = None) -> Path:
    """The rootfs at `path` (default `rootfs_path()`), built now when missing, from another recipe, or broken
    (its python3 does not start or lacks venv/ensurepip); returns its path. Builds take minutes (debootstrap
    from archive.ubuntu.com, then the updates); parallel callers wait for one build (a lock file). `log`, a
    callable taking a line, reports progress."""
    root = Path(path) if path is not None else rootfs_path()
    say = log or (lambda line: None)
    root.parent.mkdir(parents=True, exist_ok=True)
    with _locked(root.parent / f".{root.name}.lock"):
        problem = rootfs_problem(root)
        if problem is None:
            return root
        say(f"building the Gradescope-like rootfs at {root} ({problem})")
        if root.exists() and any(root.iterdir()) and not (root / STAMP).exists():
            raise HarnessError(
                f"{root} exists, is not empty and was not built by this harness (no {STAMP}): "
                f"not removing it; choose another folder with {ROOTFS_ENV}=PATH"
            )
        _build(root, say)
        problem = rootfs_problem(root)
        if problem is not None:
            raise HarnessError(f"the rootfs just built at {root} is not usable: {problem}")
        return root


def rootfs_problem(root: Path) -> str | None:
    """What is wrong with the rootfs at `root` (missing, another recipe, python3 broken), or None."""
    try:
        stamp = json.loads((root / STAMP).read_text())
    except (OSError, ValueError):
        return "missing" if not root.exists() else f"no readable {STAMP}"
    if stamp.get("recipe") != RECIPE:
        return "built from another recipe"
    probe = subprocess.run(
        ["chroot", str(root), "/usr/bin/python3", "-c", "import venv, ensurepip, sys; print(sys.version.split()[0])"],
        capture_output=True,
        text=True,
        env={"PATH": CONTAINER_PATH, "LANG": "C.UTF-8"},
    )
    if probe.returncode != 0 or not probe.stdout.startswith("3.10."):
        return f"its python3 does not work: {(probe.stdout + probe.stderr).strip()[-300:]}"
    return None


def rootfs_stamp(root: Path | None = None) -> dict[str, Any]:
    """The stamp of a built rootfs: recipe, built_at, build_seconds, size_bytes, python."""
    return dict(json.loads(((root or rootfs_path()) / STAMP).read_text()))


@contextmanager
def _locked(lock: Path) -> Iterator[None]:
    with open(lock, "a") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)


def _build(root: Path, say: Any) -> None:
    reason = missing_for_container()
    if reason:
        raise HarnessError(reason)
    started = time.monotonic()
    work = root.with_name(f".{root.name}.build-{os.getpid()}")
    shutil.rmtree(work, ignore_errors=True)
    with tempfile.TemporaryDirectory(prefix="a2-ubuntu-keyring-") as scratch:
        keyring = _ubuntu_keyring(Path(scratch))
        say("debootstrap " + RECIPE["suite"])
        _check(  # in a mount namespace of its own: the /proc and /sys it mounts in `work` end with it
            [
                *("unshare", "--mount", "--fork", "debootstrap"),
                f"--variant={RECIPE['variant']}",
                f"--arch={RECIPE['arch']}",
                f"--components={','.join(RECIPE['components'])}",
                f"--include={','.join(RECIPE['packages'])}",
                f"--keyring={keyring}",
                RECIPE["suite"],
                str(work),
                MIRROR,
            ],
            "debootstrap",
        )
    components = " ".join(RECIPE["components"])
    (work / "etc/apt/sources.list").write_text("".join(f"deb {MIRROR} {p} {components}\n" for p in RECIPE["pockets"]))
    shutil.copyfile("/etc/resolv.conf", work / "etc/resolv.conf")
    say("apt-get dist-upgrade (jammy-updates, jammy-security)")
    upgrade = (
        "apt-get update -q && apt-get -y -q -o Dpkg::Options::=--force-confold dist-upgrade"
        " && apt-get clean && rm -rf /var/lib/apt/lists/*"
    )
    _check(
        ["unshare", "--mount", "--fork", "sh", "-c", 'mount -t proc proc "$1/proc" && chroot "$1" sh -c "$2"']
        + ["sh", str(work), upgrade],
        "apt-get dist-upgrade in the new rootfs",
        env={"PATH": CONTAINER_PATH, "DEBIAN_FRONTEND": "noninteractive", "LANG": "C.UTF-8"},
    )
    (work / "etc/resolv.conf").unlink()  # podman provides the container's own
    version = subprocess.run(
        ["chroot", str(work), "/usr/bin/python3", "--version"],
        capture_output=True,
        text=True,
        env={"PATH": CONTAINER_PATH},
    ).stdout.split()[-1]
    size = int(subprocess.run(["du", "-sxb", str(work)], capture_output=True, text=True, check=True).stdout.split()[0])
    stamp = {
        "recipe": RECIPE,
        "built_at": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "build_seconds": round(time.monotonic() - started, 1),
        "size_bytes": size,
        "python": version,
    }
    (work / STAMP).write_text(json.dumps(stamp, indent=1) + "\n")
    shutil.rmtree(root, ignore_errors=True)  # only reached for an empty folder or one with our stamp
    work.rename(root)
    say(f"rootfs built in {stamp['build_seconds']} s, {size / 2**20:.0f} MiB, python {version}")


def _ubuntu_keyring(scratch: Path) -> Path:
    """A keyring holding only Ubuntu's archive key, taken from Ubuntu's ubuntu-keyring .deb and checked
    against the pinned fingerprint."""
    deb = scratch / "ubuntu-keyring.deb"
    with urllib.request.urlopen(UBUNTU_KEYRING_DEB, timeout=120) as response:
        deb.write_bytes(response.read())
    _check(["dpkg-deb", "-x", str(deb), str(scratch / "x")], "unpacking ubuntu-keyring")
    home = scratch / "gnupg"
    home.mkdir(mode=0o700)
    gpg = ["gpg", "--batch", "--quiet", "--homedir", str(home)]
    _check([*gpg, "--import", str(scratch / "x/usr/share/keyrings/ubuntu-archive-keyring.gpg")], "gpg --import")
    keyring = scratch / "ubuntu-archive-key.gpg"
    _check([*gpg, "--output", str(keyring), "--export", UBUNTU_ARCHIVE_KEY], "gpg --export")
    listed = subprocess.run([*gpg, "--show-keys", "--with-colons", str(keyring)], capture_output=True, text=True)
    fingerprints = [line.split(":")[9] for line in listed.stdout.splitlines() if line.startswith("fpr:")]
    if fingerprints[:1] != [UBUNTU_ARCHIVE_KEY]:
        raise HarnessError(f"ubuntu-keyring from {UBUNTU_KEYRING_DEB} lacks the pinned key {UBUNTU_ARCHIVE_KEY}")
    return keyring


def _check(argv: Sequence[str], what: str, env: Mapping[str, str] | None = None) -> None:
    done = subprocess.run(list(argv), capture_output=True, text=True, env=dict(env) if env is not None else None)
    if done.returncode != 0:
        raise HarnessError(f"{what} failed (exit {done.returncode}): {(done.stdout + done.stderr).strip()[-1500:]}")


# --- the seccomp profile for podman -----------------------------------------------------------------------
# podman's default profile (containers-common's /usr/share/containers/seccomp.json, 0.50.1 in Debian 12) is
# moby's adapted for rootless containers, and looser where a sandbox cares: compared with moby's
# profiles/seccomp/default.json (moby/moby at b985e231, 2026), resolved for x86_64 and Docker's 14 caps,
#   - it allows unshare, setns, mount, umount2, the new mount API (fsopen ... mount_setattr), clone with any
#     namespace flag and clone3 without CAP_SYS_ADMIN: `unshare -U true` and bwrap would work in it;
#   - it allows keyctl and pivot_root (moby: denied), get_mempolicy/mbind/set_mempolicy (moby: CAP_SYS_NICE),
#     pidfd_getfd (CAP_SYS_PTRACE), reboot (CAP_SYS_BOOT), syslog (CAP_SYSLOG), AF_ALG and AF_VSOCK sockets;
#   - it denies vmsplice and io_pgetevents (moby: allowed), and answers ENOSYS (moby: EPERM) to every call
#     it does not list, which also refuses calls newer than it that moby allows (cachestat, fchmodat2,
#     futex_waitv, mseal, statmount, listmount, the *xattrat calls, lsm_*, map_shadow_stack, ...).
# Both allow landlock_*, ptrace, process_vm_readv/writev (kernel >= 4.8), memfd_create, mincore; both deny
# io_uring_* (podman's by its ENOSYS default). `docker_seccomp_profile` takes podman's file and replaces the
# rules of exactly those calls by moby's (`_MOBY_RULES`), so the container gets what Docker would give;
# `profile_differences` compares any two profiles that way (tests/test_gradescope_container.py runs it
# against moby's file when $A2_MOBY_SECCOMP_JSON names one).
PODMAN_PROFILE = Path("/usr/share/containers/seccomp.json")
PODMAN_NPROC = 32768  # the RLIMIT_NPROC podman 4.3 gives itself (strace: setrlimit(RLIMIT_NPROC, 32*1024))
MOBY_DEFAULT_ERRNO = errno.EPERM
_CLONE_NS_MASK = 0x7E020000  # CLONE_NEWNS|NEWCGROUP|NEWUTS|NEWIPC|NEWUSER|NEWPID|NEWNET (moby's 2114060288)


def _allow(*caps: str) -> dict[str, Any]:
    return {"action": "SCMP_ACT_ALLOW", "includes": {"caps": [f"CAP_{c}" for c in caps]} if caps else {}}


_SYS_ADMIN_ONLY = [_allow("SYS_ADMIN")]
_MOBY_RULES: dict[str, list[dict[str, Any]]] = {
    **{
        name: _SYS_ADMIN_ONLY
        for name in (
            *("mount", "umount", "umount2", "unshare", "setns"),
            *("fsopen", "fsconfig", "fsmount", "fspick", "open_tree", "move_mount", "mount_setattr"),
            *("lsm_get_self_attr", "lsm_list_modules", "lsm_set_self_attr", "quotactl_fd"),
        )
    },
    "clone": [
        _allow("SYS_ADMIN"),
        {
            "action": "SCMP_ACT_ALLOW",
            "args": [{"index": 0, "value": _CLONE_NS_MASK, "valueTwo": 0, "op": "SCMP_CMP_MASKED_EQ"}],
            "excludes": {"caps": ["CAP_SYS_ADMIN"], "arches": ["s390", "s390x"]},
        },
        {
            "action": "SCMP_ACT_ALLOW",
            "args": [{"index": 1, "value": _CLONE_NS_MASK, "valueTwo": 0, "op": "SCMP_CMP_MASKED_EQ"}],
            "includes": {"arches": ["s390", "s390x"]},
            "excludes": {"caps": ["CAP_SYS_ADMIN"]},
        },
    ],
    # ENOSYS, not EPERM: glibc then falls back to clone (moby/profiles 4489e67)
    "clone3": [
        _allow("SYS_ADMIN"),
        {"action": "SCMP_ACT_ERRNO", "errnoRet": errno.ENOSYS, "excludes": {"caps": ["CAP_SYS_ADMIN"]}},
    ],
    **{name: [_allow("SYS_NICE")] for name in ("get_mempolicy", "mbind", "set_mempolicy", "set_mempolicy_home_node")},
    "pidfd_getfd": [_allow("SYS_PTRACE")],
    "reboot": [_allow("SYS_BOOT")],
    "syslog": [_allow("SYS_ADMIN"), _allow("SYSLOG")],
    "bpf": [_allow("SYS_ADMIN"), _allow("BPF")],
    "perf_event_open": [_allow("SYS_ADMIN"), _allow("PERFMON")],
    "socket": [  # every family but AF_ALG (38) and AF_VSOCK (40)
        {"action": "SCMP_ACT_ALLOW", "args": [{"index": 0, "value": v, "valueTwo": 0, "op": op}]}
        for v, op in ((38, "SCMP_CMP_LT"), (39, "SCMP_CMP_EQ"), (40, "SCMP_CMP_GT"))
    ],
    **{
        name: [_allow()]
        for name in (
            *("vmsplice", "io_pgetevents", "io_pgetevents_time64", "cachestat", "fchmodat2", "mseal"),
            *("futex_requeue", "futex_wait", "futex_waitv", "futex_wake", "map_shadow_stack", "uretprobe"),
            *("getxattrat", "listxattrat", "removexattrat", "setxattrat", "statmount", "listmount"),
            "riscv_hwprobe",
        )
    },
    # listed by podman only, allowed there; moby leaves them to its default (EPERM)
    **{
        name: []
        for name in (
            *("keyctl", "pivot_root", "readdir", "sigaction", "signal", "sigpending", "sigsuspend", "syscall"),
            *("timerfd", "query_module"),
        )
    },
}
_LANDLOCK_CALLS = ("landlock_create_ruleset", "landlock_add_rule", "landlock_restrict_self")


def docker_profile_json(*, landlock: bool = True, base: Path = PODMAN_PROFILE) -> dict[str, Any]:
    """Docker's default seccomp profile, as a dict: podman's `base` with the rules of the calls in
    `_MOBY_RULES` replaced by moby's and moby's default errno (EPERM). `landlock=False`: landlock_* answer
    ENOSYS, as on a kernel without Landlock."""
    profile = json.loads(base.read_text())
    replaced = set(_MOBY_RULES) | (set() if landlock else set(_LANDLOCK_CALLS))
    rules = []
    for rule in profile["syscalls"]:
        names = [n for n in rule["names"] if n not in replaced]
        if names:
            rules.append({**rule, "names": names})
    for name, moby_rules in _MOBY_RULES.items():
        rules += [{"names": [name], **rule} for rule in moby_rules]
    if not landlock:
        rules.append({"names": list(_LANDLOCK_CALLS), "action": "SCMP_ACT_ERRNO", "errnoRet": errno.ENOSYS})
    profile["syscalls"] = rules
    profile["defaultErrnoRet"] = MOBY_DEFAULT_ERRNO
    profile.pop("defaultErrno", None)  # podman's spelling of its ENOSYS default
    return dict(profile)


def docker_seccomp_profile(*, landlock: bool = True) -> Path:
    """`docker_profile_json` written to a file for `podman --security-opt seccomp=FILE` (named by its content)."""
    text = json.dumps(docker_profile_json(landlock=landlock), indent=1, sort_keys=True)
    path = Path(tempfile.gettempdir()) / f"a2-docker-seccomp-{hashlib.sha256(text.encode()).hexdigest()[:16]}.json"
    if not path.exists():
        partial = path.with_suffix(f".{os.getpid()}.tmp")
        partial.write_text(text)
        partial.rename(path)
    return path


def resolve_profile(
    profile: Mapping[str, Any], *, arch: str = "x86_64", caps: Sequence[str] = DOCKER_CAPS
) -> dict[str, Any]:
    """What a profile does on `arch` for a container with `caps` (moby's rule selection: a rule counts when
    its includes all hold and none of its excludes does; minKernel taken as met): {name: sorted rules},
    rules that equal the default left out, plus "<default>"."""
    have = {f"CAP_{c}" for c in caps}
    default = (profile["defaultAction"], profile.get("defaultErrnoRet"))
    out: dict[str, list[tuple[str, Any, str]]] = {}
    for rule in profile["syscalls"]:
        inc, exc = rule.get("includes") or {}, rule.get("excludes") or {}
        if not set(inc.get("caps") or []) <= have or (inc.get("arches") and arch not in inc["arches"]):
            continue
        if set(exc.get("caps") or []) & have or arch in (exc.get("arches") or []):
            continue
        args = json.dumps(
            [{k: a.get(k, 0) for k in ("index", "value", "valueTwo", "op")} for a in rule.get("args") or []]
        )
        errno_ret = rule.get("errnoRet", default[1] if rule["action"] == "SCMP_ACT_ERRNO" else None)
        if (rule["action"], errno_ret) == default and args == "[]":
            continue
        for name in rule["names"]:
            out.setdefault(name, []).append((rule["action"], errno_ret, args))
    return {"<default>": default, **{name: sorted(set(rules)) for name, rules in out.items()}}


def profile_differences(ours: Mapping[str, Any], reference: Mapping[str, Any]) -> list[str]:
    """Calls whose resolved rules differ between two profiles (x86_64, Docker's caps), one line each."""
    a, b = resolve_profile(ours), resolve_profile(reference)
    return [
        f"{name}: ours {a.get(name)} reference {b.get(name)}"
        for name in sorted(set(a) | set(b))
        if a.get(name) != b.get(name)
    ]


# --- running in the container (podman) -----------------------------------------------------------------


def run_in_container(
    argv: Sequence[str],
    *,
    mounts: Sequence[Mount] = (),
    env: Mapping[str, str] | None = None,
    timeout_s: float = 600,
    network: bool = True,
    landlock: bool = True,
    workdir: str = "/",
    rootfs: Path | None = None,
    memory: str | None = None,
) -> Run:
    """Run `argv` as root in a Gradescope-like container: podman on the rootfs (`ensure_rootfs`, built if
    needed) as an overlay (writes to it are discarded), Docker's 14 capabilities, Docker's seccomp profile
    (`docker_seccomp_profile`; `landlock=False`: landlock_* answer ENOSYS), `mounts` bound in, `env` added to
    the container's environment (PATH and HOME as Docker sets them), cwd `workdir`. `network`: its own
    network namespace with loopback and the outside network through slirp4netns (setup.sh reaches PyPI);
    False: loopback only. `memory` (podman's --memory, e.g. "5g"): the container's memory cgroup limit, as
    Gradescope's memory setting gives (its processes are OOM-killed above it); None: no limit. After
    `timeout_s` the container is killed and `timed_out` is set."""
    _check_mounts(mounts, podman=True)
    reason = missing_for_container()
    if reason:
        raise HarnessError(reason)
    root = ensure_rootfs(rootfs)
    name = f"a2-gradescope-{uuid.uuid4().hex[:12]}"
    # runc, Docker's own runtime (crun 1.8, podman's default, refuses hybrid cgroup v1/v2 hosts such as this
    # one). Limits: podman's default asks for RLIMIT_NOFILE 1048576 and a large RLIMIT_NPROC, which fails
    # where root lacks CAP_SYS_RESOURCE (this machine); podman 4.3 itself runs with RLIMIT_NPROC 32768 (it
    # sets that, seen with strace), so the container gets this process's NOFILE and at most that NPROC.
    nofile, nproc = resource.getrlimit(resource.RLIMIT_NOFILE), resource.getrlimit(resource.RLIMIT_NPROC)
    nproc = (
        (min(nproc[0], PODMAN_NPROC), min(nproc[1], PODMAN_NPROC))
        if nproc[1] != resource.RLIM_INFINITY
        else (PODMAN_NPROC,) * 2
    )
    args = ["podman", "--runtime", "runc", "run", "--rm", "--name", name, "--user", "0:0", "--workdir", workdir]
    args += [
        "--pids-limit",
        "-1",
        "--ulimit",
        f"nofile={nofile[0]}:{nofile[1]}",
        "--ulimit",
        f"nproc={nproc[0]}:{nproc[1]}",
    ]
    if memory is not None:
        args += ["--memory", memory]
    args += ["--security-opt", f"seccomp={docker_seccomp_profile(landlock=landlock)}", "--cap-drop", "all"]
    args += [f"--cap-add=CAP_{cap}" for cap in DOCKER_CAPS]
    args += [
        "--network",
        "slirp4netns" if network else "none",
        "--env",
        f"PATH={CONTAINER_PATH}",
        "--env",
        "HOME=/root",
    ]
    for key, value in (env or {}).items():
        args += ["--env", f"{key}={value}"]
    for mount in mounts:
        args += ["--volume", f"{Path(mount.source).resolve()}:{mount.target}:{'ro' if mount.read_only else 'rw'}"]
    args += ["--rootfs", f"{root}:O", *argv]
    return _run(args, timeout_s, on_timeout=["podman", "kill", name])


def _check_mounts(mounts: Sequence[Mount], *, podman: bool) -> None:
    for mount in mounts:
        if not Path(mount.source).exists():
            raise ValueError(f"mount source {mount.source} does not exist")
        if not mount.target.startswith("/"):
            raise ValueError(f"mount target {mount.target!r} must be an absolute path")
        for part in (str(mount.source), mount.target):
            if podman and (":" in part or "," in part):
                raise ValueError(f"mount path {part!r} holds ':' or ',', which podman's --volume cannot take")


def host_pip_settings() -> tuple[list[Mount], dict[str, str]]:
    """Mounts and environment for `run_in_container` that let pip in the container reach what this machine's
    pip reaches (Gradescope's pip reaches PyPI directly; this machine goes through an HTTPS proxy whose CA only
    its own bundle holds): the CA bundle pip uses here bound over the rootfs's, /etc/pip.conf, every PIP_*
    variable, and the local folders they name (find-links, file:// indexes) bound read-only."""
    container_bundle = "/etc/ssl/certs/ca-certificates.crt"
    bundle = Path(os.environ.get("PIP_CERT") or container_bundle)
    mounts: list[Mount] = [Mount(bundle, container_bundle, read_only=True)] if bundle.is_file() else []
    env = {key: value for key, value in os.environ.items() if key.startswith("PIP_") and key != "PIP_CERT"}
    if mounts:
        env["PIP_CERT"] = container_bundle
    words = " ".join(env.values()).split()
    if Path("/etc/pip.conf").is_file():
        mounts.append(Mount(Path("/etc/pip.conf"), "/etc/pip.conf", read_only=True))
        words += Path("/etc/pip.conf").read_text().replace("=", " ").split()
    local = {w.removeprefix("file://") for w in words if w.startswith(("/", "file:///"))}
    mounts += [Mount(Path(p), p, read_only=True) for p in sorted(local) if Path(p).exists() and p != container_bundle]
    return mounts, env


# --- the cheap emulation (unshare + libseccomp + setpriv) ---------------------------------------------


FRESH_FOLDERS = ("/tmp", "/var/tmp", "/run", "/dev/shm")  # a tmpfs of its own in the cheap emulation, as in Docker


def run_emulated(
    argv: Sequence[str],
    *,
    mounts: Sequence[Mount] = (),
    env: Mapping[str, str] | None = None,
    timeout_s: float = 600,
    landlock: bool = True,
    hide: Sequence[str | Path] = (),
    workdir: str = "/",
) -> Run:
    """Run `argv` as root on this machine's own root filesystem, confined the way Docker's defaults confine a
    container where it matters for a sandbox: private mount, PID, IPC, UTS, network (loopback only, up) and
    cgroup namespaces; every host mount read-only, fresh tmpfs on /tmp, /var/tmp, /run, /dev/shm; Docker's
    read-only and masked /proc and /sys paths; /usr/bin/bwrap and every path in `hide` covered by /dev/null;
    `mounts` bound in (a target must exist on this machine or lie under one of the fresh tmpfs; this
    interpreter's prefix and this checkout, when under one, are bound back read-only where they are); a seccomp
    filter (libseccomp through pyseccomp, NO_NEW_PRIVS left off as Docker does) refusing new namespaces
    (clone's namespace flags, unshare, setns: EPERM; clone3: ENOSYS), mount calls, pivot_root, keyrings,
    io_uring, bpf, perf_event_open and userfaultfd, and with `landlock=False` answering ENOSYS to landlock_*
    (a kernel or Docker without Landlock); the capability bounding set cut to Docker's 14. Environment: PATH
    and HOME as in a container, plus `env`. After `timeout_s` the whole PID namespace is killed."""
    _check_mounts(mounts, podman=False)
    reason = missing_for_emulation()
    if reason:
        raise HarnessError(reason)
    own: list[Mount] = []
    for path in sorted({Path(sys.prefix).resolve(), Path(__file__).resolve().parents[1]}):
        covered = any(path.is_relative_to(folder) for folder in FRESH_FOLDERS)
        if covered and not any(path.is_relative_to(m.source) for m in own):
            own.append(Mount(path, str(path), read_only=True))
    spec = {
        "argv": list(argv),
        "mounts": [[str(Path(m.source).resolve()), m.target, m.read_only] for m in (*own, *mounts)],
        "env": {"PATH": CONTAINER_PATH, "HOME": "/root", **(env or {})},
        "landlock": landlock,
        "hide": ["/usr/bin/bwrap", *(str(p) for p in hide)],
        "workdir": workdir,
    }
    namespaces = ["--mount", "--pid", "--ipc", "--uts", "--net", "--cgroup", "--fork", "--kill-child", "--mount-proc"]
    launcher = [sys.executable, "-I", str(Path(__file__).resolve()), "--launch", json.dumps(spec)]
    return _run(["unshare", *namespaces, "--propagation", "private", *launcher], timeout_s, on_timeout=None)


def _run(args: Sequence[str], timeout_s: float, on_timeout: Sequence[str] | None) -> Run:
    started = time.monotonic()
    # A folder of its own as the working directory: podman's conmon writes a file "oom" into its working
    # directory when the container is OOM-killed, which would otherwise land in the caller's (the checkout).
    with tempfile.TemporaryDirectory(prefix="a2-container-cwd-") as cwd:
        proc = subprocess.Popen(
            list(args),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            start_new_session=True,
            cwd=cwd,
        )
        timed_out = False
        try:
            out, err = proc.communicate(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            timed_out = True
            if on_timeout:
                subprocess.run(list(on_timeout), capture_output=True, timeout=60, cwd=cwd)
            proc.kill()  # unshare --kill-child: its child, the namespace's init, dies with it, and so does the namespace
            out, err = proc.communicate()
    return Run(
        proc.returncode,
        out.decode(errors="replace"),
        err.decode(errors="replace"),
        time.monotonic() - started,
        timed_out,
    )


# The launcher: runs inside the new namespaces (as `python -I -S gradescope_container.py --launch SPEC`),
# sets up the mounts while it still has every capability, loads the filter, then execs setpriv, which cuts
# the bounding set and execs the command.

_EPERM_CALLS = (
    *("unshare", "setns", "mount", "umount", "umount2", "pivot_root"),
    *("fsopen", "fsconfig", "fsmount", "fspick", "open_tree", "move_mount", "mount_setattr"),
    *("keyctl", "add_key", "request_key", "io_uring_setup", "io_uring_enter", "io_uring_register"),
    *("bpf", "perf_event_open", "userfaultfd"),
)


def _launch(spec: dict[str, Any]) -> None:
    # What the launcher needs, before /tmp is covered: the sources, and the seccomp bindings (in a venv that
    # may itself live under /tmp, as a clone there does)
    fds = [os.open(src, os.O_PATH) for src, _, _ in spec["mounts"]]
    import pyseccomp

    _mount_setup(spec, fds)
    _loopback_up()
    os.chdir(spec["workdir"])
    _load_filter(pyseccomp, landlock=spec["landlock"])
    bounding = "-all," + ",".join(f"+{c.lower()}" for c in DOCKER_CAPS)
    setpriv = ["setpriv", "--inh-caps=-all", "--ambient-caps=-all", f"--bounding-set={bounding}", "--", *spec["argv"]]
    os.execve(shutil.which("setpriv") or "/usr/bin/setpriv", setpriv, spec["env"])


def _sh(*argv: str, pass_fds: Sequence[int] = ()) -> None:
    done = subprocess.run(list(argv), capture_output=True, text=True, pass_fds=pass_fds)
    if done.returncode != 0:
        raise HarnessError(f"{' '.join(argv)}: {done.stderr.strip()}")


def _mount_setup(spec: dict[str, Any], fds: list[int]) -> None:
    targets = []
    for line in Path("/proc/self/mountinfo").read_text().splitlines():
        target = line.split()[4].encode().decode("unicode_escape")
        if target != "/proc" and not target.startswith("/proc/"):  # /proc: unshare's fresh one, rw as in Docker
            targets.append(target)
    for target in targets:
        subprocess.run(["mount", "-o", "remount,bind,ro", target], capture_output=True)  # some (gone, masked) fail
    if subprocess.run(["touch", "/.a2-write-probe"], capture_output=True).returncode == 0:
        os.unlink("/.a2-write-probe")
        raise HarnessError("the host's root filesystem stayed writable inside the emulation")
    for folder in FRESH_FOLDERS:
        if os.path.isdir(folder):
            _sh(
                "mount",
                "-t",
                "tmpfs",
                "-o",
                f"mode={'755' if folder == '/run' else '1777'},nosuid,nodev",
                "tmpfs",
                folder,
            )
    for path in DOCKER_READONLY_PATHS:
        if os.path.exists(path):
            _sh("mount", "--bind", path, path)
            _sh("mount", "-o", "remount,bind,ro", path)
    for path in DOCKER_MASKED_PATHS:
        if os.path.isdir(path):
            _sh("mount", "-t", "tmpfs", "-o", "ro,size=0", "tmpfs", path)
        elif os.path.exists(path):
            _sh("mount", "--bind", "/dev/null", path)
    for fd, (_source, target, read_only) in zip(fds, spec["mounts"], strict=True):
        if not os.path.exists(target):
            if not any(target == f or target.startswith(f + "/") for f in FRESH_FOLDERS):
                raise HarnessError(
                    f"mount target {target} does not exist on this machine (only under {', '.join(FRESH_FOLDERS)} is it made)"
                )
            if stat.S_ISDIR(os.fstat(fd).st_mode):  # the source's path may be covered by now
                os.makedirs(target)
            else:
                os.makedirs(os.path.dirname(target), exist_ok=True)
                Path(target).touch()
        # By the fd, not by its path (which may be covered by now: `mount` would bind what is there instead),
        # with the mounts below it (the view's private entries of a checkout, tests/rungs.py). A bind starts
        # with its source's mount flags, read-only here since every host mount was made so.
        _sh("mount", "--no-canonicalize", "--rbind", f"/proc/self/fd/{fd}", target, pass_fds=[fd])
        _sh("mount", "-o", f"remount,bind,{'ro' if read_only else 'rw'}", target)
        os.close(fd)
    for path in spec["hide"]:  # after the binds: a bwrap inside one of them is hidden too
        if os.path.lexists(path):
            _sh("mount", "--bind", "/dev/null", os.path.realpath(path))


def _loopback_up() -> None:
    siocgifflags, siocsifflags, iff_up = 0x8913, 0x8914, 0x1
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
        request = struct.pack("16sH14x", b"lo", 0)
        flags = struct.unpack("16sH14x", fcntl.ioctl(sock, siocgifflags, request))[1]
        fcntl.ioctl(sock, siocsifflags, struct.pack("16sH14x", b"lo", flags | iff_up))


def _load_filter(seccomp: Any, *, landlock: bool) -> None:
    flt = seccomp.SyscallFilter(seccomp.ALLOW)
    if seccomp.system_arch() == seccomp.Arch.X86_64:  # Docker's profile covers the 32-bit ABIs too
        flt.add_arch(seccomp.Arch.X86)
        flt.add_arch(seccomp.Arch.X32)
    flt.set_attr(seccomp.Attr.CTL_NNP, 0)  # as Docker: no NO_NEW_PRIVS (the launcher is root with CAP_SYS_ADMIN)
    refused = [(name, errno.EPERM) for name in _EPERM_CALLS] + [("clone3", errno.ENOSYS)]
    if not landlock:
        refused += [(name, errno.ENOSYS) for name in _LANDLOCK_CALLS]
    for name, code in refused:
        flt.add_rule(seccomp.ERRNO(code), name)
    bit = 1
    while bit <= _CLONE_NS_MASK:  # clone with any namespace flag (x86's clone takes the flags first)
        if bit & _CLONE_NS_MASK:
            flt.add_rule(seccomp.ERRNO(errno.EPERM), "clone", seccomp.Arg(0, seccomp.MASKED_EQ, bit, bit))
        bit <<= 1
    flt.load()


# --- the probes of Docker's defaults, shared by the harness's tests and by anyone checking an emulation --

PROBE = r"""
import ctypes, errno, json, os, socket, subprocess, sys, threading
libc = ctypes.CDLL(None, use_errno=True)
def call(nr, *args):
    ctypes.set_errno(0)
    r = libc.syscall(ctypes.c_long(nr), *args)
    return r if r >= 0 else -ctypes.get_errno()
status = dict(line.split(":\t", 1) for line in open("/proc/self/status").read().splitlines() if ":\t" in line)
out = {k: status[k].strip() for k in ("CapInh", "CapPrm", "CapEff", "CapBnd", "CapAmb", "NoNewPrivs", "Seccomp")}
def run(argv):
    try:
        done = subprocess.run(argv, capture_output=True, text=True, timeout=30)
        return [done.returncode, (done.stdout + done.stderr).strip()[-200:]]
    except OSError as exc:
        return [None, f"{type(exc).__name__}: {exc}"]
out["unshare_U"] = run(["unshare", "-U", "true"])
out["unshare_m"] = run(["unshare", "-m", "true"])
out["bwrap"] = [run([p, "--ro-bind", "/", "/", "true"]) for p in sys.argv[1:]]
out["landlock_abi"] = call(444, None, ctypes.c_size_t(0), ctypes.c_uint32(1))
out["keyctl"] = call(250, ctypes.c_int(0), ctypes.c_int(-3), ctypes.c_int(0))
params = ctypes.create_string_buffer(120)
out["io_uring_setup"] = call(425, ctypes.c_uint(1), params)
out["unshare_newuser"] = call(272, ctypes.c_ulong(0x10000000))
out["clone3"] = call(435, None, ctypes.c_size_t(0))
threads = [threading.Thread(target=lambda: None) for _ in range(4)]
[t.start() for t in threads]; [t.join() for t in threads]
out["threads"] = True
server = socket.socket(); server.bind(("127.0.0.1", 0)); server.listen(1)
client = socket.create_connection(server.getsockname(), timeout=5); conn, _ = server.accept()
client.sendall(b"ping"); out["loopback"] = conn.recv(4).decode()
out["python"] = sys.version.split()[0]
out["uid"] = os.getuid()
print(json.dumps(out))
"""


def probe_answers(run: Run) -> dict[str, Any]:
    """The JSON a PROBE run printed (its last stdout line), or HarnessError with what it printed instead."""
    lines = run.stdout.strip().splitlines()
    try:
        return dict(json.loads(lines[-1]))
    except (IndexError, ValueError) as exc:
        raise HarnessError(
            f"the probe printed no JSON (exit {run.returncode}): {run.stdout[-500:]} {run.stderr[-1500:]}"
        ) from exc


if __name__ == "__main__" and sys.argv[1:2] == ["--launch"]:
    try:
        _launch(json.loads(sys.argv[2]))
    except HarnessError as exc:
        print(f"gradescope_container emulation: {exc}", file=sys.stderr)
        sys.exit(125)
