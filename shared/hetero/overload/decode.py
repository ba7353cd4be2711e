"""The decode pool's TBT model: the time of one decode step as the batch grows (the fixed-efficiency
roofline of the decode instance, lecture §1.2, `hetero.roofline`) and the one TBT-SLO threshold, the
largest batch whose step time is within the SLO and whose KV fits in HBM (`DecodeModel.max_batch`)."""

from __future__ import annotations

import math
from dataclasses import dataclass

from hetero import roofline

# KV bytes per token of LLaMA-3(.1)-70B in BF16 (80 layers x 8 KV heads x 128 x 2 (K, V) x 2 B), the
# lecture's §7 Q2 figure.
KV_BYTES_PER_TOKEN = 320 * 1024
# Mooncake §8 (metric): the end-to-end experiments set the TBT SLO to 5x the TBT of a single request;
# the real-trace runs use absolute caps, TTFT 30 s and TBT 0.1 s per token.
TBT_SLO_OVER_BATCH_1 = 5.0
PAPER_TTFT_SLO_S = 30.0
PAPER_TBT_SLO_S = 0.1


@dataclass(frozen=True)
class DecodeModel:
    """Time of one decode step as the batch grows, per decode instance, and the TBT SLO.

    step_s(b) = max(base_s + b x kv_s_per_request, b x compute_s_per_request) for a per-instance batch
    of b requests (the roofline's memory and compute times of a decode step, both linear in b). The pool
    has `instances` instances and places each request on the least-loaded one, so a pool batch of B
    requests runs at per-instance batch ceil(B / instances) (a balanced pool; the slowest instance sets
    the step). `kv_capacity_requests`: requests whose KV fits in one instance's HBM."""

    base_s: float  # weights read once per step
    kv_s_per_request: float  # one request's KV read per step
    compute_s_per_request: float  # one token's FLOPs (weights + attention over its context) per step
    tbt_slo_s: float
    kv_capacity_requests: int
    instances: int = 1

    def validate(self) -> DecodeModel:
        for name in ("base_s", "kv_s_per_request", "compute_s_per_request", "tbt_slo_s"):
            value = getattr(self, name)
            if isinstance(value, bool) or not (isinstance(value, (int, float)) and math.isfinite(value) and value >= 0):
                raise ValueError(f"decode.{name} must be a finite number >= 0, got {value!r}")
        for name in ("kv_capacity_requests", "instances"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ValueError(f"decode.{name} must be an int >= 1, got {value!r}")
        if self.step_s(1) > self.tbt_slo_s:
            raise ValueError(
                f"decode.tbt_slo_s ({self.tbt_slo_s} s) is below the step time of a single request "
                f"({self.step_s(1)} s): no batch meets it"
            )
        return self

    def step_s(self, batch: int) -> float:
        """Seconds of one decode step with `batch` requests in the pool (0 for an empty pool)."""
        per_instance = -(-int(batch) // self.instances)
        if per_instance == 0:
            return 0.0
        return max(self.base_s + per_instance * self.kv_s_per_request, per_instance * self.compute_s_per_request)

    @property
    def max_batch_per_instance(self) -> int:
        """Largest per-instance batch whose step time is within the TBT SLO and whose KV fits."""
        kv, compute = self.kv_s_per_request, self.compute_s_per_request
        by_memory = math.inf if kv == 0 else (self.tbt_slo_s - self.base_s) / kv
        by_compute = math.inf if compute == 0 else self.tbt_slo_s / compute
        limit = min(by_memory, by_compute, float(self.kv_capacity_requests))
        b = int(math.floor(limit + 1e-9))
        while b > 1 and self._instance_step(b) > self.tbt_slo_s:  # guard against rounding at the boundary
            b -= 1
        return max(1, b)

    def _instance_step(self, b: int) -> float:
        return max(self.base_s + b * self.kv_s_per_request, b * self.compute_s_per_request)

    @property
    def max_batch(self) -> int:
        """The threshold of the whole pool (requests; TBT SLO or KV memory): the arrival checks and decode entry use it."""
        return self.max_batch_per_instance * self.instances

    def step_table(self) -> list[float]:
        """step_s(b) for b = 0 .. max_batch (index = pool batch)."""
        return [self.step_s(b) for b in range(self.max_batch + 1)]


def roofline_decode_model(
    model: str,
    gpu: str,
    num_gpus: int,
    context_tokens: int,
    tbt_slo_s: float | None,
    kv_capacity_requests: int,
    instances: int = 1,
) -> DecodeModel:
    """A DecodeModel from `hetero.roofline.decode_step` (catalog hardware, ASSUMPTIONS efficiencies):
    every decoding request reads `context_tokens` tokens of KV. `tbt_slo_s` None: the paper's rule,
    TBT_SLO_OVER_BATCH_1 x the single-request step."""
    one = roofline.decode_step(model, gpu, num_gpus, 1, context_tokens, KV_BYTES_PER_TOKEN)
    two = roofline.decode_step(model, gpu, num_gpus, 2, context_tokens, KV_BYTES_PER_TOKEN)
    kv_s = two.memory_s - one.memory_s
    slo = TBT_SLO_OVER_BATCH_1 * one.time_s if tbt_slo_s is None else tbt_slo_s
    return DecodeModel(
        base_s=one.memory_s - kv_s,
        kv_s_per_request=kv_s,
        compute_s_per_request=one.compute_s,
        tbt_slo_s=slo,
        kv_capacity_requests=kv_capacity_requests,
        instances=instances,
    ).validate()
