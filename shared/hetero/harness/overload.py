"""Grading glue of ex05 (§3.2): a short overload scenario run with a student's admission rule, and pool
load series as inputs."""

from __future__ import annotations

from dataclasses import replace
from functools import lru_cache
from typing import Any

import numpy as np

from hetero.overload.config import OSCILLATION_POLICIES, SCENARIOS, OverloadConfig, Policy
from hetero.overload.decode import DecodeModel
from hetero.overload.oscillation import WARMUP_S
from hetero.overload.simulation import simulate_config
from hetero.overload.workload import poisson_workload

__all__ = ["run_scenario", "load_series"]


def _scenario_config(scenario: dict[str, Any]) -> OverloadConfig:
    base = SCENARIOS[scenario.get("base", "default")]
    fields = {k: v for k, v in scenario.items() if k != "base"}
    unknown = set(fields) - set(OverloadConfig.__dataclass_fields__)
    if unknown:
        raise ValueError(f"unknown scenario fields: {sorted(unknown)}")
    if isinstance(fields.get("decode"), dict):
        fields["decode"] = DecodeModel(**fields["decode"])
    return replace(base, **fields).validate()


def run_scenario(module: Any, scenario: dict[str, Any], seed: int, oversubscription: float = 1.0) -> dict[str, int]:
    """The predictive policy driven by `module`'s predicted_decode_load and admit_predictive on a seeded
    scenario; returns plain counts."""
    config = _scenario_config(scenario)
    workload = poisson_workload(config, np.random.default_rng(seed))
    result = simulate_config(
        config,
        workload,
        Policy("predictive", "predictive", oversubscription),
        module.predicted_decode_load,
        module.admit_predictive,
    )
    return {
        "completed": result.completed,
        "rejected_at_arrival": result.rejected_at_arrival,
        "wasted_prefills": result.wasted_prefills,
    }


@lru_cache(maxsize=8)
def _series(scenario: str, policy: str, seed: int, duration_s: float) -> tuple[tuple[int, ...], tuple[int, ...]]:
    config = replace(SCENARIOS[scenario], duration_s=duration_s)
    kind = {p.name: p for p in OSCILLATION_POLICIES[:2]}[policy]  # baseline/early need no exercise
    result = simulate_config(config, poisson_workload(config, np.random.default_rng(seed)), kind)
    skip = int(WARMUP_S / config.sample_dt_s)
    return tuple(result.prefill_load[skip:].tolist()), tuple(result.decode_load[skip:].tolist())


def load_series(scenario: str, policy: str, seed: int, pool: str, duration_s: float = 1800.0) -> list[float]:
    """A pool's load samples (requests, every 1 s, warm-up dropped) from a seeded baseline/early run."""
    prefill, decode = _series(scenario, policy, int(seed), float(duration_s))
    series = {"prefill": prefill, "decode": decode}[pool]
    return [float(x) for x in series]
