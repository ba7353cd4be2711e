"""Hidden cases for ex05 (overload scheduling): seeded random decode states, exact boundaries,
non-integer thresholds, noisy and simulated load series, short simulator scenarios driven by the
student's admission rule, and invalid input.

Expected values are computed from the answer key by `python -m autograder expected`.
"""

import math

import numpy as np

from hetero.checks import Case, Gen

INT = "a count of requests: exact integer, no tolerance"
BOOL = "a yes/no decision: exact"
CORR = (
    "Pearson r from sums over up to a few thousand samples: correct formulas differ by ~1e-13; "
    "1e-9 absolute allows only rounding"
)
PERIOD = "the period of one FFT bin, n x dt / k: any correct argmax agrees to float rounding (1e-9)"
COUNTS = (
    "whole-request counts of a seeded simulation: the admission decisions are exact comparisons, "
    "so a correct rule reproduces them exactly"
)
LOAD_HINT = (
    "count decoders with start + mean_decode_s > enter_decode_s, plus admitted prefills with "
    "done <= enter_decode_s < done + mean_decode_s"
)
ADMIT_HINT = "admit iff predicted_load < decode_slots x oversubscription (strict <)"
CORR_HINT = "subtract each series' mean before the products (Pearson, not a cosine of raw loads)"
PERIOD_HINT = "drop the DC bin, take the largest |rfft| bin k >= 1, return n x dt_s / k in seconds"

_rng = np.random.default_rng(20250805)


def _state(n_dec: int, n_pre: int, mean: float) -> tuple[float, list[float], list[float], float]:
    """A random decode-pool state: `now`, a request entering decode 0-40 s later."""
    now = float(np.round(_rng.uniform(500.0, 2000.0), 3))
    enter = float(np.round(now + _rng.uniform(0.0, 40.0), 3))
    since = np.round(now - _rng.exponential(mean, size=n_dec), 3).tolist()
    done = np.round(now + _rng.uniform(0.0, 45.0, size=n_pre), 3).tolist()
    return enter, since, done, mean


CASES = []
for label, n_dec, n_pre, mean in (
    ("default_pool", 40, 12, 20.0),
    ("long_prefill_pool", 40, 35, 20.0),
    ("kimi_like_small", 8, 5, 18.2),
    ("big_pool", 159, 60, 5.5),
):
    CASES.append(
        Case(
            f"ex05.predicted_decode_load.random_{label}",
            "predicted_decode_load",
            _state(n_dec, n_pre, mean),
            tol_note=INT,
            unit="requests",
            hint=LOAD_HINT,
            points=2.0,
        )
    )

# Exact boundaries mixed in: a decoder ending exactly at enter (left), a prefill ending exactly at enter
# (joined), a prefill whose predicted decode ends exactly at enter (left), one just inside each side.
CASES += [
    Case(
        "ex05.predicted_decode_load.exact_boundaries",
        "predicted_decode_load",
        (100.0, [80.0, 80.5, 79.5], [100.0, 80.0, 80.5, 100.5], 20.0),
        tol_note=INT,
        unit="requests",
        hint="end == enter has left (strict >), done == enter has joined (<=)",
        points=2.0,
        kind="strict boundary",
    ),
    Case(
        "ex05.predicted_decode_load.empty",
        "predicted_decode_load",
        (5.0, [], [], 1.0),
        tol_note=INT,
        unit="requests",
        hint="no requests anywhere: 0",
        kind="zero result",
    ),
    Case(
        "ex05.predicted_decode_load.enter_now",
        "predicted_decode_load",
        (50.0, [10.0, 35.0, 49.0, 50.0], [], 15.0),
        tol_note=INT,
        unit="requests",
        hint="a request started exactly at enter_decode_s is decoding then",
        points=1.0,
        kind="strict boundary",
    ),
    Case(
        "ex05.predicted_decode_load.all_future",
        "predicted_decode_load",
        (10.0, [9.0], [11.0, 12.0, 30.0], 5.0),
        tol_note=INT,
        unit="requests",
        hint="prefills that end after enter_decode_s have not joined yet",
        points=1.0,
    ),
    Case(
        "ex05.predicted_decode_load.start_after_enter",
        "predicted_decode_load",
        (10.0, [11.0], [], 5.0),
        raises="ValueError",
        hint="a current decoder cannot have started after enter_decode_s: ValueError",
    ),
    Case(
        "ex05.predicted_decode_load.nan_prefill",
        "predicted_decode_load",
        (10.0, [1.0], [math.nan], 5.0),
        raises="ValueError",
        hint="non-finite times are invalid: ValueError naming prefill_done_s",
    ),
    Case(
        "ex05.predicted_decode_load.huge_finite_times",
        "predicted_decode_load",
        (1e308, [1e308], [1e308, 1e308, -1e308], 1e308),
        tol_note=INT,
        unit="requests",
        hint="times near the float maximum are finite, so valid: a sum of them may overflow to inf, so check "
        "each time with math.isfinite rather than their sum",
        points=1.0,
        kind="huge values",
    ),
    Case(
        "ex05.predicted_decode_load.negative_mean",
        "predicted_decode_load",
        (10.0, [1.0], [2.0], -3.0),
        raises="ValueError",
        hint="mean_decode_s must be > 0",
    ),
]

# admit_predictive: non-integer thresholds, float loads, other pool sizes, invalid input.
for label, args, edge in (
    ("fractional_threshold_below", (11, 10, 1.15), ""),  # 11 < 11.5
    ("fractional_threshold_above", (12, 10, 1.15), ""),
    ("float_load_just_below", (11.49, 10, 1.15), ""),
    ("x1_2_at_48", (48, 40, 1.2), "strict boundary"),
    ("x1_2_at_47", (47, 40, 1.2), ""),
    ("empty_pool_one_slot", (0, 1), "smallest valid"),
    ("full_pool_one_slot", (1, 1), "strict boundary"),
    ("big_pool_1272", (1271.5, 1272), ""),
):
    CASES.append(
        Case(
            f"ex05.admit_predictive.{label}",
            "admit_predictive",
            args,
            tol_note=BOOL,
            unit="admit?",
            hint=ADMIT_HINT,
            kind=edge,
        )
    )
for label, args, hint in (
    ("zero_slots", (0, 0), "decode_slots must be >= 1"),
    ("under_one", (10, 40, 0.9), "oversubscription must be >= 1"),
    ("negative_load", (-1, 40), "predicted_load must be >= 0"),
    ("bool_slots", (0, True), "decode_slots must be an int, not a bool"),
):
    CASES.append(
        Case(
            f"ex05.admit_predictive.invalid_{label}",
            "admit_predictive",
            args,
            raises="ValueError",
            hint=hint,
            points=0.5,
        )
    )

# antiphase_correlation: seeded noisy anti-phase / in-phase pairs, simulated load series, invalid input.
for label, n, slope, noise, offset in (
    ("antiphase_noisy", 600, -1.0, 0.6, 30.0),
    ("inphase_noisy", 300, 0.5, 1.0, 8.0),
    ("unrelated", 1000, 0.0, 1.0, 40.0),
):
    base = _rng.normal(0.0, 1.0, size=n)
    p = np.round(offset + 3.0 * base, 4)
    d = np.round(offset + 3.0 * (slope * base + noise * _rng.normal(0.0, 1.0, size=n)), 4)
    CASES.append(
        Case(
            f"ex05.antiphase_correlation.{label}",
            "antiphase_correlation",
            (p.tolist(), d.tolist()),
            rel_tol=0.0,
            abs_tol=1e-9,
            tol_note=CORR,
            unit="Pearson r",
            hint=CORR_HINT,
            points=2.0,
        )
    )
for label, scenario, policy, seed in (
    ("sim_default_early", "default", "early", 7),
    ("sim_short_prefill_baseline", "short_prefill", "baseline", 11),
):
    series = [
        Gen(
            "overload.load_series",
            {"scenario": scenario, "policy": policy, "seed": seed, "pool": pool, "duration_s": 1200.0},
        )
        for pool in ("prefill", "decode")
    ]
    CASES.append(
        Case(
            f"ex05.antiphase_correlation.{label}",
            "antiphase_correlation",
            tuple(series),
            rel_tol=0.0,
            abs_tol=1e-9,
            tol_note=CORR,
            unit="Pearson r",
            hint=CORR_HINT,
            points=2.0,
        )
    )
CASES += [
    Case(
        "ex05.antiphase_correlation.length_mismatch",
        "antiphase_correlation",
        ([1.0, 2.0, 3.0], [1.0, 2.0]),
        raises="ValueError",
        hint="series of different lengths cannot be correlated: ValueError",
    ),
    Case(
        "ex05.antiphase_correlation.one_sample",
        "antiphase_correlation",
        ([1.0], [2.0]),
        raises="ValueError",
        hint="at least 2 samples are needed",
    ),
    Case(
        "ex05.antiphase_correlation.constant_decode",
        "antiphase_correlation",
        ([1.0, 2.0, 4.0], [7.0, 7.0, 7.0]),
        raises="ValueError",
        hint="a constant decode_load has zero variance: ValueError naming decode_load",
    ),
]

# dominant_period_s: noisy sines with other sampling intervals, a square wave, simulated series, invalid input.
for label, n, dt, period, noise, level in (
    ("sine_noisy_dt_half", 512, 0.5, 32.0, 0.3, 12.0),
    ("sine_dt_5", 240, 5.0, 150.0, 0.1, 0.9),
    ("two_tones", 400, 1.0, 40.0, 0.0, 3.0),
):
    t = np.arange(n) * dt
    x = level + np.sin(2 * np.pi * t / period) + noise * _rng.normal(0.0, 1.0, size=n)
    if label == "two_tones":
        x = x + 0.4 * np.sin(2 * np.pi * t / 8.0)
    CASES.append(
        Case(
            f"ex05.dominant_period_s.{label}",
            "dominant_period_s",
            (np.round(x, 6).tolist(), dt),
            rel_tol=1e-9,
            tol_note=PERIOD,
            unit="s",
            hint=PERIOD_HINT,
            points=2.0,
        )
    )
_square = [30.0 if (i // 25) % 2 == 0 else 10.0 for i in range(300)]  # period 50 samples, dt 2 s
CASES.append(
    Case(
        "ex05.dominant_period_s.square_wave",
        "dominant_period_s",
        (_square, 2.0),
        rel_tol=1e-9,
        tol_note=PERIOD,
        unit="s",
        hint=PERIOD_HINT,
        points=1.0,
    )
)
CASES.append(
    Case(
        "ex05.dominant_period_s.sim_default_decode",
        "dominant_period_s",
        (
            Gen(
                "overload.load_series",
                {"scenario": "default", "policy": "early", "seed": 7, "pool": "decode", "duration_s": 1200.0},
            ),
            1.0,
        ),
        rel_tol=1e-9,
        tol_note=PERIOD,
        unit="s",
        hint=PERIOD_HINT,
        points=2.0,
    )
)
CASES += [
    Case(
        "ex05.dominant_period_s.zero_dt",
        "dominant_period_s",
        ([1.0, 2.0, 1.0, 2.0], 0.0),
        raises="ValueError",
        hint="dt_s must be > 0",
    ),
    Case(
        "ex05.dominant_period_s.three_samples",
        "dominant_period_s",
        ([1.0, 2.0, 1.0], 1.0),
        raises="ValueError",
        hint="at least 4 samples are needed",
    ),
    Case(
        "ex05.dominant_period_s.constant",
        "dominant_period_s",
        ([5.0] * 16, 1.0),
        raises="ValueError",
        hint="a constant series has no oscillation: ValueError",
    ),
]

# The student's predicted_decode_load + admit_predictive drive the simulator on short seeded scenarios.
for label, spec, seed, over in (
    ("default_10min", {"duration_s": 600.0}, 3, 1.0),
    ("default_10min_x1_1", {"duration_s": 600.0}, 4, 1.1),
    ("short_prefill_15min", {"base": "short_prefill", "duration_s": 900.0}, 5, 1.0),
    # A small pool whose TBT SLO binds: 10 ms + 2 ms per request (1,000 tokens of KV at 2 us a token) per
    # step, TBT SLO 20 ms -> 5 requests, the 5th exactly at the SLO (the instance takes it; a prediction
    # of exactly 1.0 leaves no headroom); 150 tokens at 20 ms = 3 s of decoding.
    (
        "small_cluster",
        {
            "duration_s": 900.0,
            "prefill_instances": 2,
            "prefill_mean_s": 1.0,
            "ttft_slo_s": 3.0,
            "decode": {
                "base_s": 0.01,
                "kv_s_per_token": 2e-6,
                "compute_s_per_request": 0.0,
                "compute_s_per_token": 0.0,
                "tbt_slo_s": 0.02,
                "kv_capacity_tokens": 100_000,
            },
            "context_tokens": 1000,
            "decode_mean_tokens": 150.0,
        },
        6,
        1.0,
    ),
    ("heavy_overload", {"duration_s": 600.0, "arrival_rate_per_s": 5.0}, 8, 1.2),
):
    CASES.append(
        Case(
            f"ex05.scenario.{label}",
            "run_scenario",
            (spec, seed),
            {"oversubscription": over},
            tol_note=COUNTS,
            unit="requests",
            harness="overload.run_scenario",
            uses=("predicted_decode_load", "admit_predictive"),
            points=3.0,
            hint="the simulator admits with your predicted_decode_load and admit_predictive; check the "
            "boundaries (end > enter leaves, done <= enter joins, strict < threshold)",
        )
    )

# The smallest valid series: 2 samples for a correlation, 4 for a period (the rules are "fewer than 2" and
# "fewer than 4" invalid, so exactly 2 and exactly 4 must return a value).
CASES += [
    Case(
        "ex05.antiphase_correlation.two_samples",
        "antiphase_correlation",
        ([3.0, 9.0], [20.0, 14.0]),
        rel_tol=0.0,
        abs_tol=1e-9,
        tol_note=CORR,
        unit="Pearson r",
        hint="2 samples are enough (only fewer than 2 is invalid); two points always give r = +1 or -1",
        points=0.5,
        kind="smallest valid",
    ),
    Case(
        "ex05.antiphase_correlation.two_samples_inphase",
        "antiphase_correlation",
        ([0.0, 1.0], [5.0, 6.5]),
        rel_tol=0.0,
        abs_tol=1e-9,
        tol_note=CORR,
        unit="Pearson r",
        hint="2 samples are enough (only fewer than 2 is invalid); two points always give r = +1 or -1",
        points=0.5,
        kind="smallest valid",
    ),
    Case(
        "ex05.dominant_period_s.four_samples",
        "dominant_period_s",
        ([10.0, 30.0, 10.0, 30.0], 2.0),
        rel_tol=1e-9,
        tol_note=PERIOD,
        unit="s",
        hint="4 samples are enough (only fewer than 4 is invalid); " + PERIOD_HINT,
        points=0.5,
        kind="smallest valid",
    ),
    Case(
        "ex05.dominant_period_s.four_samples_slow",
        "dominant_period_s",
        ([0.0, 1.0, 0.0, -1.0], 0.25),
        rel_tol=1e-9,
        tol_note=PERIOD,
        unit="s",
        hint="4 samples are enough (only fewer than 4 is invalid); " + PERIOD_HINT,
        points=0.5,
        kind="smallest valid",
    ),
]
