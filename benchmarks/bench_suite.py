"""Wall time of `make test` from a fresh clone: set-up and the suite, for one or more commits side by side.

For each commit (default: HEAD), clones this repository into a temporary folder (committed files only,
as CI sees them), runs `make setup` (a new .venv from the locks) and then `make test`, and prints the
seconds of each, the pytest summary line and, for every slow proof, whether its committed record held
or it ran. With two or more commits, the last column is the ratio to the first. Nothing is cached
between clones but pip's own download cache (as on CI's machine); the Python 3.10 wheelhouse the
Gradescope-layout proof downloads, when it runs, lives under the clone and is fetched anew.

Run: `python benchmarks/bench_suite.py [--rev REV ...] [--keep]`. The issue's target: set-up and tests
together at most 12 minutes on this 2-core machine.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _env() -> dict[str, str]:
    """No path into this checkout: no PYTHONPATH, no venv of ours on PATH, no graded-corpus folder."""
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV", "A2_GRADED_CACHE")}
    env["PATH"] = os.pathsep.join(p for p in env.get("PATH", "").split(os.pathsep) if not p.startswith(str(ROOT)))
    return env


def _run(cmd: list[str], cwd: Path, log: Path) -> tuple[float, int, str]:
    start = time.perf_counter()
    with open(log, "w", encoding="utf-8") as out:
        code = subprocess.run(cmd, cwd=cwd, stdout=out, stderr=subprocess.STDOUT, env=_env(), timeout=5400).returncode
    return time.perf_counter() - start, code, log.read_text(encoding="utf-8", errors="replace")


def measure(rev: str, keep: bool) -> dict[str, object]:
    work = Path(tempfile.mkdtemp(prefix="a2-bench-suite-"))
    try:
        clone = work / "clone"
        subprocess.run(["git", "clone", "--quiet", str(ROOT), str(clone)], check=True)
        subprocess.run(["git", "checkout", "--quiet", rev], cwd=clone, check=True)
        setup_s, setup_rc, _ = _run(["make", "setup"], clone, work / "setup.log")
        test_s, test_rc, text = _run(["make", "test"], clone, work / "test.log")
        summary = re.findall(r"^=+ (.*(?:passed|failed).*) =+$", text, flags=re.M)
        proofs = re.findall(r"^(\w+): (record holds|ran|DUE)", text, flags=re.M)
        return {
            "rev": rev,
            "setup_s": setup_s,
            "test_s": test_s,
            "rc": (setup_rc, test_rc),
            "summary": summary[-1] if summary else "(no pytest summary)",
            "proofs": proofs,
            "log": str(work / "test.log") if keep else "",
        }
    finally:
        if not keep:
            shutil.rmtree(work, ignore_errors=True)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rev", nargs="+", default=["HEAD"], help="commits to measure, in turn (default HEAD)")
    parser.add_argument("--keep", action="store_true", help="keep the clones and logs (paths printed)")
    args = parser.parse_args()
    print(f"machine: {os.cpu_count()} cores; load average {os.getloadavg()[0]:.2f} at start", flush=True)
    rows = [measure(rev, args.keep) for rev in args.rev]
    first = rows[0]["setup_s"] + rows[0]["test_s"]  # type: ignore[operator]
    print(f"{'rev':<12}{'setup s':>9}{'tests s':>9}{'total':>10}{'ratio':>7}  exit  summary")
    for row in rows:
        total = row["setup_s"] + row["test_s"]  # type: ignore[operator]
        print(
            f"{row['rev']!s:<12}{row['setup_s']:>9.0f}{row['test_s']:>9.0f}{total / 60:>8.1f} m"
            f"{total / first:>7.2f}  {row['rc']}  {row['summary']}"
        )
        for name, state in row["proofs"]:  # type: ignore[attr-defined]
            print(f"{'':<12}proof {name}: {state}")
        if row["log"]:
            print(f"{'':<12}log: {row['log']}")
    print(f"load average {os.getloadavg()[0]:.2f} at the end")
    return 0 if all(row["rc"] == (0, 0) for row in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
