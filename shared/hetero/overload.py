"""Scheduling under overload in a disaggregated cluster (lecture §3, Mooncake §7; experiment 02 part 3).

A discrete-event simulation (a heap of `(time_s, seq, event)`) of a prefill pool and a decode pool:

* prefill pool: `prefill_instances` instances, each prefilling one request at a time in FIFO order.
  The prefill time of a request is known when it arrives (it follows from the prompt length), so the
  Conductor knows exactly when an admitted request will finish prefill; it sends a request to the
  instance where it finishes first, and turns it away at arrival when that predicted TTFT (queueing +
  prefill) exceeds `ttft_slo_s` ("the prefill pool admits by its own load");
* decode pool: `decode_slots` requests decode at once (continuous batching within the TBT SLO); each
  decode takes an exponentially distributed time with mean `decode_mean_s` that nobody knows in
  advance. A request that finishes prefill while the decode pool is full is rejected there: its
  prefill was wasted.

Admission policies (checked at arrival, in addition to the TTFT check every policy makes):
* baseline:   nothing more; decode is checked only at decode entry;
* early:      reject when the decode pool is full *now* (its current load is at its threshold);
* predictive: reject unless `admit_predictive(predicted_load, threshold, oversubscription)` where
  `predicted_load = predicted_decode_load(prefill_end, decoding_since, admitted_prefill_ends,
  decode_mean_s)`: the system-level prediction of Mooncake §7 (every decode is assumed to take the mean
  time). Both functions are exercise ex05's, called through `hetero.impl.exercise_function`.
  Oversubscription multiplies the threshold (x1.1 and x1.2 are reported).
The threshold of both arrival checks is `decode_slots` (the hard capacity) unless
`decode_admit_fraction` < 1 sets an SLO threshold below it; decode entry always checks the hard capacity.

Default configuration (chosen once, before any result was looked at; reasons beside each field):
both pools serve about 2 req/s (8 prefill instances x 1 / 4 s; 40 decode slots / 20 s), requests
arrive as a Poisson process at 2.6 req/s for one simulated hour. The long-prefill configuration keeps
both capacities at 2 req/s but makes each prefill take 10-20 s (30 instances), the regime in which the
lecture says early rejection makes the two pools oscillate in anti-phase. Its TTFT SLO (20 s) and live
decode view were chosen by a documented two-stage sweep (`--oscillation-sweep`); its arrival checks
stop at an SLO threshold (25 of 40 slots: the load at which a linear TBT model reaches 20 ms), fixed
from that model before it was run, below the hard capacity at which decode entry rejects.

Trace mode replays a Mooncake-format trace (`hetero.traces`) with a stated cost model (see
`TraceCostModel`). CLI:
    python -m hetero.overload [--seeds 5] [--json] [--plots DIR] [--impl solutions]
    python -m hetero.overload --report-sweep [--seeds 5] [--json]
    python -m hetero.overload --oscillation-sweep [--seeds 5] [--json]
    python -m hetero.overload --trace TRACE.jsonl --speedup 2 --prefill-instances 8 \
        --decode-instances 8 --policy all --json
"""

from __future__ import annotations

import argparse
import heapq
import json
import math
import sys
from dataclasses import asdict, dataclass, replace
from functools import lru_cache
from pathlib import Path
from typing import Any, Callable, Sequence

import numpy as np

from hetero import catalog
from hetero.casegen import register
from hetero.impl import MissingExercise, exercise_function
from hetero.parts import Part
from hetero.traces import TraceError, TraceRequest, read_trace

# ---------------------------------------------------------------------------------------------
# Configuration


@dataclass(frozen=True)
class OverloadConfig:
    """One cluster + workload; every time in seconds."""

    arrival_rate_per_s: float = 2.6  # lecture §3.2: 2.6 req/s against ~2 req/s of capacity (30% overload)
    duration_s: float = 3600.0  # lecture §3.2: one hour of arrivals; admitted work then drains
    prefill_instances: int = 8  # as many prefill instances as the paper's 8P + 8D cluster
    prefill_mean_s: float = 4.0  # 8 instances / 4 s = 2 req/s of prefill capacity
    prefill_spread: float = 0.5  # prefill time ~ Uniform(mean x (1 - spread), mean x (1 + spread))
    ttft_slo_s: float = 12.0  # 3 mean prefill times: a request may queue behind about two others
    decode_slots: int = 40  # 40 slots / 20 s mean decode = 2 req/s of decode capacity
    decode_mean_s: float = 20.0  # exponential decode times: the output length is not known in advance
    sample_dt_s: float = 1.0  # load series sampling interval
    # How stale the Conductor's view of the decode pool is. 0: it sees the current occupancy at every
    # arrival. T > 0: the decode pool reports its occupancy (and, for the predictive policy, its
    # requests' decode start times) every T s, and the decode checks made at arrival use the last
    # report; prefill ends that happened since that report are known to the Conductor (it dispatched
    # those requests), the decode pool's state is not. The TTFT check and the decode-entry check stay
    # exact (the Conductor holds the prefill queues; the decode pool checks its own room).
    load_report_interval_s: float = 0.0
    # The decode load at which the arrival checks (early, predictive) stop admitting, as a fraction of
    # decode_slots: admit_threshold = floor(fraction x decode_slots) requests. 1.0: the threshold is the
    # hard capacity (the default). Below 1: an SLO threshold (the load at which the predicted TBT reaches
    # its SLO) under the hard capacity; the decode pool itself still accepts a request that finished
    # prefill while it has a free slot (KV memory / max batch), so only the Conductor's arrival checks
    # use the threshold. The baseline makes no arrival check and is unaffected.
    decode_admit_fraction: float = 1.0

    def validate(self) -> "OverloadConfig":
        positive = {"arrival_rate_per_s": self.arrival_rate_per_s, "duration_s": self.duration_s,
                    "prefill_mean_s": self.prefill_mean_s, "ttft_slo_s": self.ttft_slo_s,
                    "decode_mean_s": self.decode_mean_s, "sample_dt_s": self.sample_dt_s}
        for name, value in positive.items():
            if not (isinstance(value, (int, float)) and math.isfinite(value) and value > 0):
                raise ValueError(f"{name} must be a finite number > 0, got {value!r}")
        for name in ("prefill_instances", "decode_slots"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ValueError(f"{name} must be an int >= 1, got {value!r}")
        if not 0 <= self.prefill_spread < 1:
            raise ValueError(f"prefill_spread must lie in [0, 1), got {self.prefill_spread}")
        interval = self.load_report_interval_s
        if isinstance(interval, bool) or not (isinstance(interval, (int, float)) and math.isfinite(interval)
                                               and interval >= 0):
            raise ValueError(f"load_report_interval_s must be a finite number >= 0, got {interval!r}")
        fraction = self.decode_admit_fraction
        if isinstance(fraction, bool) or not (isinstance(fraction, (int, float)) and math.isfinite(fraction)
                                               and 0 < fraction <= 1):
            raise ValueError(f"decode_admit_fraction must be a number in (0, 1], got {fraction!r}")
        if self.admit_threshold < 1:
            raise ValueError(f"decode_admit_fraction x decode_slots must be >= 1 request, got "
                             f"{fraction!r} x {self.decode_slots}")
        return self

    @property
    def admit_threshold(self) -> int:
        """Decode load (requests) at which the arrival checks reject; decode_slots when the fraction is 1."""
        return int(math.floor(self.decode_admit_fraction * self.decode_slots + 1e-9))

    @property
    def prefill_capacity_per_s(self) -> float:
        return self.prefill_instances / self.prefill_mean_s

    @property
    def decode_capacity_per_s(self) -> float:
        return self.decode_slots / self.decode_mean_s


DEFAULT = OverloadConfig()
# The decode pool's load as a router sees it: vLLM's production-stack router scrapes each engine's
# /metrics every --engine-stats-interval seconds (default 30 s; its example launch scripts use 10 s).
# 10 s was taken from there, not tuned; docs/figures_overload.md reports 0-30 s.
REPORT_INTERVAL_S = 10.0
# Long prefills (10-20 s), first version: same 2 req/s capacities, TTFT SLO again 3 mean prefill times
# (a deep prefill queue), the decode load as last reported (every REPORT_INTERVAL_S). Kept for the
# report-interval sweep; it shows no anti-phase swing (docs/figures_overload.md).
LONG_PREFILL_DEEP_QUEUE = OverloadConfig(prefill_instances=30, prefill_mean_s=15.0, prefill_spread=1 / 3,
                                         ttft_slo_s=45.0, load_report_interval_s=REPORT_INTERVAL_S)
# Long prefills (10-20 s), second version: chosen from the oscillation sweep (OSC_GRID_* below) as the
# grid point whose early-rejection run has the most negative mean corr(prefill load, decode load). It
# differs from the first version in two fields: a TTFT SLO of 20 s (the longest prefill: a request is
# admitted only if an instance is free, or nearly, so the prefill pool is a delay line rather than a
# buffer) and the decode load seen live. Its arrival checks compare with the hard capacity; it shows
# only a weak anti-phase component (docs/figures_overload.md).
LONG_PREFILL_HARD_LIMIT = replace(LONG_PREFILL_DEEP_QUEUE, ttft_slo_s=20.0, load_report_interval_s=0.0)


def tbt_slo_fraction(weights_ms: float, kv_full_ms: float, tbt_slo_ms: float) -> float:
    """The decode load, as a fraction of the hard capacity, at which a linear TBT model reaches its SLO.

    TBT(load) = weights_ms + load_fraction x kv_full_ms (a decode step reads the weights once and every
    decoding request's KV; at the hard capacity the KV memory is full). Clipped to (0, 1]: an SLO above
    the TBT at full memory leaves the hard capacity as the threshold."""
    for name, value in (("weights_ms", weights_ms), ("kv_full_ms", kv_full_ms), ("tbt_slo_ms", tbt_slo_ms)):
        if not (math.isfinite(value) and value > 0):
            raise ValueError(f"{name} must be a finite number > 0, got {value}")
    if tbt_slo_ms <= weights_ms:
        raise ValueError(f"tbt_slo_ms must exceed weights_ms ({weights_ms} ms), got {tbt_slo_ms}")
    return min(1.0, (tbt_slo_ms - weights_ms) / kv_full_ms)


# The SLO threshold of the long-prefill configuration, fixed from these figures before any run with it:
# LLaMA-3.1-70B on 8 x H800 (lecture §1.2): a decode step reads the 141 GB of weights in 6.6 ms (the
# lecture's batch-1 step) plus the batch's KV; a full instance (159 requests x 8,590 tokens x 320 KiB,
# lecture §7 Q2: 4.48e11 B) reads its KV at 8 x 3.35 TB/s x 0.8 in 20.9 ms, so TBT runs from 6.6 ms to
# 27.5 ms as the KV memory fills. TBT SLO 20 ms: 50 tokens/s per stream (an assumption, not the paper's).
TBT_WEIGHTS_MS = 6.6
TBT_KV_FULL_MS = 159 * 8590 * 320 * 1024 / (8 * 3.35e12 * 0.8) * 1e3  # 20.9 ms
TBT_SLO_MS = 20.0
TBT_SLO_FRACTION = tbt_slo_fraction(TBT_WEIGHTS_MS, TBT_KV_FULL_MS, TBT_SLO_MS)  # 0.641: 25 of 40 slots
# Long prefills, the configuration of the experiment part: the second version with that SLO threshold
# below the hard capacity. The arrival checks stop at 25 requests while the decode pool accepts prefilled
# requests up to its 40 slots (a decode instance would rather run a step a little over its TBT target
# than discard a finished prefill; the Conductor's rejection at arrival costs nothing).
LONG_PREFILL = replace(LONG_PREFILL_HARD_LIMIT, decode_admit_fraction=TBT_SLO_FRACTION)
SCENARIOS: dict[str, OverloadConfig] = {"default": DEFAULT, "long_prefill": LONG_PREFILL,
                                        "long_prefill_hard_limit": LONG_PREFILL_HARD_LIMIT,
                                        "long_prefill_deep_queue": LONG_PREFILL_DEEP_QUEUE}


@dataclass(frozen=True)
class Policy:
    name: str  # label in tables and JSON
    kind: str  # "baseline" | "early" | "predictive"
    oversubscription: float = 1.0  # threshold factor, predictive only


POLICY_KINDS = ("baseline", "early", "predictive")
POLICIES: tuple[Policy, ...] = (
    Policy("baseline", "baseline"),
    Policy("early", "early"),
    Policy("predictive", "predictive"),
    Policy("predictive x1.1", "predictive", 1.1),
    Policy("predictive x1.2", "predictive", 1.2),
)
OSCILLATION_POLICIES: tuple[Policy, ...] = POLICIES[:3]
CLI_POLICIES = ("all", "baseline", "early", "predictive", "oversubscribed")

# Mooncake paper §7 (8 prefill + 8 decode instances, ~23,000 real requests replayed at 2x speed).
PAPER_REJECTED = {"baseline": 4183, "early": 3771, "predictive": 3589}

# ---------------------------------------------------------------------------------------------
# Workload


@dataclass(frozen=True)
class Workload:
    """Requests in arrival order; the same workload is replayed under every policy."""

    arrival_s: np.ndarray  # (n,) float64, non-decreasing
    prefill_s: np.ndarray  # (n,) float64, prefill time of each request on one instance
    decode_s: np.ndarray  # (n,) float64, decode time (unknown to the scheduler)
    duration_s: float  # arrivals lie in [0, duration_s)


def poisson_workload(config: OverloadConfig, rng: np.random.Generator) -> Workload:
    """Poisson arrivals, uniform prefill times, exponential decode times (see OverloadConfig)."""
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
    decode = rng.exponential(config.decode_mean_s, size=n)
    return Workload(arrival, prefill, decode, config.duration_s)


# ---------------------------------------------------------------------------------------------
# The discrete-event simulation

PredictFn = Callable[[float, list, list, float], int]
AdmitFn = Callable[[float, int, float], bool]

_ARRIVAL, _PREFILL_DONE, _DECODE_DONE = 0, 1, 2


@dataclass(frozen=True)
class SimResult:
    arrivals: int
    completed: int  # finished decoding (admitted work drains after the last arrival)
    rejected_at_arrival: int  # TTFT check or the policy's decode check
    rejected_for_decode: int  # the part of rejected_at_arrival due to the decode check
    wasted_prefills: int  # prefilled, then rejected at decode entry
    wasted_prefill_s: float  # instance-seconds of prefill spent on them
    prefill_load: np.ndarray  # (samples,) int: requests queued or prefilling at t = k * dt
    decode_load: np.ndarray  # (samples,) int: requests decoding at t = k * dt
    dt_s: float

    def counts(self) -> dict[str, Any]:
        return {"arrivals": self.arrivals, "completed": self.completed,
                "rejected_at_arrival": self.rejected_at_arrival,
                "rejected_for_decode": self.rejected_for_decode,
                "wasted_prefills": self.wasted_prefills,
                "wasted_prefill_s": round(self.wasted_prefill_s, 6)}


def simulate(workload: Workload, prefill_instances: int, decode_slots: int, ttft_slo_s: float,
             decode_mean_s: float, policy: Policy, predict: PredictFn | None = None,
             admit: AdmitFn | None = None, sample_dt_s: float = 1.0,
             report_interval_s: float = 0.0, admit_threshold: int | None = None) -> SimResult:
    """Replay `workload` under `policy`. `predict`/`admit` (ex05) are needed by the predictive policy.

    `report_interval_s` > 0: the policy's decode check at arrival sees the decode pool as reported at
    the last multiple of the interval (see OverloadConfig.load_report_interval_s); 0: as it is now.
    `admit_threshold` (requests, at most `decode_slots`; None = `decode_slots`): the decode load the
    arrival checks compare with (early: reject while the load is at or above it; predictive: passed to
    `admit` as its slot count). Decode entry always compares with `decode_slots`."""
    if policy.kind not in POLICY_KINDS:
        raise ValueError(f"policy kind must be one of {', '.join(POLICY_KINDS)}, got {policy.kind!r}")
    if policy.kind == "predictive" and (predict is None or admit is None):
        raise ValueError("the predictive policy needs the predict and admit functions")
    threshold = decode_slots if admit_threshold is None else admit_threshold
    if isinstance(threshold, bool) or not isinstance(threshold, int) or not 1 <= threshold <= decode_slots:
        raise ValueError(f"admit_threshold must be an int in [1, decode_slots = {decode_slots}], got {threshold!r}")
    arrival, prefill, decode = workload.arrival_s, workload.prefill_s, workload.decode_s
    n = int(arrival.size)
    free_at = [0.0] * prefill_instances  # min-heap: when each prefill instance finishes its admitted queue
    in_prefill: dict[int, float] = {}  # admitted request -> its prefill end time
    decoding: dict[int, float] = {}  # decoding request -> its decode start time
    samples = int(math.ceil(workload.duration_s / sample_dt_s))
    prefill_load = np.zeros(samples, dtype=np.int64)
    decode_load = np.zeros(samples, dtype=np.int64)
    next_sample = 0
    completed = rejected = rejected_decode = wasted = 0
    wasted_s = 0.0
    events: list[tuple[float, int, int, int]] = []  # (time_s, seq, kind, request)
    seq = 0
    if n:
        heapq.heappush(events, (float(arrival[0]), seq, _ARRIVAL, 0))
    kind_early, kind_pred = policy.kind == "early", policy.kind == "predictive"
    stale = report_interval_s > 0
    next_report_s = 0.0
    seen_decoding = 0  # decode occupancy in the last report
    seen_starts: list[float] = []  # decode start times in the last report (predictive only)
    done_since_report: list[float] = []  # prefill ends after the last report (known to the Conductor)
    while events:
        t, _, kind, i = heapq.heappop(events)
        if stale and t >= next_report_s:
            # Reports at k * interval. The state is constant between events, so the last report instant
            # at or before t saw the state as it is now, before this event.
            seen_decoding = len(decoding)
            seen_starts = list(decoding.values()) if kind_pred else []
            done_since_report = []
            next_report_s = (math.floor(t / report_interval_s) + 1) * report_interval_s
        # The state is constant between events: record every sample instant before t.
        while next_sample < samples and next_sample * sample_dt_s < t:
            prefill_load[next_sample] = len(in_prefill)
            decode_load[next_sample] = len(decoding)
            next_sample += 1
        if kind == _ARRIVAL:
            if i + 1 < n:
                seq += 1
                heapq.heappush(events, (float(arrival[i + 1]), seq, _ARRIVAL, i + 1))
            done = max(t, free_at[0]) + float(prefill[i])  # on the instance that frees up first
            if done - t > ttft_slo_s:
                rejected += 1
                continue
            if kind_early and (seen_decoding if stale else len(decoding)) >= threshold:
                rejected += 1
                rejected_decode += 1
                continue
            if kind_pred:
                if stale:
                    load = predict(done, seen_starts, list(in_prefill.values()) + done_since_report, decode_mean_s)
                else:
                    load = predict(done, list(decoding.values()), list(in_prefill.values()), decode_mean_s)
                if not admit(load, threshold, policy.oversubscription):
                    rejected += 1
                    rejected_decode += 1
                    continue
            heapq.heapreplace(free_at, done)
            in_prefill[i] = done
            seq += 1
            heapq.heappush(events, (done, seq, _PREFILL_DONE, i))
        elif kind == _PREFILL_DONE:
            del in_prefill[i]
            if stale:
                done_since_report.append(t)
            if len(decoding) < decode_slots:
                decoding[i] = t
                seq += 1
                heapq.heappush(events, (t + float(decode[i]), seq, _DECODE_DONE, i))
            else:
                wasted += 1
                wasted_s += float(prefill[i])
        else:
            del decoding[i]
            completed += 1
    # Samples after the last event stay 0: every admitted request has drained by then.
    return SimResult(n, completed, rejected, rejected_decode, wasted, wasted_s,
                     prefill_load, decode_load, sample_dt_s)


def simulate_config(config: OverloadConfig, workload: Workload, policy: Policy,
                    predict: PredictFn | None = None, admit: AdmitFn | None = None) -> SimResult:
    return simulate(workload, config.prefill_instances, config.decode_slots, config.ttft_slo_s,
                    config.decode_mean_s, policy, predict, admit, config.sample_dt_s,
                    config.load_report_interval_s, config.admit_threshold)


# ---------------------------------------------------------------------------------------------
# Oscillation measures (ex05's correlation and period functions applied to a run's load series)

WARMUP_S = 120.0  # dropped from the series before measuring: the cluster starts empty


def _pearson(x: np.ndarray, y: np.ndarray) -> float:
    """Pearson r of two equally long series; 0.0 when either is constant (no linear relation to measure)."""
    xc, yc = x - x.mean(), y - y.mean()
    denom = math.sqrt(float(xc @ xc) * float(yc @ yc))
    return float(xc @ yc) / denom if denom > 0 else 0.0


def oscillation(result: SimResult, config: OverloadConfig, corr: Callable, period: Callable) -> dict[str, float]:
    """Measures of the two load series after the warm-up; each pool's load normalised to its capacity
    (prefill: requests queued or prefilling per instance, 1.0 = every instance busy; decode: fraction
    of the slots). `corr` and `period` are ex05's functions."""
    skip = int(WARMUP_S / result.dt_s)
    p = result.prefill_load[skip:].astype(np.float64) / config.prefill_instances  # (samples,) per instance
    d = result.decode_load[skip:].astype(np.float64) / config.decode_slots  # (samples,) fraction of slots
    # A request admitted now reaches the decode pool about one mean prefill time later.
    lag = max(1, int(round(config.prefill_mean_s / result.dt_s)))
    # Cross-correlation corr(p(t), d(t + k dt)) for |k dt| up to 4 mean prefill times (numpy rather than
    # ex05's function: a few hundred correlations per run). Peak: the shift at which the decode load most
    # resembles the prefill load; trough: most opposes it (k < 0: the decode pool leads).
    shifts = np.arange(-4 * lag, 4 * lag + 1)  # (2 * 4 * lag + 1,) sample shifts
    cross = np.array([_pearson(p[max(0, -k):p.size - max(0, k)], d[max(0, k):d.size - max(0, -k)]) for k in shifts])
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
        # Fraction of the time the decode load exceeds the arrival checks' threshold (with an SLO
        # threshold below the hard capacity: the predicted TBT is above its SLO).
        "decode_above_threshold": float(np.mean(result.decode_load[skip:] > config.admit_threshold)),
    }


# ---------------------------------------------------------------------------------------------
# Trace mode


@dataclass(frozen=True)
class TraceCostModel:
    """How long a trace request takes, from its token counts.

    Prefill: the fixed-efficiency roofline of the lecture (§1.2) for `model` on one prefill instance of
    `gpus_per_prefill_instance` x `prefill_gpu`: FLOPs = 2 x params x n (the weights) + 2 x layers x
    attn_dim x n^2 (causal attention, QK^T and AV), at ASSUMPTIONS["compute_efficiency"] of the dense
    peak. For LLaMA-3.1-70B on 8 x H800 this gives 0.26 s for 8K tokens (the lecture's figure) and 8.6 s
    for 128K. Decode: output_length x tpot_s. The decode pool holds `decode_slots_per_instance` requests
    per instance.
    """

    model: str = "LLaMA-3.1-70B"
    prefill_gpu: str = "H800"
    gpus_per_prefill_instance: int = 8
    # One decode step of a full batch: (141 GB weights + 159 x 8.7K tokens x 320 KiB KV) read at
    # 8 x 3.35 TB/s x 0.8 is about 28 ms; rounded up to 30 ms.
    tpot_s: float = 0.03
    # Lecture §1.2 / §7 Q2: 8 x 80 GB less the weights, 10% headroom, 320 KiB per token, 8,590 tokens
    # per request -> about 159 requests' KV per 8-GPU instance.
    decode_slots_per_instance: int = 159
    ttft_slo_s: float = 30.0  # the TTFT threshold the Mooncake paper uses for its real-trace runs

    def prefill_s(self, input_tokens: np.ndarray) -> np.ndarray:
        m = catalog.model(self.model)
        g = catalog.gpu(self.prefill_gpu)
        n = input_tokens.astype(np.float64)
        flops = 2.0 * m.num_params * n + 2.0 * m.num_layers * m.attn_dim * n * n
        rate = self.gpus_per_prefill_instance * g.peak_tflops * 1e12 * catalog.ASSUMPTIONS["compute_efficiency"]
        return flops / rate

    def decode_s(self, output_tokens: np.ndarray) -> np.ndarray:
        return output_tokens.astype(np.float64) * self.tpot_s


def trace_workload(requests: Sequence[TraceRequest], speedup: float, cost: TraceCostModel) -> Workload:
    """Arrivals at timestamp / speedup; prefill and decode times from the cost model."""
    if not (math.isfinite(speedup) and speedup > 0):
        raise ValueError(f"speedup must be a finite number > 0, got {speedup}")
    ts = np.array([r.timestamp_ms for r in requests], dtype=np.float64) / 1000.0 / speedup
    arrival = ts - ts[0]
    prefill = cost.prefill_s(np.array([r.input_length for r in requests]))
    decode = cost.decode_s(np.array([r.output_length for r in requests]))
    return Workload(arrival, prefill, decode, float(arrival[-1]) + 1.0)


def replay_trace(requests: Sequence[TraceRequest], speedup: float, prefill_instances: int,
                 decode_instances: int, policies: Sequence[Policy], predict: PredictFn | None,
                 admit: AdmitFn | None, cost: TraceCostModel = TraceCostModel()) -> dict[str, Any]:
    """Per policy: completed, rejected at arrival, wasted prefills (the decode pool is pooled: a
    request is placed on the least-loaded decode instance, which has room iff the pool has)."""
    for name, value in (("prefill_instances", prefill_instances), ("decode_instances", decode_instances)):
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise ValueError(f"{name} must be an int >= 1, got {value!r}")
    workload = trace_workload(requests, speedup, cost)
    slots = decode_instances * cost.decode_slots_per_instance
    mean_decode = float(workload.decode_s.mean()) or cost.tpot_s  # all-zero outputs: one step
    out: dict[str, Any] = {"requests": len(requests), "speedup": speedup,
                           "prefill_instances": prefill_instances, "decode_instances": decode_instances,
                           "decode_slots": slots, "mean_prefill_s": float(workload.prefill_s.mean()),
                           "mean_decode_s": mean_decode, "cost_model": asdict(cost), "policies": {}}
    for policy in policies:
        result = simulate(workload, prefill_instances, slots, cost.ttft_slo_s, mean_decode, policy,
                          predict, admit, sample_dt_s=max(1.0, workload.duration_s / 4096))
        c = result.counts()
        c["rejected_total"] = c["rejected_at_arrival"] + c["wasted_prefills"]
        out["policies"][policy.name] = c
    return out


# ---------------------------------------------------------------------------------------------
# Grader hooks: a short scenario run with the student's admission rule; load series as inputs


def _scenario_config(scenario: dict[str, Any]) -> OverloadConfig:
    base = SCENARIOS[scenario.get("base", "default")]
    fields = {k: v for k, v in scenario.items() if k != "base"}
    unknown = set(fields) - set(OverloadConfig.__dataclass_fields__)
    if unknown:
        raise ValueError(f"unknown scenario fields: {sorted(unknown)}")
    return replace(base, **fields).validate()


def run_scenario(module: Any, scenario: dict[str, Any], seed: int, oversubscription: float = 1.0) -> dict[str, int]:
    """Harness (ex05): the predictive policy driven by `module`'s predicted_decode_load and
    admit_predictive on a seeded scenario; returns plain counts."""
    config = _scenario_config(scenario)
    workload = poisson_workload(config, np.random.default_rng(seed))
    result = simulate_config(config, workload, Policy("predictive", "predictive", oversubscription),
                             module.predicted_decode_load, module.admit_predictive)
    return {"completed": result.completed, "rejected_at_arrival": result.rejected_at_arrival,
            "wasted_prefills": result.wasted_prefills}


@lru_cache(maxsize=8)
def _series(scenario: str, policy: str, seed: int, duration_s: float) -> tuple[tuple[int, ...], tuple[int, ...]]:
    config = replace(SCENARIOS[scenario], duration_s=duration_s)
    kind = {p.name: p for p in OSCILLATION_POLICIES[:2]}[policy]  # baseline/early need no exercise
    result = simulate_config(config, poisson_workload(config, np.random.default_rng(seed)), kind)
    skip = int(WARMUP_S / config.sample_dt_s)
    return tuple(result.prefill_load[skip:].tolist()), tuple(result.decode_load[skip:].tolist())


@register("overload.load_series")
def load_series(scenario: str, policy: str, seed: int, pool: str, duration_s: float = 1800.0) -> list[float]:
    """A pool's load samples (requests, every 1 s, warm-up dropped) from a seeded baseline/early run."""
    prefill, decode = _series(scenario, policy, int(seed), float(duration_s))
    series = {"prefill": prefill, "decode": decode}[pool]
    return [float(x) for x in series]


# ---------------------------------------------------------------------------------------------
# Experiment part "overload"

SEEDS = (0, 1, 2, 3, 4)
PLOT_WINDOW_S = (600.0, 1500.0)  # 15 minutes of the load series shown per policy (seed 0)
METRICS = ("completed", "rejected_at_arrival", "wasted_prefills", "wasted_prefill_s")


def _stats(values: Sequence[float]) -> dict[str, float]:
    arr = np.asarray(values, dtype=np.float64)
    return {"mean": float(arr.mean()), "std": float(arr.std(ddof=1)) if arr.size > 1 else 0.0,
            "min": float(arr.min()), "max": float(arr.max())}


def experiment(predict: PredictFn, admit: AdmitFn, corr: Callable, period: Callable,
               seeds: Sequence[int] = SEEDS, scenarios: dict[str, OverloadConfig] | None = None) -> dict[str, Any]:
    """All figures of part 3: default configuration over seeds, long-prefill oscillation, plot series.

    `scenarios` replaces the "default" and "long_prefill" configurations (shorter runs in tests)."""
    scenarios = dict(SCENARIOS if scenarios is None else scenarios)
    figures: dict[str, Any] = {"seeds": list(seeds), "configs": {k: asdict(v) for k, v in scenarios.items()},
                               "paper_rejected": dict(PAPER_REJECTED)}
    for name, policies in (("default", POLICIES), ("long_prefill", OSCILLATION_POLICIES)):
        config = scenarios[name]
        window = (min(PLOT_WINDOW_S[0], config.duration_s / 2), min(PLOT_WINDOW_S[1], config.duration_s))
        lo, hi = (int(x / config.sample_dt_s) for x in window)
        runs: dict[str, list[dict[str, Any]]] = {p.name: [] for p in policies}
        osc: dict[str, list[dict[str, float]]] = {p.name: [] for p in policies}
        series: dict[str, dict[str, list[int]]] = {}
        for seed in seeds:
            workload = poisson_workload(config, np.random.default_rng(seed))
            for policy in policies:
                result = simulate_config(config, workload, policy, predict, admit)
                runs[policy.name].append(result.counts())
                osc[policy.name].append(oscillation(result, config, corr, period))
                if seed == seeds[0]:
                    series[policy.name] = {"prefill": result.prefill_load[lo:hi].tolist(),
                                           "decode": result.decode_load[lo:hi].tolist()}
        base = runs["baseline"]
        table = {}
        for policy in policies:
            rows = runs[policy.name]
            entry = {m: _stats([r[m] for r in rows]) for m in METRICS}
            # Paired by seed (same workload): relative change against the baseline, percent.
            entry["completed_vs_baseline_pct"] = _stats(
                [100.0 * (r["completed"] / b["completed"] - 1) for r, b in zip(rows, base)])
            entry["wasted_vs_baseline_pct"] = _stats(
                [100.0 * (r["wasted_prefills"] / b["wasted_prefills"] - 1) if b["wasted_prefills"] else 0.0
                 for r, b in zip(rows, base)])
            entry["oscillation"] = {k: _stats([o[k] for o in osc[policy.name]]) for k in osc[policy.name][0]}
            table[policy.name] = entry
        figures[name] = {"policies": table, "series": series, "dt_s": config.sample_dt_s,
                         "window_s": list(window), "prefill_instances": config.prefill_instances,
                         "decode_slots": config.decode_slots, "admit_threshold": config.admit_threshold}
    figures["findings"] = _findings(figures["default"]["policies"])
    return figures


def _findings(table: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """The lecture's claims (target ranges fixed in advance) against the measured means."""
    def mean(policy: str, key: str) -> float:
        return table[policy][key]["mean"]

    checks = {
        "early: wasted prefills within +-10% of baseline": (mean("early", "wasted_vs_baseline_pct"), -10, 10),
        "early: completes fewer than baseline (%)": (mean("early", "completed_vs_baseline_pct"), -math.inf, 0),
        "predictive: wasted prefills cut by 15-35% (%)": (mean("predictive", "wasted_vs_baseline_pct"), -35, -15),
        "predictive: completes 0-5% fewer (%)": (mean("predictive", "completed_vs_baseline_pct"), -5, 0),
        "predictive x1.1: completions within 1% of baseline (%)": (
            mean("predictive x1.1", "completed_vs_baseline_pct"), -1, 1),
        "predictive x1.2: completions within 1% of baseline (%)": (
            mean("predictive x1.2", "completed_vs_baseline_pct"), -1, 1),
    }
    return {k: {"measured": v, "target": [lo, hi], "holds": bool(lo <= v <= hi)} for k, (v, lo, hi) in checks.items()}


SWEEP_INTERVALS_S = (0.0, 2.0, 5.0, 10.0, 30.0)
SWEEP_TTFT_SLOS_S = (45.0, 30.0)  # the deep-queue configuration's SLO; the paper's real-trace TTFT SLO
SWEEP_MEASURES = ("correlation", "lagged_correlation", "prefill_period_s", "decode_period_s",
                  "prefill_swing", "decode_swing")


def report_interval_sweep(predict: PredictFn, admit: AdmitFn, corr: Callable, period: Callable,
                          seeds: Sequence[int] = SEEDS, intervals_s: Sequence[float] = SWEEP_INTERVALS_S,
                          ttft_slos_s: Sequence[float] = SWEEP_TTFT_SLOS_S,
                          base: OverloadConfig = LONG_PREFILL_DEEP_QUEUE) -> list[dict[str, Any]]:
    """The long-prefill oscillation measures as the decode-load report interval (and the TTFT SLO) vary:
    one row per (TTFT SLO, interval, policy) with mean/std/min/max over seeds of SWEEP_MEASURES."""
    rows = []
    for ttft in ttft_slos_s:
        for interval in intervals_s:
            config = replace(base, ttft_slo_s=float(ttft), load_report_interval_s=float(interval)).validate()
            osc: dict[str, list[dict[str, float]]] = {p.name: [] for p in OSCILLATION_POLICIES}
            for seed in seeds:
                workload = poisson_workload(config, np.random.default_rng(seed))
                for policy in OSCILLATION_POLICIES:
                    result = simulate_config(config, workload, policy, predict, admit)
                    osc[policy.name].append(oscillation(result, config, corr, period))
            for policy in OSCILLATION_POLICIES:
                rows.append({"ttft_slo_s": float(ttft), "load_report_interval_s": float(interval),
                             "policy": policy.name,
                             **{m: _stats([o[m] for o in osc[policy.name]]) for m in SWEEP_MEASURES}})
    return rows


# The oscillation sweep: a small grid over the knobs the lecture's mechanism names (stated before it was
# run; docs/figures_overload.md reports every row). Prefill times stay Uniform(10, 20) s, arrivals 2.6 req/s.
# Prefill instances: 30 = 2.0 req/s (the decode pool's capacity), 40 = 2.67 req/s (about the arrival rate),
# 52 = 3.47 req/s (spare prefill capacity). An instance serving k requests at once at the same per-request
# time is k instances to this model, so the instance count also covers per-instance concurrency.
OSC_GRID_PREFILL_INSTANCES = (30, 40, 52)
# TTFT SLO: 20 s = the longest prefill (no queueing for long prompts: a delay line), 30 s, 45 s (a buffer).
OSC_GRID_TTFT_SLOS_S = (20.0, 30.0, 45.0)
# Decode pool (slots, mean decode s), both 2 req/s: the slow-draining pool and one that drains twice as fast.
OSC_GRID_DECODE = ((40, 20.0), (20, 10.0))
OSC_GRID_REPORT_S = (0.0, 10.0)  # decode load seen live / as reported every 10 s
# Second stage, fixed after reading the first and before running it: the first stage's most negative
# correlations lie at its smallest prefill pool (30), its shallowest queue (TTFT 20 s) and the live view,
# so the second stage goes further that way (15-30 instances, i.e. prefill capacity 1-2 req/s) and also
# tries a decode pool twice as slow (80 slots x 40 s, still 2 req/s).
OSC_REFINE_PREFILL_INSTANCES = (15, 20, 25, 30)
OSC_REFINE_TTFT_SLOS_S = (20.0,)
OSC_REFINE_DECODE = ((40, 20.0), (80, 40.0))
OSC_REFINE_REPORT_S = (0.0,)
OSC_MEASURES = ("correlation", "lagged_correlation", "peak_correlation", "peak_lag_s", "trough_correlation",
                "trough_lag_s", "prefill_period_s", "decode_period_s", "prefill_swing", "decode_swing")


def oscillation_sweep(corr: Callable, period: Callable, seeds: Sequence[int] = SEEDS,
                      base: OverloadConfig = LONG_PREFILL_HARD_LIMIT,
                      prefill_instances: Sequence[int] = OSC_GRID_PREFILL_INSTANCES,
                      ttft_slos_s: Sequence[float] = OSC_GRID_TTFT_SLOS_S,
                      decode: Sequence[tuple[int, float]] = OSC_GRID_DECODE,
                      report_intervals_s: Sequence[float] = OSC_GRID_REPORT_S) -> list[dict[str, Any]]:
    """Baseline and early rejection on every grid point (the policies that need no prediction): one row
    per configuration with mean/std/min/max over seeds of OSC_MEASURES per policy, plus counts."""
    rows = []
    for n_prefill in prefill_instances:
        for ttft in ttft_slos_s:
            for slots, mean_decode in decode:
                for interval in report_intervals_s:
                    config = replace(base, prefill_instances=int(n_prefill), ttft_slo_s=float(ttft),
                                     decode_slots=int(slots), decode_mean_s=float(mean_decode),
                                     load_report_interval_s=float(interval)).validate()
                    row: dict[str, Any] = {"prefill_instances": int(n_prefill), "ttft_slo_s": float(ttft),
                                           "decode_slots": int(slots), "decode_mean_s": float(mean_decode),
                                           "load_report_interval_s": float(interval)}
                    for policy in OSCILLATION_POLICIES[:2]:
                        osc, counts = [], []
                        for seed in seeds:
                            result = simulate_config(config, poisson_workload(config, np.random.default_rng(seed)),
                                                     policy)
                            osc.append(oscillation(result, config, corr, period))
                            counts.append(result.counts())
                        row[policy.name] = {**{m: _stats([o[m] for o in osc]) for m in OSC_MEASURES},
                                            **{m: _stats([c[m] for c in counts]) for m in ("completed", "wasted_prefills")}}
                    rows.append(row)
    return rows


def oscillation_sweep_stages(corr: Callable, period: Callable, seeds: Sequence[int] = SEEDS) -> list[dict[str, Any]]:
    """Both stages of the documented sweep (grid, then refinement); each row carries its "stage" (1 or 2)."""
    first = oscillation_sweep(corr, period, seeds)
    second = oscillation_sweep(corr, period, seeds, prefill_instances=OSC_REFINE_PREFILL_INSTANCES,
                               ttft_slos_s=OSC_REFINE_TTFT_SLOS_S, decode=OSC_REFINE_DECODE,
                               report_intervals_s=OSC_REFINE_REPORT_S)
    return [{"stage": 1, **r} for r in first] + [{"stage": 2, **r} for r in second]


def _run_part(impl: str) -> dict[str, Any]:
    predict = exercise_function("ex05", "predicted_decode_load", impl)
    admit = exercise_function("ex05", "admit_predictive", impl)
    corr = exercise_function("ex05", "antiphase_correlation", impl)
    period = exercise_function("ex05", "dominant_period_s", impl)
    return experiment(predict, admit, corr, period)


# ---------------------------------------------------------------------------------------------
# Text and plots (presentation only)


def _pm(s: dict[str, float], fmt: str = "{:.0f}") -> str:
    return f"{fmt.format(s['mean'])} ± {fmt.format(s['std'])}"


def _view(interval_s: float) -> str:
    return f"decode load reported every {interval_s:g} s" if interval_s else "decode load seen live"


def _threshold_note(fig_data: dict[str, Any]) -> str:
    """How the arrival checks' threshold relates to the decode pool's hard capacity."""
    threshold, slots = fig_data["admit_threshold"], fig_data["decode_slots"]
    if threshold == slots:
        return f"arrival checks stop at the hard capacity ({slots} decode slots)"
    return f"arrival checks stop at {threshold} of {slots} decode slots (TBT SLO threshold)"


def render(figures: dict[str, Any]) -> str:
    n = len(figures["seeds"])
    lines = [f"Default configuration ({n} seeds, mean ± sample std; changes paired by seed):",
             f"{'policy':<16} {'completed':>13} {'rej. arrival':>13} {'wasted':>11} {'wasted GPU-s':>14}"
             f" {'Δcompleted %':>14} {'Δwasted %':>14}"]
    for name, e in figures["default"]["policies"].items():
        lines.append(f"{name:<16} {_pm(e['completed']):>13} {_pm(e['rejected_at_arrival']):>13} "
                     f"{_pm(e['wasted_prefills']):>11} {_pm(e['wasted_prefill_s']):>14} "
                     f"{_pm(e['completed_vs_baseline_pct'], '{:+.2f}'):>14} "
                     f"{_pm(e['wasted_vs_baseline_pct'], '{:+.1f}'):>14}")
    lines.append("Paper (Mooncake §7, 8P + 8D, ~23,000 real requests at 2x), rejected requests: "
                 + ", ".join(f"{k} {v:,}" for k, v in figures["paper_rejected"].items()))
    lines.append("")
    long_cfg = figures["configs"]["long_prefill"]
    lines.append(f"Long prefills (10-20 s), {long_cfg['prefill_instances']} prefill instances, TTFT SLO "
                 f"{long_cfg['ttft_slo_s']:g} s, {_view(long_cfg['load_report_interval_s'])}, "
                 f"{_threshold_note(figures['long_prefill'])}, {n} seeds: "
                 "the two pools' loads (prefill per instance, decode per slot)")
    lag = f"corr, lag {long_cfg['prefill_mean_s']:g} s"
    lines.append(f"{'policy':<12} {'corr(prefill, decode)':>22} {lag:>17} {'peak lag s':>11} {'trough lag s':>13}"
                 f" {'prefill period s':>17} {'decode period s':>16} {'prefill swing':>14} {'decode swing':>14}"
                 f" {'prefill empty %':>16} {'decode > thr. %':>16} {'completed':>12} {'wasted':>10}")
    for name, e in figures["long_prefill"]["policies"].items():
        o = e["oscillation"]
        lines.append(f"{name:<12} {_pm(o['correlation'], '{:+.2f}'):>22} {_pm(o['lagged_correlation'], '{:+.2f}'):>17} "
                     f"{_pm(o['peak_lag_s']):>11} {_pm(o['trough_lag_s']):>13} "
                     f"{_pm(o['prefill_period_s']):>17} {_pm(o['decode_period_s']):>16} "
                     f"{_pm(o['prefill_swing'], '{:.2f}'):>14} {_pm(o['decode_swing'], '{:.2f}'):>14} "
                     f"{100 * o['prefill_empty']['mean']:>16.1f} {100 * o['decode_above_threshold']['mean']:>16.1f} "
                     f"{_pm(e['completed']):>12} {_pm(e['wasted_prefills']):>10}")
    lines.append("(swing: 5th-95th percentile range of the normalised load; peak / trough lag: the shift of the "
                 "decode series at which its correlation with the prefill series is highest / lowest; prefill "
                 "empty: time with no request queued or prefilling; decode > thr.: time with the decode load "
                 "above the arrival checks' threshold, i.e. above the TBT SLO when that lies below the hard capacity)")
    lines.append("")
    lines.append("Lecture's findings against the measured means (target ranges fixed in advance):")
    for claim, f in figures["findings"].items():
        lines.append(f"  [{'holds' if f['holds'] else 'does not hold'}] {claim}: {f['measured']:+.2f}")
    return "\n".join(lines)


def plot(figures: dict[str, Any], outdir: Path) -> list[Path]:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    paths = []
    for name in ("long_prefill", "default"):
        fig_data = figures[name]
        series = fig_data["series"]
        fig, axes = plt.subplots(len(series), 1, figsize=(10, 2.2 * len(series)), sharex=True, squeeze=False)
        t0 = fig_data["window_s"][0]
        for ax, (policy, s) in zip(axes[:, 0], series.items()):
            t = t0 + np.arange(len(s["decode"])) * fig_data["dt_s"]
            ax.plot(t, np.asarray(s["prefill"]) / fig_data["prefill_instances"],
                    label="prefill pool (requests / instance)", lw=1)
            ax.plot(t, np.asarray(s["decode"]) / fig_data["decode_slots"], label="decode pool (fraction of slots)", lw=1)
            ax.axhline(1.0, color="grey", lw=0.6, ls=":")
            if fig_data["admit_threshold"] < fig_data["decode_slots"]:
                ax.axhline(fig_data["admit_threshold"] / fig_data["decode_slots"], color="tab:orange", lw=0.8,
                           ls="--", label="arrival checks' decode threshold (TBT SLO)")
            o = figures[name]["policies"][policy]["oscillation"]
            ax.set_title(f"{policy}: corr {o['correlation']['mean']:+.2f}, lagged corr "
                         f"{o['lagged_correlation']['mean']:+.2f}; decode most like prefill "
                         f"{o['peak_lag_s']['mean']:.0f} s later (means over seeds)", fontsize=9)
            ax.set_ylabel("load / capacity", fontsize=8)
            ax.set_ylim(0.0, 1.35 * ax.get_ylim()[1])  # headroom for the legend above the curves
            ax.legend(loc="upper left", fontsize=7, ncol=3)
        axes[-1, 0].set_xlabel("simulated time (s)")
        cfg = figures["configs"][name]
        label = "long prefills (10-20 s)" if name == "long_prefill" else "default (2-6 s prefills)"
        label += f", TTFT SLO {cfg['ttft_slo_s']:g} s, {_view(cfg['load_report_interval_s'])}"
        if fig_data["admit_threshold"] < fig_data["decode_slots"]:
            label += f", threshold {fig_data['admit_threshold']} of {fig_data['decode_slots']} slots"
        fig.suptitle(f"Pool loads per admission policy: {label}; seed {figures['seeds'][0]}", fontsize=10)
        fig.tight_layout()
        path = Path(outdir) / f"overload_{name}_load.png"
        fig.savefig(path, dpi=110)
        plt.close(fig)
        paths.append(path)
    return paths


PARTS = [Part("overload", "Scheduling under overload: early and prediction-based rejection", "§3.2",
              ("ex05",), _run_part, render, plot)]

# ---------------------------------------------------------------------------------------------
# CLI


def _cli_policies(choice: str, oversubscription: float) -> list[Policy]:
    over = Policy(f"predictive x{oversubscription:g}", "predictive", oversubscription)
    table = {"baseline": [POLICIES[0]], "early": [POLICIES[1]], "predictive": [POLICIES[2]], "oversubscribed": [over]}
    return [*POLICIES[:3], over] if choice == "all" else table[choice]


def render_sweep(rows: list[dict[str, Any]]) -> str:
    lines = ["Long prefills: oscillation measures vs decode-load report interval (mean ± std over seeds)",
             f"{'TTFT SLO s':>10} {'report s':>9} {'policy':<11} {'corr':>12} {'lagged corr':>12} "
             f"{'prefill period s':>17} {'decode period s':>16} {'prefill swing':>14} {'decode swing':>13}"]
    for r in rows:
        lines.append(f"{r['ttft_slo_s']:>10g} {r['load_report_interval_s']:>9g} {r['policy']:<11} "
                     f"{_pm(r['correlation'], '{:+.2f}'):>12} {_pm(r['lagged_correlation'], '{:+.2f}'):>12} "
                     f"{_pm(r['prefill_period_s']):>17} {_pm(r['decode_period_s']):>16} "
                     f"{_pm(r['prefill_swing'], '{:.2f}'):>14} {_pm(r['decode_swing'], '{:.2f}'):>13}")
    return "\n".join(lines)


def render_oscillation_sweep(rows: list[dict[str, Any]]) -> str:
    lines = ["Long prefills (10-20 s): oscillation sweep, baseline vs early rejection (mean ± std over seeds)",
             f"{'st':>2} {'P':>3} {'TTFT s':>6} {'slots':>5} {'dec s':>5} {'rep s':>5} {'base corr':>11} "
             f"{'early corr':>11} {'lag corr':>11} {'peak lag s':>10} {'trough lag s':>12} {'P period s':>11} "
             f"{'D period s':>11} {'P swing':>7} {'D swing':>7} {'completed b/e':>13} {'wasted b/e':>11}"]
    for r in rows:
        b, e = r["baseline"], r["early"]
        lines.append(f"{r['stage']:>2} {r['prefill_instances']:>3} {r['ttft_slo_s']:>6g} {r['decode_slots']:>5} "
                     f"{r['decode_mean_s']:>5g} {r['load_report_interval_s']:>5g} "
                     f"{_pm(b['correlation'], '{:+.2f}'):>11} {_pm(e['correlation'], '{:+.2f}'):>11} "
                     f"{_pm(e['lagged_correlation'], '{:+.2f}'):>11} {e['peak_lag_s']['mean']:>10.1f} "
                     f"{e['trough_lag_s']['mean']:>12.1f} {e['prefill_period_s']['mean']:>11.0f} "
                     f"{e['decode_period_s']['mean']:>11.0f} {e['prefill_swing']['mean']:>7.2f} "
                     f"{e['decode_swing']['mean']:>7.2f} "
                     f"{b['completed']['mean']:>6.0f}/{e['completed']['mean']:<6.0f} "
                     f"{b['wasted_prefills']['mean']:>5.0f}/{e['wasted_prefills']['mean']:<5.0f}")
    return "\n".join(lines)


def _render_trace(out: dict[str, Any]) -> str:
    lines = [f"Trace replay: {out['requests']} requests at {out['speedup']:g}x, {out['prefill_instances']} prefill + "
             f"{out['decode_instances']} decode instances ({out['decode_slots']} decode slots); mean prefill "
             f"{out['mean_prefill_s']:.2f} s, mean decode {out['mean_decode_s']:.2f} s",
             f"{'policy':<18} {'completed':>10} {'rejected at arrival':>20} {'wasted prefills':>16} {'rejected total':>15}"]
    for name, c in out["policies"].items():
        lines.append(f"{name:<18} {c['completed']:>10} {c['rejected_at_arrival']:>20} {c['wasted_prefills']:>16} "
                     f"{c['rejected_total']:>15}")
    lines.append("Paper (Mooncake §7, ~23,000 requests at 2x), rejected: "
                 + ", ".join(f"{k} {v:,}" for k, v in PAPER_REJECTED.items()))
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m hetero.overload", description=__doc__.split("\n")[0])
    parser.add_argument("--impl", default="solutions", help="where ex05 comes from: solutions, assignments, or a folder")
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    parser.add_argument("--plots", type=Path, default=None, help="simulation mode: write PNGs into this folder")
    parser.add_argument("--seeds", type=int, default=len(SEEDS), help="simulation mode: number of seeds (>= 2)")
    parser.add_argument("--report-sweep", action="store_true",
                        help="simulation mode: long-prefill oscillation vs decode-load report interval and TTFT SLO")
    parser.add_argument("--oscillation-sweep", action="store_true",
                        help="simulation mode: the two-stage long-prefill grid that chose the long-prefill configuration")
    parser.add_argument("--trace", type=Path, default=None, help="replay this Mooncake-format JSONL trace")
    parser.add_argument("--speedup", type=float, default=2.0, help="trace mode: replay speed factor (> 0)")
    parser.add_argument("--prefill-instances", type=int, default=8)
    parser.add_argument("--decode-instances", type=int, default=8)
    parser.add_argument("--decode-slots", type=int, default=TraceCostModel.decode_slots_per_instance,
                        help="trace mode: requests per decode instance")
    parser.add_argument("--tpot-s", type=float, default=TraceCostModel.tpot_s, help="trace mode: s per output token")
    parser.add_argument("--ttft-slo-s", type=float, default=TraceCostModel.ttft_slo_s)
    parser.add_argument("--policy", default="all", help=f"one of {', '.join(CLI_POLICIES)}")
    parser.add_argument("--oversubscription", type=float, default=1.1, help="threshold factor of 'oversubscribed'")
    args = parser.parse_args(argv)
    if args.policy not in CLI_POLICIES:
        parser.error(f"--policy: unknown policy {args.policy!r}; choose one of {', '.join(CLI_POLICIES)}")
    for flag, value in (("--speedup", args.speedup), ("--tpot-s", args.tpot_s), ("--ttft-slo-s", args.ttft_slo_s)):
        if not (math.isfinite(value) and value > 0):
            parser.error(f"{flag} must be > 0, got {value:g}")
    for flag, value in (("--prefill-instances", args.prefill_instances), ("--decode-instances", args.decode_instances),
                        ("--decode-slots", args.decode_slots)):
        if value < 1:
            parser.error(f"{flag} must be >= 1, got {value}")
    if not (math.isfinite(args.oversubscription) and args.oversubscription >= 1):
        parser.error(f"--oversubscription must be >= 1, got {args.oversubscription:g}")
    if args.trace is None:
        if args.seeds < 2:
            parser.error(f"--seeds must be >= 2 (a spread needs two runs), got {args.seeds}")
        if args.oscillation_sweep:
            rows = oscillation_sweep_stages(exercise_function("ex05", "antiphase_correlation", args.impl),
                                            exercise_function("ex05", "dominant_period_s", args.impl),
                                            seeds=tuple(range(args.seeds)))
            print(json.dumps(rows, indent=1) if args.json else render_oscillation_sweep(rows))
            return 0
        if args.report_sweep:
            rows = report_interval_sweep(exercise_function("ex05", "predicted_decode_load", args.impl),
                                         exercise_function("ex05", "admit_predictive", args.impl),
                                         exercise_function("ex05", "antiphase_correlation", args.impl),
                                         exercise_function("ex05", "dominant_period_s", args.impl),
                                         seeds=tuple(range(args.seeds)))
            print(json.dumps(rows, indent=1) if args.json else render_sweep(rows))
            return 0
        figures = PARTS[0].run(args.impl) if args.seeds == len(SEEDS) else experiment(
            exercise_function("ex05", "predicted_decode_load", args.impl),
            exercise_function("ex05", "admit_predictive", args.impl),
            exercise_function("ex05", "antiphase_correlation", args.impl),
            exercise_function("ex05", "dominant_period_s", args.impl), seeds=tuple(range(args.seeds)))
        if args.plots is not None:
            args.plots.mkdir(parents=True, exist_ok=True)
            for path in plot(figures, args.plots):
                print(f"wrote {path}", file=sys.stderr)
        print(json.dumps(figures, indent=1) if args.json else render(figures))
        return 0
    try:
        requests = read_trace(args.trace)
    except (TraceError, OSError) as exc:
        parser.error(f"--trace: {exc}")
    policies = _cli_policies(args.policy, args.oversubscription)
    needs_ex05 = any(p.kind == "predictive" for p in policies)
    predict = exercise_function("ex05", "predicted_decode_load", args.impl) if needs_ex05 else None
    admit = exercise_function("ex05", "admit_predictive", args.impl) if needs_ex05 else None
    cost = TraceCostModel(tpot_s=args.tpot_s, decode_slots_per_instance=args.decode_slots, ttft_slo_s=args.ttft_slo_s)
    out = replay_trace(requests, args.speedup, args.prefill_instances, args.decode_instances, policies,
                       predict, admit, cost)
    print(json.dumps(out, indent=1) if args.json else _render_trace(out))
    return 0


def _main_or_missing(argv: list[str] | None = None) -> int:
    try:
        return main(argv)
    except MissingExercise as exc:
        print(f"python -m hetero.overload: {exc}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(_main_or_missing())
