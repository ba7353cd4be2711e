"""Block lookups per second of hetero.kvcache's caches, side by side with a plain OrderedDict LRU.

Two inputs: the 20,000-request document workload of experiment 02 part 1 (8 instances' worth of
requests through one cache of 4,800 blocks) and a synthetic trace of more than 1 M lookups (the
shipped sample's model scaled up). The plain LRU below is the textbook per-block loop; both must
report the same hit count, so the comparison is between equal work. Prints figures, times nothing
as a test. Then the LRU capacity sweep (5 capacities) on the trace given as the first argument
(default: the shipped sample trace): one pass by LRU stack depths (hetero.stackdist) against one
replay per capacity, side by side, with their ratio.

Run: .venv/bin/python benchmarks/bench_kvcache.py [TRACE.jsonl]
"""

from __future__ import annotations

import math
import sys
import time
from collections import OrderedDict
from collections.abc import Callable, Sequence
from functools import partial
from pathlib import Path
from typing import TypeVar

import numpy as np

from hetero import stackdist, traces
from hetero.kvcache.caches import POLICIES, make_cache
from hetero.kvcache.experiment import WORKLOAD_SEED
from hetero.kvcache.replay import replay_trace
from hetero.kvcache.workload import generate_workload

T = TypeVar("T")


class PlainLRU:
    """The textbook OrderedDict LRU with prefix semantics, one Python step per block."""

    def __init__(self, capacity_blocks: int):
        self.capacity = capacity_blocks
        self.order: OrderedDict[int, None] = OrderedDict()

    def access(self, blocks: Sequence[int]) -> int:
        order = self.order
        hit = 0
        for b in blocks:
            if b not in order:
                break
            hit += 1
        for b in blocks:
            if b in order:
                order.move_to_end(b)
            else:
                order[b] = None
        while len(order) > self.capacity:
            order.popitem(last=False)
        return hit


def _best_rate(make: Callable[[], object], requests: Sequence[Sequence[int]], repeats: int = 3) -> tuple[float, int]:
    """Best lookups/s over `repeats` runs, and the hit count (the same on every run)."""
    lookups = sum(map(len, requests))
    best, hits = 0.0, -1
    for _ in range(repeats):
        access = make().access
        start = time.perf_counter()
        total = sum(map(access, requests))
        elapsed = time.perf_counter() - start
        best, hits = max(best, lookups / elapsed), total
    return best, hits


def _best_time(run: Callable[[], T], repeats: int = 3) -> tuple[float, T]:
    """Best wall time (s) of `repeats` runs, and the last run's result."""
    best, result = math.inf, None
    for _ in range(repeats):
        start = time.perf_counter()
        result = run()
        best = min(best, time.perf_counter() - start)
    return best, result


def main() -> None:
    workload = generate_workload(np.random.default_rng(WORKLOAD_SEED))
    cfg = traces.SampleTraceConfig(num_requests=50_000)
    synthetic = [r.hash_ids for r in traces.generate_sample_trace(np.random.default_rng(1), cfg)]
    inputs = (
        ("document workload (20,000 requests)", list(workload.request_blocks), 4800),
        ("synthetic chat trace (50,000 requests)", synthetic, 20000),
    )
    print(f"{'input':40s} {'lookups':>10s} {'cache':>14s} {'M lookups/s':>12s} {'vs plain LRU':>13s} {'hit rate':>9s}")
    for label, requests, capacity in inputs:
        lookups = sum(map(len, requests))
        plain, plain_hits = _best_rate(partial(PlainLRU, capacity), requests)
        rows = [("plain OrderedDict", plain, plain_hits)]
        for policy in POLICIES:
            rate, hits = _best_rate(partial(make_cache, policy, capacity), requests)
            rows.append((f"kvcache {policy.upper()}", rate, hits))
        lru_hits = rows[1][2]
        if lru_hits != plain_hits:
            raise SystemExit(f"{label}: kvcache LRU hit {lru_hits} blocks, plain LRU {plain_hits}: they must agree")
        for name, rate, hits in rows:
            print(
                f"{label:40s} {lookups:10,d} {name:>14s} {rate / 1e6:12.2f} {rate / plain:12.2f}x {hits / lookups:9.1%}"
            )
    # The LRU capacity sweep of `python -m hetero.kvcache TRACE`: 5 capacities in one pass (LRU stack
    # depths) against one replay per capacity; both must give the same hit counts.
    path = Path(sys.argv[1]) if len(sys.argv) > 1 else traces.SAMPLE_TRACE
    trace = traces.read_trace(path)
    capacities = (1000, 5000, 10000, 20000, 50000)
    one_pass_s, sweep = _best_time(lambda: stackdist.lru_stack_sweep(trace, capacities))
    replay_s, rows = _best_time(lambda: [replay_trace(trace, c, "lru") for c in capacities])
    for j, (capacity, row) in enumerate(zip(capacities, rows, strict=True)):
        if (sweep["block_hits"][j], sweep["token_hits"][j]) != (row["block_hits"], row["token_hits"]):
            raise SystemExit(
                f"capacity {capacity}: one pass hit {sweep['block_hits'][j]} blocks / "
                f"{sweep['token_hits'][j]} tokens, replay {row['block_hits']} / {row['token_hits']}"
            )
    lookups = sum(len(r.hash_ids) for r in trace)
    print(
        f"\nLRU capacity sweep on {path.name} ({len(trace):,} requests, {lookups:,} lookups), "
        f"capacities {capacities} blocks (best of 3):"
    )
    print(f"{'one pass (stack depths)':>26s} {'one replay per capacity':>24s} {'ratio':>7s}")
    print(f"{one_pass_s:24.3f} s {replay_s:22.3f} s {replay_s / one_pass_s:6.2f}x")
    print("block hit rates " + ", ".join(f"{x:.1%}" for x in sweep["block_hit_rate"]))


if __name__ == "__main__":
    main()
