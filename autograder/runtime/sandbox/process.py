"""One child process of an exercise: start it in its root (jail.py, then the harness child.py, as the
sandbox uid under resource limits), send it cases one at a time, read its MAC-checked result records
and its output, and stop it at a limit.

The rules (result channel, output, limits, threat model) are in `autograder.runtime.sandbox.runner`'s
docstring; `runner._run` drives the children of one exercise.
"""

from __future__ import annotations

import json
import os
import secrets
import selectors
import subprocess
import sys
import time
from pathlib import Path

from autograder.runtime.sandbox import ladder, users
from autograder.runtime.sandbox.launch import Launch
from autograder.runtime.sandbox.limits import ChildReport, Limits
from autograder.runtime.sandbox.records import Channel, RecordLines, describe_exit

EXIT_GRACE_S = 2.0  # after the last record: time the child gets to exit by itself
# How often the exercise's cgroup is asked whether the kernel killed one of its processes for memory: the cap
# ends the whole exercise at its first out-of-memory kill, as the watchdog (no cgroup) ends it at the cap, so a
# process the kernel did not pick (the harness, sleeping) cannot wait out the time limit.
OOM_CHECK_S = 0.1

READ_CHUNK_BYTES = 1 << 16


class Output:
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


class Child:
    """One grading child: the harness child.py on the student's file in a `Launch`; `run` exchanges call
    specs and result records with it."""

    def __init__(
        self,
        student_file: Path,
        module_name: str,
        specs: list[dict],
        hidden_from: int,
        limits: Limits,
        report: ChildReport,
        output: Output,
        rung: ladder.Rung,
    ):
        self.student_file, self.module_name = student_file, module_name
        self.specs, self.hidden_from, self.limits = specs, hidden_from, limits
        self.report, self.output, self.rung = report, output, rung
        self.notes: list[str] = []

    def run(self, first: int, deadline: float, cpu_left_s: float, skipped_funcs: frozenset[str]) -> int | None:
        """Run cases from index `first`; returns the index of a case stopped at the per-case limit, if any."""
        with Launch(self.rung, self.limits, {f"{self.module_name}.py": self.student_file}) as launch:
            self.launch = launch
            self.notes = launch.notes
            key = secrets.token_bytes(32)

            def mark_public() -> None:
                if self.output.public_bytes is None:
                    self.drain(launch.out_r)
                    self.output.public_bytes = self.output.total

            run = Channel(self.specs, key, self.hidden_from, self.report, first, mark_public, skipped_funcs)
            hello = {"key": key.hex(), "path": f"{launch.code}/{self.module_name}.py", "name": self.module_name}
            argv = [sys.executable, "-S", "-s", "-B", "-u", f"{launch.code}/child.py", "{result_fd}"]
            proc = launch.start(argv, cpu_left_s)
            try:
                stopped = self._pump(proc, run, hello, deadline)
            finally:
                survivors, cpu = launch.end(proc)
                self.report.survivors_killed += survivors
                self.report.cpu_s += cpu
            self.drain(launch.out_r)
            if self.report.ended in ("signal", "exited", "timeout", "cpu") and launch.memory_stopped():
                self.stop("memory", self.memory_detail())
            return stopped

    def memory_detail(self) -> str:
        return f"the memory limit ({self.limits.memory_mib} MiB for all the processes of the exercise) was exceeded"

    def drain(self, out_r: int) -> bool:
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

    def stop(self, ended: str, detail: str) -> None:
        self.report.ended, self.report.detail = ended, detail

    def _pump(self, proc: subprocess.Popen, run: Channel, hello: dict, deadline: float) -> int | None:
        """Exchange specs and records until the child is done, dies, or a limit is hit; returns the index of
        a case stopped at the per-case limit, if any.

        `hello` (the key and the file) is sent once jail.py's SETUP line has arrived: the harness
        waits for it, so no student code runs before that line, and none can forge it."""
        pump = _Pump(self, proc, run, hello)
        try:
            pump.loop(deadline)
        except _Stopped as stopped:
            return stopped.case
        finally:
            pump.selector.close()
        if not pump.setup_seen:
            raise users.SandboxError(
                f"the sandbox launcher ended (status {proc.returncode}) before setting up the child: "
                f"{self.output.text(self.output.total, 2000)}"
            )
        if self.launch.ended_by_jail != 1 and run.imported is False:
            return None  # the harness reported the import failure and ended: no case was due, nothing stopped it
        if run.next_seq < len(run.specs) or run.imported is None:
            if self.launch.ended_by_jail == 1:  # jail.ENDED["memory"]: the watchdog ended it
                self.stop("memory", self.memory_detail())
            else:
                self.stop(*describe_exit(self.report.returncode or 0, self.report.cpu_s, self.limits))
        return None

    def poll_exit(self, proc: subprocess.Popen) -> bool:
        """Reap the child if it has exited (recording status and CPU time); True once it has."""
        exited, cpu = self.launch.wait(proc)
        if exited and proc.returncode is not None:
            self.report.returncode = proc.returncode
        self.report.cpu_s += cpu
        return exited


class _Stopped(Exception):
    """The exchange ended before the child did (a limit, or every record in and the child not exiting):
    `case` is the index of a case stopped at the per-case limit, if any."""

    def __init__(self, case: int | None = None):
        super().__init__(case)
        self.case = case


class _Pump:
    """The exchange with one running child: the loop waits on its three pipes (printed output, result
    records, call specs) and checks the limits between waits; each method handles one of them."""

    def __init__(self, child: Child, proc: subprocess.Popen, run: Channel, hello: dict):
        self.child, self.proc, self.run, self.hello = child, proc, run, hello
        self.limits, self.report = child.limits, child.report
        self.result_r, self.out_r = child.launch.result_r, child.launch.out_r
        assert proc.stdin is not None
        self.stdin_fd = proc.stdin.fileno()
        for fd in (self.stdin_fd, self.result_r, self.out_r):
            os.set_blocking(fd, False)
        self.selector = selectors.DefaultSelector()
        self.selector.register(self.result_r, selectors.EVENT_READ)
        self.selector.register(self.out_r, selectors.EVENT_READ)
        self.lines = RecordLines(self.limits.record_bytes + 65)  # the MAC (64 hex digits) and its space
        self.setup_seen = False
        self.stdin_open = True
        self.exit_deadline: float | None = None
        self.exited = self.eof = False
        self.next_oom_check = 0.0

    def loop(self, deadline: float) -> None:
        """Until the child has exited and its result channel is read to the end; raises _Stopped at a limit."""
        while not (self.exited and (self.eof or not _readable(self.result_r))):
            now = time.monotonic()
            self.check_limits(now, deadline)
            self.watch_stdin()
            for key, _ in self.selector.select(timeout=min(0.05, max(0.0, deadline - now))):
                if key.fd == self.out_r:
                    self.read_output()
                elif key.fd == self.result_r and not self.eof:
                    self.read_records()
                elif key.fd == self.stdin_fd:
                    self.write_specs()
            if self.run.ended_input and not self.run.pending and self.exit_deadline is None:
                self.exit_deadline = time.monotonic() + EXIT_GRACE_S
            if not self.exited and self.child.poll_exit(self.proc):
                self.exited = True

    def check_limits(self, now: float, deadline: float) -> None:
        """The time limit, the memory cap, the per-case limit and the exit grace, in that order."""
        limits, run = self.limits, self.run
        if now >= deadline:
            self.child.stop("timeout", f"the time limit ({limits.timeout_s:g} s wall clock) was exceeded")
            raise _Stopped
        if now >= self.next_oom_check:
            self.next_oom_check = now + OOM_CHECK_S
            if self.child.launch.memory_stopped():
                self.child.stop("memory", self.child.memory_detail())
                raise _Stopped
        waiting = run.outstanding()
        if waiting is not None and limits.case_timeout_s is not None and now - run.sent_at >= limits.case_timeout_s:
            self.report.refused[run.specs[waiting]["id"]] = (
                f"stopped after {limits.case_timeout_s:g} s (the per-case "
                "time limit); the other cases ran in a fresh process"
            )
            raise _Stopped(waiting)
        if self.exit_deadline is not None and now >= self.exit_deadline:
            raise _Stopped  # every record is in; the child did not exit by itself and Launch.end kills it

    def watch_stdin(self) -> None:
        """Wait for the child's stdin to take specs only while some are pending."""
        registered = self.stdin_fd in self.selector.get_map()
        if self.stdin_open and self.run.pending:
            if not registered:
                self.selector.register(self.stdin_fd, selectors.EVENT_WRITE)
        elif registered:
            self.selector.unregister(self.stdin_fd)

    def read_output(self) -> None:
        """The printed output waiting in its pipe, against the output limit."""
        if not self.child.drain(self.out_r):
            self.selector.unregister(self.out_r)
        if self.child.output.total > self.limits.output_bytes:
            self.child.stop(
                "output",
                f"the output limit ({self.limits.output_bytes // 2**20} MiB for printed output and files) was exceeded",
            )
            raise _Stopped

    def read_records(self) -> None:
        """Result-channel bytes: jail.py's SETUP line first (then the hello is queued), then records, each
        within the record limit; the channel's size and its junk lines against their limits."""
        limits, report, run = self.limits, self.report, self.run
        try:
            chunk = os.read(self.result_r, READ_CHUNK_BYTES)
        except BlockingIOError:
            return
        if not chunk:
            self.eof = True
            self.selector.unregister(self.result_r)
            return
        report.result_bytes += len(chunk)
        if report.result_bytes > limits.result_bytes:
            self.child.stop("result_size", f"the results were larger than {limits.result_bytes // 2**20} MiB")
            raise _Stopped
        for line in self.lines.feed(chunk):
            if line is None:
                run.refuse_oversized(limits.record_bytes)
            elif not self.setup_seen:
                self.child.notes += _setup_notes(line)
                self.setup_seen = True
                run.queue(self.hello)
            else:
                run.record(line)
        if report.bad_records > limits.junk_lines:  # after every read, whatever lines it completed
            self.child.stop(
                "junk",
                f"more than {limits.junk_lines} lines that are not result records were written to the result channel",
            )
            raise _Stopped

    def write_specs(self) -> None:
        """As much of the pending call specs as the child's stdin takes; a closed stdin drops them."""
        try:
            written = os.write(self.stdin_fd, self.run.pending)
            del self.run.pending[:written]
        except BlockingIOError:
            pass
        except OSError:
            self.stdin_open = False
            self.run.pending.clear()
            self.selector.unregister(self.stdin_fd)


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
