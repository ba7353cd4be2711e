"""One sandboxed process tree on this machine's rung: its folders, uid, cgroup, Landlock ruleset and pipes,
the jail that starts it, and its end. Both ways of running student code use it: a grading child
(`process.Child`, the harness child.py and its result channel) and a trusted tool's command on a
student's files (`command.run_command`: `otter run`, a lecture driver).

    with Launch(rung, limits, files) as launch:   # folders, uid, cgroup made; removed at the end
        proc = launch.start(argv, cpu_s)           # jail.py -> bwrap init or host launcher -> argv
        ...                                        # read launch.out_r / launch.result_r
        launch.end(proc)                           # everything it started killed and reaped

The child sees its files in `code` (read-only: the given files, child.py, jail.py, site/ of links to the
packages it may import) and works in `cwd`: inside bwrap its own size-capped tmpfs; on the host `work`, which
only a tool's command (`work_dirs`) may write in: on the host a folder lies on the machine's disk, whose total
no rung caps, so a grading child there creates no file anywhere (Landlock grants no write; seccomp-uid refuses
every write). What each stage of jail.py does with the setup is in jail.py's docstring.
"""

from __future__ import annotations

import functools
import json
import os
import shutil
import signal
import stat
import subprocess
import sys
import tempfile
import time
from collections.abc import Mapping
from pathlib import Path

from autograder.runtime.sandbox import allowlist, cgroup, isolation, ladder, syscalls, users
from autograder.runtime.sandbox.limits import Limits

CHILD_SOURCE = Path(__file__).with_name("child.py")

TERM_GRACE_S = 3.0  # after SIGTERM: time the launcher gets to end every process of the child
# Folders of the work folder made for the child beforehand, its own: on the host rungs a grading child creates
# none, and matplotlib will not import unless its config folder (MPLCONFIGDIR) exists and its mode lets the
# child write there (it only caches its font list there: the grader puts one in, `font_list`)
MPL_FOLDER = ".config/matplotlib"
PREMADE = ("tmp", ".config", MPL_FOLDER)  # each folder on the way made here: the umask would make it the grader's
# Run once per grader process by the grader's own interpreter (no student file involved): matplotlib's font list
# as a child's first import would make it, but of matplotlib's own fonts only, the ones every rung lets a child
# read (the host's font folders are outside the allow-list: a listed font there would fail to open when a lecture
# driver draws text). Put in each premade config folder, it spares a child on the host the scan and the warning
# "Could not save font_manager cache ... Read-only file system" that its refused write printed into the output.
FONT_LIST_SCRIPT = """
import os, sys
from matplotlib import font_manager as fm
own = os.path.join(os.path.dirname(os.path.realpath(fm.__file__)), "mpl-data", "fonts") + os.sep
manager = fm.fontManager
manager.ttflist = [f for f in manager.ttflist if os.path.realpath(f.fname).startswith(own)]
manager.afmlist = [f for f in manager.afmlist if os.path.realpath(f.fname).startswith(own)]
fm.json_dump(manager, os.path.join(sys.argv[1], f"fontlist-v{fm.FontManager.__version__}.json"))
"""

# The child's whole environment is `child_env`'s: nothing of the grader's reaches it (an index URL with a
# token, a cluster's address, the instructor's paths), but these names, which only the package's own tests
# set: a tag marking the processes a test started, and where the adversarial fixtures aim.
PASSED_ENV = ("A2_TEST_TAG", "A2_TEST_PORT", "A2_TEST_READ", "A2_TEST_OTHER_CLONE", "A2_TEST_FOLDERS")


def child_env(work: Path, extra: Mapping[str, str] | None = None) -> dict[str, str]:
    env = {
        "PATH": "/usr/local/bin:/usr/bin:/bin",
        "HOME": str(work),
        "PWD": str(work),  # its working folder (bubblewrap sets it too)
        "TMPDIR": str(work / "tmp"),
        "LANG": "C.UTF-8",
        "LC_ALL": "C.UTF-8",
        "PYTHONHASHSEED": "0",  # set iteration order, hence results, identical on every run
        "PYTHONNOUSERSITE": "1",
        "OMP_NUM_THREADS": "1",
        "OPENBLAS_NUM_THREADS": "1",
        "MKL_NUM_THREADS": "1",
        "MALLOC_ARENA_MAX": "2",  # glibc reserves 64 MB of address space per arena: keep RLIMIT_AS honest
        "MPLBACKEND": "Agg",
        "MPLCONFIGDIR": str(work / ".config" / "matplotlib"),
    }
    env.update({k: v for k, v in os.environ.items() if k in PASSED_ENV})
    env.update(extra or {})
    return env


@functools.cache
def font_list() -> tuple[str, bytes] | None:
    """(file name, content) of the font list a child finds in its matplotlib config folder (FONT_LIST_SCRIPT),
    made once per process; None where matplotlib is not installed or the list could not be made (a child then
    scans the fonts itself, as before)."""
    with tempfile.TemporaryDirectory(prefix="a2-fonts-") as folder:
        env = {
            "PATH": "/usr/bin:/bin",
            "HOME": folder,
            "MPLCONFIGDIR": folder,
            "MPLBACKEND": "Agg",
            "LC_ALL": "C.UTF-8",
        }
        try:
            done = subprocess.run(
                [sys.executable, "-I", "-c", FONT_LIST_SCRIPT, folder],
                cwd=folder,  # matplotlib reads a matplotlibrc in the working folder
                env=env,
                capture_output=True,
                timeout=120,
            )
        except (OSError, subprocess.TimeoutExpired):
            return None
        made = sorted(Path(folder).glob("fontlist-v*.json"))
        if done.returncode != 0 or len(made) != 1:
            return None
        return made[0].name, made[0].read_bytes()


def _parent(other_uid: bool) -> str | None:
    """Where a child's folders go: the temporary folder, unless a child running as another uid could not
    pass through a folder on the way to it (a pytest or user TMPDIR under a 0700 folder); then the first of
    /var/tmp and /tmp (world-writable, sticky: the folder made in it is the grader's, mode 0711)."""
    base = Path(tempfile.gettempdir()).resolve()
    if not other_uid or all(p.stat().st_mode & 0o001 for p in (base, *base.parents)):
        return None
    for candidate in ("/var/tmp", "/tmp"):
        info = os.stat(candidate)
        if info.st_mode & 0o1003 == 0o1003:
            return candidate
    raise users.SandboxError(f"no folder a sandbox uid can pass through to its own (TMPDIR {base} is private)")


def _made_below(dest: Path, rel: Path) -> bool:
    """Make `dest` (the caller's folder) and the folders `rel` below it, each one a real folder and never a
    link's target: False (nothing more made) where a name on the way is a link, a file or cannot be made."""
    dest.mkdir(parents=True, exist_ok=True)
    here = dest
    try:
        for part in rel.parts:
            here = here / part
            try:
                os.mkdir(here)
            except FileExistsError:
                pass
            if not stat.S_ISDIR(os.lstat(here).st_mode):
                return False
    except OSError:
        return False
    return True


class Launch:
    """One sandboxed process tree (module docstring). `files`: name -> host file, copied into its code folder;
    `tools`: distributions whose installed files it may also read and import (a tool such as otter-grader,
    with everything it requires); `sockets`: what socket() may make (`syscalls.SOCKETS`; "loopback" only
    on the bwrap rung, whose network namespace has nothing but its own loopback, then kept up);
    `work_dirs`: folders made in its work folder beforehand, which then lies on disk (bwrap binds it) so
    that what the command wrote can be collected (`collect`) before it is removed."""

    def __init__(
        self,
        rung: ladder.Rung,
        limits: Limits,
        files: Mapping[str, Path],
        tools: tuple[str, ...] = (),
        sockets: str = "pair",
        work_dirs: tuple[str, ...] | None = None,
    ):
        if sockets == "loopback" and rung.name != "bwrap":
            raise ladder.Refused(
                f"a network socket needs bubblewrap's network namespace, and this machine's rung is {rung.name!r}"
            )
        self.rung, self.limits, self.files = rung, limits, dict(files)
        self.tools, self.sockets, self.work_dirs = tools, sockets, work_dirs
        self.user: users.SandboxUser | None = None
        self.group: cgroup.Group | None = None
        self.base: Path | None = None
        self.fds: list[int] = []
        self.ended_by_jail = 0  # the byte after the wait status (jail.ENDED)
        self.left_running = 0  # processes the child's code started that were alive when it ended (killed)

    # -- folders, uid, cgroup ---------------------------------------------------------------
    def __enter__(self) -> Launch:
        try:
            self.user = users.SandboxUser() if self.rung.separate_uid else None
            self.base = Path(tempfile.mkdtemp(prefix=f"a2grade-{os.getpid()}-", dir=_parent(self.user is not None)))
            self._folders(self.base)
            if self.rung.groups is not None:
                self.group = self.rung.groups.make(self.limits.memory_mib * 2**20, self.limits.max_processes)
        except BaseException:
            self.__exit__(None, None, None)
            raise
        return self

    def __exit__(self, *exc: object) -> None:
        for fd in self.fds:
            os.close(fd)
        self.fds = []
        if self.group is not None:
            self.group.remove()
            self.group = None
        if self.user is not None:
            self.user.release()
            self.user = None
        if self.base is not None:
            users.remove_tree(self.base)
            self.base = None

    @property
    def notes(self) -> list[str]:
        return list(self.rung.notes) + [f"uid: {self.user.uid}" if self.user else "uid: the grader's own"]

    def _folders(self, base: Path) -> None:
        self.ro, self.work = base / "ro", base / "work"
        # `ro` is the grader's and readable by the child alone (its gid): the child's command line, which every
        # process without a PID namespace of its own can read, names the folder, and a neighbour graded at the
        # same time on seccomp-uid (file modes only) would otherwise read this student's files there
        # (modes set, not asked of mkdir: the grader's umask is 077 for the commands that handle grades)
        self.ro.mkdir()
        copies = {**self.files, "child.py": CHILD_SOURCE, "jail.py": isolation.JAIL_SOURCE}
        for name, source in copies.items():
            (self.ro / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(source, self.ro / name)
        site = self.ro / "site"
        site.mkdir()
        for name, dest in allowlist.site_links(allowlist.compute(self.tools)).items():
            os.symlink(dest, site / name)
        group = self.user.gid if self.user else os.getgid()
        for folder, dirs, names in os.walk(self.ro):
            for entry in (folder, *(os.path.join(folder, n) for n in (*dirs, *names))):
                if not os.path.islink(entry):
                    os.chown(entry, -1, group)
                    os.chmod(entry, 0o750 if os.path.isdir(entry) else 0o640)
        bwrap = self.rung.name == "bwrap"
        self.code = isolation.SANDBOX_CODE if bwrap else str(self.ro)
        self.cwd = isolation.SANDBOX_WORK if bwrap else str(self.work)
        if bwrap and self.work_dirs is None:
            return  # its work folder is a tmpfs of bubblewrap's
        owner = (self.user.uid, self.user.gid) if self.user else (os.getuid(), os.getgid())
        base.chmod(0o711)
        for path in (self.work, *(self.work / d for d in (*PREMADE, *(self.work_dirs or ())))):
            path.mkdir(parents=True, exist_ok=True)
            os.chown(path, *owner)
            path.chmod(0o700)
        fonts = font_list()
        if fonts is not None:
            (self.work / MPL_FOLDER / fonts[0]).write_bytes(fonts[1])
            (self.work / MPL_FOLDER / fonts[0]).chmod(0o644)

    def collect(self, dest: Path, max_bytes: int = 16 * 2**20) -> list[Path]:
        """Copy the regular files the command left in its work folder (links not followed, `max_bytes` in
        all) into `dest`, at the same relative paths; the paths copied. Below `dest` no link is followed
        (`_made_below`): a file whose way there holds one is not copied."""
        copied: list[Path] = []
        budget = max_bytes
        for folder, _, names in os.walk(self.work):
            for name in sorted(names):
                source = Path(folder, name)
                try:
                    info = source.lstat()
                except OSError:
                    continue
                if not stat.S_ISREG(info.st_mode) or info.st_size > budget:
                    continue
                rel = source.relative_to(self.work)
                target = dest / rel
                if not _made_below(dest, rel.parent):
                    continue
                fd = os.open(source, os.O_RDONLY | os.O_NOFOLLOW)
                with os.fdopen(fd, "rb") as handle:
                    data = handle.read(budget)
                out = os.open(target, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o666)
                with os.fdopen(out, "wb") as handle:
                    handle.write(data)
                budget -= info.st_size
                copied.append(target)
        return copied

    # -- starting ---------------------------------------------------------------------------
    def start(self, argv: list[str], cpu_s: float, env: Mapping[str, str] | None = None) -> subprocess.Popen:
        """Start jail.py on `argv` (paths as the child sees them); stdin is a pipe to it, stdout and stderr
        `out_r`, its result fd `result_r`, the status pipe `status_r`."""
        result_r, result_w = os.pipe()
        out_r, out_w = os.pipe()
        status_r, status_w = os.pipe()
        self.fds += [result_r, out_r, status_r]
        self.result_r, self.out_r, self.status_r = result_r, out_r, status_r
        passed = [result_w, status_w]
        ruleset = None
        try:
            if self.rung.landlock_abi:
                allow = allowlist.compute(self.tools)
                # a grading child writes nothing (as on seccomp-uid): its folder is on the machine's disk, where
                # no cap holds the total; a tool's command writes its work folder (`work_dirs`)
                writable = [str(self.work)] if self.work_dirs is not None else []
                ruleset = ladder.rules_for(
                    [*allow.read, str(self.ro), str(self.work)], writable, self.rung.landlock_abi, allow.listed
                )
                os.set_inheritable(ruleset.fileno(), True)
                passed.append(ruleset.fileno())
            setup = self._setup(
                [a.replace("{result_fd}", str(result_w)) for a in argv], result_w, status_w, cpu_s, ruleset
            )
            setup_fd = os.memfd_create("a2-jail-setup", 0)  # not close-on-exec: every stage of jail.py reads it
            self.fds.append(setup_fd)
            os.write(setup_fd, json.dumps(setup).encode("utf-8"))
            passed.append(setup_fd)
            return subprocess.Popen(
                [*isolation.jail_command(False), "--setup", str(setup_fd)],
                stdin=subprocess.PIPE,
                stdout=out_w,
                stderr=out_w,
                pass_fds=tuple(passed),
                cwd=str(self.base),
                env=child_env(Path(self.cwd), env),
                start_new_session=True,
            )
        finally:
            for fd in (result_w, out_w, status_w):
                os.close(fd)
            if ruleset is not None:
                ruleset.close()

    def _setup(self, argv: list[str], result_w: int, status_w: int, cpu_s: float, ruleset) -> dict:
        """jail.py's SETUP (its module docstring says what each stage does with it)."""
        rung, user = self.rung, self.user
        if user:
            nproc = self.limits.max_processes
        else:  # RLIMIT_NPROC counts every process of the grader's uid
            nproc = users._own_task_count() + self.limits.max_processes
        setup: dict = {
            "stage": "enter",
            "rung": "bwrap" if rung.name == "bwrap" else "host",
            "grader_pid": os.getpid(),
            "result_fd": result_w,
            "status_fd": status_w,
            "cgroup": [str(p) for p in self.group.procs] if self.group is not None else [],
            # the launcher's watchdog, where no cgroup caps the exercise's processes together
            "memory_bytes": self.limits.memory_mib * 2**20 if self.group is None else None,
            # a tool's command writes its work folder on the machine's disk, which no rung caps (`turns`: one
            # such command at a time): it is stopped before it leaves the grader less than this free there
            "disk_floor_bytes": self.limits.disk_floor_bytes if self.work_dirs is not None else None,
            "harness": {
                "uid": user.uid if user else None,
                "gid": user.gid if user else None,
                "cwd": self.cwd,
                "argv": argv,
                "landlock_fd": ruleset.fileno() if ruleset is not None else None,
                "seccomp": syscalls.program(rung.seccomp, self.sockets).hex() if rung.seccomp else "",
                "limits": {
                    "cpu_s": max(1, int(cpu_s + 0.999)),
                    "file_bytes": self.limits.output_bytes,
                    "open_files": self.limits.open_files,
                    "processes": nproc,
                    "memory_bytes": self.limits.memory_mib * 2**20,
                },
            },
        }
        if rung.name == "bwrap":
            assert rung.bwrap is not None
            owner = (user.uid, user.gid) if user else (os.getuid(), os.getgid())
            setup["prepare"] = isolation.namespace_setup(rung.bwrap, owner, tmpfs_work=self.work_dirs is None)
            setup["prepare"]["loopback_down"] &= self.sockets != "loopback"
            work = self.work if self.work_dirs is not None else None
            loopback = self.sockets == "loopback"
            setup["bwrap"] = [
                rung.bwrap["bwrap"],
                *isolation.bwrap_args(rung.bwrap, self.ro, self.tools, work, loopback),
                "--",
            ]
            setup["python"] = sys.executable
            setup["jail"] = f"{isolation.SANDBOX_CODE}/jail.py"
        return setup

    # -- ending -----------------------------------------------------------------------------
    def harness_status(self, status: int) -> int:
        """The harness's raw wait status as jail.py reported it on the status pipe (so the grader sees
        SIGXCPU, SIGXFSZ or an exit code whatever bwrap's own status is); `status` when none came."""
        try:
            os.set_blocking(self.status_r, False)
            raw = os.read(self.status_r, 9)
        except OSError:
            raw = b""
        if len(raw) == 9:
            self.ended_by_jail = raw[4]
            self.left_running = int.from_bytes(raw[5:9], "little")
        return int.from_bytes(raw[:4], "little") if len(raw) >= 4 else status

    def wait(self, proc: subprocess.Popen) -> tuple[bool, float]:
        """Reap the jail if it has exited (its status as the harness's, in proc.returncode); (exited, CPU s)."""
        try:
            pid, status, usage = os.wait4(proc.pid, os.WNOHANG)
        except ChildProcessError:
            return True, 0.0
        if pid == 0:
            return False, 0.0
        proc.returncode = os.waitstatus_to_exitcode(self.harness_status(status))
        return True, usage.ru_utime + usage.ru_stime

    def end(self, proc: subprocess.Popen) -> tuple[int, float]:
        """End the child: on the host rungs, ask the launcher (SIGTERM) to kill every process the child
        started (its descendants, orphans included) and wait for it; then kill the jail's process group
        (inside bwrap: so, by PR_SET_PDEATHSIG, the namespace's init, so everything in it), reap it, and as
        root kill every process left with the child's uid. (How many processes the child's code had left
        running, killed by the launcher or by uid; CPU seconds reaped.)"""
        cpu = 0.0
        if self.rung.name != "bwrap" and proc.returncode is None:
            try:
                os.kill(proc.pid, signal.SIGTERM)
                deadline = time.monotonic() + TERM_GRACE_S
                while time.monotonic() < deadline:
                    exited, used = self.wait(proc)
                    cpu += used
                    if exited:
                        break
                    time.sleep(0.01)
            except ProcessLookupError:
                pass
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
        if proc.returncode is None:
            try:
                _, status, usage = os.wait4(proc.pid, 0)
                proc.returncode = os.waitstatus_to_exitcode(self.harness_status(status))
                cpu += usage.ru_utime + usage.ru_stime
            except ChildProcessError:
                proc.returncode = -signal.SIGKILL
        if proc.stdin is not None:
            try:
                proc.stdin.close()
            except OSError:
                pass
        killed = users.kill_uid(self.user.uid) if self.user is not None else 0
        return self.left_running + killed, cpu

    def disk_stopped(self) -> bool:
        """Whether the launcher stopped a tool's command for the free space of its work folder's disk."""
        return self.ended_by_jail == 3  # jail.ENDED["disk"]

    def memory_stopped(self) -> bool:
        """Whether the exercise's memory cap ended it: the watchdog said so, or the cgroup killed for memory."""
        if self.ended_by_jail == 1:  # jail.ENDED["memory"]
            return True
        return self.group is not None and self.group.memory_events().get("oom_kill", 0) > 0
