"""Children graded side by side only where the kernel keeps them apart; elsewhere one at a time per machine.

Two children running at once share the machine's CPU and memory. Each exercise's cgroup (`cgroup`) caps what
its processes hold, kernel memory such as socket buffers and tmpfs pages included, and gives them one CPU
group, so a neighbour keeps its share whatever the child does. Without such a group (a container's read-only
/sys/fs/cgroup, a grader that is not root, a v1 cpu hierarchy that refuses a folder) the limits are per
process or summed by the launcher's watchdog, which sees neither socket buffers nor sessions: a child that
queued 3 GiB in socket pairs, or forked 62 spinners that each called setsid() (one scheduler autogroup, one
equal share, each), took from the child graded beside it (docs/DESIGN.md, "What each rung leaves open").

A tool's command on a student's files (`command.run_command`: `otter run`, the nbgrader route, a lecture
driver) writes its work folder on the machine's disk, whose total no rung caps: its launcher stops it before the
disk's free space falls below `Limits.disk_floor_bytes`, which holds only while no other command writes there, so
commands always take turns.

So tool commands, and where the rung has no cgroup with a CPU part every grading's children, take turns:
`turn(rung, writes_disk)` holds an exclusive flock on `turn.lock` in the machine's grader state folder
(`users.UID_LOCK_DIR` as root, shared by every grader of the machine and by containers that mount one
A2_UID_LOCK_DIR; as another user a folder of that user's own) for the whole of one exercise or one tool
command (in a batch, of one grader process: `HELD_ENV`), from before its time limit starts until its
processes are killed and its folder removed. What a child then does to the machine's CPU, memory and disk
costs its own exercise only. The kernel releases the lock when its holder dies.
"""

from __future__ import annotations

import fcntl
import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from autograder.runtime import statedir
from autograder.runtime.sandbox import ladder, users

LOCK_NAME = "turn.lock"
# Set by `autograder.batch.processes.run_grader` in the environment of a grader process whose whole run holds
# the turn (taken before the batch starts its time limit): that grader's exercises do not take it again.
HELD_ENV = "A2_TURN_HELD"


def side_by_side(rung: ladder.Rung) -> bool:
    """Whether children on `rung` may run at the same time as other gradings' (a cgroup with a CPU part)."""
    return rung.groups is not None and rung.groups.cpu


def folder() -> Path:
    """Where the turn lock lives: the sandbox uid lock folder as root, else a folder of this user's own."""
    if os.geteuid() == 0:
        return users.UID_LOCK_DIR
    return users.UID_LOCK_DIR.with_name(f"a2grader-turns-{os.geteuid()}")


@contextmanager
def turn(rung: ladder.Rung, writes_disk: bool = False) -> Iterator[None]:
    """Hold the machine's turn while the body runs, unless `rung` keeps children apart and the child writes no
    disk (module docstring). users.SandboxError when the lock folder is not the grader's own."""
    if (side_by_side(rung) or os.environ.get(HELD_ENV) == "1") and not writes_disk:
        yield
        return
    try:
        dir_fd = statedir.open_private_folder(folder())
    except statedir.UnsafeFolder as exc:
        raise users.SandboxError(f"the grader's turn lock folder is refused: {exc}. Remove it") from None
    try:
        fd = statedir.open_file(dir_fd, LOCK_NAME)
    finally:
        os.close(dir_fd)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)
