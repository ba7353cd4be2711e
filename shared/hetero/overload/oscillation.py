"""Oscillation measures of one run: ex05's correlation and period functions, and a numpy
cross-correlation, applied to the two pools' load series after the warm-up."""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np

from hetero.overload.config import OverloadConfig
from hetero.overload.simulation import SimResult

WARMUP_S = 120.0  # dropped from the series before measuring: the cluster starts empty


def _pearson(x: np.ndarray, y: np.ndarray) -> float:
    """Pearson r of two equally long series; 0.0 when either is constant (no linear relation to measure)."""
    xc, yc = x - x.mean(), y - y.mean()
    denom = math.sqrt(float(xc @ xc) * float(yc @ yc))
    return float(xc @ yc) / denom if denom > 0 else 0.0


def oscillation(result: SimResult, config: OverloadConfig, corr: Callable, period: Callable) -> dict[str, float]:
    """Measures of the two load series after the warm-up; each pool's load normalised to its capacity
    (prefill: requests queued or prefilling per instance, 1.0 = every instance busy; decode: fraction
    of the threshold). `corr` and `period` are ex05's functions."""
    skip = int(WARMUP_S / result.dt_s)
    p = result.prefill_load[skip:].astype(np.float64) / config.prefill_instances  # (samples,) per instance
    d = result.decode_load[skip:].astype(np.float64) / config.decode_max_batch  # (samples,) fraction of the threshold
    # A request admitted now reaches the decode pool about one mean prefill time later.
    lag = max(1, int(round(config.prefill_mean_s / result.dt_s)))
    # Cross-correlation corr(p(t), d(t + k dt)) for |k dt| up to 4 mean prefill times (numpy rather than
    # ex05's function: a few hundred correlations per run). Peak: the shift at which the decode load most
    # resembles the prefill load; trough: most opposes it (k < 0: the decode pool leads).
    shifts = np.arange(-4 * lag, 4 * lag + 1)  # (2 * 4 * lag + 1,) sample shifts
    cross = np.array(
        [_pearson(p[max(0, -k) : p.size - max(0, k)], d[max(0, k) : d.size - max(0, -k)]) for k in shifts.tolist()]
    )
    peak, trough = int(np.argmax(cross)), int(np.argmin(cross))
    return {
        "correlation": float(corr(p.tolist(), d.tolist())),
        "lagged_correlation": float(corr(p[:-lag].tolist(), d[lag:].tolist())),
        "peak_correlation": float(cross[peak]),
        "peak_lag_s": float(shifts[peak] * result.dt_s),
        "trough_correlation": float(cross[trough]),
        "trough_lag_s": float(shifts[trough] * result.dt_s),
        "prefill_period_s": float(period(p.tolist(), result.dt_s)),
        "decode_period_s": float(period(d.tolist(), result.dt_s)),
        "prefill_load_std": float(p.std()),
        "decode_load_std": float(d.std()),
        "prefill_swing": float(np.percentile(p, 95) - np.percentile(p, 5)),  # 5th-95th percentile range
        "decode_swing": float(np.percentile(d, 95) - np.percentile(d, 5)),
        # Fraction of the time no request is queued or prefilling (the whole prefill pool idle).
        "prefill_empty": float(np.mean(result.prefill_load[skip:] == 0)),
        # Fraction of the time the decode pool is at its threshold (every arrival then fails the
        # early check; every prefill that ends then is wasted).
        "decode_at_threshold": float(np.mean(result.decode_load[skip:] >= config.decode_max_batch)),
    }
