"""What the isolation ladder costs: the answer key graded, and a small batch's throughput, before and after.

"Before" is the grader at a git revision given with --before (default 2805e5d, the last commit before the
ladder: bubblewrap or nothing), checked out into a temporary worktree and run with this venv (its packages
first on sys.path); "after" is this checkout, on every rung this machine can take (tests/rungs.py's views
emulate the host rungs). In one run, one after the other, each measured --repeat times (median printed):

- `grade` of the whole answer key (all ten exercises), wall seconds;
- `grade-all` of a batch of 6 (the key, the stubs, four wrong fixtures), submissions per minute;
- the ladder's probe (`python -m autograder sandbox`) and one page-cache reset, seconds.

Prints the figures and the after/before ratios side by side, with the load average before and after each
measurement (the machine is shared: a loaded figure says so). The "before" runs need a system bubblewrap
(`bwrap` on PATH), as that grader did; without one they are skipped and said to be.

    python benchmarks/bench_sandbox.py [--before REV] [--repeat 2] [--skip-batch]
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _load() -> str:
    return "/".join(f"{x:.1f}" for x in os.getloadavg())


def _timed(cmd: list[str], env: dict[str, str], cwd: Path) -> float:
    start = time.monotonic()
    proc = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True, timeout=3600)
    if proc.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd[:6])} failed: {proc.stdout[-1500:]}{proc.stderr[-1500:]}")
    return time.monotonic() - start


def _worktree(rev: str) -> Path:
    folder = Path(tempfile.mkdtemp(prefix="a2bench-before-"))
    subprocess.run(
        ["git", "worktree", "add", "--detach", str(folder), rev], cwd=ROOT, check=True, capture_output=True, timeout=120
    )
    return folder


def _batch(base: Path, tree: Path) -> Path:
    """The key, the stubs and four wrong fixtures, as student folders under `base` (files from `tree`)."""
    sys.path.insert(0, str(ROOT))
    from autograder.authoring.wrong_fixtures import FIXTURES, materialise
    from autograder.core.manifest import EXERCISES

    subs = base / "submissions"
    for name, folder in (("key", tree / "solutions"), ("stubs", tree / "assignments")):
        (subs / name).mkdir(parents=True)
        for ex in EXERCISES:
            shutil.copyfile(folder / ex.filename, subs / name / ex.filename)
    for fixture in FIXTURES[:4]:
        student = subs / f"wrong_{fixture.name}"
        student.mkdir()
        for ex in EXERCISES:
            shutil.copyfile(tree / "solutions" / ex.filename, student / ex.filename)
        shutil.copyfile(materialise(fixture.name, base / "m" / fixture.name), student / fixture.filename)
    for path in (base, *base.rglob("*")):
        path.chmod(0o755 if path.is_dir() else 0o644)
    return subs


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--before", default="2805e5d", help="the revision graded as 'before' (default 2805e5d)")
    parser.add_argument("--repeat", type=int, default=2)
    parser.add_argument("--skip-batch", action="store_true", help="only the key's grading and the probe")
    args = parser.parse_args(argv)
    python = sys.executable
    work = Path(tempfile.mkdtemp(prefix="a2bench-"))
    work.chmod(0o755)
    before = _worktree(args.before) if shutil.which("bwrap") else None
    rows: list[tuple[str, str, list[float], str]] = []
    try:
        subs = _batch(work / "batch", ROOT)
        key = subs / "key"
        base_env = {k: v for k, v in os.environ.items() if not k.startswith("A2_SANDBOX")}
        routes: list[tuple[str, Path, dict[str, str], list[str]]] = []
        if before is not None:
            env = dict(base_env, PYTHONPATH=f"{before}:{before / 'shared'}")
            routes.append(("before (bwrap)", before, env, []))
        else:
            print("before: skipped (no system bwrap on PATH: the old grader needs one)")
        for rung in ("bwrap", "landlock", "seccomp-uid"):
            wrap = [python, str(ROOT / "tests" / "rungs.py"), rung, "--"] if rung != "bwrap" else []
            routes.append((f"after ({rung})", ROOT, dict(base_env, A2_SANDBOX_RUNGS=rung), wrap))
        for label, tree, env, wrap in routes:
            times = []
            start_load = _load()
            for i in range(args.repeat):
                out = work / f"key-{label}-{i}.json".replace(" ", "_")
                times.append(
                    _timed([*wrap, python, "-m", "autograder", "grade", str(key), "--out", str(out)], env, tree)
                )
            rows.append(("grade the key (s)", label, times, f"{start_load} -> {_load()}"))
            if args.skip_batch or "seccomp-uid" in label:
                continue
            rates = []
            start_load = _load()
            for i in range(args.repeat):
                out = work / f"batch-{label}-{i}".replace(" ", "_")
                wall = _timed(
                    [*wrap, python, "-m", "autograder", "grade-all", str(subs), "--out", str(out), "--no-progress"],
                    env,
                    tree,
                )
                rates.append(6 / wall * 60)
            rows.append(("grade-all, 6 submissions (per min)", label, rates, f"{start_load} -> {_load()}"))
        probe = [_timed([python, "-m", "autograder", "sandbox"], base_env, ROOT) for _ in range(args.repeat)]
        rows.append(("ladder probe, `autograder sandbox` (s)", "after", probe, _load()))
        sys.path.insert(0, str(ROOT))
        from autograder.runtime.sandbox import pagecache

        resets = [pagecache.reset().seconds for _ in range(args.repeat)]
        rows.append((f"page-cache reset, {pagecache.reset().how} (s)", "after", resets, _load()))
    finally:
        if before is not None:
            subprocess.run(["git", "worktree", "remove", "--force", str(before)], cwd=ROOT, capture_output=True)
        shutil.rmtree(work, ignore_errors=True)
    print(f"\n{'measure':<40}{'route':<22}{'median':>9}{'runs':>26}   load (1/5/15 min)")
    baseline: dict[str, float] = {}
    for measure, label, values, load in rows:
        median = statistics.median(values)
        if label.startswith("before"):
            baseline[measure] = median
        ratio = (
            f"  x{median / baseline[measure]:.2f} of before"
            if measure in baseline and not label.startswith("before")
            else ""
        )
        runs = ", ".join(f"{v:.2f}" for v in values)
        print(f"{measure:<40}{label:<22}{median:>9.2f}{runs:>26}   {load}{ratio}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
