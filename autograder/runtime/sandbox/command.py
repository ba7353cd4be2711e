"""Run a trusted tool's command on a student's files inside the sandbox: the way every route other than the
native grader runs student code (`otter run` on a notebook for otter-grade, a lecture driver on a
student's folder).

The command runs on this machine's rung (`ladder.current`: the same layers and the same refusal as the
grader's children), in a `Launch`: as a sandbox uid where the grader is root, reading only the allow-list
plus the tool's own distributions, writing only its work folder (on disk, so that its output files can be
collected afterwards: `collect`), with its processes ended when it ends (or at `timeout_s`), its memory
capped (`memory_mib` for all of them), stopped before that disk has less than `Limits.disk_floor_bytes` free,
one command at a time on the machine (`turns`), and nothing of the grader's environment but what `env` gives.
Unlike the grader's children it gets no result channel: what the tool prints and the files it writes
are all it returns, and they are the student's to shape: a route whose checks run beside the student's
code (Otter's, nbgrader's) is only as sound as that (docs/instructors_nbgrader_otter.md).

    run = run_command(["{python}", "-m", "otter", "run", ...], {"nb.ipynb": path}, collect=out, ...)

Placeholders in `argv` and `env` values: {python} (this interpreter), {code} (the read-only folder holding
`files` and site/, the links to the packages it may import), {work} (its writable work folder).
"""

from __future__ import annotations

import os
import selectors
import sys
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from autograder.runtime.sandbox import ladder, turns
from autograder.runtime.sandbox.launch import Launch
from autograder.runtime.sandbox.limits import Limits

READ_CHUNK_BYTES = 1 << 16


@dataclass
class CommandRun:
    returncode: int | None  # the command's exit status (negative: the signal that ended it); None if stopped
    ended: str  # finished | timeout | memory | disk | output | refused
    output: str  # what it printed (stdout and stderr), at most `kept_bytes`
    wall_s: float
    notes: list[str] = field(default_factory=list)  # the rung and layers it ran under
    collected: list[Path] = field(default_factory=list)  # the files copied out of its work folder


def run_command(
    argv: list[str],
    files: Mapping[str, Path],
    collect: Path | None = None,
    *,
    timeout_s: float,
    memory_mib: int,
    tools: tuple[str, ...] = (),
    sockets: str = "pair",
    env: Mapping[str, str] | None = None,
    work_dirs: tuple[str, ...] = (),
    output_bytes: int = 16 * 2**20,
    kept_bytes: int = 256 * 2**10,
    disk_floor_bytes: int = Limits.disk_floor_bytes,
) -> CommandRun:
    """Run `argv` on `files` in the sandbox (module docstring); raises ladder.Refused (before anything runs)
    where no isolation works and --unsafe-no-sandbox was not given, or where `sockets` asks for what this
    machine's rung cannot confine ("loopback" needs bubblewrap's network namespace)."""
    rung = ladder.current()
    limits = Limits(
        timeout_s=timeout_s,
        cpu_s=timeout_s,
        memory_mib=memory_mib,
        output_bytes=output_bytes,
        max_processes=256,
        disk_floor_bytes=disk_floor_bytes,
    )
    with turns.turn(rung, writes_disk=True), Launch(rung, limits, files, tools, sockets, work_dirs) as launch:
        start = time.monotonic()  # its time limit starts once it is its turn (`turns`)
        values = {"python": sys.executable, "code": launch.code, "work": launch.cwd}
        filled = [a.format(**values) for a in argv]
        extra = {k: v.format(**values) for k, v in (env or {}).items()}
        proc = launch.start(filled, timeout_s, extra)
        assert proc.stdin is not None
        proc.stdin.close()
        output = bytearray()
        total = 0
        ended = "finished"
        selector = selectors.DefaultSelector()
        for fd in (launch.out_r, launch.result_r):
            os.set_blocking(fd, False)
            selector.register(fd, selectors.EVENT_READ)
        deadline = start + timeout_s
        exited = False
        try:
            while selector.get_map():
                if time.monotonic() >= deadline:
                    ended = "timeout"
                    break
                for key, _ in selector.select(timeout=0.05):
                    try:
                        chunk = os.read(key.fd, READ_CHUNK_BYTES)
                    except BlockingIOError:
                        continue
                    if not chunk:
                        selector.unregister(key.fd)
                        continue
                    if key.fd == launch.out_r:
                        total += len(chunk)
                        output += chunk[: max(0, kept_bytes - len(output))]
                if total > output_bytes:
                    ended = "output"
                    break
                if not exited:
                    exited = launch.wait(proc)[0]
        finally:
            selector.close()
            launch.end(proc)
        if ended == "finished" and launch.memory_stopped():
            ended = "memory"
        if ended == "finished" and launch.disk_stopped():
            ended = "disk"
        collected = launch.collect(collect) if collect is not None else []
        text = output.decode("utf-8", errors="replace")
        if total > len(output):
            text += f"\n... (output cut; {total} bytes in all)"
        return CommandRun(
            proc.returncode if ended == "finished" else None,
            ended,
            text,
            time.monotonic() - start,
            launch.notes,
            collected,
        )
