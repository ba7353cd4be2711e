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
import subprocess
import sys
import time
from pathlib import Path

from autograder.runtime.sandbox import ladder, users
from autograder.runtime.sandbox.launch import Launch
from autograder.runtime.sandbox.limits import ChildReport, Limits
from autograder.runtime.sandbox.records import _describe_exit, _Run

EXIT_GRACE_S = 2.0  # after the last record: time the child gets to exit by itself
# How often the exercise's cgroup is asked whether the kernel killed one of its processes for memory: the cap
# ends the whole exercise at its first out-of-memory kill, as the watchdog (no cgroup) ends it at the cap, so a
# process the kernel did not pick (the harness, sleeping) cannot wait out the time limit.
OOM_CHECK_S = 0.1

READ_CHUNK_BYTES = 1 << 16


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
        output: _Output,
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
                    self._drain(launch.out_r)
                    self.output.public_bytes = self.output.total

            run = _Run(self.specs, key, self.hidden_from, self.report, first, mark_public, skipped_funcs)
            hello = {"key": key.hex(), "path": f"{launch.code}/{self.module_name}.py", "name": self.module_name}
            argv = [sys.executable, "-S", "-s", "-B", "-u", f"{launch.code}/child.py", "{result_fd}"]
            proc = launch.start(argv, cpu_left_s)
            try:
                stopped = self._pump(proc, run, hello, launch.result_r, launch.out_r, deadline)
            finally:
                survivors, cpu = launch.end(proc)
                self.report.survivors_killed += survivors
                self.report.cpu_s += cpu
            self._drain(launch.out_r)
            if self.report.ended in ("signal", "exited", "timeout", "cpu") and launch.memory_stopped():
                self._stop("memory", self._memory_detail())
            return stopped

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
        next_oom_check = 0.0
        while True:
            now = time.monotonic()
            if exited and (eof or not _readable(result_r)):
                break
            if now >= deadline:
                self._stop("timeout", f"the time limit ({limits.timeout_s:g} s wall clock) was exceeded")
                return None
            if now >= next_oom_check:
                next_oom_check = now + OOM_CHECK_S
                if self.launch.memory_stopped():
                    self._stop("memory", self._memory_detail())
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
            if self.launch.ended_by_jail == 1:  # jail.ENDED["memory"]: the watchdog ended it
                self._stop("memory", self._memory_detail())
            else:
                self._stop(*_describe_exit(report.returncode or 0, report.cpu_s, limits))
        return None

    def _wait(self, proc: subprocess.Popen) -> bool:
        """Reap the child if it has exited (recording status and CPU time); True once it has."""
        exited, cpu = self.launch.wait(proc)
        if exited and proc.returncode is not None:
            self.report.returncode = proc.returncode
        self.report.cpu_s += cpu
        return exited


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
