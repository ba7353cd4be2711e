"""The LRU capacity sweep of hetero.kvcache beside the Mooncake team's kvcache-simulator 0.1.3, in one run.

The job is the same for all three: LRU at 5 cache capacities (in 512-token blocks) over one trace in the
shipped Mooncake format. Timed, each best of 3 after one untimed warm-up (the warm-up compiles the C++
core on first use):
- hetero: `stackdist.lru_stack_sweep` (one pass by LRU stack depths gives every capacity at once);
- kvcache-simulator's Python backend: its execution plan, then `simulate_policy("lru", C)` per capacity
  (one process, as `--backend python --jobs 1`);
- its C++ backend: `run_cpp_sweep` (writes the trace to binary files, runs the compiled batch core once
  for all capacities, reads its JSON).
Trace parsing is timed apart (each tool's own parser) and not in the ratios.

The hit rates differ by design and are printed beside each other, not compared: hetero's LRU evicts
blocks and counts every request; kvcache-simulator evicts leaves of a prefix trie and measures the
last 50% of requests only. Both count a request's hits as its longest cached prefix.

kvcache-simulator is not a dependency of the package: on first use this script installs the pinned
wheel into .cache/bench-kvcache-simulator with pip (`--target`). The C++ backend needs a C++ compiler
(`c++`); without one its column says so.

Run: .venv/bin/python benchmarks/bench_kvcache_vs_mooncake.py [TRACE.jsonl]   (default: the shipped sample)
"""

from __future__ import annotations

import math
import shutil
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

from hetero import stackdist, traces

T = TypeVar("T")
PIN = "kvcache-simulator==0.1.3"
TARGET = Path(__file__).resolve().parent.parent / ".cache" / "bench-kvcache-simulator"
CAPACITY_FRACTIONS = (0.05, 0.1, 0.2, 0.4, 0.8)  # of the trace's distinct blocks


def _import_simulator() -> Any:
    if not (TARGET / "kvcache_sim").is_dir():
        subprocess.run(
            [sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--target", str(TARGET), PIN], check=True
        )
    sys.path.insert(0, str(TARGET))
    import kvcache_sim.cpp_backend as cpp
    import kvcache_sim.plan as plan
    import kvcache_sim.policies as policies
    import kvcache_sim.trace as trace

    return cpp, plan, policies, trace


def _best(run: Callable[[], T], repeats: int = 3) -> tuple[float, T]:
    run()
    best, result = math.inf, None
    for _ in range(repeats):
        start = time.perf_counter()
        result = run()
        best = min(best, time.perf_counter() - start)
    return best, result  # type: ignore[return-value]


def _rate(result: Any) -> str:
    if result is None:
        return "not run"
    if result.measurementMode == "underfilled_at_window":
        return "underfilled"
    return f"{result.hitRate:.1%}"


def main() -> None:
    path = Path(sys.argv[1]) if len(sys.argv) > 1 else traces.SAMPLE_TRACE
    cpp, plan_mod, policies, trace_mod = _import_simulator()

    ours_parse_s, requests = _best(lambda: traces.read_trace(path), repeats=1)
    theirs_parse_s, trace = _best(lambda: trace_mod.parse_trace_file(path, block_size=traces.BLOCK_TOKENS), repeats=1)
    distinct = len({b for r in requests for b in r.hash_ids})
    capacities = [max(1, int(f * distinct)) for f in CAPACITY_FRACTIONS]
    lookups = sum(len(r.hash_ids) for r in requests)
    print(
        f"{path.name}: {len(requests):,} requests, {lookups:,} block lookups, {distinct:,} distinct blocks; "
        f"LRU at {capacities} blocks"
    )
    print(f"parsing: hetero {ours_parse_s:.3f} s, kvcache-simulator {theirs_parse_s:.3f} s (not in the ratios)")

    ours_s, sweep = _best(lambda: stackdist.lru_stack_sweep(requests, capacities))
    warmup = trace.request_count // 2

    def python_backend() -> list[Any]:
        plan = plan_mod.build_execution_plan(trace, warmup_fraction=0.5)
        return [policies.simulate_policy(plan, "lru", c) for c in capacities]

    py_s, py_rows = _best(python_backend)
    if shutil.which("c++"):
        cpp_s, cpp_out = _best(
            lambda: cpp.run_cpp_sweep(trace, capacities=capacities, policies=["lru"], warmup_requests=warmup)
        )
        cpp_rows = [cpp_out.results[("lru", c)] for c in capacities]
    else:
        cpp_s, cpp_rows = math.nan, [None] * len(capacities)

    print(f"\n{'':28s} {'time (s)':>9s} {'hetero is':>12s}")
    print(f"{'hetero one pass':28s} {ours_s:9.3f} {'':>12s}")
    print(f"{'kvcache-simulator Python':28s} {py_s:9.3f} {py_s / ours_s:11.1f}x faster")
    cpp_note = "no C++ compiler" if math.isnan(cpp_s) else f"{cpp_s / ours_s:11.1f}x faster"
    print(f"{'kvcache-simulator C++':28s} {cpp_s:9.3f} {cpp_note}")
    print(f"\n{'capacity (blocks)':>18s} {'hetero LRU':>11s} {'sim Python LRU':>15s} {'sim C++ LRU':>12s}")
    for j, c in enumerate(capacities):
        print(f"{c:18,d} {sweep['token_hit_rate'][j]:11.1%} {_rate(py_rows[j]):>15s} {_rate(cpp_rows[j]):>12s}")
    print(
        "(token hit rates; hetero: all requests, block LRU; kvcache-simulator: last 50% of requests, trie LRU;\n"
        " 'underfilled': the cache never filled before the measured half, which kvcache-simulator reports as 0)"
    )


if __name__ == "__main__":
    main()
