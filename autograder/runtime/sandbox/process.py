"""One child process of an exercise: start it in its root (jail.py, then the harness child.py, as the
sandbox uid under resource limits), send it cases one at a time, read its MAC-checked result records
and its output, and stop it at a limit.

The rules (result channel, output, limits, threat model) are in `autograder.runtime.sandbox.runner`'s
docstring; `runner._Run` drives the children of one exercise.
"""

from __future__ import annotations

import json
import os
import secrets
import selectors
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from autograder.runtime.sandbox import allowlist, isolation, ladder, syscalls, users
from autograder.runtime.sandbox.limits import ChildReport, Limits
from autograder.runtime.sandbox.records import _describe_exit, _Run

CHILD_SOURCE = Path(__file__).with_name("child.py")

EXIT_GRACE_S = 2.0  # after the last record: time the child gets to exit by itself

TERM_GRACE_S = 3.0  # after SIGTERM: time the launcher gets to end every process of the child

READ_CHUNK_BYTES = 1 << 16

# The child's whole environment is _child_env's: nothing of the grader's reaches it (an index URL with a
# token, a cluster's address, the instructor's paths), but these names, which only the package's own tests
# set: a tag marking the processes a test started, and where the adversarial fixtures aim.
PASSED_ENV = ("A2_TEST_TAG", "A2_TEST_PORT", "A2_TEST_READ", "A2_TEST_OTHER_CLONE", "A2_TEST_FOLDERS")


def _child_env(work: Path) -> dict[str, str]:
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
    return env


class _Output:
    """Printed output of an exercise's children: the first `keep` bytes, the count of all of them."""

    def __init__(self, keep: int):
        self.keep = keep
        self.data = bytearray()
        self.total = 0
        self.public_bytes: int | None = None  # the count when the first hidden case was sent

    def feed(self, chunk: bytes) -> None:
        room = self.keep - len(self.data)
        if room > 0:
            self.data += chunk[:room]
        self.total += len(chunk)

    def text(self, upto: int, limit_chars: int) -> str:
        data = bytes(self.data[:upto])
        text = data.decode("utf-8", errors="replace")
        if len(text) > limit_chars or upto > len(data):
            text = text[:limit_chars] + f"\n... (output truncated; {upto} bytes in all)"
        return text


class _Child:
    """One child process: its folders, its uid, its cgroup, its pipes; `run` exchanges specs and records."""

    def __init__(
        self,
        student_file: Path,
        module_name: str,
        specs: list[dict],
        hidden_from: int,
        limits: Limits,
        report: ChildReport,
        output: _Output,
        rung: ladder.Rung,
    ):
        self.student_file, self.module_name = student_file, module_name
        self.specs, self.hidden_from, self.limits = specs, hidden_from, limits
        self.report, self.output, self.rung = report, output, rung
        self.user = users.SandboxUser() if rung.separate_uid else None
        self.notes = list(rung.notes) + [f"uid: {self.user.uid}" if self.user else "uid: the grader's own"]
        self.status_r = -1  # the read end of the status pipe of the child running now
        self.ended_by_jail = 0  # the byte after the wait status (jail.ENDED)

    def _folders(self, base: Path) -> tuple[Path, str, str, Path]:
        """The child's code folder (its file, child.py, jail.py, site/ of links to its packages; read-only
        for it), its paths as it sees them (code, work) and the work folder on the host (a tmpfs in bwrap)."""
        ro, work = base / "ro", base / "work"
        ro.mkdir(mode=0o755)
        target = ro / f"{self.module_name}.py"
        shutil.copyfile(self.student_file, target)
        shutil.copyfile(CHILD_SOURCE, ro / "child.py")
        shutil.copyfile(isolation.JAIL_SOURCE, ro / "jail.py")
        for path in (target, ro / "child.py", ro / "jail.py"):
            path.chmod(0o644)
        site = ro / "site"
        site.mkdir(mode=0o755)
        for name, dest in allowlist.site_links().items():
            os.symlink(dest, site / name)
        if self.rung.name == "bwrap":
            return ro, isolation.SANDBOX_CODE, isolation.SANDBOX_WORK, work
        (work / "tmp").mkdir(parents=True)
        owner = (self.user.uid, self.user.gid) if self.user else (os.getuid(), os.getgid())
        base.chmod(0o711)
        for path in (work, work / "tmp"):
            os.chown(path, *owner)
            path.chmod(0o700)
        return ro, str(ro), str(work), work

    def run(self, first: int, deadline: float, cpu_left_s: float, skipped_funcs: frozenset[str]) -> int | None:
        """Run cases from index `first`; returns the index of a case stopped at the per-case limit, if any."""
        base = Path(tempfile.mkdtemp(prefix=f"a2grade-{os.getpid()}-", dir=_parent(self.user is not None)))
        proc: subprocess.Popen | None = None
        fds: list[int] = []
        group = None
        ruleset = None
        rung = self.rung
        try:
            ro, code, cwd, work = self._folders(base)
            if rung.groups is not None:
                group = rung.groups.make(self.limits.memory_mib * 2**20, self.limits.max_processes)
            result_r, result_w = os.pipe()
            out_r, out_w = os.pipe()
            status_r, status_w = os.pipe()
            fds = [result_r, result_w, out_r, out_w, status_r, status_w]
            passed = [result_w, status_w]
            if rung.landlock_abi:
                allow = allowlist.compute()
                ruleset = ladder.rules_for([*allow.read, str(ro)], [str(work)], rung.landlock_abi, allow.listed)
                os.set_inheritable(ruleset.fileno(), True)
                passed.append(ruleset.fileno())
            key = secrets.token_bytes(32)

            def mark_public() -> None:
                if self.output.public_bytes is None:
                    self._drain(out_r)
                    self.output.public_bytes = self.output.total

            run = _Run(self.specs, key, self.hidden_from, self.report, first, mark_public, skipped_funcs)
            hello = {"key": key.hex(), "path": f"{code}/{self.module_name}.py", "name": self.module_name}
            setup = self._setup(code, cwd, result_w, status_w, cpu_left_s, ruleset, group, ro)
            proc = subprocess.Popen(
                [*isolation.jail_command(False), json.dumps(setup)],
                stdin=subprocess.PIPE,
                stdout=out_w,
                stderr=out_w,
                pass_fds=tuple(passed),
                cwd=str(base),
                env=_child_env(Path(cwd)),
                start_new_session=True,
            )
            for fd in (result_w, out_w, status_w):
                os.close(fd)
                fds.remove(fd)
            if ruleset is not None:
                ruleset.close()
                ruleset = None
            self.status_r = status_r
            stopped = self._pump(proc, run, hello, result_r, out_r, deadline)
            self.report.survivors_killed += self._reap(proc)
            self._drain(out_r)
            if group is not None and self.report.ended in ("signal", "exited", "timeout", "cpu"):
                if group.memory_events().get("oom_kill", 0):  # the cgroup's cap, not a crash
                    self._stop("memory", self._memory_detail())
            return stopped
        finally:
            if proc is not None and proc.returncode is None:
                self._reap(proc)
            for fd in fds:
                os.close(fd)
            self.status_r = -1
            if ruleset is not None:
                ruleset.close()
            if group is not None:
                group.remove()
            if self.user is not None:
                self.user.release()
            users.remove_tree(base)

    def _setup(
        self, code: str, cwd: str, result_w: int, status_w: int, cpu_left_s: float, ruleset, group, ro: Path
    ) -> dict:
        """jail.py's SETUP (its module docstring says what each stage does with it)."""
        rung = self.rung
        if self.user:
            nproc = self.limits.max_processes
        else:  # RLIMIT_NPROC counts every process of the grader's uid
            nproc = users._own_task_count() + self.limits.max_processes
        setup: dict = {
            "stage": "enter",
            "rung": "bwrap" if rung.name == "bwrap" else "host",
            "grader_pid": os.getpid(),
            "result_fd": result_w,
            "status_fd": status_w,
            "cgroup": [str(p) for p in group.procs] if group is not None else [],
            # the launcher's watchdog, where no cgroup caps the exercise's processes together
            "memory_bytes": self.limits.memory_mib * 2**20 if group is None else None,
            "harness": {
                "uid": self.user.uid if self.user else None,
                "gid": self.user.gid if self.user else None,
                "cwd": cwd,
                "argv": [sys.executable, "-S", "-s", "-B", "-u", f"{code}/child.py", str(result_w)],
                "landlock_fd": ruleset.fileno() if ruleset is not None else None,
                "seccomp": syscalls.program(rung.seccomp).hex() if rung.seccomp else "",
                "limits": {
                    "cpu_s": max(1, int(cpu_left_s + 0.999)),
                    "file_bytes": self.limits.output_bytes,
                    "open_files": self.limits.open_files,
                    "processes": nproc,
                    "memory_bytes": self.limits.memory_mib * 2**20,
                },
            },
        }
        if rung.name == "bwrap":
            assert rung.bwrap is not None
            owner = (self.user.uid, self.user.gid) if self.user else (os.getuid(), os.getgid())
            setup["prepare"] = isolation.namespace_setup(rung.bwrap, owner)
            setup["bwrap"] = [rung.bwrap["bwrap"], *isolation.bwrap_args(rung.bwrap, ro), "--"]
            setup["python"] = sys.executable
            setup["jail"] = f"{isolation.SANDBOX_CODE}/jail.py"
        return setup

    def _memory_detail(self) -> str:
        return f"the memory limit ({self.limits.memory_mib} MiB for all the processes of the exercise) was exceeded"

    def _drain(self, out_r: int) -> bool:
        """Read whatever printed output is waiting in the pipe, without blocking; False at its end."""
        while True:
            try:
                chunk = os.read(out_r, READ_CHUNK_BYTES)
            except BlockingIOError:
                return True
            except OSError:
                return False
            if not chunk:
                return False
            self.output.feed(chunk)

    def _stop(self, ended: str, detail: str) -> None:
        self.report.ended, self.report.detail = ended, detail

    def _pump(
        self, proc: subprocess.Popen, run: _Run, hello: dict, result_r: int, out_r: int, deadline: float
    ) -> int | None:
        """Exchange specs and records until the child is done, dies, or a limit is hit.

        `hello` (the key and the file) is sent once jail.py's SETUP line has arrived: the harness
        waits for it, so no student code runs before that line, and none can forge it."""
        report, limits = self.report, self.limits
        assert proc.stdin is not None
        stdin_fd = proc.stdin.fileno()
        for fd in (stdin_fd, result_r, out_r):
            os.set_blocking(fd, False)
        selector = selectors.DefaultSelector()
        selector.register(result_r, selectors.EVENT_READ)
        selector.register(out_r, selectors.EVENT_READ)
        buffer = bytearray()
        record_limit = limits.record_bytes + 65  # the MAC (64 hex digits) and its space
        skipping = False  # inside a record longer than record_limit: dropped up to its newline
        setup_seen = False
        stdin_open = True
        exit_deadline: float | None = None
        exited = eof = False
        while True:
            now = time.monotonic()
            if exited and (eof or not _readable(result_r)):
                break
            if now >= deadline:
                self._stop("timeout", f"the time limit ({limits.timeout_s:g} s wall clock) was exceeded")
                return None
            waiting = run.outstanding()
            if waiting is not None and limits.case_timeout_s is not None and now - run.sent_at >= limits.case_timeout_s:
                report.refused[self.specs[waiting]["id"]] = (
                    f"stopped after {limits.case_timeout_s:g} s (the per-case "
                    "time limit); the other cases ran in a fresh process"
                )
                return waiting
            if exit_deadline is not None and now >= exit_deadline:
                return None  # every record is in; the child did not exit by itself and is killed by _reap
            if stdin_open and run.pending:
                if stdin_fd not in selector.get_map():
                    selector.register(stdin_fd, selectors.EVENT_WRITE)
            elif stdin_fd in selector.get_map():
                selector.unregister(stdin_fd)
            for key, _ in selector.select(timeout=min(0.05, max(0.0, deadline - now))):
                if key.fd == out_r:
                    if not self._drain(out_r):
                        selector.unregister(out_r)
                    if self.output.total > limits.output_bytes:
                        self._stop(
                            "output",
                            f"the output limit ({limits.output_bytes // 2**20} MiB for printed "
                            "output and files) was exceeded",
                        )
                        return None
                elif key.fd == result_r and not eof:
                    try:
                        chunk = os.read(result_r, READ_CHUNK_BYTES)
                    except BlockingIOError:
                        continue
                    if not chunk:
                        eof = True
                        selector.unregister(result_r)
                        continue
                    report.result_bytes += len(chunk)
                    if report.result_bytes > limits.result_bytes:
                        self._stop("result_size", f"the results were larger than {limits.result_bytes // 2**20} MiB")
                        return None
                    if skipping:
                        end = chunk.find(b"\n")
                        if end < 0:
                            continue
                        chunk, skipping = chunk[end + 1 :], False
                        run.refuse_oversized(limits.record_bytes)
                    buffer += chunk
                    if b"\n" not in chunk:
                        if len(buffer) > record_limit:
                            buffer.clear()
                            skipping = True
                        continue
                    lines = buffer.split(b"\n")
                    buffer = bytearray(lines.pop())
                    if len(buffer) > record_limit:
                        buffer.clear()
                        skipping = True
                    for line in lines:
                        if len(line) > record_limit:
                            run.refuse_oversized(limits.record_bytes)
                            continue
                        if not setup_seen:
                            self.notes += _setup_notes(line)
                            setup_seen = True
                            run.queue(hello)
                            continue
                        run.record(line)
                    if report.bad_records > limits.junk_lines:
                        self._stop(
                            "junk",
                            f"more than {limits.junk_lines} lines that are not result records were "
                            "written to the result channel",
                        )
                        return None
                elif key.fd == stdin_fd:
                    try:
                        written = os.write(stdin_fd, run.pending)
                        del run.pending[:written]
                    except BlockingIOError:
                        pass
                    except OSError:
                        stdin_open = False
                        run.pending.clear()
                        selector.unregister(stdin_fd)
            if run.ended_input and not run.pending and exit_deadline is None:
                exit_deadline = time.monotonic() + EXIT_GRACE_S
            if not exited and self._wait(proc):
                exited = True
        if not setup_seen:
            raise users.SandboxError(
                f"the sandbox launcher ended (status {proc.returncode}) before setting up the child: "
                f"{self.output.text(self.output.total, 2000)}"
            )
        if run.next_seq < len(run.specs) or run.imported is None:
            if self.ended_by_jail == 1:  # jail.ENDED["memory"]: the watchdog ended it
                self._stop("memory", self._memory_detail())
            else:
                self._stop(*_describe_exit(report.returncode or 0, report.cpu_s, limits))
        return None

    def _wait(self, proc: subprocess.Popen) -> bool:
        """Reap the child if it has exited (recording status and CPU time); True once it has."""
        try:
            pid, status, usage = os.wait4(proc.pid, os.WNOHANG)
        except ChildProcessError:
            return True
        if pid == 0:
            return False
        proc.returncode = os.waitstatus_to_exitcode(self._harness_status(status))
        self.report.returncode = proc.returncode
        self.report.cpu_s += usage.ru_utime + usage.ru_stime
        return True

    def _harness_status(self, status: int) -> int:
        """The harness's raw wait status as jail.py reported it on the status pipe (so the grader sees
        SIGXCPU, SIGXFSZ or an exit code whatever bwrap's own status is); `status` when none came."""
        try:
            os.set_blocking(self.status_r, False)
            raw = os.read(self.status_r, 5)
        except OSError:
            raw = b""
        if len(raw) == 5:
            self.ended_by_jail = raw[4]
        return int.from_bytes(raw[:4], "little") if len(raw) >= 4 else status

    def _reap(self, proc: subprocess.Popen) -> int:
        """End the child: on the host rungs, ask the launcher (SIGTERM) to kill every process the child
        started (its descendants, orphans included) and wait for it; then kill the jail's process group
        (inside bwrap: so, by PR_SET_PDEATHSIG, the namespace's init, so everything in it), reap it, and
        as root kill every process left with the child's uid; returns how many were left."""
        if self.rung.name != "bwrap" and proc.returncode is None:
            try:
                os.kill(proc.pid, signal.SIGTERM)
                deadline = time.monotonic() + TERM_GRACE_S
                while time.monotonic() < deadline and not self._wait(proc):
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
                proc.returncode = os.waitstatus_to_exitcode(status)
                self.report.cpu_s += usage.ru_utime + usage.ru_stime
            except ChildProcessError:
                proc.returncode = -signal.SIGKILL
        if proc.stdin is not None:
            try:
                proc.stdin.close()
            except OSError:
                pass
        return users.kill_uid(self.user.uid) if self.user is not None else 0


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


def _setup_notes(line: bytes | bytearray) -> list[str]:
    """jail.py's first line on the result channel, SETUP {"ok": true, "notes": [...]}: its notes."""
    try:
        data = json.loads(line[len(b"SETUP ") :]) if line.startswith(b"SETUP ") else {}
        if data.get("ok") is True:
            return [str(n) for n in data.get("notes", [])]
    except (ValueError, TypeError, AttributeError):
        data = {}
    raise users.SandboxError(f"the sandbox could not be set up: {data.get('notes') or line[:500]!r}")


def _readable(fd: int) -> bool:
    selector = selectors.DefaultSelector()
    selector.register(fd, selectors.EVENT_READ)
    try:
        return bool(selector.select(timeout=0))
    finally:
        selector.close()
