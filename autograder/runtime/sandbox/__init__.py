"""sandbox: run a student's code in limited, isolated child processes, on this machine's isolation rung.

- `runner`: one exercise's cases on a student's file (the grader's route); `command`: a trusted tool's
  command on a student's files (otter run, a lecture driver).
- `ladder`: which rung works here (bubblewrap, Landlock + seccomp + uid, seccomp + uid, same-uid) or why
  grading refuses; `allowlist`: what a child may read; `syscalls`: the seccomp programs; `isolation`:
  the bubblewrap layer; `cgroup`: one memory cap per exercise; `pagecache`: the reset between phases.
- `launch`: one sandboxed process tree; `process`: a grading child's result channel; `records`: its parser.
- `users`: sandbox uids, ending every process of a uid, removing what a child left on disk.
- `jail` and `child`: the two files copied into the child (its launcher or init, then the harness that
  imports the student's file); standard library only.
"""
