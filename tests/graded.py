"""The graded corpus: each submission graded once per grader version, its results shared by every test.

`graded(folder, exercises)` returns the results.json content of `autograder.runtime.grader.grade_submission`
on `folder`. The result is kept for the test session (in the folder named by $A2_GRADED_CACHE, which
the controlling pytest process creates and removes; its xdist workers inherit it) as `<key>.json`,
where the key is the sha256 of the
submission's content (`submissions.content_hash`), the grader's inputs (`submissions.grader_fingerprint`: the
grader, `hetero`, the cases and stored expected values), the lock file, the exercise selection, the
Python version and whether the grader runs as root (which decides the sandbox's uid layer). A change
to any of them is a new key, so a stale grading is never read. An exclusive lock per key makes
concurrent test workers (pytest-xdist) grade a submission once and the others wait for it. Nothing
is kept across sessions: a grading stopped by a time limit on a loaded machine is not carried over.

Tests that grade under special conditions (another root, a changed environment, a time scale, a
patched sandbox) call the grader directly instead. `failed_cases(folder, ex_id)` says why a submission
lost points, in the staff's words (case id, call, expected, got, verdict), for a failing test's message.
"""

from __future__ import annotations

import fcntl
import functools
import hashlib
import json
import os
import shutil
import sys
import tempfile
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from autograder.batch import submissions
from autograder.core.manifest import BY_ID, ROOT
from autograder.runtime import grader

CACHE_ENV = "A2_GRADED_CACHE"


@functools.lru_cache(maxsize=1)
def _grader_key() -> str:
    lock = hashlib.sha256((ROOT / "locks" / "instructor.txt").read_bytes()).hexdigest()
    return f"{submissions.grader_fingerprint()}|{lock}|{sys.version}|root={os.geteuid() == 0}"


def key(folder: Path, exercises: Iterable[str] | None = None) -> str:
    selection = "all" if exercises is None else ",".join(exercises)
    text = f"{submissions.content_hash(Path(folder))}|{selection}|{_grader_key()}"
    return hashlib.sha256(text.encode()).hexdigest()


def graded(folder: Path, exercises: Iterable[str] | None = None) -> dict[str, Any]:
    """results.json of grading `folder` (only `exercises`, when given), graded at most once per key."""
    selected = None if exercises is None else list(exercises)
    name = key(folder, selected)
    cache = Path(os.environ.get(CACHE_ENV) or tempfile.gettempdir()) / "a2-graded"
    cache.mkdir(parents=True, exist_ok=True)
    path = cache / f"{name}.json"
    with open(cache / f"{name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            return json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            pass
        data = grader.grade_submission(Path(folder), exercises=selected)
        fd, tmp = tempfile.mkstemp(dir=cache, suffix=".tmp")
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            json.dump(data, fh)
        os.replace(tmp, path)
        return data


def failed_cases(folder: Path, ex_id: str) -> str:
    """Each case of `ex_id` that `folder` fails, as the grader's staff view words it: the case id, the call,
    the expected and the returned value, the verdict (public cases: the verdict, which names both). Graded
    again, directly: results.json words hidden cases without their inputs or values."""
    ex = BY_ID[ex_id]
    staging = Path(tempfile.mkdtemp(prefix="a2-failed-"))
    try:
        found, _ = grader.locate(Path(folder), [ex], staging)
        result = grader.grade_exercise(ex, found.get(ex_id))
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    lines = [c.detail or f"[FAILED] {c.case_id}\n  verdict:  {c.message}" for c in result.cases if not c.passed]
    lines += [
        f"[passed, not paid: its group {c.group} is not live] {c.case_id}"
        for c in result.cases
        if c.passed and not c.paid and c.cents
    ]
    if result.failure:
        lines.append(f"the grader failed on {ex_id}:\n{result.failure}")
    if result.note:
        lines.append(f"note: {result.note}")
    return "\n".join(lines) or f"{ex_id}: every case passes when graded again (a time limit on a loaded machine?)"
