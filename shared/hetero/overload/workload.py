"""Requests to replay: the `Workload` arrays (with, for a trace that carries block hashes, the prefix-reuse
prefill cost) and the lecture's seeded Poisson workload."""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from hetero.overload.config import OverloadConfig


@dataclass(frozen=True)
class PrefixReuse:
    """Prefill with a global prefix cache (Mooncake Store: the DRAM and SSD of every node pooled).

    A request's prompt is `hash_ids` blocks of `block_tokens` tokens, prefix order. When it arrives, the
    longest prefix of its blocks already in the pool is fetched instead of computed: p = min(hit blocks x
    block_tokens, n - 1) cached tokens of its n (at least the last token is computed, to produce the first
    output token). Its prefill then costs the roofline's FLOPs of the n - p new tokens, each attending to
    every token before it: 2 x params x (n - p) + 2 x layers x attn_dim x (n^2 - p^2), i.e.
    prefill_s = s_per_token x (n - p) + s_per_token_squared x (n^2 - p^2). A prefill's blocks enter the
    pool when it ends (its KV exists then), whether or not decode takes the request. The pool is not
    bounded (report: the cluster's idle DRAM and SSD; the public traces' distinct blocks fit easily), and
    fetching the cached KV is not timed (a 5,000-token prefix is 1.6 GB, about 19 ms at the lecture's
    87 GB/s, against prefills of seconds)."""

    hash_ids: tuple[tuple[int, ...], ...]  # (n,) each request's block ids
    s_per_token: float  # seconds of prefill per new token (weights)
    s_per_token_squared: float  # seconds per unit of n^2 - p^2 (causal attention)
    block_tokens: int = 512


@dataclass(frozen=True)
class Workload:
    """Requests in arrival order; the same workload is replayed under every policy."""

    arrival_s: np.ndarray  # (n,) float64, non-decreasing
    prefill_s: np.ndarray  # (n,) float64, prefill time of each request on one instance (no prefix reuse)
    decode_tokens: np.ndarray  # (n,) float64, output tokens (unknown to the scheduler)
    duration_s: float  # arrivals lie in [0, duration_s)
    context_tokens: np.ndarray | None = None  # (n,) int64, KV tokens each request holds in decode; None: 1 each
    prefix: PrefixReuse | None = None  # prefill with prefix reuse instead of prefill_s (trace mode)

    def contexts(self) -> list[int]:
        """Each request's decode context as Python ints (1 token each when not given)."""
        if self.context_tokens is None:
            return [1] * len(self.arrival_s)
        return np.asarray(self.context_tokens, dtype=np.int64).tolist()


def poisson_workload(config: OverloadConfig, rng: np.random.Generator) -> Workload:
    """Poisson arrivals, uniform prefill times, exponential output lengths, every context
    `config.context_tokens` (see OverloadConfig)."""
    config.validate()
    expected = config.arrival_rate_per_s * config.duration_s
    gaps = rng.exponential(1.0 / config.arrival_rate_per_s, size=int(expected + 6 * math.sqrt(expected) + 16))
    arrival = np.cumsum(gaps)
    while arrival[-1] < config.duration_s:  # probability ~1e-9: extend rather than truncate silently
        more = rng.exponential(1.0 / config.arrival_rate_per_s, size=arrival.size)
        arrival = np.concatenate([arrival, arrival[-1] + np.cumsum(more)])
    arrival = arrival[arrival < config.duration_s]
    n = arrival.size
    low, high = config.prefill_mean_s * (1 - config.prefill_spread), config.prefill_mean_s * (1 + config.prefill_spread)
    prefill = rng.uniform(low, high, size=n)
    tokens = rng.exponential(config.decode_mean_tokens, size=n)
    contexts = np.full(n, config.context_tokens, dtype=np.int64)
    return Workload(arrival, prefill, tokens, config.duration_s, contexts)
