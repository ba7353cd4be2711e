"""The discrete-event simulation of a prefill pool and a decode pool (events in time order, ties in the
order they were scheduled).

* prefill pool: `prefill_instances` instances, each prefilling one request at a time in FIFO order.
  The prefill time of a request is known when it arrives (it follows from the prompt length), so the
  Conductor knows exactly when an admitted request will finish prefill; it sends a request to the
  instance where it finishes first, and turns it away at arrival when that predicted TTFT (queueing +
  prefill) exceeds `ttft_slo_s` ("the prefill pool admits by its own load");
* decode pool: continuous batching with a TBT model (`DecodeModel`). Every decode step emits one token
  for each decoding request and takes `step_s(batch)`. A request that finishes prefill while the decode
  pool already holds `max_batch` requests (the most whose step stays within the TBT SLO and whose KV
  fits in memory, whichever binds first) would break one of the two, so the decode pool rejects it
  there: its prefill was wasted. No request ever decodes over the SLO. Each request's output length
  (tokens) is not known in advance; all decoding requests advance one token per step, so a request's
  decode time depends on the batch it shares (tracked exactly with one "tokens emitted per stream"
  clock).

Admission policies (checked at arrival, in addition to the TTFT check every policy makes):
* baseline:   nothing more; the decode pool is checked only at decode entry;
* early:      reject when the decode pool is at its threshold *now*;
* predictive: reject unless `admit_predictive(predicted_load, max_batch, oversubscription)` where
  `predicted_load = predicted_decode_load(prefill_end, decoding_since, admitted_prefill_ends,
  decode_mean_s)`: the system-level prediction of Mooncake §7 (every decode is assumed to take the same
  time t_d, here the mean output length at the threshold's step time). Both functions are exercise
  ex05's, passed in by the caller. Oversubscription multiplies the threshold.
The arrival checks and decode entry use the same threshold, `DecodeModel.max_batch`.
"""

from __future__ import annotations

import heapq
import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from hetero.overload.config import POLICY_KINDS, OverloadConfig, Policy
from hetero.overload.decode import DecodeModel
from hetero.overload.workload import Workload

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
        return {
            "arrivals": self.arrivals,
            "completed": self.completed,
            "rejected_at_arrival": self.rejected_at_arrival,
            "rejected_for_decode": self.rejected_for_decode,
            "wasted_prefills": self.wasted_prefills,
            "wasted_prefill_s": round(self.wasted_prefill_s, 6),
            "mean_lag_s": round(self.mean_lag_s, 6),
            "max_tbt_s": round(self.max_tbt_s, 9),
        }


def simulate(
    workload: Workload,
    prefill_instances: int,
    decode: DecodeModel,
    ttft_slo_s: float,
    decode_mean_s: float,
    policy: Policy,
    predict: PredictFn | None = None,
    admit: AdmitFn | None = None,
    sample_dt_s: float = 1.0,
    report_interval_s: float = 0.0,
) -> SimResult:
    """Replay `workload` under `policy`. `predict`/`admit` (ex05) are needed by the predictive policy.

    The one threshold `decode.max_batch` (TBT SLO or KV memory) is used by the arrival checks (early: reject
    while the decode load is at it; predictive: passed to `admit` as its slot count) and at decode
    entry. `decode_mean_s` is the predictive policy's t_d. `report_interval_s` > 0: the arrival checks
    see the decode pool as reported at the last multiple of the interval (OverloadConfig); 0: as it is."""
    if policy.kind not in POLICY_KINDS:
        raise ValueError(f"policy kind must be one of {', '.join(POLICY_KINDS)}, got {policy.kind!r}")
    if policy.kind == "predictive" and (predict is None or admit is None):
        raise ValueError("the predictive policy needs the predict and admit functions")
    threshold = decode.max_batch
    step_of = decode.step_table()  # step_of[b]: seconds per decode step with b requests decoding
    # Python floats once: indexing numpy arrays per event costs more than the event's own arithmetic.
    arrival, prefill, tokens = (
        np.asarray(x, dtype=np.float64).tolist()
        for x in (workload.arrival_s, workload.prefill_s, workload.decode_tokens)
    )
    n = len(arrival)
    inf = math.inf
    push, pop, replace_top = heapq.heappush, heapq.heappop, heapq.heapreplace
    free_at = [0.0] * prefill_instances  # min-heap: when each prefill instance finishes its admitted queue
    in_prefill: dict[int, float] = {}  # admitted request -> its prefill end time
    decoding: dict[int, float] = {}  # decoding request -> its decode start time
    # Decode progress: every decoding request gains one token per step, so one clock counts the tokens
    # emitted per stream; a request that joined at clock v with k tokens to go leaves when it reaches v + k.
    clock_tokens, clock_t = 0.0, 0.0
    finish: list[tuple[float, int]] = []  # min-heap of (clock value at which the request finishes, request)
    samples = int(math.ceil(workload.duration_s / sample_dt_s))
    prefill_load = np.zeros(samples, dtype=np.int64)
    decode_load = np.zeros(samples, dtype=np.int64)
    next_sample, next_sample_s = 0, 0.0  # the next sample's index and instant
    completed = rejected = rejected_decode = wasted = entered = 0
    wasted_s = lag_sum = max_tbt = 0.0
    # Three event sources, each (time_s, seq); the earliest goes first, and equal times by seq (the
    # order in which they were scheduled). Arrivals come in trace order, so only the next one is held;
    # prefill ends wait in a heap; the decode pool has one next completion, rescheduled (so the one
    # before is dropped) whenever its batch, and so its step time, changes.
    seq = 0
    arrival_at, arrival_seq, next_arrival = (arrival[0] if n else inf), 0, 0
    prefill_ends: list[tuple[float, int, int]] = []  # min-heap of (time_s, seq, request)
    decode_at, decode_seq = inf, 0
    kind_early, kind_pred = policy.kind == "early", policy.kind == "predictive"
    stale = report_interval_s > 0
    next_report_s = 0.0
    seen_decoding = 0  # decode occupancy in the last report
    seen_starts: list[float] = []  # decode start times in the last report (predictive only)
    done_since_report: list[float] = []  # prefill ends after the last report (known to the Conductor)
    while True:
        prefill_at = prefill_ends[0][0] if prefill_ends else inf
        if arrival_at < prefill_at or (arrival_at == prefill_at < inf and arrival_seq < prefill_ends[0][1]):
            first_arrival = arrival_at < decode_at or (arrival_at == decode_at and arrival_seq < decode_seq)
            kind = _ARRIVAL if first_arrival else _DECODE_DONE
        elif prefill_at < decode_at or (prefill_at == decode_at < inf and prefill_ends[0][1] < decode_seq):
            kind = _PREFILL_DONE
        elif decode_at < inf:
            kind = _DECODE_DONE
        else:
            break  # no arrival, prefill or decode left
        if kind == _ARRIVAL:
            t, i = arrival_at, next_arrival
            next_arrival += 1
            if next_arrival < n:
                seq += 1
                arrival_at, arrival_seq = arrival[next_arrival], seq
            else:
                arrival_at = inf
        elif kind == _PREFILL_DONE:
            t, _, i = pop(prefill_ends)
        else:
            t, decode_at = decode_at, inf
        if stale and t >= next_report_s:
            # Reports at k * interval. The state is constant between events, so the last report instant
            # at or before t saw the state as it is now, before this event.
            seen_decoding = len(decoding)
            seen_starts = list(decoding.values()) if kind_pred else []
            done_since_report = []
            next_report_s = (math.floor(t / report_interval_s) + 1) * report_interval_s
        # The state is constant between events: record every sample instant before t.
        while next_sample_s < t and next_sample < samples:
            prefill_load[next_sample] = len(in_prefill)
            decode_load[next_sample] = len(decoding)
            next_sample += 1
            next_sample_s = next_sample * sample_dt_s
        if kind == _ARRIVAL:
            free = free_at[0]  # the instance that frees up first (builtin max() is slower here)
            done = (t if t >= free else free) + prefill[i]
            if done - t > ttft_slo_s:
                rejected += 1
                continue
            if kind_early and (seen_decoding if stale else len(decoding)) >= threshold:
                rejected += 1
                rejected_decode += 1
                continue
            if kind_pred:
                assert predict is not None and admit is not None  # checked on entry: the predictive policy has both
                if stale:
                    load = predict(done, seen_starts, list(in_prefill.values()) + done_since_report, decode_mean_s)
                else:
                    load = predict(done, list(decoding.values()), list(in_prefill.values()), decode_mean_s)
                if not admit(load, threshold, policy.oversubscription):
                    rejected += 1
                    rejected_decode += 1
                    continue
            replace_top(free_at, done)
            in_prefill[i] = done
            seq += 1
            push(prefill_ends, (done, seq, i))
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
            lag_sum += t - arrival[i]
            if len(decoding) < threshold:  # one more request keeps the step within the TBT SLO and its KV in memory
                decoding[i] = t
                push(finish, (clock_tokens + tokens[i], i))
            else:
                wasted += 1
                wasted_s += prefill[i]
        else:
            while finish and finish[0][0] <= clock_tokens + 1e-9:
                _, j = pop(finish)
                del decoding[j]
                completed += 1
        if decoding:
            step = step_of[len(decoding)]
            if step > max_tbt:
                max_tbt = step
            seq += 1
            ahead = finish[0][0] - clock_tokens  # tokens until the next request finishes
            decode_at, decode_seq = t + (ahead if ahead > 0.0 else 0.0) * step, seq
    # Samples after the last event stay 0: every admitted request has drained by then.
    return SimResult(
        n,
        completed,
        rejected,
        rejected_decode,
        wasted,
        wasted_s,
        lag_sum / entered if entered else 0.0,
        max_tbt,
        prefill_load,
        decode_load,
        sample_dt_s,
    )


def simulate_config(
    config: OverloadConfig,
    workload: Workload,
    policy: Policy,
    predict: PredictFn | None = None,
    admit: AdmitFn | None = None,
) -> SimResult:
    return simulate(
        workload,
        config.prefill_instances,
        config.decode,
        config.ttft_slo_s,
        config.decode_mean_s,
        policy,
        predict,
        admit,
        config.sample_dt_s,
        config.load_report_interval_s,
    )
