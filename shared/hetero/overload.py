"""Scheduling under overload in a disaggregated cluster (lecture §3, Mooncake §7; experiment 02 part 3).

A discrete-event simulation (a heap of `(time_s, seq, event)`) of a prefill pool and a decode pool:

* prefill pool: `prefill_instances` instances, each prefilling one request at a time in FIFO order.
  The prefill time of a request is known when it arrives (it follows from the prompt length), so the
  Conductor knows exactly when an admitted request will finish prefill; it sends a request to the
  instance where it finishes first, and turns it away at arrival when that predicted TTFT (queueing +
  prefill) exceeds `ttft_slo_s` ("the prefill pool admits by its own load");
* decode pool: continuous batching with a TBT model (`DecodeModel`). Every decode step emits one token
  for each decoding request and takes `step_s(batch)`, the fixed-efficiency roofline of the decode
  instance (lecture §1.2, `hetero.roofline`): max(FLOPs / effective peak, (weights + the batch's KV) /
  effective bandwidth), both linear in the batch. The TBT SLO is one threshold: `max_batch` is the
  largest batch whose step time is within it (and whose KV fits in HBM). A request that finishes
  prefill while the decode pool already holds `max_batch` requests would push the TBT over the SLO, so
  the decode pool rejects it there: its prefill was wasted. No request ever decodes over the SLO.
  Each request's output length (tokens) is not known in advance; all decoding requests advance one
  token per step, so a request's decode time depends on the batch it shares (tracked exactly with one
  "tokens emitted per stream" clock).

Admission policies (checked at arrival, in addition to the TTFT check every policy makes):
* baseline:   nothing more; the decode pool is checked only at decode entry;
* early:      reject when the decode pool is at its TBT-SLO threshold *now*;
* predictive: reject unless `admit_predictive(predicted_load, max_batch, oversubscription)` where
  `predicted_load = predicted_decode_load(prefill_end, decoding_since, admitted_prefill_ends,
  decode_mean_s)`: the system-level prediction of Mooncake §7 (every decode is assumed to take the same
  time t_d, here the mean output length at the TBT SLO's step time). Both functions are exercise
  ex05's, called through `hetero.impl.exercise_function`. Oversubscription multiplies the threshold
  (x1.1 and x1.2 are reported).
The arrival checks and decode entry use the same threshold, `DecodeModel.max_batch`.

Default configuration (fixed from the lecture's words before it was run; reasons beside each field;
docs/figures_overload.md): both pools serve about 2 req/s, requests arrive as a Poisson process at
2.6 req/s for one hour, output lengths are exponential, and prefills are long (10-20 s, "十几秒"), so
a request reaches decode 10-30 s after it arrives (queueing within the 30 s TTFT SLO + prefill). `SHORT_PREFILL` is the same cluster
with 2-6 s prefills; the lag sweep (`lag_sweep`, experiment part "overload_lag") varies the prefill
time at constant capacity and shows where "look at the decode load now" stops predicting it.

Trace mode replays a Mooncake-format trace (`hetero.traces`) with a stated cost model (see
`TraceCostModel`). CLI:
    python -m hetero.overload [--seeds 5] [--json] [--plots DIR] [--impl solutions]
    python -m hetero.overload --lag-sweep [--seeds 3] [--json]
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
from pathlib import Path
from typing import Any, Callable, Sequence

import numpy as np

from hetero import catalog, plotting, roofline
from hetero.impl import MissingExercise, exercise_function, resolve_impl_dir
from hetero.parts import Part
from hetero.traces import TraceError, TraceRequest, read_trace

# ---------------------------------------------------------------------------------------------
# The decode pool's TBT model

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

    def validate(self) -> "DecodeModel":
        for name in ("base_s", "kv_s_per_request", "compute_s_per_request", "tbt_slo_s"):
            value = getattr(self, name)
            if isinstance(value, bool) or not (isinstance(value, (int, float)) and math.isfinite(value) and value >= 0):
                raise ValueError(f"decode.{name} must be a finite number >= 0, got {value!r}")
        for name in ("kv_capacity_requests", "instances"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ValueError(f"decode.{name} must be an int >= 1, got {value!r}")
        if self.step_s(1) > self.tbt_slo_s:
            raise ValueError(f"decode.tbt_slo_s ({self.tbt_slo_s} s) is below the step time of a single request "
                             f"({self.step_s(1)} s): no batch meets it")
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
        """The TBT-SLO threshold of the whole pool (requests): the arrival checks and decode entry use it."""
        return self.max_batch_per_instance * self.instances

    def step_table(self) -> list[float]:
        """step_s(b) for b = 0 .. max_batch (index = pool batch)."""
        return [self.step_s(b) for b in range(self.max_batch + 1)]


def roofline_decode_model(model: str, gpu: str, num_gpus: int, context_tokens: int, tbt_slo_s: float | None,
                          kv_capacity_requests: int, instances: int = 1) -> DecodeModel:
    """A DecodeModel from `hetero.roofline.decode_step` (catalog hardware, ASSUMPTIONS efficiencies):
    every decoding request reads `context_tokens` tokens of KV. `tbt_slo_s` None: the paper's rule,
    TBT_SLO_OVER_BATCH_1 x the single-request step."""
    one = roofline.decode_step(model, gpu, num_gpus, 1, context_tokens, KV_BYTES_PER_TOKEN)
    two = roofline.decode_step(model, gpu, num_gpus, 2, context_tokens, KV_BYTES_PER_TOKEN)
    kv_s = two.memory_s - one.memory_s
    slo = TBT_SLO_OVER_BATCH_1 * one.time_s if tbt_slo_s is None else tbt_slo_s
    return DecodeModel(base_s=one.memory_s - kv_s, kv_s_per_request=kv_s, compute_s_per_request=one.compute_s,
                       tbt_slo_s=slo, kv_capacity_requests=kv_capacity_requests, instances=instances).validate()


# The toy's decode pool: one decode instance of 8 x H20 (lecture §1.2: H20 decodes, H800 prefills)
# serving LLaMA-3.1-70B, each request over a context of 8,590 tokens (the lecture's Kimi mean input).
# KV capacity: (8 x 96 GB x 0.9 - 141 GB of weights) / (8,590 x 320 KiB) = 195 requests. TBT SLO: the
# paper's rule, 5 x the 5.62 ms single-request step = 28.1 ms, reached at a batch of 122 (compute-bound).
TOY_DECODE = roofline_decode_model("LLaMA-3.1-70B", "H20", 8, 8590, None, kv_capacity_requests=195)
# Output lengths (tokens) of the toy: the mean that makes the decode pool serve 2 req/s at its threshold,
# max_batch / (2 req/s x step at max_batch) = 2,171 tokens (about 61 s of decoding at the SLO).
TOY_DECODE_CAPACITY_PER_S = 2.0
TOY_MEAN_OUTPUT_TOKENS = float(round(TOY_DECODE.max_batch / (TOY_DECODE_CAPACITY_PER_S
                                                              * TOY_DECODE.step_s(TOY_DECODE.max_batch))))

# ---------------------------------------------------------------------------------------------
# Configuration


@dataclass(frozen=True)
class OverloadConfig:
    """One cluster + workload; every time in seconds."""

    arrival_rate_per_s: float = 2.6  # lecture §3.2: 2.6 req/s against ~2 req/s of capacity (30% overload)
    duration_s: float = 3600.0  # lecture §3.2: one hour of arrivals; admitted work then drains
    prefill_instances: int = 30  # 30 instances / 15 s mean prefill = 2 req/s of prefill capacity
    prefill_mean_s: float = 15.0  # lecture §3.2: long-context prefill takes "十几秒" (ten-plus seconds)
    prefill_spread: float = 1 / 3  # prefill time ~ Uniform(mean x (1 - spread), mean x (1 + spread)): 10-20 s
    ttft_slo_s: float = PAPER_TTFT_SLO_S  # the TTFT cap of the paper's real-trace runs
    decode: DecodeModel = TOY_DECODE  # TBT model and threshold (2 req/s at the threshold with the outputs below)
    decode_mean_tokens: float = TOY_MEAN_OUTPUT_TOKENS  # exponential output lengths: not known in advance
    sample_dt_s: float = 1.0  # load series sampling interval
    # How stale the Conductor's view of the decode pool is. 0: it sees the current occupancy at every
    # arrival. T > 0: the decode pool reports its occupancy (and, for the predictive policy, its
    # requests' decode start times) every T s, and the decode checks made at arrival use the last
    # report; prefill ends since that report are known to the Conductor (it dispatched those requests).
    # The TTFT check and the decode-entry check stay exact.
    load_report_interval_s: float = 0.0

    def validate(self) -> "OverloadConfig":
        positive = {"arrival_rate_per_s": self.arrival_rate_per_s, "duration_s": self.duration_s,
                    "prefill_mean_s": self.prefill_mean_s, "ttft_slo_s": self.ttft_slo_s,
                    "decode_mean_tokens": self.decode_mean_tokens, "sample_dt_s": self.sample_dt_s}
        for name, value in positive.items():
            if isinstance(value, bool) or not (isinstance(value, (int, float)) and math.isfinite(value) and value > 0):
                raise ValueError(f"{name} must be a finite number > 0, got {value!r}")
        value = self.prefill_instances
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise ValueError(f"prefill_instances must be an int >= 1, got {value!r}")
        if not 0 <= self.prefill_spread < 1:
            raise ValueError(f"prefill_spread must lie in [0, 1), got {self.prefill_spread}")
        interval = self.load_report_interval_s
        if isinstance(interval, bool) or not (isinstance(interval, (int, float)) and math.isfinite(interval)
                                               and interval >= 0):
            raise ValueError(f"load_report_interval_s must be a finite number >= 0, got {interval!r}")
        if not isinstance(self.decode, DecodeModel):
            raise ValueError(f"decode must be a DecodeModel, got {type(self.decode).__name__}")
        self.decode.validate()
        return self

    @property
    def decode_mean_s(self) -> float:
        """The system-level prediction's t_d: the mean output length at the TBT SLO's step time."""
        return self.decode_mean_tokens * self.decode.step_s(self.decode.max_batch)

    @property
    def prefill_capacity_per_s(self) -> float:
        return self.prefill_instances / self.prefill_mean_s

    @property
    def decode_capacity_per_s(self) -> float:
        """Requests per second the decode pool finishes when it runs at its TBT-SLO threshold."""
        return self.decode.max_batch / self.decode_mean_s


DEFAULT = OverloadConfig()
# The same cluster with short prefills (2-6 s on 8 instances, still 2 req/s; TTFT SLO 12 s = 3 mean
# prefill times): the package's first default, whose admission-to-decode lag is under ten seconds.
SHORT_PREFILL = replace(DEFAULT, prefill_instances=8, prefill_mean_s=4.0, prefill_spread=0.5, ttft_slo_s=12.0)
SCENARIOS: dict[str, OverloadConfig] = {"default": DEFAULT, "short_prefill": SHORT_PREFILL}


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

# Mooncake paper §8.2, Table 3 (8 prefill + 8 decode instances, ~23,000 real requests replayed at 2x).
PAPER_REJECTED = {"baseline": 4183, "early": 3771, "predictive": 3589}

# ---------------------------------------------------------------------------------------------
# Workload


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


# ---------------------------------------------------------------------------------------------
# The discrete-event simulation

PredictFn = Callable[[float, list, list, float], int]
AdmitFn = Callable[[float, int, float], bool]

_ARRIVAL, _PREFILL_DONE, _DECODE_DONE = 0, 1, 2


@dataclass(frozen=True)
class SimResult:
    arrivals: int
    completed: int  # finished decoding, every step within the TBT SLO (admitted work drains at the end)
    rejected_at_arrival: int  # TTFT check or the policy's decode check
    rejected_for_decode: int  # the part of rejected_at_arrival due to the decode check
    wasted_prefills: int  # prefilled, then rejected at decode entry (the batch was at the TBT threshold)
    wasted_prefill_s: float  # instance-seconds of prefill spent on them
    mean_lag_s: float  # mean admission-to-decode-entry time of the requests that finished prefill
    max_tbt_s: float  # longest decode step of the run (never above the TBT SLO)
    prefill_load: np.ndarray  # (samples,) int: requests queued or prefilling at t = k * dt
    decode_load: np.ndarray  # (samples,) int: requests decoding at t = k * dt
    dt_s: float

    def counts(self) -> dict[str, Any]:
        return {"arrivals": self.arrivals, "completed": self.completed,
                "rejected_at_arrival": self.rejected_at_arrival,
                "rejected_for_decode": self.rejected_for_decode,
                "wasted_prefills": self.wasted_prefills,
                "wasted_prefill_s": round(self.wasted_prefill_s, 6),
                "mean_lag_s": round(self.mean_lag_s, 6), "max_tbt_s": round(self.max_tbt_s, 9)}


def simulate(workload: Workload, prefill_instances: int, decode: DecodeModel, ttft_slo_s: float,
             decode_mean_s: float, policy: Policy, predict: PredictFn | None = None,
             admit: AdmitFn | None = None, sample_dt_s: float = 1.0,
             report_interval_s: float = 0.0) -> SimResult:
    """Replay `workload` under `policy`. `predict`/`admit` (ex05) are needed by the predictive policy.

    The one threshold `decode.max_batch` (the TBT SLO) is used by the arrival checks (early: reject
    while the decode load is at it; predictive: passed to `admit` as its slot count) and at decode
    entry. `decode_mean_s` is the predictive policy's t_d. `report_interval_s` > 0: the arrival checks
    see the decode pool as reported at the last multiple of the interval (OverloadConfig); 0: as it is."""
    if policy.kind not in POLICY_KINDS:
        raise ValueError(f"policy kind must be one of {', '.join(POLICY_KINDS)}, got {policy.kind!r}")
    if policy.kind == "predictive" and (predict is None or admit is None):
        raise ValueError("the predictive policy needs the predict and admit functions")
    threshold = decode.max_batch
    step_of = decode.step_table()  # step_of[b]: seconds per decode step with b requests decoding
    arrival, prefill, tokens = workload.arrival_s, workload.prefill_s, workload.decode_tokens
    n = int(arrival.size)
    free_at = [0.0] * prefill_instances  # min-heap: when each prefill instance finishes its admitted queue
    in_prefill: dict[int, float] = {}  # admitted request -> its prefill end time
    decoding: dict[int, float] = {}  # decoding request -> its decode start time
    # Decode progress: every decoding request gains one token per step, so one clock counts the tokens
    # emitted per stream; a request that joined at clock v with k tokens to go leaves when it reaches v + k.
    clock_tokens, clock_t = 0.0, 0.0
    finish: list[tuple[float, int]] = []  # min-heap of (clock value at which the request finishes, request)
    decode_version = 0  # the one valid pending _DECODE_DONE event carries the current version
    samples = int(math.ceil(workload.duration_s / sample_dt_s))
    prefill_load = np.zeros(samples, dtype=np.int64)
    decode_load = np.zeros(samples, dtype=np.int64)
    next_sample = 0
    completed = rejected = rejected_decode = wasted = entered = 0
    wasted_s = lag_sum = max_tbt = 0.0
    events: list[tuple[float, int, int, int]] = []  # (time_s, seq, kind, request or version)
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
        if kind == _DECODE_DONE and i != decode_version:
            continue  # superseded: the batch (and so the step time) changed since it was scheduled
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
            continue
        # Prefill done or decode done: bring the decode clock to t at the step time of the batch so far.
        if decoding:
            clock_tokens += (t - clock_t) / step_of[len(decoding)]
        clock_t = t
        if kind == _PREFILL_DONE:
            del in_prefill[i]
            if stale:
                done_since_report.append(t)
            entered += 1
            lag_sum += t - float(arrival[i])
            if len(decoding) < threshold:  # one more request keeps the step within the TBT SLO
                decoding[i] = t
                heapq.heappush(finish, (clock_tokens + float(tokens[i]), i))
            else:
                wasted += 1
                wasted_s += float(prefill[i])
        else:
            while finish and finish[0][0] <= clock_tokens + 1e-9:
                _, j = heapq.heappop(finish)
                del decoding[j]
                completed += 1
        if decoding:
            step = step_of[len(decoding)]
            max_tbt = max(max_tbt, step)
            decode_version += 1
            seq += 1
            heapq.heappush(events, (t + max(0.0, finish[0][0] - clock_tokens) * step, seq, _DECODE_DONE,
                                    decode_version))
    # Samples after the last event stay 0: every admitted request has drained by then.
    return SimResult(n, completed, rejected, rejected_decode, wasted, wasted_s, lag_sum / entered if entered else 0.0,
                     max_tbt, prefill_load, decode_load, sample_dt_s)


def simulate_config(config: OverloadConfig, workload: Workload, policy: Policy,
                    predict: PredictFn | None = None, admit: AdmitFn | None = None) -> SimResult:
    return simulate(workload, config.prefill_instances, config.decode, config.ttft_slo_s,
                    config.decode_mean_s, policy, predict, admit, config.sample_dt_s,
                    config.load_report_interval_s)


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
    of the TBT-SLO threshold). `corr` and `period` are ex05's functions."""
    skip = int(WARMUP_S / result.dt_s)
    p = result.prefill_load[skip:].astype(np.float64) / config.prefill_instances  # (samples,) per instance
    d = result.decode_load[skip:].astype(np.float64) / config.decode.max_batch  # (samples,) fraction of the threshold
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
        # Fraction of the time the decode pool is at its TBT-SLO threshold (every arrival then fails the
        # early check; every prefill that ends then is wasted).
        "decode_at_threshold": float(np.mean(result.decode_load[skip:] >= config.decode.max_batch)),
    }


# ---------------------------------------------------------------------------------------------
# Trace mode

# The paper's testbed (§8): nodes of 8 x NVIDIA A800 80 GB. The A800 is the A100-80GB with NVLink cut to
# 400 GB/s; its dense BF16 peak (312 TFLOP/s) and HBM (80 GB, ~2 TB/s) are the catalog's A100-80GB.
PAPER_GPU = "A100-80GB"
# KV tokens one 8 x 80 GB instance holds after the 141.1 GB of LLaMA-3.1-70B weights and 10 % headroom:
# (8 x 80e9 x 0.9 - 141.1e9) B / 320 KiB = 1,327,186 tokens.
PAPER_INSTANCE_KV_TOKENS = 1_327_186


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
        m = catalog.model(self.model)
        g = catalog.gpu(self.gpu)
        n = input_tokens.astype(np.float64)
        flops = 2.0 * m.num_params * n + 2.0 * m.num_layers * m.attn_dim * n * n
        rate = self.gpus_per_instance * g.peak_tflops * 1e12 * catalog.ASSUMPTIONS["compute_efficiency"]
        return flops / rate

    def decode_model(self, context_tokens: int, instances: int) -> DecodeModel:
        fits = max(1, PAPER_INSTANCE_KV_TOKENS // max(1, context_tokens))
        cap = fits if self.decode_requests_per_instance is None else self.decode_requests_per_instance
        return roofline_decode_model(self.model, self.gpu, self.gpus_per_instance, max(1, context_tokens),
                                     self.tbt_slo_s, cap, instances)


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


def replay_trace(requests: Sequence[TraceRequest], speedup: float, prefill_instances: int,
                 decode_instances: int, policies: Sequence[Policy], predict: PredictFn | None,
                 admit: AdmitFn | None, cost: TraceCostModel = TraceCostModel()) -> dict[str, Any]:
    """Per policy: completed, rejected at arrival, wasted prefills, and their sum."""
    for name, value in (("prefill_instances", prefill_instances), ("decode_instances", decode_instances)):
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise ValueError(f"{name} must be an int >= 1, got {value!r}")
    workload = trace_workload(requests, speedup, cost)
    context = int(round(float(np.mean([r.input_length for r in requests])) + workload.decode_tokens.mean() / 2))
    decode = cost.decode_model(context, decode_instances)
    mean_tokens = float(workload.decode_tokens.mean())
    mean_decode = max(mean_tokens, 1.0) * decode.step_s(decode.max_batch)  # t_d; all-zero outputs: one step
    out: dict[str, Any] = {"requests": len(requests), "speedup": speedup,
                           "prefill_instances": prefill_instances, "decode_instances": decode_instances,
                           "decode_context_tokens": context, "decode_max_batch": decode.max_batch,
                           "decode_step_at_max_batch_s": decode.step_s(decode.max_batch),
                           "mean_prefill_s": float(workload.prefill_s.mean()),
                           "prefill_capacity_per_s": prefill_instances / float(workload.prefill_s.mean()),
                           "decode_capacity_per_s": decode.max_batch / mean_decode,
                           "arrival_rate_per_s": len(requests) / workload.duration_s,
                           "mean_decode_s": mean_decode, "cost_model": asdict(cost), "decode_model": asdict(decode),
                           "policies": {}}
    for policy in policies:
        result = simulate(workload, prefill_instances, decode, cost.ttft_slo_s, mean_decode, policy,
                          predict, admit, sample_dt_s=max(1.0, workload.duration_s / 4096))
        c = result.counts()
        c["rejected_total"] = c["rejected_at_arrival"] + c["wasted_prefills"]
        out["policies"][policy.name] = c
    return out


# ---------------------------------------------------------------------------------------------
# Experiment part "overload"

SEEDS = (0, 1, 2, 3, 4)
PLOT_WINDOW_S = (600.0, 1500.0)  # 15 minutes of the load series shown per policy (seed 0)
METRICS = ("completed", "rejected_at_arrival", "wasted_prefills", "wasted_prefill_s", "mean_lag_s", "max_tbt_s")


def _stats(values: Sequence[float]) -> dict[str, float]:
    arr = np.asarray(values, dtype=np.float64)
    return {"mean": float(arr.mean()), "std": float(arr.std(ddof=1)) if arr.size > 1 else 0.0,
            "min": float(arr.min()), "max": float(arr.max())}


def _pct(new: float, old: float) -> float:
    return 100.0 * (new / old - 1) if old else 0.0


def _policy_table(config: OverloadConfig, policies: Sequence[Policy], seeds: Sequence[int], predict: PredictFn,
                  admit: AdmitFn, corr: Callable | None = None,
                  period: Callable | None = None) -> tuple[dict[str, Any], dict[str, dict[str, list[int]]]]:
    """Per policy: mean/std/min/max over seeds of METRICS, changes against the baseline paired by seed,
    and (with corr/period) the oscillation measures; plus seed 0's load series in the plot window."""
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
            if corr is not None and period is not None:
                osc[policy.name].append(oscillation(result, config, corr, period))
            if seed == seeds[0]:
                series[policy.name] = {"prefill": result.prefill_load[lo:hi].tolist(),
                                       "decode": result.decode_load[lo:hi].tolist()}
    base = runs["baseline"]
    table = {}
    for policy in policies:
        rows = runs[policy.name]
        entry: dict[str, Any] = {m: _stats([r[m] for r in rows]) for m in METRICS}
        entry["completed_vs_baseline_pct"] = _stats([_pct(r["completed"], b["completed"]) for r, b in zip(rows, base)])
        entry["wasted_vs_baseline_pct"] = _stats(
            [_pct(r["wasted_prefills"], b["wasted_prefills"]) for r, b in zip(rows, base)])
        if osc[policy.name]:
            entry["oscillation"] = {k: _stats([o[k] for o in osc[policy.name]]) for k in osc[policy.name][0]}
        table[policy.name] = entry
    return table, {"window_s": list(window), **series}


def experiment(predict: PredictFn, admit: AdmitFn, corr: Callable, period: Callable,
               seeds: Sequence[int] = SEEDS, scenarios: dict[str, OverloadConfig] | None = None) -> dict[str, Any]:
    """All figures of part "overload": the lecture's configuration (every policy, oscillation measures,
    plot series) and the short-prefill one, over seeds; the findings against the lecture's claims.

    `scenarios` replaces the "default" and "short_prefill" configurations (shorter runs in tests)."""
    scenarios = dict(SCENARIOS if scenarios is None else scenarios)
    figures: dict[str, Any] = {"seeds": list(seeds), "configs": {k: asdict(v) for k, v in scenarios.items()},
                               "paper_rejected": dict(PAPER_REJECTED)}
    for name, policies in (("default", POLICIES), ("short_prefill", OSCILLATION_POLICIES)):
        config = scenarios[name]
        table, series = _policy_table(config, policies, seeds, predict, admit, corr, period)
        figures[name] = {"policies": table, "series": series, "dt_s": config.sample_dt_s,
                         "prefill_instances": config.prefill_instances, "decode_max_batch": config.decode.max_batch,
                         "tbt_slo_s": config.decode.tbt_slo_s, "decode_mean_s": config.decode_mean_s,
                         "prefill_capacity_per_s": config.prefill_capacity_per_s,
                         "decode_capacity_per_s": config.decode_capacity_per_s}
    figures["findings"] = _findings(figures["default"]["policies"])
    return figures


def _findings(table: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """The lecture's claims (target ranges fixed in advance) against the measured means."""
    def mean(policy: str, key: str) -> float:
        return table[policy][key]["mean"]

    swing = table["early"]["oscillation"]["prefill_swing"]["mean"] / max(
        table["baseline"]["oscillation"]["prefill_swing"]["mean"], 1e-12)
    checks = {
        "lag: admission to decode takes ten-plus seconds (10-20 s; baseline, s)": (
            mean("baseline", "mean_lag_s"), 10, 20),
        "early: wasted prefills within +-10% of baseline (%)": (mean("early", "wasted_vs_baseline_pct"), -10, 10),
        "early: completes fewer than baseline (%)": (mean("early", "completed_vs_baseline_pct"), -math.inf, 0),
        "early: prefill load swings more than baseline (swing ratio)": (swing, 1, math.inf),
        "predictive: wasted prefills cut by 15-35% (%)": (mean("predictive", "wasted_vs_baseline_pct"), -35, -15),
        "predictive: completes 0-5% fewer (%)": (mean("predictive", "completed_vs_baseline_pct"), -5, 0),
        "predictive x1.1: completions within 1% of baseline (%)": (
            mean("predictive x1.1", "completed_vs_baseline_pct"), -1, 1),
        "predictive x1.2: completions within 1% of baseline (%)": (
            mean("predictive x1.2", "completed_vs_baseline_pct"), -1, 1),
    }
    return {k: {"measured": v, "target": [lo, hi], "holds": bool(lo <= v <= hi)} for k, (v, lo, hi) in checks.items()}


# The lag sweep, fixed before it was run: the default configuration with its prefill time scaled at
# constant prefill capacity (instances = 2 req/s x mean prefill, the same Uniform(mean x 2/3, mean x 4/3)
# spread) and its TTFT SLO scaled with it (2 x the mean prefill, the default's 30 s / 15 s). The
# admission-to-decode lag (queueing + prefill) then runs from about 1.5 s to about 40 s.
LAG_SWEEP_PREFILL_MEAN_S = (1.0, 2.0, 3.0, 5.0, 8.0, 12.0, 15.0, 20.0, 25.0)
LAG_SWEEP_SEEDS = (0, 1, 2)


def lag_config(prefill_mean_s: float, base: OverloadConfig = DEFAULT) -> OverloadConfig:
    instances = max(1, int(round(base.prefill_capacity_per_s * prefill_mean_s)))
    return replace(base, prefill_instances=instances, prefill_mean_s=float(prefill_mean_s),
                   ttft_slo_s=base.ttft_slo_s / base.prefill_mean_s * float(prefill_mean_s)).validate()


def lag_sweep(predict: PredictFn, admit: AdmitFn, seeds: Sequence[int] = LAG_SWEEP_SEEDS,
              prefill_means_s: Sequence[float] = LAG_SWEEP_PREFILL_MEAN_S,
              base: OverloadConfig = DEFAULT) -> dict[str, Any]:
    """One row per prefill time: the measured lag and, for early and predictive rejection, the change
    in wasted prefills and in completions against the baseline (percent, paired by seed)."""
    rows = []
    for mean_s in prefill_means_s:
        config = lag_config(mean_s, base)
        table, _ = _policy_table(config, OSCILLATION_POLICIES, seeds, predict, admit)
        row: dict[str, Any] = {"prefill_mean_s": float(mean_s), "prefill_instances": config.prefill_instances,
                               "ttft_slo_s": config.ttft_slo_s, "lag_s": table["baseline"]["mean_lag_s"]}
        for policy in OSCILLATION_POLICIES:
            e = table[policy.name]
            row[policy.name] = {"completed": e["completed"], "wasted_prefills": e["wasted_prefills"],
                                "completed_vs_baseline_pct": e["completed_vs_baseline_pct"],
                                "wasted_vs_baseline_pct": e["wasted_vs_baseline_pct"], "lag_s": e["mean_lag_s"]}
        rows.append(row)
    return {"seeds": list(seeds), "decode_mean_s": base.decode_mean_s, "rows": rows}


def _exercise_functions(impl: str) -> tuple[PredictFn, AdmitFn]:
    return (exercise_function("ex05", "predicted_decode_load", impl),
            exercise_function("ex05", "admit_predictive", impl))


def _run_part(impl: str) -> dict[str, Any]:
    predict, admit = _exercise_functions(impl)
    corr = exercise_function("ex05", "antiphase_correlation", impl)
    period = exercise_function("ex05", "dominant_period_s", impl)
    return experiment(predict, admit, corr, period)


def _run_lag_part(impl: str) -> dict[str, Any]:
    return lag_sweep(*_exercise_functions(impl))


# ---------------------------------------------------------------------------------------------
# Text and plots (presentation only)


def _pm(s: dict[str, float], fmt: str = "{:.0f}") -> str:
    return f"{fmt.format(s['mean'])} ± {fmt.replace('+', '').format(s['std'])}"


def _config_line(cfg: dict[str, Any], fig: dict[str, Any]) -> str:
    lo = cfg["prefill_mean_s"] * (1 - cfg["prefill_spread"])
    hi = cfg["prefill_mean_s"] * (1 + cfg["prefill_spread"])
    return (f"{cfg['prefill_instances']} prefill instances x {lo:g}-{hi:g} s prefills "
            f"({fig['prefill_capacity_per_s']:.2f} req/s), TTFT SLO {cfg['ttft_slo_s']:g} s; decode: TBT SLO "
            f"{1e3 * fig['tbt_slo_s']:.1f} ms reached at {fig['decode_max_batch']} requests, mean decode "
            f"{fig['decode_mean_s']:.1f} s at that batch ({fig['decode_capacity_per_s']:.2f} req/s); "
            f"arrivals {cfg['arrival_rate_per_s']:g} req/s for {cfg['duration_s']:g} s")


def _policy_lines(table: dict[str, Any]) -> list[str]:
    lines = [f"{'policy':<16} {'completed':>13} {'rej. arrival':>13} {'wasted':>11} {'wasted GPU-s':>14}"
             f" {'Δcompleted %':>14} {'Δwasted %':>14} {'lag s':>11} {'max TBT ms':>10}"]
    for name, e in table.items():
        lines.append(f"{name:<16} {_pm(e['completed']):>13} {_pm(e['rejected_at_arrival']):>13} "
                     f"{_pm(e['wasted_prefills']):>11} {_pm(e['wasted_prefill_s']):>14} "
                     f"{_pm(e['completed_vs_baseline_pct'], '{:+.2f}'):>14} "
                     f"{_pm(e['wasted_vs_baseline_pct'], '{:+.1f}'):>14} {_pm(e['mean_lag_s'], '{:.1f}'):>11} "
                     f"{1e3 * e['max_tbt_s']['max']:>10.1f}")
    return lines


def render(figures: dict[str, Any]) -> str:
    n = len(figures["seeds"])
    d = figures["default"]
    lines = [f"Lecture configuration ({n} seeds, mean ± sample std; changes paired by seed):",
             "  " + _config_line(figures["configs"]["default"], d), *_policy_lines(d["policies"])]
    lines.append("Paper (Mooncake §8.2, 8P + 8D, ~23,000 real requests at 2x), rejected requests: "
                 + ", ".join(f"{k} {v:,}" for k, v in figures["paper_rejected"].items()))
    lines.append("")
    lines.append(f"Oscillation, lecture configuration: the two pools' loads (prefill per instance, decode per "
                 "threshold), warm-up dropped")
    lines.append(f"{'policy':<12} {'corr(prefill, decode)':>22} {'peak lag s':>11} {'trough lag s':>13}"
                 f" {'prefill period s':>17} {'decode period s':>16} {'prefill swing':>14} {'decode swing':>14}"
                 f" {'prefill empty %':>16} {'decode at thr. %':>17}")
    for name, e in d["policies"].items():
        if name not in {p.name for p in OSCILLATION_POLICIES}:
            continue
        o = e["oscillation"]
        lines.append(f"{name:<12} {_pm(o['correlation'], '{:+.2f}'):>22} "
                     f"{_pm(o['peak_lag_s']):>11} {_pm(o['trough_lag_s']):>13} "
                     f"{_pm(o['prefill_period_s']):>17} {_pm(o['decode_period_s']):>16} "
                     f"{_pm(o['prefill_swing'], '{:.2f}'):>14} {_pm(o['decode_swing'], '{:.2f}'):>14} "
                     f"{100 * o['prefill_empty']['mean']:>16.1f} {100 * o['decode_at_threshold']['mean']:>17.1f}")
    lines.append("(swing: 5th-95th percentile range of the normalised load; peak / trough lag: the shift of the "
                 "decode series at which its correlation with the prefill series is highest / lowest)")
    lines.append("")
    s = figures["short_prefill"]
    lines.append("Short prefills, the same cluster:")
    lines.append("  " + _config_line(figures["configs"]["short_prefill"], s))
    lines.extend(_policy_lines(s["policies"]))
    lines.append("")
    lines.append("Lecture's findings against the measured means (target ranges fixed in advance):")
    for claim, f in figures["findings"].items():
        lines.append(f"  [{'holds' if f['holds'] else 'does not hold'}] {claim}: {f['measured']:+.2f}")
    return "\n".join(lines)


def render_lag(figures: dict[str, Any]) -> str:
    lines = [f"Admission-to-decode lag vs what early and prediction-based rejection achieve ({len(figures['seeds'])} "
             f"seeds; mean decode time at the TBT threshold {figures['decode_mean_s']:.0f} s; changes against the "
             "baseline, paired by seed)",
             f"{'prefill s':>9} {'P':>3} {'TTFT s':>6} {'lag s':>6} {'early Δwasted %':>16} {'early Δcompl. %':>16} "
             f"{'pred. Δwasted %':>16} {'pred. Δcompl. %':>16} {'wasted b/e/p':>16}"]
    for r in figures["rows"]:
        e, p = r["early"], r["predictive"]
        lines.append(f"{r['prefill_mean_s']:>9g} {r['prefill_instances']:>3} {r['ttft_slo_s']:>6g} "
                     f"{r['lag_s']['mean']:>6.1f} {_pm(e['wasted_vs_baseline_pct'], '{:+.1f}'):>16} "
                     f"{_pm(e['completed_vs_baseline_pct'], '{:+.2f}'):>16} "
                     f"{_pm(p['wasted_vs_baseline_pct'], '{:+.1f}'):>16} "
                     f"{_pm(p['completed_vs_baseline_pct'], '{:+.2f}'):>16} "
                     f"{r['baseline']['wasted_prefills']['mean']:>5.0f}/{e['wasted_prefills']['mean']:.0f}/"
                     f"{p['wasted_prefills']['mean']:.0f}")
    return "\n".join(lines)


def plot(figures: dict[str, Any], outdir: Path) -> list[Path]:
    plt = plotting.pyplot()

    fig_data = figures["default"]
    series = {p.name: fig_data["series"][p.name] for p in OSCILLATION_POLICIES}
    fig, axes = plt.subplots(len(series), 1, figsize=(10, 2.2 * len(series)), sharex=True, squeeze=False)
    t0 = fig_data["series"]["window_s"][0]
    for ax, (policy, s) in zip(axes[:, 0], series.items()):
        t = t0 + np.arange(len(s["decode"])) * fig_data["dt_s"]
        ax.plot(t, np.asarray(s["prefill"]) / fig_data["prefill_instances"],
                label="prefill pool (requests / instance)", lw=1)
        ax.plot(t, np.asarray(s["decode"]) / fig_data["decode_max_batch"],
                label="decode pool (fraction of the TBT-SLO batch)", lw=1)
        ax.axhline(1.0, color="grey", lw=0.6, ls=":")
        o = fig_data["policies"][policy]["oscillation"]
        e = fig_data["policies"][policy]
        ax.set_title(f"{policy}: corr {o['correlation']['mean']:+.2f}; wasted {e['wasted_prefills']['mean']:.0f}, "
                     f"completed {e['completed']['mean']:.0f} (means over seeds)", fontsize=9)
        ax.set_ylabel("load / capacity", fontsize=8)
        ax.set_ylim(0.0, 1.35 * ax.get_ylim()[1])  # headroom for the legend above the curves
        ax.legend(loc="upper left", fontsize=7, ncol=2)
    axes[-1, 0].set_xlabel("simulated time (s)")
    cfg = figures["configs"]["default"]
    fig.suptitle(f"Pool loads per admission policy: {cfg['prefill_instances']} prefill instances, prefills "
                 f"{cfg['prefill_mean_s']:g} s mean, TTFT SLO {cfg['ttft_slo_s']:g} s, decode threshold "
                 f"{fig_data['decode_max_batch']} requests; seed {figures['seeds'][0]}", fontsize=10)
    path = plotting.save(fig, outdir, "overload_default_load.png", dpi=110)
    return [path]


def plot_lag(figures: dict[str, Any], outdir: Path) -> list[Path]:
    plt = plotting.pyplot()

    rows = figures["rows"]
    lag = np.array([r["lag_s"]["mean"] for r in rows])
    fig, axes = plt.subplots(1, 2, figsize=(11, 4))
    for ax, key, label in ((axes[0], "wasted_vs_baseline_pct", "wasted prefills vs baseline (%)"),
                           (axes[1], "completed_vs_baseline_pct", "completed requests vs baseline (%)")):
        for policy, marker in (("early", "o"), ("predictive", "s")):
            mean = np.array([r[policy][key]["mean"] for r in rows])
            std = np.array([r[policy][key]["std"] for r in rows])
            ax.errorbar(lag, mean, yerr=std, marker=marker, capsize=3, label=f"{policy} rejection")
        ax.axhline(0.0, color="grey", lw=0.6)
        ax.set_xlabel("measured admission-to-decode lag (s)")
        ax.set_ylabel(label)
        ax.legend(fontsize=8)
        ax.grid(alpha=0.3)
    fig.suptitle(f"Early vs prediction-based rejection as the admission-to-decode lag grows (mean decode "
                 f"{figures['decode_mean_s']:.0f} s "
                 f"at the TBT threshold; {len(figures['seeds'])} seeds, ± std)", fontsize=10)
    path = plotting.save(fig, outdir, "overload_lag_sweep.png", dpi=110)
    return [path]


PARTS = [Part("overload", "Scheduling under overload: early and prediction-based rejection", "§3.2",
              ("ex05",), _run_part, render, plot),
         Part("overload_lag", "The lag is the lesson: early vs prediction-based rejection as the lag grows", "§3.2",
              ("ex05",), _run_lag_part, render_lag, plot_lag)]

# ---------------------------------------------------------------------------------------------
# CLI


def _cli_policies(choice: str, oversubscription: float) -> list[Policy]:
    over = Policy(f"predictive x{oversubscription:g}", "predictive", oversubscription)
    table = {"baseline": [POLICIES[0]], "early": [POLICIES[1]], "predictive": [POLICIES[2]], "oversubscribed": [over]}
    return [*POLICIES[:3], over] if choice == "all" else table[choice]


def _render_trace(out: dict[str, Any]) -> str:
    lines = [f"Trace replay: {out['requests']} requests at {out['speedup']:g}x ({out['arrival_rate_per_s']:.2f} req/s), "
             f"{out['prefill_instances']} prefill + {out['decode_instances']} decode instances; mean prefill "
             f"{out['mean_prefill_s']:.2f} s (prefill capacity {out['prefill_capacity_per_s']:.2f} req/s); decode "
             f"threshold {out['decode_max_batch']} requests at {1e3 * out['decode_step_at_max_batch_s']:.1f} ms per step, "
             f"mean decode {out['mean_decode_s']:.2f} s (decode capacity {out['decode_capacity_per_s']:.2f} req/s)",
             f"{'policy':<18} {'completed':>10} {'rejected at arrival':>20} {'wasted prefills':>16} {'rejected total':>15}"]
    for name, c in out["policies"].items():
        lines.append(f"{name:<18} {c['completed']:>10} {c['rejected_at_arrival']:>20} {c['wasted_prefills']:>16} "
                     f"{c['rejected_total']:>15}")
    lines.append("Paper (Mooncake §8.2, ~23,000 requests at 2x), rejected: "
                 + ", ".join(f"{k} {v:,}" for k, v in PAPER_REJECTED.items()))
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m hetero.overload", description=__doc__.split("\n")[0])
    parser.add_argument("--impl", default="assignments",
                        help="where ex05 comes from: assignments (default: the assignments/ folder found from the "
                             "current directory upward), solutions, or a folder")
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    parser.add_argument("--plots", type=Path, default=None, help="simulation mode: write PNGs into this folder")
    parser.add_argument("--seeds", type=int, default=None,
                        help=f"simulation mode: number of seeds (>= 2; default {len(SEEDS)}, lag sweep {len(LAG_SWEEP_SEEDS)})")
    parser.add_argument("--lag-sweep", action="store_true",
                        help="simulation mode: early vs predictive rejection as the admission-to-decode lag grows")
    parser.add_argument("--trace", type=Path, default=None, help="replay this Mooncake-format JSONL trace")
    parser.add_argument("--speedup", type=float, default=2.0, help="trace mode: replay speed factor (> 0)")
    parser.add_argument("--prefill-instances", type=int, default=8)
    parser.add_argument("--decode-instances", type=int, default=8)
    parser.add_argument("--decode-slots", type=int, default=None,
                        help="trace mode: at most this many requests per decode instance (default: what its KV memory holds)")
    parser.add_argument("--tbt-slo-s", type=float, default=TraceCostModel.tbt_slo_s, help="trace mode: TBT SLO, s per token")
    parser.add_argument("--ttft-slo-s", type=float, default=TraceCostModel.ttft_slo_s)
    parser.add_argument("--policy", default="all", help=f"one of {', '.join(CLI_POLICIES)}")
    parser.add_argument("--oversubscription", type=float, default=1.1, help="threshold factor of 'oversubscribed'")
    args = parser.parse_args(argv)
    if args.policy not in CLI_POLICIES:
        parser.error(f"--policy: unknown policy {args.policy!r}; choose one of {', '.join(CLI_POLICIES)}")
    for flag, value in (("--speedup", args.speedup), ("--tbt-slo-s", args.tbt_slo_s), ("--ttft-slo-s", args.ttft_slo_s)):
        if not (math.isfinite(value) and value > 0):
            parser.error(f"{flag} must be > 0, got {value:g}")
    for flag, value in (("--prefill-instances", args.prefill_instances), ("--decode-instances", args.decode_instances),
                        ("--decode-slots", 1 if args.decode_slots is None else args.decode_slots)):
        if value < 1:
            parser.error(f"{flag} must be >= 1, got {value}")
    if not (math.isfinite(args.oversubscription) and args.oversubscription >= 1):
        parser.error(f"--oversubscription must be >= 1, got {args.oversubscription:g}")
    if args.trace is None:
        print(f"exercise files: {resolve_impl_dir(args.impl)}", file=sys.stderr)
        if args.seeds is not None and args.seeds < 2:
            parser.error(f"--seeds must be >= 2 (a spread needs two runs), got {args.seeds}")
        if args.lag_sweep:
            seeds = LAG_SWEEP_SEEDS if args.seeds is None else tuple(range(args.seeds))
            figures = lag_sweep(*_exercise_functions(args.impl), seeds=seeds)
            plotter, renderer = plot_lag, render_lag
        else:
            seeds = SEEDS if args.seeds is None else tuple(range(args.seeds))
            figures = experiment(*_exercise_functions(args.impl),
                                 exercise_function("ex05", "antiphase_correlation", args.impl),
                                 exercise_function("ex05", "dominant_period_s", args.impl), seeds=seeds)
            plotter, renderer = plot, render
        if args.plots is not None:
            args.plots.mkdir(parents=True, exist_ok=True)
            for path in plotter(figures, args.plots):
                print(f"wrote {path}", file=sys.stderr)
        print(json.dumps(figures, indent=1) if args.json else renderer(figures))
        return 0
    try:
        requests = read_trace(args.trace)
    except (TraceError, OSError) as exc:
        parser.error(f"--trace: {exc}")
    if not requests:
        parser.error(f"--trace: {args.trace} holds no requests")
    policies = _cli_policies(args.policy, args.oversubscription)
    needs_ex05 = any(p.kind == "predictive" for p in policies)
    if needs_ex05:
        print(f"exercise files: {resolve_impl_dir(args.impl)}", file=sys.stderr)
    predict, admit = _exercise_functions(args.impl) if needs_ex05 else (None, None)
    cost = TraceCostModel(decode_requests_per_instance=args.decode_slots, tbt_slo_s=args.tbt_slo_s,
                          ttft_slo_s=args.ttft_slo_s)
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
