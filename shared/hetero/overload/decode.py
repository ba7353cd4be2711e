"""A decode instance's TBT model and its load as Mooncake defines it (report §7: load is SLO satisfaction).

One decode step of an instance emits one token for each request in its batch. Its time is the
fixed-efficiency roofline of the instance (lecture §1.2, `hetero.roofline`) for a batch of `requests`
requests whose contexts add up to `kv_tokens` tokens (each request reads its own context's KV):

    step(requests, kv_tokens) = max(base_s + kv_s_per_token x kv_tokens,                    memory
                                    requests x compute_s_per_request + compute_s_per_token x kv_tokens)  compute

The instance's **load** is its predicted TBT over the TBT SLO, step / tbt_slo_s (Mooncake: "the predicted
TBT ... against l_tbt", instead of "the number of requests being processed over the maximum capacity").
A decode instance also has two hard limits the TBT does not show: its HBM holds the KV of at most
`kv_capacity_tokens` tokens, and an engine may cap its batch at `max_requests`. A batch over either
cannot run at any TBT, so the load is the greatest of the three ratios:

    load = max(step / tbt_slo_s, kv_tokens / kv_capacity_tokens, requests / max_requests)

and an instance can take a batch iff its load is <= 1 (every ratio within its limit). Which ratio binds
is a property of the configuration: the lecture's toy (131,072-token contexts on 8 x H20) fills its HBM
at a TBT 0.76 x the SLO, so its memory binds; trace mode's tighter SLOs make the TBT bind.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from hetero import catalog, roofline

# KV bytes per token of LLaMA-3(.1)-70B in BF16 (80 layers x 8 KV heads x 128 x 2 (K, V) x 2 B), the
# lecture's §7 Q2 figure.
KV_BYTES_PER_TOKEN = 320 * 1024
# Mooncake §8 (metric): the end-to-end experiments set the TBT SLO to 5x the TBT of a single request;
# the real-trace runs use absolute caps, TTFT 30 s and TBT 0.1 s per token.
TBT_SLO_OVER_BATCH_1 = 5.0
PAPER_TTFT_SLO_S = 30.0
PAPER_TBT_SLO_S = 0.1
# HBM left for KV on one instance, in the order of the lecture's §7 Q2 answer: weights first, then 10 %
# headroom.
HBM_HEADROOM = 0.9


@dataclass(frozen=True)
class DecodeModel:
    """Step time and load of one decode instance (module docstring); the pool has `instances` of them."""

    base_s: float  # weights read once per step
    kv_s_per_token: float  # one context token's KV read per step
    compute_s_per_request: float  # one new token's weight FLOPs (2 x params)
    compute_s_per_token: float  # attention FLOPs per context token per step (4 x layers x attn_dim)
    tbt_slo_s: float
    kv_capacity_tokens: int  # KV tokens one instance's HBM holds
    instances: int = 1
    max_requests: int | None = None  # the engine's batch cap per instance (None: no cap)

    def validate(self) -> DecodeModel:
        for name in ("base_s", "kv_s_per_token", "compute_s_per_request", "compute_s_per_token", "tbt_slo_s"):
            value = getattr(self, name)
            if isinstance(value, bool) or not (isinstance(value, (int, float)) and math.isfinite(value) and value >= 0):
                raise ValueError(f"decode.{name} must be a finite number >= 0, got {value!r}")
        for name in ("kv_capacity_tokens", "instances"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ValueError(f"decode.{name} must be an int >= 1, got {value!r}")
        cap = self.max_requests
        if cap is not None and (isinstance(cap, bool) or not isinstance(cap, int) or cap < 1):
            raise ValueError(f"decode.max_requests must be None or an int >= 1, got {cap!r}")
        if self.tbt_slo_s <= self.base_s:
            raise ValueError(
                f"decode.tbt_slo_s ({self.tbt_slo_s} s) must exceed the weights' read time per step "
                f"({self.base_s} s): no batch meets it"
            )
        return self

    def step_s(self, requests: int, kv_tokens: float) -> float:
        """Seconds of one decode step of an instance with `requests` requests holding `kv_tokens` tokens
        (0 for an idle instance)."""
        if requests <= 0:
            return 0.0
        memory = self.base_s + self.kv_s_per_token * kv_tokens
        compute = requests * self.compute_s_per_request + self.compute_s_per_token * kv_tokens
        return memory if memory >= compute else compute

    def load(self, requests: int, kv_tokens: float) -> float:
        """max(TBT / SLO, KV / HBM, requests / cap) of one instance; <= 1 iff it can run that batch."""
        if requests <= 0:
            return 0.0
        ratio = self.step_s(requests, kv_tokens) / self.tbt_slo_s
        kv = kv_tokens / self.kv_capacity_tokens
        if kv > ratio:
            ratio = kv
        if self.max_requests is not None and requests / self.max_requests > ratio:
            ratio = requests / self.max_requests
        return ratio

    def max_batch_per_instance(self, context_tokens: int) -> int:
        """Most requests of `context_tokens` tokens each that one instance can run (load <= 1); 0 if not one."""
        b = 0
        while self.load(b + 1, (b + 1) * context_tokens) <= 1.0:
            b += 1
            if self.max_requests is not None and b >= self.max_requests:
                break
            if b > 10_000_000:  # a model with no binding limit (all costs zero): not a real instance
                raise ValueError("decode model has no binding limit")
        return b

    def max_batch(self, context_tokens: int) -> int:
        """The pool's requests of `context_tokens` tokens at every instance's limit."""
        return self.max_batch_per_instance(context_tokens) * self.instances

    def binding(self, context_tokens: int) -> str:
        """Which limit stops an instance of `context_tokens`-token requests one request past its full batch:
        "TBT SLO", "KV memory" or "batch cap"."""
        b = self.max_batch_per_instance(context_tokens) + 1
        kv = b * context_tokens
        ratios = {
            "TBT SLO": self.step_s(b, kv) / self.tbt_slo_s,
            "KV memory": kv / self.kv_capacity_tokens,
            "batch cap": b / self.max_requests if self.max_requests is not None else 0.0,
        }
        return max(ratios, key=lambda k: ratios[k])


def instance_kv_tokens(model: str, gpu: str, num_gpus: int) -> int:
    """KV tokens one instance's HBM holds: (GPUs x HBM - weights) x 0.9 / KV bytes per token (§7 Q2's order)."""
    m = catalog.dense_model(model, "the decode instance's KV capacity")
    hbm = num_gpus * catalog.gpu(gpu).mem_capacity_gb * 1e9
    return int((hbm - m.weight_bytes) * HBM_HEADROOM // KV_BYTES_PER_TOKEN)


def roofline_decode_model(
    model: str,
    gpu: str,
    num_gpus: int,
    tbt_slo_s: float,
    kv_capacity_tokens: int | None = None,
    instances: int = 1,
    max_requests: int | None = None,
) -> DecodeModel:
    """A DecodeModel from `hetero.roofline.decode_step` (catalog hardware, ASSUMPTIONS efficiencies): the
    coefficients are the roofline's memory and compute times, both linear in the batch and the context.
    `kv_capacity_tokens` None: what the instance's HBM holds (`instance_kv_tokens`)."""
    m = catalog.dense_model(model, "the decode instance")
    g = catalog.gpu(gpu)
    eff = roofline.Efficiency()
    byte_rate = num_gpus * g.mem_bandwidth_gb_per_s * 1e9 * eff.memory  # B/s
    flop_rate = num_gpus * g.peak_tflops * 1e12 * eff.compute  # FLOP/s
    # roofline.decode_step's two terms for b requests over contexts adding up to C tokens:
    # memory (weights + C x KV bytes) / byte_rate, compute b x 2 x params + 4 x layers x attn_dim x C.
    cap = instance_kv_tokens(model, gpu, num_gpus) if kv_capacity_tokens is None else kv_capacity_tokens
    return DecodeModel(
        base_s=m.weight_bytes / byte_rate,
        kv_s_per_token=KV_BYTES_PER_TOKEN / byte_rate,
        compute_s_per_request=2.0 * m.num_params / flop_rate,
        compute_s_per_token=4.0 * m.num_layers * m.attn_dim / flop_rate,
        tbt_slo_s=tbt_slo_s,
        kv_capacity_tokens=cap,
        instances=instances,
        max_requests=max_requests,
    ).validate()


def paper_rule_tbt_slo_s(model: str, gpu: str, num_gpus: int, context_tokens: int) -> float:
    """Mooncake §8's rule for its end-to-end runs: 5 x the step of a single request of `context_tokens`."""
    return (
        TBT_SLO_OVER_BATCH_1 * roofline.decode_step(model, gpu, num_gpus, 1, context_tokens, KV_BYTES_PER_TOKEN).time_s
    )
