"""Trace mode: a Mooncake-format trace (`hetero.traces`) replayed on the paper's cluster (§8) under a
stated cost model (`TraceCostModel`), every policy on the same workload."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

from hetero import catalog
from hetero.overload.config import Policy
from hetero.overload.decode import PAPER_TBT_SLO_S, PAPER_TTFT_SLO_S, DecodeModel, roofline_decode_model
from hetero.overload.simulation import AdmitFn, PredictFn, simulate
from hetero.overload.workload import Workload
from hetero.traces import TraceRequest

# The paper's testbed (§8): nodes of 8 x NVIDIA A800 80 GB. The A800 is the A100-80GB with NVLink cut to
# 400 GB/s; its dense BF16 peak (312 TFLOP/s) and HBM (80 GB, ~2 TB/s) are the catalog's A100-80GB.
PAPER_GPU = "A100-80GB"
# KV tokens one 8 x 80 GB instance holds after the 141.1 GB of LLaMA-3.1-70B weights and 10 % headroom,
# in the order of the lecture's §7 Q2 answer: (8 x 80e9 - 141.1e9) x 0.9 B / 320 KiB = 1,370,249 tokens
# (the lecture: about 1.37 M).
PAPER_INSTANCE_KV_TOKENS = 1_370_249


@dataclass(frozen=True)
class TraceCostModel:
    """How long a trace request takes, from its token counts, on the paper's cluster (§8).

    Prefill: the fixed-efficiency roofline of the lecture (§1.2) for `model` on one prefill instance of
    `gpus_per_instance` x `gpu`: FLOPs = 2 x params x n (the weights) + 2 x layers x attn_dim x n^2
    (causal attention), at ASSUMPTIONS["compute_efficiency"] of the dense peak; no prefix-cache reuse
    (every prompt token is computed). Decode: `DecodeModel` from the roofline of the same instance, every
    request over the trace's mean context (mean input + half the mean output), the TBT SLO `tbt_slo_s`,
    at most `decode_requests_per_instance` requests per instance (None: as many as the KV memory holds).
    LLaMA-3.1-70B stands for the paper's dummy "LLaMA2-70B-like" model (same layers, widths and KV heads).
    """

    model: str = "LLaMA-3.1-70B"
    gpu: str = PAPER_GPU
    gpus_per_instance: int = 8
    ttft_slo_s: float = PAPER_TTFT_SLO_S
    tbt_slo_s: float = PAPER_TBT_SLO_S
    decode_requests_per_instance: int | None = None

    def prefill_s(self, input_tokens: np.ndarray) -> np.ndarray:
        m = catalog.dense_model(self.model, "the prefill cost")
        g = catalog.gpu(self.gpu)
        n = input_tokens.astype(np.float64)
        flops = 2.0 * m.num_params * n + 2.0 * m.num_layers * m.attn_dim * n * n
        rate = self.gpus_per_instance * g.peak_tflops * 1e12 * catalog.ASSUMPTIONS["compute_efficiency"]
        return flops / rate

    def decode_model(self, context_tokens: int, instances: int) -> DecodeModel:
        fits = max(1, PAPER_INSTANCE_KV_TOKENS // max(1, context_tokens))
        cap = fits if self.decode_requests_per_instance is None else self.decode_requests_per_instance
        return roofline_decode_model(
            self.model, self.gpu, self.gpus_per_instance, max(1, context_tokens), self.tbt_slo_s, cap, instances
        )


def trace_workload(requests: Sequence[TraceRequest], speedup: float, cost: TraceCostModel) -> Workload:
    """Arrivals at timestamp / speedup; prefill times from the cost model; output lengths in tokens."""
    if not (math.isfinite(speedup) and speedup > 0):
        raise ValueError(f"speedup must be a finite number > 0, got {speedup}")
    if not requests:
        raise ValueError("the trace has no requests")
    ts = np.array([r.timestamp_ms for r in requests], dtype=np.float64) / 1000.0 / speedup
    arrival = ts - ts[0]
    prefill = cost.prefill_s(np.array([r.input_length for r in requests]))
    tokens = np.array([r.output_length for r in requests], dtype=np.float64)
    return Workload(arrival, prefill, tokens, float(arrival[-1]) + 1.0)


def replay_trace(
    requests: Sequence[TraceRequest],
    speedup: float,
    prefill_instances: int,
    decode_instances: int,
    policies: Sequence[Policy],
    predict: PredictFn | None,
    admit: AdmitFn | None,
    cost: TraceCostModel = TraceCostModel(),
) -> dict[str, Any]:
    """Per policy: completed, rejected at arrival, wasted prefills, and their sum."""
    for name, value in (("prefill_instances", prefill_instances), ("decode_instances", decode_instances)):
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise ValueError(f"{name} must be an int >= 1, got {value!r}")
    workload = trace_workload(requests, speedup, cost)
    context = int(round(float(np.mean([r.input_length for r in requests])) + workload.decode_tokens.mean() / 2))
    decode = cost.decode_model(context, decode_instances)
    mean_tokens = float(workload.decode_tokens.mean())
    mean_decode = max(mean_tokens, 1.0) * decode.step_s(decode.max_batch)  # t_d; all-zero outputs: one step
    out: dict[str, Any] = {
        "requests": len(requests),
        "speedup": speedup,
        "prefill_instances": prefill_instances,
        "decode_instances": decode_instances,
        "decode_context_tokens": context,
        "decode_max_batch": decode.max_batch,
        "decode_step_at_max_batch_s": decode.step_s(decode.max_batch),
        "mean_prefill_s": float(workload.prefill_s.mean()),
        "prefill_capacity_per_s": prefill_instances / float(workload.prefill_s.mean()),
        "decode_capacity_per_s": decode.max_batch / mean_decode,
        "arrival_rate_per_s": len(requests) / workload.duration_s,
        "mean_decode_s": mean_decode,
        "cost_model": asdict(cost),
        "decode_model": asdict(decode),
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
        out["policies"][policy.name] = c
    return out
