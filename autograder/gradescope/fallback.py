"""Guarantee a valid Gradescope results.json after a grading run, whatever happened to the grader.

Run by run_autograder with the grader's exit status and log. If the grader wrote a readable
results file, it is left as it is; otherwise it is replaced by a zero score with one visible
failed test telling the student that the autograder (not their code) failed, plus a hidden test
holding the end of the grader's log for the course staff; every output is plain text for Gradescope
(`output_format` "text": the log may hold what the student's code printed, never rendered as HTML). Standard library only: it must work even
when the virtual environment is broken.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from pathlib import Path
from typing import Any

LOG_TAIL_CHARS = 6000


def readable_results(path: Path) -> dict[str, Any] | None:
    """The results dict at `path` if it is a JSON object a Gradescope harness can use, else None."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if not isinstance(data, dict):
        return None
    tests = data.get("tests")
    score = data.get("score")
    if tests is None and score is None:
        return None
    if tests is not None and not (isinstance(tests, list) and all(isinstance(t, dict) for t in tests)):
        return None
    if score is not None and not (
        isinstance(score, (int, float)) and not isinstance(score, bool) and math.isfinite(score)
    ):
        return None
    return data


def failure_results(reason: str, log_tail: str = "", max_score: float = 100.0) -> dict[str, Any]:
    """Results for a run the grader could not finish: 0 points, the reason visible, the log hidden."""
    tests: list[dict[str, Any]] = [
        {
            "name": "Autograder run",
            "score": 0.0,
            "max_score": float(max_score),
            "status": "failed",
            "visibility": "visible",
            "output_format": "text",
            "output": (
                f"The autograder could not grade this submission: {reason}. "
                "This is not a verdict on your code: please resubmit once, and if the problem "
                "persists, tell the course staff."
            ),
        }
    ]
    if log_tail:
        tests.append(
            {
                "name": "Autograder log (staff only)",
                "score": 0.0,
                "max_score": 0.0,
                "status": "failed",
                "visibility": "hidden",
                "output_format": "text",
                "output": log_tail[-LOG_TAIL_CHARS:],
            }
        )
    return {
        "score": 0.0,
        "output": f"Grading failed: {reason}.",
        "output_format": "text",
        "visibility": "visible",
        "stdout_visibility": "hidden",
        "tests": tests,
    }


def describe_status(status: int) -> str:
    if status == 124:
        return "the grading run exceeded its time limit"
    if status == 137 or status < 0:
        return "the grading run was killed (time or memory limit)"
    if status in (126, 127):
        return f"the grader could not be started (status {status}: its environment is missing or broken)"
    if status == 0:
        return "the grader finished without writing a readable results.json"
    return f"the grader exited with status {status} without writing a readable results.json"


def ensure_results(results: Path, log: Path | None, status: int) -> bool:
    """Write a failure results.json unless a readable one exists; True when the grader's file is kept."""
    if readable_results(results) is not None:
        return True
    tail = ""
    if log is not None and log.is_file():
        tail = log.read_text(encoding="utf-8", errors="replace")[-LOG_TAIL_CHARS:]
    results.parent.mkdir(parents=True, exist_ok=True)
    results.write_text(json.dumps(failure_results(describe_status(status), tail), indent=2), encoding="utf-8")
    return False


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--results", type=Path, required=True)
    parser.add_argument("--log", type=Path)
    parser.add_argument("--status", type=int, default=0, help="the grader's exit status")
    args = parser.parse_args(argv)
    kept = ensure_results(args.results, args.log, args.status)
    if not kept:
        print(f"[run_autograder] grader failed (status {args.status}); wrote fallback {args.results}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
