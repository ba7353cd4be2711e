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
    run = _Run(workload, prefill_instances, decode, ttft_slo_s, decode_mean_s, policy, predict, admit)
    run.start_samples(workload.duration_s, sample_dt_s, report_interval_s)
    # The event loop: the next event of the three sources, in time order and equal times by seq (see _Run);
    # what the Conductor and the samples see before it (`observe`); then what it does.
    arrival, n, inf, pop = run.arrival, run.n, math.inf, heapq.heappop
    decode_ends, prefill_ends, decode_seq, target = run.decode_ends, run.prefill_ends, run.decode_seq, run.target
    observe, arrive, prefill_done, decode_done = run.observe, run.arrive, run.prefill_done, run.decode_done
    arrival_at, arrival_seq, next_arrival = (arrival[0] if n else inf), 0, 0
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
        if kind == _ARRIVAL:
            t, i = arrival_at, next_arrival
            next_arrival += 1
            if next_arrival < n:
                run.seq += 1
                arrival_at, arrival_seq = arrival[next_arrival], run.seq
            else:
                arrival_at = inf
            if t >= run.next_observe_s:
                observe(t)
            arrive(t, i)
        elif kind == _PREFILL_DONE:
            t, _, i = pop(prefill_ends)
            if t >= run.next_observe_s:
                observe(t)
            prefill_done(t, i, target[i])
        else:
            t, _, k = pop(decode_ends)
            if t >= run.next_observe_s:
                observe(t)
            decode_done(t, k)
    return run.result()


class _Run:
    """One replay's state (the pools, the event sources, the counts) and what each event does to it.

    Three event sources, each (time_s, seq): the earliest goes first, and equal times by seq (the order in
    which they were scheduled). Arrivals come in trace order, so only the next one is held; prefill ends
    wait in a heap; each decode instance has one next completion (time, seq), rescheduled whenever its
    batch changes; the heap of those holds superseded entries, skipped when their seq is not the
    instance's current one. Per-request data are Python lists of floats: indexing numpy arrays per event
    costs more than the event's own arithmetic."""

    __slots__ = (
        "admit",
        "arrival",
        "cached_blocks",
        "cached_tokens",
        "clock_t",
        "clock_tokens",
        "committed",
        "completed",
        "ctx",
        "dec_kv",
        "decode",
        "decode_ends",
        "decode_load",
        "decode_mean_s",
        "decode_seq",
        "decoding",
        "done_since",
        "done_since_kv",
        "entered",
        "finish",
        "free_at",
        "in_prefill",
        "instances",
        "kind_early",
        "kind_pred",
        "lag_sum",
        "load",
        "max_tbt",
        "n",
        "next_observe_s",
        "next_report_s",
        "next_sample",
        "next_sample_s",
        "over",
        "pend_kv",
        "pending",
        "predict",
        "prefill",
        "prefill_busy",
        "prefill_ends",
        "prefill_load",
        "prefill_of",
        "prefix",
        "prompt_tokens",
        "rejected",
        "rejected_decode",
        "report_interval_s",
        "sample_dt_s",
        "samples",
        "seen_kv",
        "seen_n",
        "seen_starts",
        "seq",
        "step_now",
        "step_s",
        "target",
        "tokens",
        "total_decoding",
        "ttft_slo_s",
        "wasted",
        "wasted_s",
    )

    def __init__(
        self,
        workload: Workload,
        prefill_instances: int,
        decode: DecodeModel,
        ttft_slo_s: float,
        decode_mean_s: float,
        policy: Policy,
        predict: PredictFn | None,
        admit: AdmitFn | None,
    ) -> None:
        self.decode, self.ttft_slo_s, self.decode_mean_s = decode, ttft_slo_s, decode_mean_s
        self.predict, self.admit, self.over = predict, admit, policy.oversubscription
        self.kind_early, self.kind_pred = policy.kind == "early", policy.kind == "predictive"
        self.load, self.step_s, self.instances = decode.load, decode.step_s, decode.instances
        instances = decode.instances
        self.arrival, self.prefill, self.tokens = (
            np.asarray(x, dtype=np.float64).tolist()
            for x in (workload.arrival_s, workload.prefill_s, workload.decode_tokens)
        )
        self.ctx = workload.contexts()
        self.n = n = len(self.arrival)
        self.prefix = workload.prefix
        self.cached_blocks: set[int] = set()
        self.prompt_tokens = self.cached_tokens = 0
        self.prefill_busy = 0.0
        self.free_at = [0.0] * prefill_instances  # min-heap: when each prefill instance finishes its admitted queue
        self.prefill_of = [0.0] * n  # each admitted request's prefill time
        self.in_prefill: dict[int, float] = {}  # admitted request -> its prefill end time
        self.target = [0] * n  # each admitted request's pre-selected decode instance
        self.pending: list[dict[int, float]] = [{} for _ in range(instances)]  # per instance: request -> prefill end
        self.pend_kv = [0] * instances  # KV tokens of those requests
        self.decoding: list[dict[int, float]] = [{} for _ in range(instances)]  # per instance: request -> decode start
        self.dec_kv = [0] * instances  # KV tokens decoding on each instance
        self.step_now = [0.0] * instances  # each instance's current step time
        # Decode progress per instance: every request there gains one token per step, so one clock counts the
        # tokens emitted per stream; a request that joined at clock v with k tokens to go leaves at v + k.
        self.clock_tokens = [0.0] * instances
        self.clock_t = [0.0] * instances
        self.finish: list[list[tuple[float, int]]] = [[] for _ in range(instances)]  # (clock at finish, request)
        self.total_decoding = 0
        # Each instance's load over the requests committed to it (decoding there or pre-selected and still in
        # prefill), kept up to date as they change: the pre-selection compares these.
        self.committed = [0.0] * instances
        self.completed = self.rejected = self.rejected_decode = self.wasted = self.entered = 0
        self.wasted_s = self.lag_sum = self.max_tbt = 0.0
        self.seq = 0  # the order events were scheduled in: ties in time go by it
        self.prefill_ends: list[tuple[float, int, int]] = []  # min-heap of (time_s, seq, request)
        self.decode_ends: list[tuple[float, int, int]] = []  # min-heap of (time_s, seq, instance)
        self.decode_seq = [-1] * instances
        self.seen_n = [0] * instances  # per instance, in the last report: requests decoding
        self.seen_kv = [0] * instances  # their KV tokens
        self.seen_starts: list[list[float]] = [[] for _ in range(instances)]  # their decode starts (predictive)
        # Prefill ends (and KV tokens) after the last report, per pre-selected instance: the Conductor knows them.
        self.done_since: list[list[float]] = [[] for _ in range(instances)]
        self.done_since_kv = [0] * instances

    # -- the event loop's steps

    def start_samples(self, duration_s: float, sample_dt_s: float, report_interval_s: float) -> None:
        """Load samples every `sample_dt_s` over `duration_s`; decode-load reports every `report_interval_s`
        (0: the Conductor sees every instance as it is)."""
        self.samples = int(math.ceil(duration_s / sample_dt_s))
        self.sample_dt_s = sample_dt_s
        self.prefill_load = np.zeros(self.samples, dtype=np.int64)
        self.decode_load = np.zeros(self.samples, dtype=np.int64)
        self.next_sample, self.next_sample_s = 0, 0.0  # the next sample's index and instant
        self.report_interval_s = report_interval_s
        self.next_report_s = 0.0
        self.next_observe_s = 0.0  # the first instant at which `observe` has anything to do

    def observe(self, t: float) -> None:
        """What the Conductor and the samples see at `t`, before the event there: the state is constant
        between events, so the last report instant at or before t saw it as it is now, and so does every
        sample instant before t."""
        interval = self.report_interval_s
        if interval > 0 and t >= self.next_report_s:
            for j in range(self.instances):
                self.seen_n[j] = len(self.decoding[j])
                self.seen_kv[j] = self.dec_kv[j]
                self.seen_starts[j] = list(self.decoding[j].values()) if self.kind_pred else []
                self.done_since[j] = []
                self.done_since_kv[j] = 0
            self.next_report_s = (math.floor(t / interval) + 1) * interval
        elif interval <= 0:
            self.next_report_s = math.inf  # no reports: samples only
        while self.next_sample_s < t and self.next_sample < self.samples:
            self.prefill_load[self.next_sample] = len(self.in_prefill)
            self.decode_load[self.next_sample] = self.total_decoding
            self.next_sample += 1
            self.next_sample_s = self.next_sample * self.sample_dt_s
        sampled = self.next_sample_s if self.next_sample < self.samples else math.inf
        self.next_observe_s = min(self.next_report_s, sampled)

    def arrive(self, t: float, i: int) -> None:
        """Request i arrives: admitted (queued on the prefill instance that frees first, decode instance
        pre-selected) or rejected by the TTFT check or the policy's decode check."""
        c = self.ctx[i]
        work, hit = (self.prefill[i], 0) if self.prefix is None else self._prefix_work(i, c)
        free = self.free_at[0]  # the instance that frees up first (builtin max() is slower here)
        done = (t if t >= free else free) + work
        if done - t > self.ttft_slo_s:  # the prefill pool's load, TTFT / SLO, above 1
            self.rejected += 1
            return
        d = self._preselect() if self.instances > 1 else 0
        if (self.kind_early and self._early_rejects(d, c)) or (self.kind_pred and self._predictive_rejects(done, d, c)):
            self.rejected += 1
            self.rejected_decode += 1
            return
        heapq.heapreplace(self.free_at, done)
        self.in_prefill[i] = done
        self.prefill_of[i] = work
        self.target[i] = d
        self.pending[d][i] = done
        self.pend_kv[d] += c
        if self.instances > 1:
            self._recommit(d)
        self.prompt_tokens += c
        self.cached_tokens += hit
        self.prefill_busy += work
        self.seq += 1
        heapq.heappush(self.prefill_ends, (done, self.seq, i))

    def prefill_done(self, t: float, i: int, k: int) -> None:
        """Request i's prefill ends: its pre-selected instance k double-checks the SLO and takes it, or rejects
        it (its prefill was wasted)."""
        self._advance_clock(k, t)
        del self.in_prefill[i]
        del self.pending[k][i]
        c = self.ctx[i]
        self.pend_kv[k] -= c
        if self.prefix is not None:
            self.cached_blocks.update(self.prefix.hash_ids[i])
        if self.report_interval_s > 0:
            self.done_since[k].append(t)
            self.done_since_kv[k] += c
        self.entered += 1
        self.lag_sum += t - self.arrival[i]
        decoding = self.decoding[k]
        if self.load(len(decoding) + 1, self.dec_kv[k] + c) <= 1.0:  # the instance double-checks the SLO
            decoding[i] = t
            self.dec_kv[k] += c
            self.total_decoding += 1
            heapq.heappush(self.finish[k], (self.clock_tokens[k] + self.tokens[i], i))
        else:
            self.wasted += 1
            self.wasted_s += self.prefill_of[i]
            if self.instances > 1:
                self._recommit(k)
        self._reschedule(k, t)

    def decode_done(self, t: float, k: int) -> None:
        """Instance k's next request(s) emit their last token and leave its batch."""
        self._advance_clock(k, t)
        heap, decoding, ctx, dec_kv = self.finish[k], self.decoding[k], self.ctx, self.dec_kv
        clock = self.clock_tokens[k] + 1e-9
        left = len(decoding)
        while heap and heap[0][0] <= clock:
            _, j = heapq.heappop(heap)
            del decoding[j]
            dec_kv[k] -= ctx[j]
        self.total_decoding -= left - len(decoding)
        self.completed += left - len(decoding)
        if self.instances > 1:
            self._recommit(k)
        self._reschedule(k, t)

    def result(self) -> SimResult:
        # Samples after the last event stay 0: every admitted request has drained by then.
        return SimResult(
            self.n,
            self.completed,
            self.rejected,
            self.rejected_decode,
            self.wasted,
            self.wasted_s,
            self.lag_sum / self.entered if self.entered else 0.0,
            self.max_tbt,
            self.prefill_load,
            self.decode_load,
            self.sample_dt_s,
            self.prompt_tokens,
            self.cached_tokens,
            self.prefill_busy,
        )

    # -- the parts of an event

    def _prefix_work(self, i: int, c: int) -> tuple[float, int]:
        """(prefill seconds, prompt tokens found in the prefix pool) of request i, whose context is c tokens,
        with prefix reuse (without it, the workload's own prefill time and no hit)."""
        prefix = self.prefix
        assert prefix is not None
        blocks = 0
        for block in prefix.hash_ids[i]:
            if block not in self.cached_blocks:
                break
            blocks += 1
        hit = min(blocks * prefix.block_tokens, c - 1)
        return prefix.s_per_token * (c - hit) + prefix.s_per_token_squared * (c * c - hit * hit), hit

    def _preselect(self) -> int:
        """The decode instance with the least load over the requests committed to it (lowest index on a tie),
        as the last report shows it when reports are periodic; for several instances."""
        if self.report_interval_s > 0:
            load, seen_n, seen_kv, done_since, done_since_kv = (
                self.load,
                self.seen_n,
                self.seen_kv,
                self.done_since,
                self.done_since_kv,
            )
            pending, pend_kv = self.pending, self.pend_kv
            views = [
                load(seen_n[j] + len(done_since[j]) + len(pending[j]), seen_kv[j] + done_since_kv[j] + pend_kv[j])
                for j in range(self.instances)
            ]
            return views.index(min(views))
        return self.committed.index(min(self.committed))

    def _early_rejects(self, d: int, c: int) -> bool:
        """Early rejection: the greater of the two pools' loads now; the TTFT ratio is <= 1 here, so the
        pre-selected decode instance's load with this request (context c) decides."""
        if self.report_interval_s > 0:
            return self.load(self.seen_n[d] + 1, self.seen_kv[d] + c) > 1.0
        return self.load(len(self.decoding[d]) + 1, self.dec_kv[d] + c) > 1.0

    def _predictive_rejects(self, done: float, d: int, c: int) -> bool:
        """Prediction-based rejection: ex05's `admit_predictive` on the sum of the instances' loads predicted
        for `done` (the request's prefill end), this request added on instance d at its own context c."""
        predict, admit = self.predict, self.admit
        assert predict is not None and admit is not None  # checked on entry: the predictive policy has both
        load, t_d = self.load, self.decode_mean_s
        # Per instance: ex05's count of the requests there at `done` (with the KV tokens and the number of the
        # requests committed to it, which price the count at their mean context).
        if self.report_interval_s > 0:
            seen_n, seen_kv, seen_starts = self.seen_n, self.seen_kv, self.seen_starts
            done_since, done_since_kv, pending, pend_kv = (
                self.done_since,
                self.done_since_kv,
                self.pending,
                self.pend_kv,
            )
            counts = [
                (
                    predict(done, list(seen_starts[j]), [*pending[j].values(), *done_since[j]], t_d),
                    seen_kv[j] + done_since_kv[j] + pend_kv[j],
                    members,
                )
                if (members := seen_n[j] + len(done_since[j]) + len(pending[j]))
                else (0, 0, 0)
                for j in range(self.instances)
            ]
        else:
            counts = [
                (predict(done, list(dj.values()), list(pj.values()), t_d), dkv + pkv, len(dj) + len(pj))
                if dj or pj
                else (0, 0, 0)
                for dj, pj, dkv, pkv in zip(self.decoding, self.pending, self.dec_kv, self.pend_kv, strict=True)
            ]
        total = 0.0
        for j, (count, kv, members) in enumerate(counts):
            kv_pred = count * kv / members if members else 0.0
            if j == d:  # this request, at its own context
                count += 1
                kv_pred += c
            total += load(count, kv_pred)  # an idle instance (count 0) has load 0
        return not admit(total, self.instances, self.over)

    def _recommit(self, k: int) -> None:
        """Instance k's load over the requests committed to it, after its batch or its pre-selected requests
        changed (several instances only: the pre-selection compares these)."""
        self.committed[k] = self.load(len(self.decoding[k]) + len(self.pending[k]), self.dec_kv[k] + self.pend_kv[k])

    def _advance_clock(self, k: int, t: float) -> None:
        """Instance k's tokens-per-stream clock brought to t at its step time so far."""
        if self.decoding[k]:
            self.clock_tokens[k] += (t - self.clock_t[k]) / self.step_now[k]
        self.clock_t[k] = t

    def _reschedule(self, k: int, t: float) -> None:
        """Instance k's next completion at its new step time (its batch changed at t); any earlier one is superseded."""
        self.seq = seq = self.seq + 1
        self.decode_seq[k] = seq
        decoding = self.decoding[k]
        if decoding:
            step = self.step_s(len(decoding), self.dec_kv[k])
            self.step_now[k] = step
            if step > self.max_tbt:
                self.max_tbt = step
            ahead = self.finish[k][0][0] - self.clock_tokens[k]  # tokens until the instance's next request finishes
            heapq.heappush(self.decode_ends, (t + (ahead if ahead > 0.0 else 0.0) * step, seq, k))


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
