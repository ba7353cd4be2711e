"""Speed of the overload simulator (hetero.overload); prints figures, asserts nothing about time.

1. The one-hour default configuration per policy: wall time and simulated seconds per wall second,
   side by side with a naive discrete-event loop written here (the next event found by scanning a
   list, the prefill instance by scanning all instances), which must give identical counts; then the
   one-hour long-prefill configurations (the chosen one, decode load seen live; the deep-queue one,
   decode load as last reported) per policy.
2. Replay of a 12,000-request one-hour trace (generated here with a seeded generator, written as
   Mooncake JSONL and read back with hetero.traces) on 8 prefill + 8 decode instances at 2x.

Run: .venv/bin/python benchmarks/bench_overload.py
"""

from __future__ import annotations

import json
import math
import tempfile
import time
from pathlib import Path

import numpy as np

from hetero import overload as ov
from hetero.impl import load_exercise
from hetero.traces import read_trace


def naive_simulate(w: ov.Workload, config: ov.OverloadConfig, policy: ov.Policy, predict, admit) -> tuple[int, int, int]:
    """The same model as ov.simulate without a heap: O(events) scans per step."""
    free_at = [0.0] * config.prefill_instances
    pending: list[tuple[float, int, int, int]] = []  # (time, seq, kind, request)
    in_prefill: dict[int, float] = {}
    decoding: dict[int, float] = {}
    completed = rejected = wasted = 0
    seq = 0
    n = w.arrival_s.size
    if n:
        pending.append((float(w.arrival_s[0]), 0, 0, 0))
    while pending:
        event = min(pending)
        pending.remove(event)
        t, _, kind, i = event
        if kind == 0:
            if i + 1 < n:
                seq += 1
                pending.append((float(w.arrival_s[i + 1]), seq, 0, i + 1))
            j = min(range(len(free_at)), key=free_at.__getitem__)
            done = max(t, free_at[j]) + float(w.prefill_s[i])
            ok = done - t <= config.ttft_slo_s
            if ok and policy.kind == "early":
                ok = len(decoding) < config.decode_slots
            if ok and policy.kind == "predictive":
                load = predict(done, list(decoding.values()), list(in_prefill.values()), config.decode_mean_s)
                ok = admit(load, config.decode_slots, policy.oversubscription)
            if not ok:
                rejected += 1
                continue
            free_at[j] = done
            in_prefill[i] = done
            seq += 1
            pending.append((done, seq, 1, i))
        elif kind == 1:
            del in_prefill[i]
            if len(decoding) < config.decode_slots:
                decoding[i] = t
                seq += 1
                pending.append((t + float(w.decode_s[i]), seq, 2, i))
            else:
                wasted += 1
        else:
            del decoding[i]
            completed += 1
    return completed, rejected, wasted


def write_trace(path: Path, rng: np.random.Generator, n: int = 12_000, hour_ms: int = 3_600_000) -> None:
    """Poisson-like timestamps over one hour; lognormal inputs (mean ~8,600 tokens), outputs (mean ~180)."""
    ts = np.sort(rng.integers(0, hour_ms, size=n))
    inputs = np.clip(rng.lognormal(math.log(8590) - 0.5, 1.0, size=n), 16, 128_000).astype(int)
    outputs = np.clip(rng.lognormal(math.log(182) - 0.32, 0.8, size=n), 1, 4_000).astype(int)
    with path.open("w", encoding="utf-8") as fh:
        for t, i, o in zip(ts, inputs, outputs):
            blocks = -(-int(i) // 512)
            fh.write(json.dumps({"timestamp": int(t), "input_length": int(i), "output_length": int(o),
                                 "hash_ids": list(range(blocks))}) + "\n")


def main() -> None:
    key = load_exercise("ex05", "solutions")
    predict, admit = key.predicted_decode_load, key.admit_predictive
    config = ov.DEFAULT
    w = ov.poisson_workload(config, np.random.default_rng(0))
    print(f"1) default configuration, one simulated hour ({w.arrival_s.size} arrivals), seed 0")
    print(f"   {'policy':<16} {'heap DES s':>10} {'sim s / wall s':>15} {'naive s':>9} {'naive / heap':>13} {'same counts':>12}")
    for policy in ov.POLICIES:
        start = time.perf_counter()
        r = ov.simulate_config(config, w, policy, predict, admit)
        fast = time.perf_counter() - start
        start = time.perf_counter()
        naive = naive_simulate(w, config, policy, predict, admit)
        slow = time.perf_counter() - start
        same = naive == (r.completed, r.rejected_at_arrival, r.wasted_prefills)
        print(f"   {policy.name:<16} {fast:>10.3f} {config.duration_s / fast:>15.0f} {slow:>9.3f} {slow / fast:>13.1f} {str(same):>12}")
    for label, long in ((f"long-prefill configuration (TTFT SLO 20 s, decode load seen live, arrival checks at "
                         f"{ov.LONG_PREFILL.admit_threshold} of {ov.LONG_PREFILL.decode_slots} slots)", ov.LONG_PREFILL),
                        ("hard-limit long-prefill configuration (arrival checks at the hard capacity)",
                         ov.LONG_PREFILL_HARD_LIMIT),
                        ("deep-queue long-prefill configuration (decode load reported every "
                         f"{ov.LONG_PREFILL_DEEP_QUEUE.load_report_interval_s:g} s)", ov.LONG_PREFILL_DEEP_QUEUE)):
        w = ov.poisson_workload(long, np.random.default_rng(0))
        print(f"\n   {label}, one simulated hour, seed 0")
        for policy in ov.OSCILLATION_POLICIES:
            start = time.perf_counter()
            ov.simulate_config(long, w, policy, predict, admit)
            wall = time.perf_counter() - start
            print(f"   {policy.name:<16} {wall:>10.3f} {long.duration_s / wall:>15.0f}")
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "trace_12k.jsonl"
        write_trace(path, np.random.default_rng(12_000))
        start = time.perf_counter()
        requests = read_trace(path)
        read_s = time.perf_counter() - start
        print(f"\n2) trace replay: {len(requests)} requests over one hour, read in {read_s:.3f} s; 8 + 8 instances, 2x")
        for slots in (ov.TraceCostModel.decode_slots_per_instance, 8):
            cost = ov.TraceCostModel(decode_slots_per_instance=slots)
            for policy in ov.POLICIES[:3]:
                start = time.perf_counter()
                out = ov.replay_trace(requests, 2.0, 8, 8, [policy], predict, admit, cost)
                wall = time.perf_counter() - start
                c = out["policies"][policy.name]
                print(f"   slots/instance {slots:>3}  {policy.name:<11} wall {wall:.3f} s "
                      f"({1800.0 / wall:.0f} simulated s per wall s)  completed {c['completed']}, "
                      f"rejected at arrival {c['rejected_at_arrival']}, wasted {c['wasted_prefills']}")


if __name__ == "__main__":
    main()
