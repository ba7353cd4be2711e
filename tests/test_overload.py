"""The overload simulator (hetero.overload): the decode pool's TBT model and its one threshold,
hand-checked event sequences, conservation of requests, policy semantics, the reported (stale) decode
load, the lecture configuration, the lag sweep, the experiment parts' contract, the grader hooks, and
the trace-mode CLI."""

from __future__ import annotations

import json
import math
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from hetero import overload as ov
from hetero import roofline
from hetero.harness import overload as hov
from hetero.impl import MissingExercise, load_exercise
from hetero.overload import cli as ov_cli
from hetero.traces import SAMPLE_TRACE

KEY = load_exercise("ex05", "solutions")
PREDICT, ADMIT = KEY.predicted_decode_load, KEY.admit_predictive
SHORT = replace(ov.DEFAULT, duration_s=600.0)
SHORT_SHORT_PREFILL = replace(ov.SHORT_PREFILL, duration_s=600.0)


def _constant(slots: int, step_s: float = 1.0, instances: int = 1) -> ov.DecodeModel:
    """Instances whose step takes step_s at any batch (output tokens x step_s = seconds), at half the TBT SLO,
    and whose KV room holds `slots` requests of 2 tokens (`_workload`'s default context): 2 x slots + 1
    tokens, so b requests fill b / (slots + 0.5) of it, below 1 up to `slots` and never exactly 1."""
    return ov.DecodeModel(
        base_s=step_s,
        kv_s_per_token=0.0,
        compute_s_per_request=0.0,
        compute_s_per_token=0.0,
        tbt_slo_s=2 * step_s,
        kv_capacity_tokens=2 * slots + 1,
        instances=instances,
    )


def _workload(arrival, prefill, tokens, duration, contexts=None, prefix=None):
    ctx = np.full(len(arrival), 2, dtype=np.int64) if contexts is None else np.array(contexts, dtype=np.int64)
    return ov.Workload(
        np.array(arrival, float), np.array(prefill, float), np.array(tokens, float), duration, ctx, prefix
    )


def _run(w, policy, prefill_instances=1, slots=1, ttft=100.0, mean_decode=5.0, **kw):
    return ov.simulate(
        w, prefill_instances, _constant(slots), ttft, mean_decode, policy, PREDICT, ADMIT, sample_dt_s=1.0, **kw
    )


BASE, EARLY, PRED = ov.POLICIES[0], ov.POLICIES[1], ov.POLICIES[2]


# ---------------------------------------------------------------------------------------------
# The TBT model and the load


def test_toy_decode_model_is_the_roofline_of_8_h20_and_its_limit_is_hand_checkable():
    # LLaMA-3.1-70B on 8 x H20, every request over the model's 131,072-token window (42.95 GB of KV at
    # 320 KiB a token). Batch 1: (141.11 GB + 42.95 GB) read at 8 x 4.0 TB/s x 0.8 = 7.190 ms; TBT SLO
    # 5 x 7.190 = 35.95 ms (the paper's rule). KV room (lecture §7 Q2's order): (768 GB - 141.11 GB) x 0.9 /
    # 327,680 B = 1,721,811 tokens. 13 requests: step (141.11 + 13 x 42.95) GB / 25.6 TB/s = 27.32 ms
    # (0.760 of the SLO), KV 1,703,936 / 1,721,811 = 0.9896: load 0.9896. 14: KV 1,835,008 / 1,721,811 =
    # 1.0657 > 1 (the step, 29.00 ms, would still be within the SLO): the KV memory, not the TBT SLO, binds.
    d = ov.TOY_DECODE
    context = ov.TOY_CONTEXT_TOKENS
    assert context == 131_072, f"toy context {context} tokens, expected LLaMA-3.1-70B's 128K window"
    one = roofline.decode_step("LLaMA-3.1-70B", "H20", 8, 1, context, ov.KV_BYTES_PER_TOKEN)
    assert math.isclose(d.step_s(1, context), one.time_s, rel_tol=1e-12), (
        f"step at batch 1 {d.step_s(1, context)} s must equal hetero.roofline's decode step {one.time_s} s"
    )
    full = roofline.decode_step("LLaMA-3.1-70B", "H20", 8, 13, context, ov.KV_BYTES_PER_TOKEN)
    assert math.isclose(d.step_s(13, 13 * context), full.time_s, rel_tol=1e-12)
    assert math.isclose(d.step_s(1, context), 0.007190, rel_tol=1e-3), f"batch-1 step {d.step_s(1, context)} s"
    assert math.isclose(d.tbt_slo_s, 0.03595, rel_tol=1e-3), f"TBT SLO {d.tbt_slo_s} s, expected 5 x 7.190 ms"
    assert d.kv_capacity_tokens == 1_721_811, d.kv_capacity_tokens
    assert math.isclose(d.load(13, 13 * context), 1_703_936 / 1_721_811, rel_tol=1e-12)
    assert math.isclose(d.load(14, 14 * context), 1_835_008 / 1_721_811, rel_tol=1e-12)
    assert math.isclose(d.step_s(13, 13 * context) / d.tbt_slo_s, 0.760, rel_tol=1e-3)
    assert d.max_batch_per_instance(context) == 13 and d.binding(context) == "KV memory"
    # The calibrated pool (docs/figures_overload.md, "Calibration", round 2): 2 such instances, 26 requests.
    assert d.instances == 2 and ov.DEFAULT.decode_max_batch == 26
    # 2.3 req/s at the full batch: 26 / (2.3 x 27.32 ms) = 413.8 -> 414 tokens per request (the lecture's
    # Kimi mean output is 182), 11.31 s of decoding, 2.30 req/s.
    assert ov.TOY_MEAN_OUTPUT_TOKENS == 414.0, f"toy mean output {ov.TOY_MEAN_OUTPUT_TOKENS} tokens, expected 414"
    assert math.isclose(ov.DEFAULT.decode_mean_s, 11.310, rel_tol=1e-3), f"t_d {ov.DEFAULT.decode_mean_s} s"
    assert math.isclose(ov.DEFAULT.decode_capacity_per_s, 2.3, rel_tol=1e-3)
    # One instance at 2 req/s (the configuration before the calibration): 13 / (2 x 27.32 ms) -> 238 tokens.
    assert ov.toy_config(30.0, 2.0, 1).decode_mean_tokens == 238.0
    # A prompt at the window prefills in 8.64 s on 8 x H800 by the roofline (the lecture: about 10 s
    # for 128K, §2.4), the length of the lecture's ten-plus-second long-context prefill.
    prefill = roofline.prefill("LLaMA-3.1-70B", "H800", 8, context).time_s
    assert math.isclose(prefill, 8.639, rel_tol=1e-3), f"131,072-token prefill {prefill} s, expected 8.64 s"


def test_decode_step_is_the_roofline_with_each_requests_own_context():
    # The paper's instance (8 x A800 = the catalog's A100-80GB), 7 requests of 3,000 tokens: memory-bound,
    # (141.11 GB + 21,000 x 327,680 B) / (8 x 2.0 TB/s x 0.8) = 11.56 ms. 200 of 1,000 tokens: compute-bound,
    # 200 x (2 x 70.55 GFLOP + 4 x 80 x 1,000 x 8,192) / (8 x 312 TFLOP/s x 0.6) = 19.19 ms.
    d = ov.TraceCostModel().decode_model(8)
    for b, c, expect in ((7, 3000, 0.01156), (200, 1000, 0.01919)):
        r = roofline.decode_step("LLaMA-3.1-70B", "A100-80GB", 8, b, c, ov.KV_BYTES_PER_TOKEN)
        assert math.isclose(d.step_s(b, b * c), r.time_s, rel_tol=1e-12), (b, c, d.step_s(b, b * c), r.time_s)
        assert math.isclose(r.time_s, expect, rel_tol=1e-3), (b, c, r.time_s)
    # Contexts enter only through their sum: 1,000 + 20,000 tokens cost what 2 x 10,500 cost.
    assert d.step_s(2, 21_000) == d.step_s(2, 1_000 + 20_000)
    assert d.step_s(0, 0) == 0.0 and d.load(0, 0) == 0.0


def test_decode_load_is_the_greatest_of_tbt_over_slo_kv_over_room_and_batch_over_cap():
    # Binary-exact numbers: step = 0.5 s + 0.125 s per token, TBT SLO 1 s, KV room 10 tokens; 2-token requests.
    d = ov.DecodeModel(0.5, 0.125, 0.0, 0.0, tbt_slo_s=1.0, kv_capacity_tokens=10)
    assert d.step_s(1, 2) == 0.75 and d.load(1, 2) == 0.75  # TBT 0.75 of the SLO, KV 2 / 10
    assert d.load(2, 4) == 1.0, "at exactly the SLO the instance can still run the batch (load <= 1)"
    assert d.load(3, 6) == 1.25 and d.max_batch_per_instance(2) == 2 and d.binding(2) == "TBT SLO"
    # Per-request contexts: one request of 3 tokens and one of 1 is the same 4 tokens (load 1.0).
    assert d.load(2, 3 + 1) == 1.0
    # A KV room of 3 tokens: two 2-token requests need 4 / 3 = 1.33 of it (their TBT, 1.0, would fit).
    small = replace(d, kv_capacity_tokens=3)
    assert small.load(2, 4) == 4 / 3 and small.max_batch_per_instance(2) == 1 and small.binding(2) == "KV memory"
    # An engine cap of 1 request: load 2 / 1 for two of them.
    capped = replace(d, max_requests=1)
    assert capped.load(2, 4) == 2.0 and capped.max_batch_per_instance(2) == 1 and capped.binding(2) == "batch cap"
    with pytest.raises(ValueError, match="tbt_slo_s"):
        replace(d, tbt_slo_s=0.5).validate()  # no batch can beat the 0.5 s weights read
    with pytest.raises(ValueError, match="max_requests"):
        replace(d, max_requests=0).validate()


def test_hand_sequence_the_step_time_grows_with_the_batch_and_the_limit_wastes_the_third():
    # Step 10 ms + 10 ms per request (1 token each, 10 ms per token), SLO 30 ms: at most 2 requests. One
    # prefill instance. A: arrives 0, prefill 1 s, decodes from 1 s, 100 tokens. B: arrives 1 s, prefill 1 s,
    # decodes from 2 s, 100 tokens. 1-2 s: batch 1, 20 ms per step, A emits 50 tokens. From 2 s: batch 2,
    # 30 ms per step; A's last 50 tokens take 1.5 s (A done at 3.5 s), B has 50 by then and its last 50 take
    # 50 x 20 ms = 1 s alone (B done at 4.5 s). C: arrives 2.5 s, prefill 0.5 s, reaches decode at 3.0 s
    # with 2 decoding: a third request would make the step 40 ms > 30 ms, so it is rejected there (wasted).
    d = ov.DecodeModel(0.010, 0.010, 0.0, 0.0, 0.030, kv_capacity_tokens=10)
    w = _workload([0.0, 1.0, 2.5], [1.0, 1.0, 0.5], [100.0, 100.0, 100.0], 6.0, contexts=[1, 1, 1])
    r = ov.simulate(w, 1, d, 100.0, 3.0, BASE, sample_dt_s=0.25)
    assert (r.completed, r.wasted_prefills, r.rejected_at_arrival) == (2, 1, 0), (
        f"expected A and B completed and C wasted at decode entry (requests), got {r.counts()}"
    )
    assert math.isclose(r.max_tbt_s, 0.030, rel_tol=1e-12), f"longest step {r.max_tbt_s} s, expected 30 ms"
    # Samples every 0.25 s: 2 decoding at 3.25 s, 1 at 3.75 s (A left at 3.5 s), 1 at 4.25, 0 at 4.75 (B at 4.5).
    got = [int(r.decode_load[int(t / 0.25)]) for t in (1.25, 2.25, 3.25, 3.75, 4.25, 4.75)]
    assert got == [1, 2, 2, 1, 1, 0], (
        f"decode load at 1.25/2.25/3.25/3.75/4.25/4.75 s: {got}, expected [1, 2, 2, 1, 1, 0]"
    )
    # Mean admission-to-decode lag of the three that finished prefill: (1 + 1 + 0.5) / 3 s.
    assert math.isclose(r.mean_lag_s, 2.5 / 3, rel_tol=1e-12), f"mean lag {r.mean_lag_s} s, expected 0.833 s"
    # Early rejection sees 2 decoding at C's arrival (2.5 s): with C the step would be 40 ms, load 4/3 > 1, so C
    # is rejected at arrival, unwasted.
    e = ov.simulate(w, 1, d, 100.0, 3.0, EARLY, sample_dt_s=0.25)
    assert (e.completed, e.wasted_prefills, e.rejected_for_decode) == (2, 0, 1), (
        f"early rejection must reject C at arrival on the instance's TBT load now: {e.counts()}"
    )


def test_hand_sequence_heterogeneous_contexts_set_the_tbt():
    # Step 10 ms + 1 ms per context token, SLO 30 ms. A (15 tokens) decodes alone at 25 ms. B (4 tokens)
    # arrives while A decodes: 10 + 19 = 29 ms, within the SLO, taken. C (2 tokens) next: 31 ms > 30: wasted,
    # although a third 1-token request would have fitted (30 ms): each request's own context counts.
    d = ov.DecodeModel(0.010, 0.001, 0.0, 0.0, 0.030, kv_capacity_tokens=1000)
    w = _workload([0.0, 1.0, 2.0], [0.5, 0.5, 0.5], [1000.0, 1000.0, 10.0], 5.0, contexts=[15, 4, 2])
    r = ov.simulate(w, 3, d, 100.0, 3.0, BASE, sample_dt_s=1.0)
    assert (r.completed, r.wasted_prefills) == (2, 1), r.counts()
    assert math.isclose(r.max_tbt_s, 0.029, rel_tol=1e-12), f"longest step {r.max_tbt_s} s, expected 29 ms"
    w1 = _workload([0.0, 1.0, 2.0], [0.5, 0.5, 0.5], [1000.0, 1000.0, 10.0], 5.0, contexts=[15, 4, 1])
    assert ov.simulate(w1, 3, d, 100.0, 3.0, BASE, sample_dt_s=1.0).wasted_prefills == 0


def test_hand_sequence_preselection_double_check_early_now_and_the_average_prediction():
    # Two decode instances of constant 1 s steps (TBT load 0.5), each with KV room for 5 tokens; 3 prefill
    # instances (no queueing), TTFT SLO 100 s.
    #   A: arrives 0.0, prefill 1 s (decode 1-101 s, 100 tokens), 4 tokens -> instance 0 (both idle: lowest index)
    #   B: arrives 0.1, prefill 0.1 s (decode 0.2-2.2 s, 2 tokens), 4 tokens -> instance 1 (instance 0's committed
    #      load is A's 4 / 5 = 0.8)
    #   C: arrives 0.3, prefill 5 s (ends 5.3), 3 tokens -> instance 0: committed loads 0.8 and 0.8 tie.
    # Baseline: at 5.3 s instance 0 double-checks: A's 4 + C's 3 = 7 tokens > 5, C is rejected (wasted),
    # although instance 1 has been empty since 2.2 s.
    d = replace(_constant(2), kv_capacity_tokens=5, instances=2)
    w = _workload([0.0, 0.1, 0.3], [1.0, 0.1, 5.0], [100.0, 2.0, 2.0], 6.0, contexts=[4, 4, 3])

    def run(policy, t_d):
        return ov.simulate(w, 3, d, 100.0, t_d, policy, PREDICT, ADMIT, sample_dt_s=1.0)

    assert (run(BASE, 10.0).completed, run(BASE, 10.0).wasted_prefills) == (2, 1)
    # Early: at 0.3 s A is still in prefill, so instance 0 now holds nothing: C alone loads it 3 / 5 = 0.6 <= 1,
    # admitted, and wasted at 5.3 s, as the baseline: "the decode load now" misses A.
    early = run(EARLY, 10.0)
    assert (early.wasted_prefills, early.rejected_for_decode) == (1, 0), early.counts()
    # Predictive, t_d = 10 s, t = 5.3 s: instance 0 keeps A (prefill end 1.0 <= 5.3 < 11.0): 1 + C = 2 requests
    # of 4 + 3 tokens, load 7 / 5 = 1.4; instance 1 keeps B (0.2 + 10 > 5.3): load 4 / 5 = 0.8. The average,
    # (1.4 + 0.8) / 2 = 1.1, is not below 1: C is rejected at arrival and nothing is wasted.
    pred = run(PRED, 10.0)
    assert (pred.completed, pred.rejected_for_decode, pred.wasted_prefills) == (2, 1, 0), pred.counts()
    # t_d = 4.6 s: B is predicted gone (0.2 + 4.6 = 4.8 <= 5.3), A still there (1.0 + 4.6 = 5.6 > 5.3):
    # (1.4 + 0) / 2 = 0.7 < 1 admits C, whose own instance was predicted over its limit: wasted. The paper's
    # rule averages over all decoding instances.
    short = run(PRED, 4.6)
    assert (short.rejected_for_decode, short.wasted_prefills) == (0, 1), short.counts()


def test_predictive_boundary_a_predicted_load_of_exactly_one_is_rejected():
    # One instance, step 0.5 s + 0.125 s per token, TBT SLO 1 s (binary-exact). A (2 tokens) decodes 1-101 s.
    # B (2 tokens) arrives at 2 s: A predicted still decoding at B's entry (t_d 50 s), so the pool would run
    # 2 requests of 4 tokens: step exactly 1.0 s, load exactly 1.0. admit_predictive's strict "<" rejects it
    # (no headroom), while the instance itself would take it (load <= 1) and early rejection admits it.
    d = ov.DecodeModel(0.5, 0.125, 0.0, 0.0, tbt_slo_s=1.0, kv_capacity_tokens=100)
    w = _workload([0.0, 2.0], [1.0, 1.0], [100.0, 1.0], 200.0)
    pred = ov.simulate(w, 1, d, 100.0, 50.0, PRED, PREDICT, ADMIT)
    early = ov.simulate(w, 1, d, 100.0, 50.0, EARLY)
    assert (pred.rejected_for_decode, pred.completed) == (1, 1), pred.counts()
    assert (early.rejected_for_decode, early.completed, early.max_tbt_s) == (0, 2, 1.0), early.counts()


def test_prefix_reuse_fetches_the_cached_prefix_and_caches_at_prefill_end():
    # 2-token blocks; prefill = 0.01 s per new token + 0.001 s x (n^2 - p^2) (n tokens, p cached).
    #   r0 at 0.0:  blocks (1, 2, 3), 6 tokens, nothing cached: 0.06 + 0.036 = 0.096 s (ends 0.096 s)
    #   r1 at 0.05: blocks (1, 2, 3), 5 tokens, r0 still prefilling, nothing cached: 0.05 + 0.025 = 0.075 s
    #   r2 at 1.0:  blocks (1, 2, 4), 6 tokens: blocks 1, 2 cached (4 tokens): 0.02 + 0.001 x (36 - 16) = 0.04 s
    #   r3 at 2.0:  blocks (1, 2, 3), 6 tokens, all cached but the last token is computed (p = 5):
    #               0.01 + 0.001 x (36 - 25) = 0.021 s
    prefix = ov.PrefixReuse(((1, 2, 3), (1, 2, 3), (1, 2, 4), (1, 2, 3)), 0.01, 0.001, block_tokens=2)
    w = _workload([0.0, 0.05, 1.0, 2.0], [9.0] * 4, [1.0] * 4, 3.0, contexts=[6, 5, 6, 6], prefix=prefix)
    r = ov.simulate(w, 2, _constant(10), 100.0, 1.0, BASE)
    assert r.completed == 4 and r.prompt_tokens == 23 and r.cached_tokens == 4 + 5, r
    assert math.isclose(r.prefill_busy_s, 0.096 + 0.075 + 0.04 + 0.021, rel_tol=1e-12), r.prefill_busy_s
    # prefill_s (9 s, the no-reuse time) is not used when the workload carries the prefix: TTFT 2 s passes.
    assert ov.simulate(w, 2, _constant(10), 2.0, 1.0, BASE).rejected_at_arrival == 0


def test_hand_sequence_baseline_wastes_the_prefill_that_finds_decode_full():
    # One prefill instance, one decode slot (1 s per step). A: prefill 0-2 s, decodes 2-12 s (10 tokens).
    # B: arrives at 1 s, queues behind A, prefills 2-5 s, finds the slot taken at 5 s: wasted (3 s).
    w = _workload([0.0, 1.0], [2.0, 3.0], [10.0, 10.0], 20.0)
    r = _run(w, BASE)
    assert (r.completed, r.rejected_at_arrival, r.wasted_prefills) == (1, 0, 1), (
        f"expected 1 completed, 0 rejected, 1 wasted (requests), got {r.counts()}"
    )
    assert math.isclose(r.wasted_prefill_s, 3.0, rel_tol=1e-12), (
        f"expected 3.0 instance-seconds of wasted prefill, got {r.wasted_prefill_s}"
    )
    assert r.prefill_load[:6].tolist() == [1, 2, 1, 1, 1, 0], f"prefill load series wrong: {r.prefill_load[:6]}"
    assert r.decode_load[:6].tolist() == [0, 0, 1, 1, 1, 1], f"decode load series wrong: {r.decode_load[:6]}"
    assert r.decode_load[11] == 1 and r.decode_load[13] == 0, "A decodes 10 steps of 1 s: 2-12 s"


def test_hand_sequence_early_rejects_only_when_decode_is_full_now():
    w = _workload([0.0, 3.0], [2.0, 1.0], [10.0, 10.0], 20.0)
    base, early = _run(w, BASE), _run(w, EARLY)
    assert (base.wasted_prefills, base.rejected_at_arrival) == (1, 0), f"baseline: {base.counts()}"
    assert (early.wasted_prefills, early.rejected_at_arrival, early.rejected_for_decode) == (0, 1, 1), (
        f"early rejection should reject the arrival at 3 s (decode full now): {early.counts()}"
    )


def test_hand_sequence_predictive_sees_the_decode_slot_free_up():
    # A decodes 2-4 s (t_d 2 s assumed); B arrives at 3 s and would enter decode at 6 s, when A is
    # predicted to have left: predictive admits (early would reject) and B completes.
    w = _workload([0.0, 3.0], [2.0, 3.0], [2.0, 2.0], 20.0)
    pred, early = _run(w, PRED, mean_decode=2.0), _run(w, EARLY, mean_decode=2.0)
    assert pred.completed == 2 and pred.rejected_at_arrival == 0, f"predictive should admit B: {pred.counts()}"
    assert early.completed == 1 and early.rejected_at_arrival == 1, f"early should reject B: {early.counts()}"


def test_ttft_check_rejects_at_arrival_for_every_policy():
    w = _workload([0.0, 1.0], [5.0, 5.0], [1.0, 1.0], 20.0)
    for policy in (BASE, EARLY, PRED):
        r = _run(w, policy, slots=4, ttft=6.0, mean_decode=1.0)
        assert (r.completed, r.rejected_at_arrival, r.rejected_for_decode) == (1, 1, 0), (
            f"{policy.name}: expected the TTFT SLO to reject the 2nd request, got {r.counts()}"
        )


@pytest.mark.parametrize("policy", ov.POLICIES, ids=[p.name for p in ov.POLICIES])
def test_every_request_is_accounted_for_and_no_step_breaks_the_tbt_slo(policy):
    w = ov.poisson_workload(SHORT, np.random.default_rng(1))
    r = ov.simulate_config(SHORT, w, policy, PREDICT, ADMIT)
    assert r.arrivals == r.completed + r.rejected_at_arrival + r.wasted_prefills, (
        f"{policy.name}: arrivals must equal completed + rejected + wasted after draining: {r.counts()}"
    )
    d = SHORT.decode
    assert r.decode_load.max() <= SHORT.decode_max_batch, f"decode load {r.decode_load.max()} above the limit"
    assert r.max_tbt_s <= d.tbt_slo_s, (
        f"a step took {r.max_tbt_s * 1e3:.2f} ms, above the TBT SLO {d.tbt_slo_s * 1e3:.2f} ms"
    )
    assert r.decode_load.min() >= 0 and r.prefill_load.min() >= 0


def test_littles_law_on_a_constant_step_pool():
    # With a constant 1 s step, output tokens are decode seconds: mean decode load ~ throughput x mean
    # decode time. Loose (25%): a 10-minute run starts empty and its output lengths are a finite sample.
    config = replace(SHORT_SHORT_PREFILL, decode=_constant(40, 0.01), context_tokens=2, decode_mean_tokens=2000.0)
    r = ov.simulate_config(config, ov.poisson_workload(config, np.random.default_rng(1)), BASE)
    little = r.completed * 20.0 / config.duration_s
    assert math.isclose(r.decode_load.mean(), little, rel_tol=0.25), (
        f"mean decode load {r.decode_load.mean():.1f} requests vs Little's law {little:.1f}"
    )


def test_baseline_never_rejects_for_decode_and_huge_oversubscription_equals_baseline():
    w = ov.poisson_workload(SHORT, np.random.default_rng(2))
    base = ov.simulate_config(SHORT, w, BASE)
    assert base.rejected_for_decode == 0, "baseline must not look at the decode pool at arrival"
    loose = ov.simulate_config(SHORT, w, ov.Policy("loose", "predictive", 1000.0), PREDICT, ADMIT)
    assert loose.counts() == base.counts(), (
        f"a predictive threshold 1000x the slots never binds, so it must equal the baseline: {loose.counts()} vs "
        f"{base.counts()}"
    )


def test_same_seed_same_result_and_workload_shape():
    a = ov.poisson_workload(SHORT, np.random.default_rng(5))
    b = ov.poisson_workload(SHORT, np.random.default_rng(5))
    assert np.array_equal(a.arrival_s, b.arrival_s) and np.array_equal(a.decode_tokens, b.decode_tokens)
    assert np.all(np.diff(a.arrival_s) >= 0) and a.arrival_s[-1] < SHORT.duration_s
    # Poisson count over 600 s at 2.6 req/s: mean 1560, sd 39.5; 5 sd bounds.
    assert abs(a.arrival_s.size - 1560) < 5 * 39.5, f"{a.arrival_s.size} arrivals, expected about 1560"
    assert a.prefill_s.min() >= 10.0 and a.prefill_s.max() <= 20.0 + 1e-9, "prefills of 10-20 s"


@pytest.mark.parametrize(
    "field,value",
    [
        ("prefill_instances", 2.5),
        ("duration_s", -1.0),
        ("prefill_spread", 1.0),
        ("arrival_rate_per_s", math.inf),
        ("load_report_interval_s", -1.0),
        ("load_report_interval_s", math.nan),
        ("load_report_interval_s", True),
        ("decode_mean_tokens", 0.0),
        ("decode", "fast"),
    ],
)
def test_config_validation_names_the_field(field, value):
    with pytest.raises(ValueError, match=field):
        replace(ov.DEFAULT, **{field: value}).validate()


def test_stale_hand_sequence_and_predictive_needs_the_exercise():
    w = _workload([0.0], [1.0], [1.0], 5.0)
    with pytest.raises(ValueError, match="predict"):
        ov.simulate(w, 1, _constant(1), 10.0, 1.0, PRED)


def test_hand_sequence_stale_report_rejects_after_the_slot_has_freed():
    # One decode slot, reports every 10 s. A: prefill 0-1 s, decodes 1-13 s. The event at 13 s (A leaves)
    # is the first after the 10 s report instant, so that report shows A decoding: the pool is full.
    # B arrives at 14 s: the slot is free now, but early rejection on the 10 s report rejects it.
    # C arrives at 21 s, after the 20 s report (slot free): admitted.
    w = _workload([0.0, 14.0, 21.0], [1.0, 1.0, 1.0], [12.0, 2.0, 2.0], 40.0)
    live = ov.simulate(w, 1, _constant(1), 100.0, 5.0, EARLY, sample_dt_s=1.0)
    stale = ov.simulate(w, 1, _constant(1), 100.0, 5.0, EARLY, sample_dt_s=1.0, report_interval_s=10.0)
    assert (live.completed, live.rejected_for_decode) == (3, 0), f"live view: every request fits, got {live.counts()}"
    assert (stale.completed, stale.rejected_for_decode, stale.wasted_prefills) == (2, 1, 0), (
        f"reported view: B (14 s) must be rejected on the 10 s report that showed the slot taken, got {stale.counts()}"
    )


def test_lecture_configuration_follows_the_lecture_words():
    for config in (ov.DEFAULT, ov.SHORT_PREFILL):
        assert math.isclose(config.prefill_capacity_per_s, 2.0, rel_tol=1e-12)
        # "about 2 req/s": calibrated to 2.3 (414 whole output tokens: 2.300 req/s at the threshold).
        assert math.isclose(config.decode_capacity_per_s, 2.3, rel_tol=1e-3)
        assert math.isclose(config.arrival_rate_per_s, 2.6, rel_tol=1e-12) and config.duration_s == 3600.0
    d = ov.DEFAULT
    low, high = d.prefill_mean_s * (1 - d.prefill_spread), d.prefill_mean_s * (1 + d.prefill_spread)
    assert math.isclose(low, 10.0, rel_tol=1e-9) and math.isclose(high, 20.0, rel_tol=1e-9), "prefills of 10-20 s"
    assert d.ttft_slo_s == 25.0 and d.load_report_interval_s == 0.0, "the calibrated TTFT SLO and live reports"
    assert ov.PAPER_TTFT_SLO_S == 30.0


def test_the_default_is_what_the_calibration_rule_selects_from_its_committed_log():
    # docs/data/overload_calibration_round2.jsonl holds every grid point's figures; the rule written down before
    # the runs (hetero.overload.calibration.select) must select the values the default uses.
    from hetero.overload import calibration as cal

    records = cal.read_log(cal.LOGS[cal.ROUND])
    assert len(records) == len(cal.grid(cal.ROUND)), "the round-2 log must hold every grid point once"
    chosen = cal.select(records, cal.ROUND)
    want = ov.toy_config(
        chosen.ttft_slo_s, chosen.decode_capacity_per_s, chosen.decode_instances, chosen.load_report_interval_s
    )
    assert want == ov.DEFAULT, (
        f"the calibration selects {chosen}, but DEFAULT is TTFT {ov.DEFAULT.ttft_slo_s} s, "
        f"{ov.DEFAULT.decode.instances} decode instance(s), {ov.DEFAULT.decode_mean_tokens} output tokens"
    )


def test_calibration_objective_and_tie_rule():
    from hetero.overload import calibration as cal

    assert cal.miss(15.0, 10.0, 20.0, 5.0) == 0.0 and math.isclose(cal.miss(25.0, 10.0, 20.0, 5.0), 1.0)
    assert math.isclose(cal.miss(-0.4, -1.0, -0.5, 0.1), 1.0), "0.1 outside a band of scale 0.1 costs 1"
    inside = {"lag_s": 15.0, "predictive_wasted_pct": -25.0, "early_correlation": -0.6, "early_wasted_pct": 0.0}
    assert cal.objective(inside, 2) == 0.0 and cal.objective({**inside, "early_wasted_pct": -20.0}, 1) == 0.0
    assert math.isclose(cal.objective({**inside, "early_wasted_pct": -20.0}, 2), 4.0), "round 2 fits early's cut"

    def rec(ttft, cap, k, report=0.0):
        point = {
            "ttft_slo_s": ttft,
            "decode_capacity_per_s": cap,
            "decode_instances": k,
            "load_report_interval_s": report,
        }
        return {"point": point, "figures": inside}

    # Ties (all at 0): the shortest report interval, then capacity nearest 2, then TTFT nearest 30, then fewest instances.
    tied = [rec(20.0, 2.1, 1), rec(30.0, 1.9, 4), rec(25.0, 2.0, 2, 5.0), rec(22.5, 2.0, 4), rec(22.5, 2.0, 2)]
    assert cal.select(tied, 2) == cal.GridPoint(22.5, 2.0, 2, 0.0)


def test_run_scenario_harness_and_load_series_builder_return_plain_data():
    out = hov.run_scenario(KEY, {"duration_s": 300.0}, 3)
    assert set(out) == {"completed", "rejected_at_arrival", "wasted_prefills"}
    assert all(type(v) is int for v in out.values()), f"harness must return ints, got {out}"
    with pytest.raises(ValueError, match="unknown scenario fields"):
        hov.run_scenario(KEY, {"duration": 300.0}, 3)
    small = {
        "duration_s": 300.0,
        "prefill_instances": 2,
        "prefill_mean_s": 1.0,
        "ttft_slo_s": 3.0,
        "decode": {
            "base_s": 0.01,
            "kv_s_per_token": 0.002,
            "compute_s_per_request": 0.0,
            "compute_s_per_token": 0.0,
            "tbt_slo_s": 0.02,
            "kv_capacity_tokens": 100,
        },
        "context_tokens": 1,
        "decode_mean_tokens": 150.0,
    }
    assert hov._scenario_config(small).decode_max_batch == 5, "(20 - 10) / 2 = 5 requests"
    assert all(type(v) is int for v in hov.run_scenario(KEY, small, 3).values())
    series = hov.load_series("default", "early", 3, "decode", duration_s=300.0)
    assert len(series) == 300 - int(ov.WARMUP_S) and all(type(x) is float for x in series)
    assert series == hov.load_series("default", "early", 3, "decode", duration_s=300.0)


def test_experiment_figures_findings_and_render():
    scenarios = {"default": SHORT, "short_prefill": SHORT_SHORT_PREFILL}
    figures = ov.experiment(
        PREDICT, ADMIT, KEY.antiphase_correlation, KEY.dominant_period_s, seeds=(0, 1), scenarios=scenarios
    )
    json.dumps(figures)  # JSON-able
    assert list(figures["default"]["policies"]) == [p.name for p in ov.POLICIES]
    assert list(figures["short_prefill"]["policies"]) == [p.name for p in ov.OSCILLATION_POLICIES]
    base = figures["default"]["policies"]["baseline"]
    assert abs(base["completed_vs_baseline_pct"]["mean"]) < 1e-12, "baseline vs itself must be 0%"
    # The lag of the lecture configuration is ten-plus seconds, of the short-prefill one under ten.
    assert base["mean_lag_s"]["mean"] > 10.0 > figures["short_prefill"]["policies"]["baseline"]["mean_lag_s"]["mean"], (
        "the admission-to-decode lag must be ten-plus seconds with 10-20 s prefills and under 10 s with 2-6 s ones"
    )
    assert set(figures["findings"]) and all(
        set(f) == {"measured", "target", "holds", "fitted"} for f in figures["findings"].values()
    )
    text = ov.render(figures)
    for name in (
        "baseline",
        "early",
        "predictive x1.1",
        "4,183",
        "corr(prefill, decode)",
        "TBT SLO 35.9 ms",
        "full at 26 requests of 131,072 tokens (step 27.3 ms = 0.76 of the TBT SLO",
        "KV 99.0 % of HBM",
        "breaks the KV memory",
        "lag s",
        "max TBT ms",
        "Short prefills",
        "[as the lecture",
        "fitted]",
    ):
        assert name in text, f"rendered table lacks {name!r}"
    assert "does not hold" not in text, "a claim the simulator does not reproduce says what that means"
    from hetero.overload.report import render_findings

    assert "simulator differs" in render_findings({"x": {"measured": 1.0, "target": [2, 3], "holds": False}})[-1]


def test_lag_sweep_rows_render_and_configs():
    # Capacity stays 2 req/s and the TTFT SLO the default's 25 s / 15 s x the mean prefill at every point of the sweep.
    for mean_s in ov.LAG_SWEEP_PREFILL_MEAN_S:
        c = ov.lag_config(mean_s)
        assert math.isclose(c.prefill_capacity_per_s, 2.0, rel_tol=1e-9)
        assert math.isclose(c.ttft_slo_s, 25.0 / 15.0 * mean_s), "the default's TTFT SLO over its mean prefill"
    assert ov.lag_config(15.0) == ov.DEFAULT, "the 15 s point of the sweep is the lecture configuration"
    figures = ov.lag_sweep(PREDICT, ADMIT, seeds=(0, 1), prefill_means_s=(2.0, 20.0), base=SHORT)
    json.dumps(figures)
    lags = [r["lag_s"]["mean"] for r in figures["rows"]]
    assert lags[0] < 5.0 < 20.0 < lags[1], f"measured lags {lags} s: expected under 5 s and over 20 s"
    text = ov.render_lag(figures)
    assert "pred. Δwasted %" in text and len(text.splitlines()) == 4, text


def test_oscillation_cross_correlation_finds_a_known_shift():
    # Prefill load a 100 s sine; decode load the same sine 15 s later, sign flipped. Within the searched
    # shifts (+-4 x 15 s) the trough is at +15 s and the peak half a period away, at 15 - 50 = -35 s.
    # 1,320 samples leave 1,200 after the 120 s warm-up: 12 whole periods, so the FFT peak is exactly 100 s.
    t = np.arange(1320)
    p = np.round(100 + 50 * np.sin(2 * np.pi * t / 100.0)).astype(np.int64)
    d = np.round(20 - 10 * np.sin(2 * np.pi * (t - 15) / 100.0)).astype(np.int64)
    r = ov.SimResult(0, 0, 0, 0, 0, 0.0, 0.0, 0.0, p, d, 1.0)
    o = ov.oscillation(
        r,
        replace(ov.DEFAULT, prefill_instances=100, decode=_constant(40), context_tokens=2),
        KEY.antiphase_correlation,
        KEY.dominant_period_s,
    )
    # Rounding to whole requests perturbs r by < 0.01 and cannot move the extremes by a whole sample.
    assert o["trough_lag_s"] == pytest.approx(15.0, abs=0.5), f"trough at {o['trough_lag_s']} s, expected +15 s"
    assert o["peak_lag_s"] == pytest.approx(-35.0, abs=0.5), f"peak at {o['peak_lag_s']} s, expected -35 s"
    assert o["trough_correlation"] < -0.99 and o["peak_correlation"] > 0.99, (
        f"a shifted sine correlates with r = -1 / +1 at the trough / peak: got {o['trough_correlation']:+.3f} / "
        f"{o['peak_correlation']:+.3f}"
    )
    assert o["prefill_period_s"] == pytest.approx(100.0, rel=1e-9), "the dominant period of a 100 s sine is 100 s"


@pytest.mark.slow
def test_plots_are_written(tmp_path):
    scenarios = {"default": SHORT, "short_prefill": SHORT_SHORT_PREFILL}
    figures = ov.experiment(
        PREDICT, ADMIT, KEY.antiphase_correlation, KEY.dominant_period_s, seeds=(0, 1), scenarios=scenarios
    )
    paths = ov.plot(figures, tmp_path)
    paths += ov.plot_lag(ov.lag_sweep(PREDICT, ADMIT, seeds=(0, 1), prefill_means_s=(2.0, 8.0), base=SHORT), tmp_path)
    assert len(paths) == 2 and all(p.stat().st_size > 10_000 for p in paths), f"plots not written: {paths}"


def test_part_reports_missing_exercise_for_a_stub(tmp_path):
    stub = tmp_path / "ex05_overload.py"
    stub.write_text(
        "def predicted_decode_load(*a, **k):\n    raise NotImplementedError('ex05: predicted_decode_load')\n"
        "def admit_predictive(*a, **k):\n    raise NotImplementedError('ex05: admit_predictive')\n"
        "def antiphase_correlation(*a, **k):\n    raise NotImplementedError('ex05: antiphase_correlation')\n"
        "def dominant_period_s(*a, **k):\n    raise NotImplementedError('ex05: dominant_period_s')\n"
    )
    with pytest.raises(MissingExercise, match="ex05"):
        ov.PARTS[0].run(str(tmp_path))
    assert ov_cli.main_or_missing(["--impl", str(tmp_path), "--trust-impl", "--seeds", "2"]) == 1


# ---------------------------------------------------------------------------------------------
# Trace mode


def _write_trace(path: Path, n: int = 300, seed: int = 0) -> Path:
    rng = np.random.default_rng(seed)
    ts = np.cumsum(rng.exponential(150.0, size=n)).astype(int)  # ~6.7 req/s, ms
    lines = []
    for t in ts:
        inp = int(rng.integers(1000, 60000))
        lines.append(
            json.dumps(
                {
                    "timestamp": int(t),
                    "input_length": inp,
                    "output_length": int(rng.integers(1, 400)),
                    "hash_ids": list(range(-(-inp // 512))),
                }
            )
        )
    path.write_text("\n".join(lines) + "\n")
    return path


def test_trace_cost_model_reproduces_the_lecture_prefill_time_and_scales_to_the_paper_gpu():
    t = ov.TraceCostModel(gpu="H800").prefill_s(np.array([8192]))[0]
    assert math.isclose(t, 0.26, rel_tol=0.02), (
        f"8K-token prefill on 8 x H800: expected ~0.26 s (lecture §1.2), got {t:.3f} s"
    )
    # The paper's A800 (the catalog's A100-80GB, 312 TFLOP/s) is 989 / 312 = 3.17x slower at the same efficiency.
    a800 = ov.TraceCostModel().prefill_s(np.array([8192]))[0]
    assert math.isclose(a800 / t, 989.0 / 312.0, rel_tol=1e-9), (
        f"A800 / H800 prefill time {a800 / t:.3f}, expected 3.17"
    )
    # Decode at 0.1 s TBT on 8 x 80 GB: the KV memory binds first. (8 x 80 GB - 141.1 GB) x 0.9 / 320 KiB
    # = 1,370,249 tokens (lecture §7 Q2: about 1.37 M); / 12,000 = 114 requests of 12,000 tokens per instance,
    # whose step, 11.02 ms + 114 x 12,000 x 25.6 ns = 46.0 ms, is within 0.1 s.
    assert ov.trace.PAPER_INSTANCE_KV_TOKENS == 1_370_249
    d = ov.TraceCostModel().decode_model(8)
    assert d.kv_capacity_tokens == 1_370_249 and d.instances == 8
    assert d.max_batch_per_instance(12_000) == 114 and d.max_batch(12_000) == 912 and d.binding(12_000) == "KV memory"
    assert math.isclose(d.step_s(114, 114 * 12_000), 0.04604, rel_tol=1e-3)
    # At a 30 ms TBT SLO the TBT binds first: (30 - 11.02) ms / (12,000 x 25.6 ns) = 61.8 -> 61 requests.
    d30 = ov.TraceCostModel(tbt_slo_s=0.03).decode_model(8)
    assert d30.max_batch_per_instance(12_000) == 61 and d30.binding(12_000) == "TBT SLO"
    # The explicit capacities: a batch cap and a KV room of 120,000 tokens (10 such requests).
    assert ov.TraceCostModel(decode_requests_per_instance=4).decode_model(8).max_batch_per_instance(12_000) == 4
    assert ov.TraceCostModel(decode_kv_tokens_per_instance=120_000).decode_model(8).max_batch_per_instance(12_000) == 10


def test_decode_arithmetic_is_littles_law_on_the_roofline():
    # 2 instances, step 10 ms + 1 ms per token, TBT SLO 50 ms; 10 requests of 10 tokens and 100 output tokens
    # over 10 s (1 req/s). Full instance: 10 + 10 b <= 50 ms -> 4 requests at 50 ms: capacity 2 x 4 / (100 x
    # 0.05 s) = 1.6 req/s. Little's law per instance: b = 1 x 100 x (0.01 + 0.01 b) / 2 = 0.5 + 0.5 b -> b = 1,
    # step 20 ms, 25 % of a full instance.
    d = ov.DecodeModel(0.01, 0.001, 0.0, 0.0, tbt_slo_s=0.05, kv_capacity_tokens=10_000, instances=2)
    w = ov.Workload(np.arange(10.0), np.ones(10), np.full(10, 100.0), 10.0, np.full(10, 10, dtype=np.int64))
    a = ov.trace.decode_arithmetic(w, d)
    assert a["full_batch_per_instance"] == 4 and a["binding_at_full_batch"] == "TBT SLO"
    assert math.isclose(a["capacity_per_s"], 1.6, rel_tol=1e-9) and math.isclose(a["arrival_rate_per_s"], 1.0)
    assert math.isclose(a["littles_law_batch_per_instance"], 1.0, rel_tol=1e-9), a
    assert math.isclose(a["step_at_littles_law_batch_s"], 0.02, rel_tol=1e-9)
    assert math.isclose(a["littles_law_utilisation"], 0.25, rel_tol=1e-9)
    # At 2.5 req/s the fixed point has no solution (b = 1.25 + 1.25 b): the pool cannot keep up.
    w2 = replace(w, duration_s=4.0)
    assert ov.trace.decode_arithmetic(w2, d)["littles_law_batch_per_instance"] == math.inf


def test_trace_cli_json_counts(tmp_path, capsys):
    trace = _write_trace(tmp_path / "t.jsonl")
    code = ov.main(
        [
            "--impl",
            "solutions",
            "--trace",
            str(trace),
            "--speedup",
            "2",
            "--prefill-instances",
            "8",
            "--decode-instances",
            "1",
            "--decode-slots",
            "1",
            "--policy",
            "all",
            "--json",
        ]
    )
    assert code == 0
    out = json.loads(capsys.readouterr().out)
    assert list(out["policies"]) == ["baseline", "early", "predictive", "predictive x1.1"]
    for name, c in out["policies"].items():
        assert c["arrivals"] == 300 == c["completed"] + c["rejected_at_arrival"] + c["wasted_prefills"], (name, c)
    assert out["policies"]["baseline"]["wasted_prefills"] > 0, (
        "one decode slot behind 8 prefill instances must overflow"
    )
    assert out["decode_max_batch"] == 1


@pytest.mark.parametrize(
    "argv,message",
    [
        (["--policy", "fastest"], "unknown policy 'fastest'"),
        (["--speedup", "0"], "--speedup must be > 0"),
        (["--prefill-instances", "0"], "--prefill-instances must be >= 1"),
        (["--decode-instances", "-2"], "--decode-instances must be >= 1"),
        (["--decode-kv-tokens", "0"], "--decode-kv-tokens must be >= 1"),
        (["--tbt-slo-s", "0.005"], "decode.tbt_slo_s (0.005 s) must exceed the weights' read time"),
        (["--sweep", "--sweep-caps", "none,0"], "a batch cap must be >= 1"),
        (["--sweep", "--sweep-tbt-slos", "0.1,-1"], "TBT SLOs must be > 0"),
    ],
)
def test_trace_cli_rejects_bad_arguments(tmp_path, capsys, argv, message):
    trace = _write_trace(tmp_path / "t.jsonl", n=5)
    with pytest.raises(SystemExit) as exc:
        ov.main(["--impl", "solutions", "--trace", str(trace), *argv])
    assert exc.value.code == 2
    assert message in capsys.readouterr().err, f"the error should say {message!r}"


def test_trace_cli_names_the_bad_line(tmp_path, capsys):
    trace = _write_trace(tmp_path / "t.jsonl", n=5)
    lines = trace.read_text().splitlines()
    lines[2] = lines[2].replace('"output_length"', '"output_len"')
    trace.write_text("\n".join(lines) + "\n")
    with pytest.raises(SystemExit) as exc:
        ov.main(["--impl", "solutions", "--trace", str(trace)])
    assert exc.value.code == 2
    err = capsys.readouterr().err
    assert ":3:" in err and "output_length" in err, f"the error should name line 3 and the field: {err}"


def test_sample_trace_replays(capsys):
    assert ov.main(["--impl", "solutions", "--trace", str(SAMPLE_TRACE), "--policy", "baseline", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    c = out["policies"]["baseline"]
    assert c["arrivals"] == c["completed"] + c["rejected_at_arrival"] + c["wasted_prefills"]


def test_sample_trace_on_the_paper_cluster_decode_does_not_bind(capsys):
    # 8 + 8 instances of 8 x A800 at 2x: the decode pool never reaches its limit, so the three policies reject
    # the same requests, all at arrival by the TTFT check (docs/figures_overload.md, trace mode). With
    # prefix reuse the prefill pool keeps up better than without it (fewer TTFT rejections).
    assert (
        ov.main(["--impl", "solutions", "--trace", str(SAMPLE_TRACE), "--speedup", "2", "--policy", "all", "--json"])
        == 0
    )
    out = json.loads(capsys.readouterr().out)
    totals = {name: c["rejected_total"] for name, c in out["policies"].items()}
    assert all(c["wasted_prefills"] == 0 and c["rejected_for_decode"] == 0 for c in out["policies"].values())
    assert len(set(totals.values())) == 1, f"with the decode pool under its limit all policies must agree: {totals}"
    assert out["prefix_reuse"] and out["policies"]["baseline"]["cached_token_fraction"] > 0.05
    a = out["decode_arithmetic"]
    assert a["capacity_over_arrivals"] > 5 and a["littles_law_utilisation"] < 0.1, a
    assert (
        ov.main(
            ["--impl", "solutions", "--trace", str(SAMPLE_TRACE), "--policy", "baseline", "--no-prefix-reuse", "--json"]
        )
        == 0
    )
    off = json.loads(capsys.readouterr().out)
    assert not off["prefix_reuse"] and off["policies"]["baseline"]["cached_token_fraction"] == 0.0
    assert off["policies"]["baseline"]["rejected_total"] > totals["baseline"] > 0


def test_trace_sweep_cli_prints_plots_and_orders(tmp_path, capsys):
    # A small grid on the shipped sample: no cap (decode never binds: every policy equal) and a cap of 4 per
    # instance (8 x 4 = 32 slots against a Little's-law need of about 29 requests: decode binds, the
    # baseline wastes prefills at entry).
    argv = [
        "--impl",
        "solutions",
        "--trace",
        str(SAMPLE_TRACE),
        "--sweep",
        "--sweep-caps",
        "none,4",
        "--sweep-tbt-slos",
        "0.1",
        "--json",
    ]
    assert ov.main(argv) == 0
    out = json.loads(capsys.readouterr().out)
    assert [(c["tbt_slo_s"], c["cap_per_instance"]) for c in out["cells"]] == [(0.1, None), (0.1, 4)]
    free, capped = out["cells"]
    assert len({p["rejected_total"] for p in free["policies"].values()}) == 1 and "=" in free["ordering"]
    assert capped["policies"]["baseline"]["wasted_prefills"] > 0 and capped["binding"] == "batch cap"
    assert out["paper_ordering"] == "baseline > early > predictive"
    assert ov.main([*argv[:-1], "--plots", str(tmp_path)]) == 0
    text = capsys.readouterr().out
    for needle in ("4,183", "3,771", "3,589", "Little's law", "ordering", "TBT SLO ms"):
        assert needle in text, f"the sweep's table lacks {needle!r}"
    assert (tmp_path / "overload_trace_sweep.png").stat().st_size > 10_000
    assert ov.trace.ordering({"a": 3, "b": 3, "c": 1}) == "a = b > c"


def test_calibration_plot_draws_the_committed_log_and_refuses_an_empty_one(tmp_path):
    # `python -m hetero.overload.calibration plot` draws docs/figures/overload_calibration.png from the committed
    # log; an empty log is an error that says what to run, not an empty figure.
    from hetero.overload import calibration as cal

    out = cal.plot(cal.read_log(cal.LOGS[2]), 2, tmp_path / "calibration.png")
    assert out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n", f"{out} is not a PNG"
    with pytest.raises(ValueError, match="calibration run"):
        cal.plot([], 2, tmp_path / "empty.png")
    assert not (tmp_path / "empty.png").exists(), "an empty log must not leave a figure behind"


def test_the_calibration_logs_figures_for_the_default_are_what_it_computes_now():
    # The committed round-2 log is the evidence for the default: config_figures on the default must give back
    # its logged figures (seeds 0-2), or the log no longer describes the code.
    from hetero.overload import calibration as cal

    records = cal.read_log(cal.LOGS[cal.ROUND])
    chosen = cal.select(records, cal.ROUND)
    logged = next(r for r in records if cal.point_of(r) == chosen)["figures"]
    now = cal.point_figures(chosen, cal.SEEDS)
    for key, value in logged.items():
        assert math.isclose(now[key], value, rel_tol=1e-9, abs_tol=1e-9), (
            f"{key}: the round-2 log says {value} for the default {chosen}, the code now gives {now[key]}; "
            "a change to the simulator or ex05's key moved it: run the calibration again"
        )


def test_claim_sweeps_vary_one_factor_and_the_verdict_follows_the_written_rule():
    # `python -m hetero.overload.calibration claims`: the lecture's "fewer and slower prefill machines swing more"
    # (docs/figures_overload.md, the test written before its runs).
    from hetero.overload import calibration as cal

    configs = cal.claim_configs()
    fewer = [c for s, c in configs if s == "fewer machines"]
    slower = [c for s, c in configs if s == "slower prefills"]
    assert [c.prefill_instances for c in fewer] == [36, 30, 24, 18]
    assert {c.prefill_mean_s for c in fewer} == {ov.DEFAULT.prefill_mean_s} and {c.ttft_slo_s for c in fewer} == {
        ov.DEFAULT.ttft_slo_s
    }, "the machines sweep changes the number of prefill instances only"
    assert [c.prefill_mean_s for c in slower] == [10.0, 15.0, 20.0]
    assert {c.prefill_instances for c in slower} == {ov.DEFAULT.prefill_instances}
    for c in slower:
        assert math.isclose(c.ttft_slo_s, 5 / 3 * c.prefill_mean_s), f"TTFT SLO 5/3 x the mean prefill: {c.ttft_slo_s}"
        assert c.decode == ov.DEFAULT.decode and c.decode_mean_tokens == ov.DEFAULT.decode_mean_tokens

    def rows(sweep, pairs):
        return [{"sweep": sweep, "figures": {"early_correlation": c, "early_swing_ratio": s}} for c, s in pairs]

    verdicts = cal.claim_verdicts(
        rows("a", [(-0.2, 1.0), (-0.3, 1.1), (-0.4, 1.2)])
        + rows("b", [(-0.2, 1.0), (-0.1, 1.3), (-0.4, 1.2)])
        + rows("c", [(-0.2, 1.0), (-0.3, 1.1), (-0.1, 1.2)])
    )
    assert verdicts == {"a": "holds", "b": "holds in part", "c": "does not hold"}, verdicts
