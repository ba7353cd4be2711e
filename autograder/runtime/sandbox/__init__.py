"""sandbox: run one exercise's cases on a student's file in limited, isolated child processes.

- `runner`: the parent side — start a child, feed it cases, read its records, enforce the limits.
- `isolation`: which isolation works here (bubblewrap or none) and the child's allow-list root.
- `users`: sandbox uids, ending every process of a uid, removing what a child left on disk.
- `jail` and `child`: the two files copied into the child (its init, then the harness that imports
  the student's file); standard library only.
"""
