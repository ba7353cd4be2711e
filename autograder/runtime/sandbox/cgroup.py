"""One memory cap for every process of an exercise: a cgroup per child, where the grader can make one.

A child's jail joins the group before it starts anything (`jail.enter`), so everything the student's
code forks is inside it and `memory.max` (cgroup v2) or `memory.limit_in_bytes` (v1, this machine's
hybrid layout) caps them together, swap included where the kernel counts it; `pids.max` caps their
number. The child's processes also share one CPU group (v1's cpu hierarchy, v2's cpu controller): out of the
root group the kernel's autogroups do not apply, so a child cannot multiply its CPU share by starting sessions
(`setsid`: one autogroup, one equal share each) and starve a child graded beside it. Where no group can be
made (a container's read-only /sys/fs/cgroup, a grader that is not root), `Groups.make` returns None and the
cap is the launcher's watchdog (`jail.supervise`: the summed PSS of the child's processes, checked every
`jail.WATCH_S`), with RLIMIT_AS per process and oom_score_adj 1000 so that an out-of-memory kill picks the
student's processes first; the ladder's note says which.

Groups live under `PARENT` at the hierarchy's root, named `<grader pid>-<n>` (the next free n: a killed
grader's groups stay, and its pid comes back); each is removed when its child ends (every process in it
killed first). Empty groups of graders no longer running are removed when a grader first probes; a group
that still holds a process is never touched.
"""

from __future__ import annotations

import itertools
import os
import signal
import time
from dataclasses import dataclass
from pathlib import Path

PARENT = "a2grader"
_COUNTER = itertools.count()
NAME_TRIES = 1000  # names `<pid>-<n>` tried for a new group before giving up


@dataclass(frozen=True)
class Groups:
    """Where this grader makes its groups: version 2 (one hierarchy) or 1 (a memory and a pids hierarchy)."""

    version: int
    memory_root: Path  # the PARENT folder in the memory (v1) or unified (v2) hierarchy
    pids_root: Path | None  # v1's pids hierarchy, when mounted
    cpu_root: Path | None = None  # v1's cpu hierarchy, when mounted and usable (v2: the group's own controller)
    cpu: bool = False  # each group has a CPU part (v1: cpu_root; v2: the cpu controller enabled under PARENT)

    def describe(self) -> str:
        cpu = "memory, processes and CPU" if self.cpu else "memory and processes; no CPU group"
        return f"cgroup v{self.version} ({self.memory_root}: {cpu})"

    def make(self, memory_bytes: int, max_processes: int) -> Group:
        name, memory = self._new_memory_group()
        folders = [memory]
        try:
            if self.version == 2:
                _write(memory / "memory.max", memory_bytes)
                _write_if(memory / "memory.swap.max", 0)
                _write_if(memory / "pids.max", max_processes)
                procs = [memory / "cgroup.procs"]
            else:
                _write(memory / "memory.limit_in_bytes", memory_bytes)
                _write_if(memory / "memory.memsw.limit_in_bytes", memory_bytes)
                procs = [memory / "cgroup.procs"]
                if self.pids_root is not None:
                    pids = self.pids_root / name
                    pids.mkdir(mode=0o755)
                    folders.append(pids)
                    _write(pids / "pids.max", max_processes)
                    procs.append(pids / "cgroup.procs")
                if self.cpu_root is not None:
                    cpu = self.cpu_root / name
                    cpu.mkdir(mode=0o755)
                    folders.append(cpu)
                    procs.append(cpu / "cgroup.procs")
        except OSError:
            Group(folders, [], self.version).remove()
            raise
        return Group(folders, procs, self.version)

    def _new_memory_group(self) -> tuple[str, Path]:
        """A new group's name and its memory folder, made. A name may be taken already: pids are reused, and
        a grader that was killed left its groups (empty; swept once an hour old), so names are tried on."""
        for _ in range(NAME_TRIES):
            name = f"{os.getpid()}-{next(_COUNTER)}"
            if any(root is not None and (root / name).exists() for root in (self.pids_root, self.cpu_root)):
                continue
            memory = self.memory_root / name
            try:
                memory.mkdir(mode=0o755)
            except FileExistsError:
                continue
            return name, memory
        raise OSError(f"no free cgroup name under {self.memory_root} in {NAME_TRIES} tries")


@dataclass
class Group:
    folders: list[Path]
    procs: list[Path]  # the cgroup.procs files the jail writes its pid into
    version: int

    def memory_events(self) -> dict[str, int]:
        """The group's out-of-memory counters: v2's memory.events (oom_kill, max, ...), v1's memory.oom_control
        (oom_kill, under_oom) and failcnt as "max"."""
        base = self.folders[0]
        try:
            if self.version == 2:
                text = (base / "memory.events").read_text()
            else:
                text = (base / "memory.oom_control").read_text() + f"max {(base / 'memory.failcnt').read_text()}"
            return {k: int(v) for k, v in (line.split() for line in text.splitlines() if len(line.split()) == 2)}
        except (OSError, ValueError):
            return {}

    def remove(self) -> None:
        """Kill whatever is still in the group, then remove it (retried while the kernel empties it)."""
        for folder in self.folders:
            kill = folder / "cgroup.kill"
            if kill.exists():
                _write_if(kill, 1)
            for _ in range(200):
                pids = _pids(folder / "cgroup.procs")
                for pid in pids:
                    try:
                        os.kill(pid, signal.SIGKILL)
                    except ProcessLookupError:
                        pass
                try:
                    folder.rmdir()
                    break
                except FileNotFoundError:
                    break
                except OSError:
                    time.sleep(0.01)


def _pids(procs: Path) -> list[int]:
    try:
        return [int(x) for x in procs.read_text().split()]
    except (OSError, ValueError):
        return []


def _write(path: Path, value: int) -> None:
    with open(path, "w") as handle:
        handle.write(str(value))


def _write_if(path: Path, value: int) -> None:
    """Write where the kernel has the file (swap accounting, the pids controller are optional)."""
    try:
        _write(path, value)
    except FileNotFoundError:
        pass
    except OSError:
        pass  # a kernel without swap accounting refuses memory.swap.max writes: the memory cap still holds


def _mounts() -> list[tuple[str, str, str]]:
    """(mount point, file system type, super options) of every mount this process sees."""
    found = []
    try:
        with open("/proc/self/mountinfo", encoding="utf-8") as handle:
            for line in handle:
                left, _, right = line.partition(" - ")
                fields, tail = left.split(), right.split()
                if len(fields) >= 5 and len(tail) >= 3:
                    found.append((fields[4], tail[0], tail[2]))
    except OSError:
        pass
    return found


def probe() -> tuple[Groups | None, str]:
    """Where this grader can make groups, or (None, why not). Tries to make and remove one group."""
    if os.geteuid() != 0:
        return None, "the grader is not root"
    mounts = _mounts()
    candidates: list[tuple[int, Path, Path | None, Path | None]] = []
    v1_memory = next((Path(p) for p, t, o in mounts if t == "cgroup" and "memory" in o.split(",")), None)
    v1_pids = next((Path(p) for p, t, o in mounts if t == "cgroup" and "pids" in o.split(",")), None)
    v1_cpu = next((Path(p) for p, t, o in mounts if t == "cgroup" and "cpu" in o.split(",")), None)
    for point, fstype, _ in mounts:
        if fstype == "cgroup2":
            controllers = _read(Path(point) / "cgroup.controllers").split()
            if "memory" in controllers:
                candidates.append((2, Path(point), None, None))
    if v1_memory is not None:
        candidates.append((1, v1_memory, v1_pids, v1_cpu))
    if not candidates:
        return None, "no cgroup hierarchy with a memory controller is mounted"
    failures = []
    for version, root, pids_root, cpu_root in candidates:
        try:
            parent = root / PARENT
            parent.mkdir(mode=0o755, exist_ok=True)
            if version == 2:
                _enable(root, ("memory", "pids"))
                _enable(parent, ("memory", "pids"))
                try:  # the CPU group is a fairness layer, not a cap: without it the memory cap still holds
                    _enable(root, ("cpu",))
                    _enable(parent, ("cpu",))
                except OSError:
                    pass
            pids_parent = None
            if pids_root is not None:
                pids_parent = pids_root / PARENT
                pids_parent.mkdir(mode=0o755, exist_ok=True)
            groups = _with_cpu(version, parent, pids_parent, cpu_root)
            _sweep(groups)
            groups.make(2**30, 8).remove()
            return groups, ""
        except OSError as exc:
            failures.append(f"cgroup v{version} at {root}: {exc.strerror or exc}")
    return None, "; ".join(failures)


def _with_cpu(version: int, parent: Path, pids_parent: Path | None, cpu_root: Path | None) -> Groups:
    """The groups, with a CPU part where one can be made (best-effort, as for v2's controller above: a v1 cpu
    hierarchy that refuses a folder leaves the memory cap; `autograder.runtime.sandbox.turns` then has the
    children take turns)."""
    if version == 2:
        return Groups(2, parent, pids_parent, None, "cpu" in _read(parent / "cgroup.subtree_control").split())
    if cpu_root is not None:
        try:
            cpu_parent = cpu_root / PARENT
            cpu_parent.mkdir(mode=0o755, exist_ok=True)
            trial = cpu_parent / f"{os.getpid()}-probe-{next(_COUNTER)}"
            trial.mkdir(mode=0o755)
            trial.rmdir()
            return Groups(1, parent, pids_parent, cpu_parent, True)
        except OSError:
            pass
    return Groups(1, parent, pids_parent, None, False)


def _enable(folder: Path, controllers: tuple[str, ...]) -> None:
    present = _read(folder / "cgroup.controllers").split()
    wanted = " ".join(f"+{c}" for c in controllers if c in present)
    if wanted:
        with open(folder / "cgroup.subtree_control", "w") as handle:
            handle.write(wanted)


def _read(path: Path) -> str:
    try:
        return path.read_text()
    except OSError:
        return ""


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


STALE_S = 3600  # a group this old whose grader pid is not alive here is a leftover (pids are per namespace)


def _sweep(groups: Groups) -> None:
    """Remove the empty groups of graders that no longer run (rmdir refuses a group with a process in it;
    an hour's age keeps a grader in another PID namespace from losing a group it has just made)."""
    now = time.time()
    for root in (groups.memory_root, groups.pids_root, groups.cpu_root):
        if root is None:
            continue
        for entry in root.iterdir():
            owner = entry.name.split("-", 1)[0]
            try:
                old = now - entry.stat().st_mtime > STALE_S
            except OSError:
                continue
            if entry.is_dir() and owner.isdigit() and old and not _alive(int(owner)):
                try:
                    entry.rmdir()
                except OSError:
                    pass
