"""Run one exercise's cases on a student's file in limited child processes, and collect its results.

The grader calls `run_exercise` with the student's file and the cases' *call specs* (function name
and encoded arguments, never an expected value); it returns the Outcome of each case that produced a
valid result record, and why the others did not. Normally one child runs all of an exercise's
cases; a case that runs longer than its per-case limit is stopped with its child, and a fresh child
re-imports the file and goes on with the next case, skipping the other cases of the function that
was stopped (with the manifest's limits, ex02: 10 s per case, 20 s in all, a second stop of one
function would leave no time for the others).

How a child is started (`autograder.runtime.sandbox.jail`, autograder/runtime/sandbox/jail.py, does the privileged part, before any
student code): the grader runs bubblewrap (`bwrap`), which makes the child's namespaces (mount, PID,
network, IPC, UTS, cgroup; plus a user namespace when the grader is not root) and a new root holding
only an allow-list (`bwrap_args`); jail.py runs in it as the namespace's init, mounts the size-capped
tmpfs, reaps orphans and starts the harness (`autograder/runtime/sandbox/child.py`), which runs as the sandbox uid
under resource limits. Without a working bubblewrap (mode "none") jail.py starts the harness on the
host. `isolation_mode` probes once per grader process which of these works here.

Limits and isolation of the child
- wall clock: `timeout_s` for the whole exercise, `case_timeout_s` for one case's call; both are
  measured by the parent, which then kills the child's process group.
- CPU time: RLIMIT_CPU (what is left of `cpu_s` for a restarted child), hard limit 2 s later.
- memory: RLIMIT_AS = `memory_mib`. Measured here: importing torch 2.13 (CPU) peaks at ~600 MB of
  address space with OMP_NUM_THREADS=1 and MALLOC_ARENA_MAX=2 (both set), and torch runs under
  RLIMIT_AS = 768 MiB, so the manifest's 2-4 GiB leave room; RLIMIT_DATA is not needed.
- output: stdout and stderr are one pipe that the parent drains as the child writes (the child
  cannot seek back and rewrite what it printed). The parent keeps the first `kept_output_bytes`,
  counts the rest, and stops the child past `output_bytes`. Output printed before the first hidden
  case was sent is the "public output"; the rest may contain hidden inputs. RLIMIT_FSIZE caps every
  file the child writes at `output_bytes` (SIGXFSZ).
- result channel: a pipe parsed in linear time; at most `result_bytes` for all the children of an
  exercise (a restarted child gets no fresh allowance) and `junk_lines` lines that are not valid
  records, then the child is stopped; a record longer than `record_bytes` is dropped unread and its
  case refused.
- processes: everything the student's code starts lives in the child's PID namespace and dies with
  its init (jail.py as PID 1), which dies with bwrap (PR_SET_PDEATHSIG; the grader kills bwrap's
  process group, and bwrap dies with the grader): double forks, `setsid`, relays. As root,
  every process of the child's uid is then killed as well (kill(-1) from that uid until none is
  left; the only mechanism when no namespace works). RLIMIT_NPROC bounds a fork bomb.
- uids (root only, as on Gradescope): each child runs as its own uid from SANDBOX_UIDS (a range with
  no login), with no supplementary groups, PR_SET_NO_NEW_PRIVS and PR_SET_PDEATHSIG. A grader
  process never hands out the same uid twice, and among free uids it takes the one released longest
  ago (lock files in UID_LOCK_DIR keep parallel graders apart).
- files (mode "bwrap"): the child's root is a new, read-only one that holds only an allow-list: /usr
  and the /bin, /sbin, /lib* links (or folders) as the host has them, ld.so.cache, ld.so.conf(.d) and
  localtime of /etc, the interpreter and its standard library (sys.base_prefix), the venv (sys.prefix),
  `hetero` (with an editable install, only its folder shared/hetero of the checkout), each bound
  read-only at its own path (the folders on the way to them hold nothing else), its own copies of the
  exercise file, child.py and jail.py (SANDBOX_CODE, read-only), a fresh /proc of its PID namespace and
  a minimal /dev. /tmp, /var/tmp, /dev/shm and the work folder (SANDBOX_WORK: cwd, HOME, TMPDIR in it)
  are tmpfs of its own, TMPFS_BYTES each: whatever it writes, at any depth, never reaches the disk.
  Nothing else of the host exists for it: not the repository (hidden cases, expected values, answer key,
  .git), not another checkout or clone on the machine, not /home, /root, /work, /autograder
  (submission_metadata.json, results/), not grade-all's outputs or other students' files; where the
  venv holds the grader's own package (a non-editable install), an empty tmpfs covers that folder.
  bwrap makes the tmpfs before the binds (a venv under /tmp stays reachable); as root jail.py caps
  their size by a remount (bubblewrap before 0.8, Ubuntu 22.04's 0.6, has no --size); without root
  bwrap's --size does, from 0.8 on (before, the note says they are not capped).
  Mode "none" (no bubblewrap): no namespace at all; the work folder is on disk and `remove_tree` deletes
  it at any depth, and only the sandbox uid and the file modes keep the child from the host's files
  (`run_autograder` sets them in Gradescope's copy). Nothing of the instructor's checkout is changed.
- network: the child's network namespace has only a loopback device, down as root (without root,
  bwrap leaves it up, reaching nothing outside the namespace). In mode "none" the report, the grader's
  note and the log say "network: not isolated" and "files: not isolated" and why ("bubblewrap missing:
  apt-get install bubblewrap", or how it failed).
- kernel keyrings (not namespaced: a key stored under a sandbox uid outlives the child and is there for
  the next run with that uid): a seccomp filter installed by the harness makes add_key, request_key
  and keyctl fail with EPERM; where it cannot be installed the report and the results' staff entry say
  "keyrings: not isolated" and why.

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
  case and submission; docs/gradescope.md) and its timing. Without root there is no uid
  change: where bubblewrap works (in a user namespace) the child still sees only the allow-list,
  where it does not (mode "none") student code can read anything the instructor can; use root (or
  Gradescope) with bubblewrap for untrusted submissions.
"""

from __future__ import annotations

import time
from pathlib import Path

from autograder.runtime.sandbox import ladder, pagecache
from autograder.runtime.sandbox.limits import ChildReport, Limits
from autograder.runtime.sandbox.process import _Child, _Output


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
    if hidden_from > 0:
        pagecache.reset_if_marked()  # public cases: nothing an earlier hidden phase left in the cache
    if hidden_from < len(specs):
        pagecache.mark()  # hidden inputs may reach the cache from now on
    output = _Output(limits.kept_output_bytes)
    start = time.monotonic()
    deadline = start + limits.timeout_s
    first, stopped = 0, []
    notes: list[str] = []
    while True:
        child = _Child(student_file, module_name, specs, hidden_from, limits, report, output, rung)
        notes = notes or child.notes
        first_stopped = child.run(
            first,
            deadline,
            limits.cpu_s - report.cpu_s,
            skip_funcs | frozenset(s["func"] for s in specs if s["id"] in stopped),
        )
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
