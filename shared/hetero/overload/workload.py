"""Requests to replay: the `Workload` arrays and the lecture's seeded Poisson workload."""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from hetero.overload.config import OverloadConfig


@dataclass(frozen=True)
class Workload:
    """Requests in arrival order; the same workload is replayed under every policy."""

    arrival_s: np.ndarray  # (n,) float64, non-decreasing
    prefill_s: np.ndarray  # (n,) float64, prefill time of each request on one instance
    decode_tokens: np.ndarray  # (n,) float64, output tokens (unknown to the scheduler)
    duration_s: float  # arrivals lie in [0, duration_s)


def poisson_workload(config: OverloadConfig, rng: np.random.Generator) -> Workload:
    """Poisson arrivals, uniform prefill times, exponential output lengths (see OverloadConfig)."""
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
    return Workload(arrival, prefill, tokens, config.duration_s)
