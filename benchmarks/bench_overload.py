"""Speed of the overload simulator (hetero.overload); prints figures, asserts nothing about time.

1. The one-hour lecture configuration per policy: wall time and simulated seconds per wall second,
   side by side with a naive discrete-event loop written here (the next event found by scanning a
   list, the prefill instance and the next decode completion by scanning all), which must give
   identical counts; then the short-prefill configuration. Target: one simulated hour <= 0.2 s.
2. Replay of a 12,000-request one-hour trace (generated here with a seeded generator, written as
   Mooncake JSONL and read back with hetero.traces; or the trace given as the first argument) on
   8 prefill + 8 decode instances at 2x (prefix reuse on, the default), every policy, one replay each,
   then the CLI's --policy all (4 policies) and all 5 in one replay_trace call each, as the CLI runs it.
   Target: <= 1 s. The predictive replays call ex05's predicted_decode_load once per decode instance
   per arrival (8 calls).

Run: .venv/bin/python benchmarks/bench_overload.py [TRACE.jsonl]
"""

from __future__ import annotations

import json
import math
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from hetero import overload as ov
from hetero.impl import load_exercise
from hetero.overload.cli import cli_policies
from hetero.traces import read_trace


def naive_simulate(
    w: ov.Workload, config: ov.OverloadConfig, policy: ov.Policy, predict, admit
) -> tuple[int, int, int]:
    """The same model as ov.simulate on one decode instance, without heaps: O(events) scans per step."""
    d = config.decode
    assert d.instances == 1, "the naive loop models one decode instance (the lecture's toy)"
    ctx = w.contexts()
    free_at = [0.0] * config.prefill_instances
    pending: list[tuple[float, int, int, int]] = []  # (time, seq, kind, request): arrivals and prefill ends
    in_prefill: dict[int, float] = {}
    decoding: dict[int, float] = {}  # request -> decode start
    left: dict[int, float] = {}  # request -> tokens still to emit
    completed = rejected = wasted = 0
    seq = 0
    t_now = 0.0
    n = w.arrival_s.size
    if n:
        pending.append((float(w.arrival_s[0]), 0, 0, 0))

    def kv() -> int:
        return sum(ctx[j] for j in decoding)

    while pending or decoding:
        step = d.step_s(len(decoding), kv())
        t_done = t_now + min(left.values()) * step if decoding else math.inf
        event = min(pending) if pending else None
        if event is None or t_done < event[0]:
            for i in left:
                left[i] -= (t_done - t_now) / step
            t_now = t_done
            for i in [i for i, k in left.items() if k <= 1e-9]:
                del left[i], decoding[i]
                completed += 1
            continue
        pending.remove(event)
        t, _, kind, i = event
        if decoding:
            for j in left:
                left[j] -= (t - t_now) / step
        t_now = t
        if kind == 0:
            if i + 1 < n:
                seq += 1
                pending.append((float(w.arrival_s[i + 1]), seq, 0, i + 1))
            j = min(range(len(free_at)), key=free_at.__getitem__)
            done = max(t, free_at[j]) + float(w.prefill_s[i])
            ok = done - t <= config.ttft_slo_s
            if ok and policy.kind == "early":
                ok = d.load(len(decoding) + 1, kv() + ctx[i]) <= 1.0
            if ok and policy.kind == "predictive":
                members = len(decoding) + len(in_prefill)
                count = predict(done, list(decoding.values()), list(in_prefill.values()), config.decode_mean_s)
                committed = kv() + sum(ctx[j] for j in in_prefill)
                tokens = (count * committed / members if members else 0.0) + ctx[i]
                ok = admit(d.load(count + 1, tokens), 1, policy.oversubscription)
            if not ok:
                rejected += 1
                continue
            free_at[j] = done
            in_prefill[i] = done
            seq += 1
            pending.append((done, seq, 1, i))
        else:
            del in_prefill[i]
            if d.load(len(decoding) + 1, kv() + ctx[i]) <= 1.0:
                decoding[i] = t
                left[i] = float(w.decode_tokens[i])
            else:
                wasted += 1
    return completed, rejected, wasted


def write_trace(path: Path, rng: np.random.Generator, n: int = 12_000, hour_ms: int = 3_600_000) -> None:
    """Poisson-like timestamps over one hour; lognormal inputs (mean ~8,600 tokens), outputs (mean ~180)."""
    ts = np.sort(rng.integers(0, hour_ms, size=n))
    inputs = np.clip(rng.lognormal(math.log(8590) - 0.5, 1.0, size=n), 16, 128_000).astype(int)
    outputs = np.clip(rng.lognormal(math.log(182) - 0.32, 0.8, size=n), 1, 4_000).astype(int)
    with path.open("w", encoding="utf-8") as fh:
        for t, i, o in zip(ts, inputs, outputs, strict=True):
            blocks = -(-int(i) // 512)
            fh.write(
                json.dumps(
                    {
                        "timestamp": int(t),
                        "input_length": int(i),
                        "output_length": int(o),
                        "hash_ids": list(range(blocks)),
                    }
                )
                + "\n"
            )


def predictor_alone_s(requests, policy: ov.Policy, predict, admit) -> tuple[float, int, int]:
    """The predictive replay's calls of `predict`, recorded, then timed alone: the part of its wall time
    that is the prediction function's own (not the event loop's)."""
    calls: list[tuple] = []

    def record(enter_s, decoding_since_s, prefill_done_s, mean_s):
        calls.append((enter_s, list(decoding_since_s), list(prefill_done_s), mean_s))
        return predict(enter_s, decoding_since_s, prefill_done_s, mean_s)

    ov.replay_trace(requests, 2.0, 8, 8, [policy], record, admit)
    start = time.perf_counter()
    for call in calls:
        predict(*call)
    return time.perf_counter() - start, len(calls), sum(len(c[1]) + len(c[2]) for c in calls)


def main() -> None:
    key = load_exercise("ex05", "solutions")
    predict, admit = key.predicted_decode_load, key.admit_predictive
    for label, config in (
        ("lecture configuration (10-20 s prefills)", ov.DEFAULT),
        ("short-prefill configuration (2-6 s prefills)", ov.SHORT_PREFILL),
    ):
        w = ov.poisson_workload(config, np.random.default_rng(0))
        print(f"1) {label}, one simulated hour ({w.arrival_s.size} arrivals), seed 0")
        print(
            f"   {'policy':<16} {'heap DES s':>10} {'sim s / wall s':>15} {'naive s':>9} {'naive / heap':>13} {'same counts':>12}"
        )
        for policy in ov.POLICIES:
            start = time.perf_counter()
            r = ov.simulate_config(config, w, policy, predict, admit)
            fast = time.perf_counter() - start
            start = time.perf_counter()
            naive = naive_simulate(w, config, policy, predict, admit)
            slow = time.perf_counter() - start
            same = naive == (r.completed, r.rejected_at_arrival, r.wasted_prefills)
            print(
                f"   {policy.name:<16} {fast:>10.3f} {config.duration_s / fast:>15.0f} {slow:>9.3f} {slow / fast:>13.1f} "
                f"{str(same):>12}"
            )
    with tempfile.TemporaryDirectory() as tmp:
        if len(sys.argv) > 1:
            path = Path(sys.argv[1])
        else:
            path = Path(tmp) / "trace_12k.jsonl"
            write_trace(path, np.random.default_rng(12_000))
        start = time.perf_counter()
        requests = read_trace(path)
        read_s = time.perf_counter() - start
        print(
            f"\n2) trace replay: {len(requests)} requests from {path.name}, read in {read_s:.3f} s; 8 + 8 "
            "instances, 2x, every policy"
        )
        total = predict_total = 0.0
        for policy in ov.POLICIES:
            start = time.perf_counter()
            out = ov.replay_trace(requests, 2.0, 8, 8, [policy], predict, admit)
            wall = time.perf_counter() - start
            total += wall
            c = out["policies"][policy.name]
            note = ""
            if policy.kind == "predictive":
                alone, calls, entries = predictor_alone_s(requests, policy, predict, admit)
                predict_total += alone
                note = f"; the predictor alone {alone:.3f} s ({calls} calls, {entries / calls:.0f} list entries each)"
            print(
                f"   {policy.name:<16} wall {wall:.3f} s  completed {c['completed']}, rejected at arrival "
                f"{c['rejected_at_arrival']}, wasted {c['wasted_prefills']}{note}"
            )
        print(
            f"   all {len(ov.POLICIES)} policies, one replay_trace call each: {total:.3f} s, of which the answer "
            f"key's predicted_decode_load alone {predict_total:.3f} s"
        )
        for label, policies in (
            ("the CLI's --policy all (4 policies)", cli_policies("all", 1.1)),
            (f"all {len(ov.POLICIES)} policies", list(ov.POLICIES)),
        ):
            start = time.perf_counter()
            ov.replay_trace(requests, 2.0, 8, 8, policies, predict, admit)
            print(
                f"   {label} in one replay_trace call (one workload, as the CLI runs it): "
                f"{time.perf_counter() - start:.3f} s (target <= 1 s)"
            )


if __name__ == "__main__":
    main()
