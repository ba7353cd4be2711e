"""The discrete-event simulation of a prefill pool and a decode pool of several instances (events in time
order, ties in the order they were scheduled). It follows Mooncake's Conductor (report §3, Algorithm 1;
§7 for the rejection policies):

* **Prefill pool**: `prefill_instances` instances, each prefilling one request at a time in FIFO order.
  A request's prefill time is known when it arrives (it follows from the prompt length and, where the
  workload carries block hashes, from the prefix already in the global KV pool: `PrefixReuse`), so the
  Conductor knows its TTFT exactly; it sends the request to the instance where it finishes first. The
  prefill pool's load for the request is that TTFT over the TTFT SLO.
* **Decode instance pre-selected at arrival** (Algorithm 1): of the `decode.instances` instances, the one
  with the least load over the requests the Conductor has committed to it (decoding there now, or still
  in prefill and pre-selected for it); ties go to the lowest index.
* **Decode pool**: continuous batching per instance. Every step of an instance emits one token for each of
  its requests and takes `decode.step_s(requests, kv_tokens)`, each request adding its own context's KV
  (`Workload.context_tokens`). An instance's load is its TBT over the TBT SLO (with its KV room and an
  optional batch cap as hard limits: `DecodeModel.load`). When a request's prefill ends, its pre-selected
  instance **double-checks the SLO** (Algorithm 1): it takes the request iff its load with it stays
  <= 1; otherwise the request is rejected there and its prefill was wasted. No step of any instance
  exceeds the SLO. Output lengths are not known in advance; all requests of an instance advance one
  token per step, tracked exactly with one "tokens emitted per stream" clock per instance.

Admission policies, checked at arrival (Mooncake §7):
* baseline:   the prefill pool admits by its own load (TTFT <= SLO); decode is checked only at entry;
* early:      reject on the greater of the two pools' loads now: TTFT / SLO, and the pre-selected decode
              instance's load now with this request added (Algorithm 1's TBT check at arrival);
* predictive: the TTFT check, and reject unless `admit_predictive(predicted_load, instances, over)` where
  `predicted_load` is the sum over decode instances of each instance's load predicted for the moment t
  the request would enter decode (t = its prefill end). Per instance, ex05's
  `predicted_decode_load(t, decode starts there, prefill ends of the requests pre-selected for it,
  t_d)` counts the requests decoding there at t under the system-level prediction (every decode takes
  the same t_d: "add the requests that will have finished prefill, remove those that entered decode
  more than t_d before t"); this request adds one on its instance. The count is priced at the mean
  context of the instance's committed requests (the prediction knows how many, not which; this
  request's own context is exact). So admit iff the mean of the instances' predicted loads ("the average
  TBT ratio of all decoding instances") is below `over` (x 1.0, the SLO). An instance that holds no
  request and expects none has load 0 and is not asked.
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
    wasted_prefills: int  # prefilled, then rejected at decode entry by the pre-selected instance
    wasted_prefill_s: float  # instance-seconds of prefill spent on them
    mean_lag_s: float  # mean admission-to-decode-entry time of the requests that finished prefill
    max_tbt_s: float  # longest decode step of the run (never above the TBT SLO)
    prefill_load: np.ndarray  # (samples,) int: requests queued or prefilling at t = k * dt
    decode_load: np.ndarray  # (samples,) int: requests decoding (all instances) at t = k * dt
    dt_s: float
    prompt_tokens: int = 0  # prompt tokens of the admitted requests
    cached_tokens: int = 0  # of which fetched from the prefix pool instead of computed
    prefill_busy_s: float = 0.0  # instance-seconds of prefill of the admitted requests

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

    `decode_mean_s` is the predictive policy's t_d. `report_interval_s` > 0: the arrival checks see each
    decode instance as reported at the last multiple of the interval (OverloadConfig); 0: as it is."""
    if policy.kind not in POLICY_KINDS:
        raise ValueError(f"policy kind must be one of {', '.join(POLICY_KINDS)}, got {policy.kind!r}")
    if policy.kind == "predictive" and (predict is None or admit is None):
        raise ValueError("the predictive policy needs the predict and admit functions")
    step_s, load = decode.step_s, decode.load
    instances = decode.instances
    # Python floats once: indexing numpy arrays per event costs more than the event's own arithmetic.
    arrival, prefill, tokens = (
        np.asarray(x, dtype=np.float64).tolist()
        for x in (workload.arrival_s, workload.prefill_s, workload.decode_tokens)
    )
    ctx = workload.contexts()
    n = len(arrival)
    prefix = workload.prefix
    cached_blocks: set[int] = set()
    prompt_tokens = cached_tokens = 0
    prefill_busy = 0.0
    inf = math.inf
    push, pop, replace_top = heapq.heappush, heapq.heappop, heapq.heapreplace
    free_at = [0.0] * prefill_instances  # min-heap: when each prefill instance finishes its admitted queue
    prefill_of = [0.0] * n  # each admitted request's prefill time
    in_prefill: dict[int, float] = {}  # admitted request -> its prefill end time
    target = [0] * n  # each admitted request's pre-selected decode instance
    pending: list[dict[int, float]] = [{} for _ in range(instances)]  # per instance: request -> prefill end
    pend_kv = [0] * instances  # KV tokens of those requests
    decoding: list[dict[int, float]] = [{} for _ in range(instances)]  # per instance: request -> decode start
    dec_kv = [0] * instances  # KV tokens decoding on each instance
    step_now = [0.0] * instances  # each instance's current step time
    # Decode progress per instance: every request there gains one token per step, so one clock counts the
    # tokens emitted per stream; a request that joined at clock v with k tokens to go leaves at v + k.
    clock_tokens = [0.0] * instances
    clock_t = [0.0] * instances
    finish: list[list[tuple[float, int]]] = [[] for _ in range(instances)]  # (clock value at finish, request)
    total_decoding = 0
    # Each instance's load over the requests committed to it (decoding there or pre-selected and still in
    # prefill), kept up to date as they change: the pre-selection compares these.
    committed = [0.0] * instances
    # The load's coefficients as locals: the predictive check evaluates it for every instance per arrival.
    base_s, kv_s = decode.base_s, decode.kv_s_per_token
    req_s, tok_s = decode.compute_s_per_request, decode.compute_s_per_token
    inv_slo, inv_kv = 1.0 / decode.tbt_slo_s, 1.0 / decode.kv_capacity_tokens
    inv_cap = 0.0 if decode.max_requests is None else 1.0 / decode.max_requests
    samples = int(math.ceil(workload.duration_s / sample_dt_s))
    prefill_load = np.zeros(samples, dtype=np.int64)
    decode_load = np.zeros(samples, dtype=np.int64)
    next_sample, next_sample_s = 0, 0.0  # the next sample's index and instant
    completed = rejected = rejected_decode = wasted = entered = 0
    wasted_s = lag_sum = max_tbt = 0.0
    # Three event sources, each (time_s, seq); the earliest goes first, and equal times by seq (the order
    # in which they were scheduled). Arrivals come in trace order, so only the next one is held; prefill
    # ends wait in a heap; each decode instance has one next completion (time, seq), rescheduled whenever
    # its batch changes; the heap of those holds superseded entries, skipped when their seq is not the
    # instance's current one.
    seq = 0
    arrival_at, arrival_seq, next_arrival = (arrival[0] if n else inf), 0, 0
    prefill_ends: list[tuple[float, int, int]] = []  # min-heap of (time_s, seq, request)
    decode_ends: list[tuple[float, int, int]] = []  # min-heap of (time_s, seq, instance)
    decode_seq = [-1] * instances
    kind_early, kind_pred = policy.kind == "early", policy.kind == "predictive"
    over = policy.oversubscription
    stale = report_interval_s > 0
    next_report_s = 0.0
    seen_n = [0] * instances  # per instance, in the last report: requests decoding
    seen_kv = [0] * instances  # their KV tokens
    seen_starts: list[list[float]] = [[] for _ in range(instances)]  # their decode starts (predictive only)
    # Prefill ends (and KV tokens) after the last report, per pre-selected instance: the Conductor knows them.
    done_since: list[list[float]] = [[] for _ in range(instances)]
    done_since_kv = [0] * instances
    while True:
        while decode_ends and decode_ends[0][1] != decode_seq[decode_ends[0][2]]:
            pop(decode_ends)  # superseded
        decode_at = decode_ends[0][0] if decode_ends else inf
        prefill_at = prefill_ends[0][0] if prefill_ends else inf
        if arrival_at < prefill_at or (arrival_at == prefill_at < inf and arrival_seq < prefill_ends[0][1]):
            first = arrival_at < decode_at or (arrival_at == decode_at and arrival_seq < decode_ends[0][1])
            kind = _ARRIVAL if first else _DECODE_DONE
        elif prefill_at < decode_at or (prefill_at == decode_at < inf and prefill_ends[0][1] < decode_ends[0][1]):
            kind = _PREFILL_DONE
        elif decode_at < inf:
            kind = _DECODE_DONE
        else:
            break  # no arrival, prefill or decode left
        k = 0
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
            t, _, k = pop(decode_ends)
            i = -1
        if stale and t >= next_report_s:
            # Reports at k * interval. The state is constant between events, so the last report instant
            # at or before t saw the state as it is now, before this event.
            for j in range(instances):
                seen_n[j] = len(decoding[j])
                seen_kv[j] = dec_kv[j]
                seen_starts[j] = list(decoding[j].values()) if kind_pred else []
                done_since[j] = []
                done_since_kv[j] = 0
            next_report_s = (math.floor(t / report_interval_s) + 1) * report_interval_s
        # The state is constant between events: record every sample instant before t.
        while next_sample_s < t and next_sample < samples:
            prefill_load[next_sample] = len(in_prefill)
            decode_load[next_sample] = total_decoding
            next_sample += 1
            next_sample_s = next_sample * sample_dt_s
        if kind == _ARRIVAL:
            c = ctx[i]
            if prefix is None:
                work = prefill[i]
                hit = 0
            else:
                ids = prefix.hash_ids[i]
                blocks = 0
                for block in ids:
                    if block not in cached_blocks:
                        break
                    blocks += 1
                hit = min(blocks * prefix.block_tokens, c - 1)
                work = prefix.s_per_token * (c - hit) + prefix.s_per_token_squared * (c * c - hit * hit)
            free = free_at[0]  # the instance that frees up first (builtin max() is slower here)
            done = (t if t >= free else free) + work
            if done - t > ttft_slo_s:  # the prefill pool's load, TTFT / SLO, above 1
                rejected += 1
                continue
            # Pre-select the decode instance: the least load over the requests committed to it (lowest index on a tie).
            d = 0
            if instances > 1:
                if stale:
                    views = [
                        load(
                            seen_n[j] + len(done_since[j]) + len(pending[j]), seen_kv[j] + done_since_kv[j] + pend_kv[j]
                        )
                        for j in range(instances)
                    ]
                    d = views.index(min(views))
                else:
                    d = committed.index(min(committed))
            if kind_early:
                # The greater of the two pools' loads now: the TTFT ratio is <= 1 here, so the decode one decides.
                now = load(seen_n[d] + 1, seen_kv[d] + c) if stale else load(len(decoding[d]) + 1, dec_kv[d] + c)
                if now > 1.0:
                    rejected += 1
                    rejected_decode += 1
                    continue
            elif kind_pred:
                assert predict is not None and admit is not None  # checked on entry: the predictive policy has both
                # Per instance: ex05's count of the requests there at `done` (with the KV tokens and the number
                # of the requests committed to it, which price the count at their mean context).
                if stale:
                    counts = [
                        (
                            predict(done, list(seen_starts[j]), [*pending[j].values(), *done_since[j]], decode_mean_s),
                            seen_kv[j] + done_since_kv[j] + pend_kv[j],
                            members,
                        )
                        if (members := seen_n[j] + len(done_since[j]) + len(pending[j]))
                        else (0, 0, 0)
                        for j in range(instances)
                    ]
                else:
                    counts = [
                        (
                            predict(done, list(dj.values()), list(pj.values()), decode_mean_s),
                            dkv + pkv,
                            len(dj) + len(pj),
                        )
                        if dj or pj
                        else (0, 0, 0)
                        for dj, pj, dkv, pkv in zip(decoding, pending, dec_kv, pend_kv, strict=True)
                    ]
                total = 0.0
                for j, (count, kv, members) in enumerate(counts):
                    kv_pred = count * kv / members if members else 0.0
                    if j == d:  # this request, at its own context
                        count += 1
                        kv_pred += c
                    if count <= 0:
                        continue  # an idle instance: load 0
                    # DecodeModel.load(count, kv_pred), inline.
                    memory = base_s + kv_s * kv_pred
                    compute = count * req_s + tok_s * kv_pred
                    ratio = (memory if memory >= compute else compute) * inv_slo
                    if kv_pred * inv_kv > ratio:
                        ratio = kv_pred * inv_kv
                    if count * inv_cap > ratio:
                        ratio = count * inv_cap
                    total += ratio
                if not admit(total, instances, over):
                    rejected += 1
                    rejected_decode += 1
                    continue
            replace_top(free_at, done)
            in_prefill[i] = done
            prefill_of[i] = work
            target[i] = d
            pending[d][i] = done
            pend_kv[d] += c
            if instances > 1:
                committed[d] = load(len(decoding[d]) + len(pending[d]), dec_kv[d] + pend_kv[d])
            prompt_tokens += c
            cached_tokens += hit
            prefill_busy += work
            seq += 1
            push(prefill_ends, (done, seq, i))
            continue
        if kind == _PREFILL_DONE:
            k = target[i]
        # Prefill done or decode done on instance k: bring its clock to t at its step time so far.
        if decoding[k]:
            clock_tokens[k] += (t - clock_t[k]) / step_now[k]
        clock_t[k] = t
        if kind == _PREFILL_DONE:
            del in_prefill[i]
            del pending[k][i]
            c = ctx[i]
            pend_kv[k] -= c
            if prefix is not None:
                cached_blocks.update(prefix.hash_ids[i])
            if stale:
                done_since[k].append(t)
                done_since_kv[k] += c
            entered += 1
            lag_sum += t - arrival[i]
            if load(len(decoding[k]) + 1, dec_kv[k] + c) <= 1.0:  # the instance double-checks the SLO
                decoding[k][i] = t
                dec_kv[k] += c
                total_decoding += 1
                push(finish[k], (clock_tokens[k] + tokens[i], i))
            else:
                wasted += 1
                wasted_s += prefill_of[i]
                if instances > 1:
                    committed[k] = load(len(decoding[k]) + len(pending[k]), dec_kv[k] + pend_kv[k])
        else:
            heap = finish[k]
            while heap and heap[0][0] <= clock_tokens[k] + 1e-9:
                _, j = pop(heap)
                del decoding[k][j]
                dec_kv[k] -= ctx[j]
                total_decoding -= 1
                completed += 1
            if instances > 1:
                committed[k] = load(len(decoding[k]) + len(pending[k]), dec_kv[k] + pend_kv[k])
        seq += 1
        decode_seq[k] = seq
        if decoding[k]:
            step = step_s(len(decoding[k]), dec_kv[k])
            step_now[k] = step
            if step > max_tbt:
                max_tbt = step
            ahead = finish[k][0][0] - clock_tokens[k]  # tokens until the instance's next request finishes
            push(decode_ends, (t + (ahead if ahead > 0.0 else 0.0) * step, seq, k))
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
        prompt_tokens,
        cached_tokens,
        prefill_busy,
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
