"""Run one exercise's cases on a student's file in limited child processes, and collect its results.

The grader calls `run_exercise` with the student's file and the cases' *call specs* (function name
and encoded arguments, never an expected value); it returns the Outcome of each case that produced a
valid result record, and why the others did not. Normally one child runs all of an exercise's
cases; a case that runs longer than its per-case limit is stopped with its child, and a fresh child
re-imports the file and goes on with the next case, skipping the other cases of the function that
was stopped (with the manifest's limits, ex02: 10 s per case, 20 s in all, a second stop of one
function would leave no time for the others).

How a child is started and what holds it: `ladder` picks this machine's isolation rung (bubblewrap, else
Landlock + seccomp + a sandbox uid, else seccomp + uid + file modes, else, for a grader that is not root,
Landlock + seccomp as its own uid; otherwise grading refuses); `jail` (trusted, standard library only)
enters the exercise's cgroup, then bubblewrap's namespaces or stays on the host as a subreaper, and starts
the harness `child.py` under the rung's layers; `process` drives one child. The layers, what each covers
and what each rung leaves open, with numbers, are in docs/DESIGN.md ("Isolation"). Whatever the rung:

- wall clock: `timeout_s` for the whole exercise, `case_timeout_s` for one case's call, measured by the
  parent, which then ends the child (the launcher kills every descendant; bwrap's PID namespace dies).
- CPU time: RLIMIT_CPU (what is left of `cpu_s` for a restarted child), hard limit 2 s later.
- memory: `memory_mib` for all the processes of the exercise together: a cgroup where the grader can make
  one (`cgroup`), else the launcher's watchdog; RLIMIT_AS per process as well (importing torch 2.13 peaks at
  ~600 MB of address space with OMP_NUM_THREADS=1 and MALLOC_ARENA_MAX=2, both set); oom_score_adj 1000.
- output: stdout and stderr are one pipe the parent drains as the child writes (the child cannot seek back
  and rewrite what it printed). The parent keeps the first `kept_output_bytes`, counts the rest, and stops
  the child past `output_bytes`. Output printed before the first hidden case was sent is the "public
  output"; the rest may contain hidden inputs. RLIMIT_FSIZE caps every file the child writes.
- result channel: a pipe parsed in linear time; at most `result_bytes` for all the children of an exercise
  (a restarted child gets no fresh allowance) and `junk_lines` lines that are not valid records, then the
  child is stopped; a record longer than `record_bytes` is dropped unread and its case refused.
- processes: nothing the student's code starts outlives the child: bwrap's PID namespace, or the launcher
  (a subreaper: every orphan comes back to it) that kills every descendant; as root, every process of the
  child's uid is killed too (kill(-1) from that uid until none is left). RLIMIT_NPROC bounds a fork bomb.
- uids (root only): each child runs as its own uid from SANDBOX_UIDS, no supplementary groups,
  PR_SET_NO_NEW_PRIVS, PR_SET_PDEATHSIG; never the same uid twice in a grader process, and among free
  uids the one released longest ago (lock files in a folder only root can write keep graders apart).
- environment: `launch.child_env`, nothing else of the grader's.
- page cache: emptied of what a child can read between a hidden phase and a later public phase
  (`pagecache`).
- neighbours: exercises of other gradings run beside this one only inside cgroups with a CPU part; elsewhere
  they take turns, one at a time on the machine (`turns`).

Threat model (what the result channel does and does not guarantee)
The student's code runs inside the child, in the same process as the harness (`autograder.runtime.sandbox.child`),
so it can do anything the harness can: write to the result fd, find the MAC key in memory
(gc, /proc/self/mem), patch `hetero.checks`, print fake records. None of that can raise a score:
- the parent judges every result (`hetero.checks.judge`) against expected values that never enter
  the child; a forged record can only claim "the function returned X", which the student could have
  achieved by returning X. Records are plain JSON decoded without running student code (no pickle);
  `encode` refuses subclasses, `judge` checks exact types.
- the MAC (per-child random key, sent on the control pipe, never in argv or the environment) stops
  records not produced with the key: stdout (a different pipe), stray writes, records replayed from
  another run. Records must come in order, each case at most once: a duplicate or a record in the
  wrong place fails that case. Exit codes and stdout are never read as results.
- the child is sent case n+1 only after case n's record, so no hidden input is in the process while
  public cases run.
- what is NOT prevented: a student who recovers the key can make their cases' records say whatever
  they like (no more than returning it); their code sees each hidden case's inputs when it is called
  with them, and can steer which fixed phrase each visible hidden entry gets (a few bits per hidden
  case and submission; docs/gradescope.md) and its timing.
"""

from __future__ import annotations

import time
from pathlib import Path

from autograder.runtime.sandbox import ladder, pagecache, turns
from autograder.runtime.sandbox.limits import ChildReport, Limits
from autograder.runtime.sandbox.process import Child, Output


def run_exercise(
    student_file: Path,
    module_name: str,
    specs: list[dict],
    hidden_from: int,
    limits: Limits,
    skip_funcs: frozenset[str] = frozenset(),
) -> ChildReport:
    """Run `specs` (call specs, public first; hidden from index `hidden_from`) on `student_file`.

    skip_funcs: functions whose cases are not sent (stopped at the per-case limit in an earlier run).
    Raises ladder.Refused (before any student code runs) where no isolation works and --unsafe-no-sandbox
    was not given."""
    report = ChildReport()
    rung = ladder.current()
    with turns.turn(rung):  # the time limits start once it is this exercise's turn
        if hidden_from > 0:
            pagecache.reset_if_marked()  # public cases: nothing an earlier hidden phase left in the cache
        hidden = hidden_from < len(specs)
        if hidden:
            pagecache.mark()  # hidden inputs may reach the cache from now on
        try:
            return _run(student_file, module_name, specs, hidden_from, limits, skip_funcs, report, rung)
        finally:
            if hidden:  # again once it ended: another grading's reset while this child ran does not clear it
                pagecache.mark()


def _run(
    student_file: Path,
    module_name: str,
    specs: list[dict],
    hidden_from: int,
    limits: Limits,
    skip_funcs: frozenset[str],
    report: ChildReport,
    rung: ladder.Rung,
) -> ChildReport:
    output = Output(limits.kept_output_bytes)
    start = time.monotonic()
    deadline = start + limits.timeout_s
    first, stopped = 0, []
    notes: list[str] = []
    while True:
        child = Child(student_file, module_name, specs, hidden_from, limits, report, output, rung)
        first_stopped = child.run(
            first,
            deadline,
            limits.cpu_s - report.cpu_s,
            skip_funcs | frozenset(s["func"] for s in specs if s["id"] in stopped),
        )
        notes = notes or child.notes
        if first_stopped is None:
            break
        stopped.append(specs[first_stopped]["id"])
        first = first_stopped + 1
        if first >= len(specs) or time.monotonic() >= deadline:
            break
    report.isolation = tuple(notes)
    report.stopped_cases = tuple(stopped)
    report.wall_s = time.monotonic() - start
    report.output_bytes = output.total
    public_bytes = output.public_bytes if output.public_bytes is not None else output.total
    report.output_public = output.text(public_bytes, limits.shown_output_chars)
    report.output_all = output.text(output.total, 4 * limits.shown_output_chars)
    return report
