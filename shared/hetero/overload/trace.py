"""Trace mode: a Mooncake-format trace (`hetero.traces`) replayed on the paper's cluster (§8) under a
stated cost model (`TraceCostModel`), every policy on the same workload; the roofline arithmetic of its
decode pool (`decode_arithmetic`); and the sensitivity sweep over the decode capacity per instance and the
TBT SLO (`sweep`), beside the paper's rejected counts."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import asdict, dataclass, replace
from typing import Any

import numpy as np

from hetero import catalog
from hetero.overload.config import PAPER_REJECTED, Policy
from hetero.overload.decode import (
    PAPER_TBT_SLO_S,
    PAPER_TTFT_SLO_S,
    DecodeModel,
    instance_kv_tokens,
    roofline_decode_model,
)
from hetero.overload.simulation import AdmitFn, PredictFn, simulate
from hetero.overload.workload import PrefixReuse, Workload
from hetero.traces import BLOCK_TOKENS, TraceRequest

# The paper's testbed (§8): nodes of 8 x NVIDIA A800 80 GB. The A800 is the A100-80GB with NVLink cut to
# 400 GB/s; its dense BF16 peak (312 TFLOP/s) and HBM (80 GB, ~2 TB/s) are the catalog's A100-80GB.
PAPER_GPU = "A100-80GB"
# KV tokens one 8 x 80 GB instance holds after the 141.1 GB of LLaMA-3.1-70B weights and 10 % headroom,
# in the order of the lecture's §7 Q2 answer: (8 x 80e9 - 141.1e9) x 0.9 B / 320 KiB = 1,370,249 tokens
# (the lecture: about 1.37 M).
PAPER_INSTANCE_KV_TOKENS = 1_370_249
# The paper's experiment (§8.2): 8 prefill + 8 decode instances, the trace replayed at 2x.
PAPER_PREFILL_INSTANCES = 8
PAPER_DECODE_INSTANCES = 8
PAPER_SPEEDUP = 2.0
# The sweep's grid, fixed before it was run (docs/figures_overload.md). Capacity per instance: the
# engine's batch cap (requests one decode instance runs at once; None: only its HBM and the TBT SLO limit
# it), from none down to 2. TBT SLO: the paper's real-trace cap 0.1 s down to 15 ms (a single request of
# the conversation trace's mean context reads 11.1 ms per step on the paper's instance).
SWEEP_CAPS: tuple[int | None, ...] = (None, 32, 16, 8, 4, 2)
SWEEP_TBT_SLOS_S: tuple[float, ...] = (0.1, 0.05, 0.03, 0.02, 0.015)
SWEEP_POLICIES: tuple[Policy, ...] = (
    Policy("baseline", "baseline"),
    Policy("early", "early"),
    Policy("predictive", "predictive"),
)


@dataclass(frozen=True)
class TraceCostModel:
    """How long a trace request takes, from its token counts, on the paper's cluster (§8).

    Prefill: the fixed-efficiency roofline of the lecture (§1.2) for `model` on one prefill instance of
    `gpus_per_instance` x `gpu`: FLOPs = 2 x params x n (the weights) + 2 x layers x attn_dim x n^2
    (causal attention), at ASSUMPTIONS["compute_efficiency"] of the dense peak. With `prefix_reuse` and a
    trace that carries block hashes, the prefix already in the global pool is fetched, not computed
    (`PrefixReuse`). Decode: `DecodeModel` from the roofline of the same instance; each request holds its
    own prompt's KV (`input_length` tokens; the few hundred output tokens it adds are left out). The
    decode capacity is explicit: `decode_kv_tokens_per_instance` (None: what the HBM holds,
    PAPER_INSTANCE_KV_TOKENS), `decode_requests_per_instance` (an engine batch cap; None: none) and the
    TBT SLO `tbt_slo_s`. LLaMA-3.1-70B stands for the paper's dummy "LLaMA2-70B-like" model (same layers,
    widths and KV heads).
    """

    model: str = "LLaMA-3.1-70B"
    gpu: str = PAPER_GPU
    gpus_per_instance: int = 8
    ttft_slo_s: float = PAPER_TTFT_SLO_S
    tbt_slo_s: float = PAPER_TBT_SLO_S
    decode_requests_per_instance: int | None = None
    decode_kv_tokens_per_instance: int | None = None
    prefix_reuse: bool = True

    def _rate(self) -> float:
        g = catalog.gpu(self.gpu)
        return self.gpus_per_instance * g.peak_tflops * 1e12 * catalog.ASSUMPTIONS["compute_efficiency"]

    def prefill_coefficients(self) -> tuple[float, float]:
        """(seconds per prompt token, seconds per unit of n^2) of a prefill on one instance."""
        m = catalog.dense_model(self.model, "the prefill cost")
        rate = self._rate()
        return 2.0 * m.num_params / rate, 2.0 * m.num_layers * m.attn_dim / rate

    def prefill_s(self, input_tokens: np.ndarray) -> np.ndarray:
        """Prefill seconds of whole prompts (nothing cached)."""
        a, b = self.prefill_coefficients()
        n = input_tokens.astype(np.float64)
        return a * n + b * n * n

    def decode_model(self, instances: int) -> DecodeModel:
        kv = self.decode_kv_tokens_per_instance
        if kv is None:
            kv = instance_kv_tokens(self.model, self.gpu, self.gpus_per_instance)
        return roofline_decode_model(
            self.model,
            self.gpu,
            self.gpus_per_instance,
            self.tbt_slo_s,
            kv,
            instances,
            self.decode_requests_per_instance,
        )


def trace_workload(requests: Sequence[TraceRequest], speedup: float, cost: TraceCostModel) -> Workload:
    """Arrivals at timestamp / speedup; prefill times from the cost model (with prefix reuse where the trace
    carries block hashes and the cost model asks for it); each request's own prompt as its decode context."""
    if not (math.isfinite(speedup) and speedup > 0):
        raise ValueError(f"speedup must be a finite number > 0, got {speedup}")
    if not requests:
        raise ValueError("the trace has no requests")
    ts = np.array([r.timestamp_ms for r in requests], dtype=np.float64) / 1000.0 / speedup
    arrival = ts - ts[0]
    inputs = np.array([r.input_length for r in requests], dtype=np.int64)
    prefill = cost.prefill_s(inputs)
    tokens = np.array([r.output_length for r in requests], dtype=np.float64)
    prefix = None
    if cost.prefix_reuse and any(r.hash_ids for r in requests):
        a, b = cost.prefill_coefficients()
        prefix = PrefixReuse(tuple(r.hash_ids for r in requests), a, b, BLOCK_TOKENS)
    return Workload(arrival, prefill, tokens, float(arrival[-1]) + 1.0, inputs, prefix)


def decode_arithmetic(workload: Workload, decode: DecodeModel) -> dict[str, Any]:
    """The roofline arithmetic of the decode pool against the trace's demand (plain floats).

    Every request at the trace's mean context c and mean output o. Capacity: N instances of B requests
    (the most an instance runs within its limits at c), each request decoding o steps of step(B), so
    N x B / (o x step(B)) req/s. Demand: at an arrival rate r every decoded request is in the pool for
    o x step(b) s, so the mean batch per instance b solves b = r x o x step(b) / N (Little's law; step is
    affine in b, so the fixed point is found exactly)."""
    c = float(np.mean(workload.contexts()))
    o = float(workload.decode_tokens.mean())
    rate = len(workload.arrival_s) / workload.duration_s
    n = decode.instances
    context = max(1, int(round(c)))
    full = decode.max_batch_per_instance(context)
    step_full = decode.step_s(full, full * c) if full else math.inf
    capacity = n * full / (o * step_full) if full and o > 0 else math.inf
    # step(b) = max(base + kv_token x b c, b x (req + token c)) on one instance, b requests of c tokens;
    # the fixed point of b = r o step(b) / N by iteration from an empty pool (it converges when the pool
    # keeps up and grows without bound when it cannot).
    k = rate * o / n

    def step(batch: float) -> float:
        memory = decode.base_s + decode.kv_s_per_token * batch * c
        compute = batch * (decode.compute_s_per_request + decode.compute_s_per_token * c)
        return max(memory, compute)

    b = 0.0
    for _ in range(10_000):
        nxt = k * step(b)
        if nxt > 1e7:
            b = math.inf
            break
        if abs(nxt - b) <= 1e-12 * max(1.0, b):
            b = nxt
            break
        b = nxt
    step_b = step(b) if math.isfinite(b) else math.inf
    return {
        "instances": n,
        "arrival_rate_per_s": rate,
        "mean_context_tokens": c,
        "mean_output_tokens": o,
        "single_request_step_s": decode.step_s(1, c),
        "full_batch_per_instance": full,
        "binding_at_full_batch": decode.binding(context),
        "step_at_full_batch_s": step_full,
        "capacity_per_s": capacity,
        "capacity_over_arrivals": capacity / rate if rate > 0 else math.inf,
        "littles_law_batch_per_instance": b,
        "step_at_littles_law_batch_s": step_b,
        "littles_law_utilisation": b / full if full else math.inf,
    }


def replay_trace(
    requests: Sequence[TraceRequest],
    speedup: float,
    prefill_instances: int,
    decode_instances: int,
    policies: Sequence[Policy],
    predict: PredictFn | None,
    admit: AdmitFn | None,
    cost: TraceCostModel = TraceCostModel(),
    workload: Workload | None = None,
) -> dict[str, Any]:
    """Per policy: completed, rejected at arrival, wasted prefills, and their sum; the decode pool's
    arithmetic. `workload`: the trace's workload already built with the same speedup and cost model."""
    for name, value in (("prefill_instances", prefill_instances), ("decode_instances", decode_instances)):
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise ValueError(f"{name} must be an int >= 1, got {value!r}")
    if workload is None:
        workload = trace_workload(requests, speedup, cost)
    decode = cost.decode_model(decode_instances)
    arithmetic = decode_arithmetic(workload, decode)
    mean_tokens = float(workload.decode_tokens.mean())
    # t_d, the uniform decode time of the system-level prediction: the mean output at a full instance's
    # step time for the mean context (as in the toy); all-zero outputs: one step.
    mean_decode = max(mean_tokens, 1.0) * arithmetic["step_at_full_batch_s"]
    mean_prefill = float(workload.prefill_s.mean())
    out: dict[str, Any] = {
        "requests": len(requests),
        "speedup": speedup,
        "prefill_instances": prefill_instances,
        "decode_instances": decode_instances,
        "decode_context_tokens": arithmetic["mean_context_tokens"],
        "decode_max_batch": arithmetic["full_batch_per_instance"] * decode_instances,
        "decode_binding": arithmetic["binding_at_full_batch"],
        "decode_step_at_max_batch_s": arithmetic["step_at_full_batch_s"],
        "mean_prefill_s": mean_prefill,
        "prefill_capacity_per_s": prefill_instances / mean_prefill,
        "decode_capacity_per_s": arithmetic["capacity_per_s"],
        "arrival_rate_per_s": arithmetic["arrival_rate_per_s"],
        "mean_decode_s": mean_decode,
        "prefix_reuse": workload.prefix is not None,
        "cost_model": asdict(cost),
        "decode_model": asdict(decode),
        "decode_arithmetic": arithmetic,
        "policies": {},
    }
    for policy in policies:
        result = simulate(
            workload,
            prefill_instances,
            decode,
            cost.ttft_slo_s,
            mean_decode,
            policy,
            predict,
            admit,
            sample_dt_s=max(1.0, workload.duration_s / 4096),
        )
        c = result.counts()
        c["rejected_total"] = c["rejected_at_arrival"] + c["wasted_prefills"]
        c["cached_token_fraction"] = result.cached_tokens / result.prompt_tokens if result.prompt_tokens else 0.0
        c["prefill_busy_s"] = round(result.prefill_busy_s, 6)
        c["decode_load_mean"] = float(result.decode_load.mean())
        c["decode_load_max"] = int(result.decode_load.max()) if result.decode_load.size else 0
        out["policies"][policy.name] = c
    return out


def sweep(
    requests: Sequence[TraceRequest],
    predict: PredictFn,
    admit: AdmitFn,
    cost: TraceCostModel = TraceCostModel(),
    caps: Sequence[int | None] = SWEEP_CAPS,
    tbt_slos_s: Sequence[float] = SWEEP_TBT_SLOS_S,
    speedup: float = PAPER_SPEEDUP,
    prefill_instances: int = PAPER_PREFILL_INSTANCES,
    decode_instances: int = PAPER_DECODE_INSTANCES,
    policies: Sequence[Policy] = SWEEP_POLICIES,
) -> dict[str, Any]:
    """Every (capacity per instance, TBT SLO) cell: the policies' rejected totals on the same workload,
    with the decode pool's arithmetic, beside the paper's rejected counts (Mooncake §8.2)."""
    workload = trace_workload(requests, speedup, cost)
    cells = []
    for slo in tbt_slos_s:
        for cap in caps:
            cell_cost = replace(cost, tbt_slo_s=float(slo), decode_requests_per_instance=cap)
            out = replay_trace(
                requests,
                speedup,
                prefill_instances,
                decode_instances,
                policies,
                predict,
                admit,
                cell_cost,
                workload,
            )
            a = out["decode_arithmetic"]
            cells.append(
                {
                    "tbt_slo_s": float(slo),
                    "cap_per_instance": cap,
                    "full_batch_per_instance": a["full_batch_per_instance"],
                    "binding": a["binding_at_full_batch"],
                    "decode_capacity_per_s": a["capacity_per_s"],
                    "littles_law_utilisation": a["littles_law_utilisation"],
                    "policies": {
                        name: {
                            k: c[k]
                            for k in ("completed", "rejected_at_arrival", "rejected_for_decode", "wasted_prefills")
                        }
                        | {"rejected_total": c["rejected_total"]}
                        for name, c in out["policies"].items()
                    },
                    "ordering": ordering({name: c["rejected_total"] for name, c in out["policies"].items()}),
                }
            )
    first = replay_trace(requests, speedup, prefill_instances, decode_instances, [], None, None, cost, workload)
    return {
        "requests": len(requests),
        "speedup": speedup,
        "prefill_instances": prefill_instances,
        "decode_instances": decode_instances,
        "prefix_reuse": workload.prefix is not None,
        "arrival_rate_per_s": first["arrival_rate_per_s"],
        "mean_prefill_s": first["mean_prefill_s"],
        "prefill_capacity_per_s": first["prefill_capacity_per_s"],
        "decode_arithmetic": first["decode_arithmetic"],
        "cost_model": asdict(cost),
        "caps": list(caps),
        "tbt_slos_s": [float(s) for s in tbt_slos_s],
        "cells": cells,
        "paper_rejected": dict(PAPER_REJECTED),
        "paper_ordering": ordering(PAPER_REJECTED),
    }


def ordering(rejected: dict[str, int]) -> str:
    """The policies from most to fewest rejections, '=' between equal counts: 'baseline > early > predictive'."""
    names = sorted(rejected, key=lambda k: -rejected[k])
    text = names[0] if names else ""
    for prev, name in zip(names, names[1:], strict=False):
        text += (" = " if rejected[name] == rejected[prev] else " > ") + name
    return text
