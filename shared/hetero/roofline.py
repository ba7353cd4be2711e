"""Fixed-efficiency roofline for a dense transformer served with tensor parallelism (lecture §1.2, §2.4).

Used by experiment 01 (H800 vs H20: prefill of 8K tokens, decode steps at batch 1 and 64) and by
experiment 02's transfer part (the cost of recomputing a 128K-token prefill instead of fetching its KV).

The model, one rule per quantity, the same for every figure:
- FLOPs of a forward pass = 2 x params x tokens (one multiply-add per weight per token)
  + attention scores and weighted values:
    prefill of n tokens, causal:  2 x n^2 x d per layer  (QK^T and PV are 2 x n^2 x d each when the
                                   full n x n square is computed; causality keeps half of it)
    decode of one token over a context of c tokens:  4 x c x d per layer  (QK^T and PV, 2 x c x d each)
  where d = num_heads x head_dim (the query width).
- Bytes moved by a decode step = all weights once + the KV cache of every sequence in the batch.
  Prefill counts the weights only: its KV writes are a few percent of the weight bytes at 8K tokens and
  prefill is compute-bound by two orders of magnitude, so they never change which resource bounds it.
- Time = max(FLOPs / (num_gpus x peak x compute_efficiency),
             bytes / (num_gpus x bandwidth x memory_efficiency)).
  Tensor parallelism is taken as ideal: num_gpus GPUs act as one device with num_gpus x the peak and
  bandwidth; all-reduce traffic is not modelled.
The two efficiencies and the decode context length are `hetero.catalog.ASSUMPTIONS` entries
("compute_efficiency", "memory_efficiency", "decode_context_tokens"), not fitted per figure.

The KV bytes per token are an input here (exercise ex02 computes them), so this module does not
contain that exercise's answer.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from hetero import catalog


@dataclass(frozen=True)
class Efficiency:
    """Fractions of peak that a phase achieves; defaults are the catalog's single constants."""

    compute: float = field(default_factory=lambda: catalog.ASSUMPTIONS["compute_efficiency"])
    memory: float = field(default_factory=lambda: catalog.ASSUMPTIONS["memory_efficiency"])

    def __post_init__(self) -> None:
        for name in ("compute", "memory"):
            value = getattr(self, name)
            if not 0 < value <= 1:
                raise ValueError(f"Efficiency.{name} must lie in (0, 1], got {value}")


@dataclass(frozen=True)
class PhaseTime:
    """Work of one phase and the time each resource needs for it."""

    flops: float  # FLOP
    bytes_moved: float  # B
    compute_s: float  # s, FLOPs at the effective FLOP rate
    memory_s: float  # s, bytes at the effective bandwidth

    @property
    def time_s(self) -> float:
        return max(self.compute_s, self.memory_s)

    @property
    def bound(self) -> str:
        """ "compute" or "memory": the resource that sets `time_s`."""
        return "compute" if self.compute_s >= self.memory_s else "memory"


def _check_positive_int(name: str, value: int) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ValueError(f"{name} must be an int >= 1, got {value!r}")


def prefill_flops(model_name: str, tokens: int) -> float:
    """FLOP of a causal prefill of `tokens` tokens (module docstring: weights + 2 n^2 d per layer)."""
    _check_positive_int("tokens", tokens)
    m = catalog.dense_model(model_name, "this roofline")
    weights = 2.0 * m.num_params * tokens
    attention = m.num_layers * 2.0 * tokens * tokens * m.attn_dim
    return weights + attention


def decode_step_flops(model_name: str, batch: int, context_tokens: int) -> float:
    """FLOP of one decode step: `batch` sequences, one new token each, each over `context_tokens`."""
    _check_positive_int("batch", batch)
    _check_positive_int("context_tokens", context_tokens)
    m = catalog.dense_model(model_name, "this roofline")
    per_token = 2.0 * m.num_params + m.num_layers * 4.0 * context_tokens * m.attn_dim
    return batch * per_token


def decode_step_bytes(model_name: str, batch: int, context_tokens: int, kv_bytes_per_token: float) -> float:
    """Bytes one decode step reads: every weight once + the KV of `batch` x `context_tokens` tokens."""
    _check_positive_int("batch", batch)
    _check_positive_int("context_tokens", context_tokens)
    if not kv_bytes_per_token > 0:
        raise ValueError(f"kv_bytes_per_token must be > 0, got {kv_bytes_per_token}")
    m = catalog.dense_model(model_name, "this roofline")
    return m.weight_bytes + batch * context_tokens * kv_bytes_per_token


def _timed(flops: float, bytes_moved: float, gpu_name: str, num_gpus: int, eff: Efficiency) -> PhaseTime:
    _check_positive_int("num_gpus", num_gpus)
    g = catalog.gpu(gpu_name)
    flop_rate = num_gpus * g.peak_tflops * 1e12 * eff.compute  # FLOP/s
    byte_rate = num_gpus * g.mem_bandwidth_gb_per_s * 1e9 * eff.memory  # B/s
    return PhaseTime(flops, bytes_moved, flops / flop_rate, bytes_moved / byte_rate)


def prefill(model_name: str, gpu_name: str, num_gpus: int, tokens: int, eff: Efficiency | None = None) -> PhaseTime:
    """Roofline time of prefilling `tokens` tokens of one sequence on `num_gpus` x `gpu_name`."""
    eff = eff or Efficiency()
    flops = prefill_flops(model_name, tokens)
    return _timed(flops, catalog.dense_model(model_name, "this roofline").weight_bytes, gpu_name, num_gpus, eff)


def decode_step(
    model_name: str,
    gpu_name: str,
    num_gpus: int,
    batch: int,
    context_tokens: int,
    kv_bytes_per_token: float,
    eff: Efficiency | None = None,
) -> PhaseTime:
    """Roofline time of one decode step (one token for each of `batch` sequences)."""
    eff = eff or Efficiency()
    flops = decode_step_flops(model_name, batch, context_tokens)
    moved = decode_step_bytes(model_name, batch, context_tokens, kv_bytes_per_token)
    return _timed(flops, moved, gpu_name, num_gpus, eff)
