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


def _constant(slots: int, step_s: float = 1.0) -> ov.DecodeModel:
    """A decode pool whose step takes step_s at any batch up to `slots`: output tokens x step_s = seconds."""
    return ov.DecodeModel(base_s=step_s, kv_s_per_request=0.0, compute_s_per_request=0.0, tbt_slo_s=step_s,
                          kv_capacity_requests=slots)


def _workload(arrival, prefill, tokens, duration):
    return ov.Workload(np.array(arrival, float), np.array(prefill, float), np.array(tokens, float), duration)


def _run(w, policy, prefill_instances=1, slots=1, ttft=100.0, mean_decode=5.0, **kw):
    return ov.simulate(w, prefill_instances, _constant(slots), ttft, mean_decode, policy, PREDICT, ADMIT,
                       sample_dt_s=1.0, **kw)


BASE, EARLY, PRED = ov.POLICIES[0], ov.POLICIES[1], ov.POLICIES[2]


# ---------------------------------------------------------------------------------------------
# The TBT model


def test_toy_decode_model_is_the_roofline_of_8_h20_and_its_threshold_is_hand_checkable():
    # LLaMA-3.1-70B on 8 x H20, every request over the model's 131,072-token window (42.95 GB of KV at
    # 320 KiB a token). Batch 1: (141.11 GB + 42.95 GB) read at 8 x 4.0 TB/s x 0.8 = 7.190 ms; TBT SLO
    # 5 x 7.190 = 35.95 ms (the paper's rule). KV capacity (lecture §7 Q2's order): (768 GB - 141.11 GB)
    # x 0.9 / 42.95 GB = 13.14 -> 13 requests, whose step, (141.11 + 13 x 42.95) GB / 25.6 TB/s =
    # 27.32 ms, is within the SLO (14 would take 29.00 ms): the KV memory, not the TBT SLO, binds.
    d = ov.TOY_DECODE
    context = ov.TOY_CONTEXT_TOKENS
    assert context == 131_072, f"toy context {context} tokens, expected LLaMA-3.1-70B's 128K window"
    one = roofline.decode_step("LLaMA-3.1-70B", "H20", 8, 1, context, ov.KV_BYTES_PER_TOKEN)
    assert math.isclose(d.step_s(1), one.time_s, rel_tol=1e-12), (
        f"step at batch 1 {d.step_s(1)} s must equal hetero.roofline's decode step {one.time_s} s")
    full = roofline.decode_step("LLaMA-3.1-70B", "H20", 8, 13, context, ov.KV_BYTES_PER_TOKEN)
    assert math.isclose(d.step_s(13), full.time_s, rel_tol=1e-9), (
        f"step at batch 13 {d.step_s(13)} s vs the roofline's {full.time_s} s (both terms are linear in the batch)")
    assert math.isclose(d.step_s(1), 0.007190, rel_tol=1e-3), f"batch-1 step {d.step_s(1)} s, expected 7.190 ms"
    assert math.isclose(d.tbt_slo_s, 0.03595, rel_tol=1e-3), f"TBT SLO {d.tbt_slo_s} s, expected 5 x 7.190 ms"
    assert d.kv_capacity_requests == 13, f"KV capacity {d.kv_capacity_requests} requests, expected 564.2 / 42.95 GB -> 13"
    assert d.max_batch == 13, f"threshold {d.max_batch} requests, expected 13 (the KV memory binds first)"
    assert math.isclose(d.step_s(13), 0.02732, rel_tol=1e-3) and d.step_s(13) < d.tbt_slo_s
    # 2 req/s at the threshold: 13 / (2 x 27.32 ms) = 237.9 -> 238 tokens per request (the lecture's Kimi
    # mean output is 182), 6.50 s of decoding, 2.00 req/s.
    assert ov.TOY_MEAN_OUTPUT_TOKENS == 238.0, f"toy mean output {ov.TOY_MEAN_OUTPUT_TOKENS} tokens, expected 238"
    assert math.isclose(ov.DEFAULT.decode_mean_s, 6.503, rel_tol=1e-3), f"t_d {ov.DEFAULT.decode_mean_s} s"
    assert math.isclose(ov.DEFAULT.decode_capacity_per_s, 2.0, rel_tol=1e-3)
    # A prompt at the window prefills in 8.64 s on 8 x H800 by the roofline (the lecture: about 10 s
    # for 128K, §2.4), the length of the lecture's ten-plus-second long-context prefill.
    prefill = roofline.prefill("LLaMA-3.1-70B", "H800", 8, context).time_s
    assert math.isclose(prefill, 8.639, rel_tol=1e-3), f"131,072-token prefill {prefill} s, expected 8.64 s"


def test_decode_model_threshold_by_memory_by_kv_capacity_and_over_instances():
    # Memory-bound: 10 ms + 5 ms per request, SLO 32 ms -> (32 - 10) / 5 = 4.4 -> 4 requests.
    d = ov.DecodeModel(0.010, 0.005, 0.0, 0.032, kv_capacity_requests=100)
    assert d.max_batch == 4 and math.isclose(d.step_s(4), 0.030, rel_tol=1e-12)
    # The KV memory holds only 3: the threshold is 3.
    assert replace(d, kv_capacity_requests=3).max_batch == 3
    # 3 instances, requests spread evenly: 12 in the pool, the per-instance batch of 5 (ceil(13 / 3)) breaks it.
    pooled = replace(d, instances=3)
    assert pooled.max_batch == 12 and math.isclose(pooled.step_s(12), 0.030, rel_tol=1e-12)
    assert math.isclose(pooled.step_s(13), 0.035, rel_tol=1e-12) and pooled.step_s(0) == 0.0
    with pytest.raises(ValueError, match="tbt_slo_s"):
        replace(d, tbt_slo_s=0.012).validate()  # below the single-request step of 15 ms


def test_hand_sequence_the_step_time_grows_with_the_batch_and_the_threshold_wastes_the_third():
    # Step 10 ms + 10 ms per request, SLO 30 ms: at most 2 requests. One prefill instance.
    # A: arrives 0, prefill 1 s, decodes from 1 s, 100 tokens. B: arrives 1 s, prefill 1 s, decodes from 2 s,
    # 100 tokens. 1-2 s: batch 1, 20 ms per step, A emits 50 tokens. From 2 s: batch 2, 30 ms per step; A's
    # last 50 tokens take 1.5 s (A done at 3.5 s), B has 50 by then and its last 50 take 50 x 20 ms = 1 s
    # alone (B done at 4.5 s). C: arrives 2.5 s, prefill 0.5 s, reaches decode at 3.0 s with 2 decoding:
    # a third request would make the step 40 ms > 30 ms, so it is rejected there (wasted).
    d = ov.DecodeModel(0.010, 0.010, 0.0, 0.030, kv_capacity_requests=10)
    w = _workload([0.0, 1.0, 2.5], [1.0, 1.0, 0.5], [100.0, 100.0, 100.0], 6.0)
    r = ov.simulate(w, 1, d, 100.0, 3.0, BASE, sample_dt_s=0.25)
    assert (r.completed, r.wasted_prefills, r.rejected_at_arrival) == (2, 1, 0), (
        f"expected A and B completed and C wasted at decode entry (requests), got {r.counts()}")
    assert math.isclose(r.max_tbt_s, 0.030, rel_tol=1e-12), f"longest step {r.max_tbt_s} s, expected 30 ms"
    # Samples every 0.25 s: 2 decoding at 3.25 s, 1 at 3.75 s (A left at 3.5 s), 1 at 4.25, 0 at 4.75 (B at 4.5).
    got = [int(r.decode_load[int(t / 0.25)]) for t in (1.25, 2.25, 3.25, 3.75, 4.25, 4.75)]
    assert got == [1, 2, 2, 1, 1, 0], f"decode load at 1.25/2.25/3.25/3.75/4.25/4.75 s: {got}, expected [1, 2, 2, 1, 1, 0]"
    # Mean admission-to-decode lag of the three that finished prefill: (1 + 1 + 0.5) / 3 s.
    assert math.isclose(r.mean_lag_s, 2.5 / 3, rel_tol=1e-12), f"mean lag {r.mean_lag_s} s, expected 0.833 s"
    # Early rejection sees 2 decoding at C's arrival (2.5 s), the threshold: C is rejected at arrival, unwasted.
    e = ov.simulate(w, 1, d, 100.0, 3.0, EARLY, sample_dt_s=0.25)
    assert (e.completed, e.wasted_prefills, e.rejected_for_decode) == (2, 0, 1), (
        f"early rejection must reject C at arrival with the same threshold the decode pool uses: {e.counts()}")


def test_hand_sequence_baseline_wastes_the_prefill_that_finds_decode_full():
    # One prefill instance, one decode slot (1 s per step). A: prefill 0-2 s, decodes 2-12 s (10 tokens).
    # B: arrives at 1 s, queues behind A, prefills 2-5 s, finds the slot taken at 5 s: wasted (3 s).
    w = _workload([0.0, 1.0], [2.0, 3.0], [10.0, 10.0], 20.0)
    r = _run(w, BASE)
    assert (r.completed, r.rejected_at_arrival, r.wasted_prefills) == (1, 0, 1), (
        f"expected 1 completed, 0 rejected, 1 wasted (requests), got {r.counts()}")
    assert math.isclose(r.wasted_prefill_s, 3.0, rel_tol=1e-12), (
        f"expected 3.0 instance-seconds of wasted prefill, got {r.wasted_prefill_s}")
    assert r.prefill_load[:6].tolist() == [1, 2, 1, 1, 1, 0], f"prefill load series wrong: {r.prefill_load[:6]}"
    assert r.decode_load[:6].tolist() == [0, 0, 1, 1, 1, 1], f"decode load series wrong: {r.decode_load[:6]}"
    assert r.decode_load[11] == 1 and r.decode_load[13] == 0, "A decodes 10 steps of 1 s: 2-12 s"


def test_hand_sequence_early_rejects_only_when_decode_is_full_now():
    w = _workload([0.0, 3.0], [2.0, 1.0], [10.0, 10.0], 20.0)
    base, early = _run(w, BASE), _run(w, EARLY)
    assert (base.wasted_prefills, base.rejected_at_arrival) == (1, 0), f"baseline: {base.counts()}"
    assert (early.wasted_prefills, early.rejected_at_arrival, early.rejected_for_decode) == (0, 1, 1), (
        f"early rejection should reject the arrival at 3 s (decode full now): {early.counts()}")


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
            f"{policy.name}: expected the TTFT SLO to reject the 2nd request, got {r.counts()}")


@pytest.mark.parametrize("policy", ov.POLICIES, ids=[p.name for p in ov.POLICIES])
def test_every_request_is_accounted_for_and_no_step_breaks_the_tbt_slo(policy):
    w = ov.poisson_workload(SHORT, np.random.default_rng(1))
    r = ov.simulate_config(SHORT, w, policy, PREDICT, ADMIT)
    assert r.arrivals == r.completed + r.rejected_at_arrival + r.wasted_prefills, (
        f"{policy.name}: arrivals must equal completed + rejected + wasted after draining: {r.counts()}")
    d = SHORT.decode
    assert r.decode_load.max() <= d.max_batch, f"decode load {r.decode_load.max()} above the threshold {d.max_batch}"
    assert r.max_tbt_s <= d.tbt_slo_s, f"a step took {r.max_tbt_s * 1e3:.2f} ms, above the TBT SLO {d.tbt_slo_s * 1e3:.2f} ms"
    assert r.decode_load.min() >= 0 and r.prefill_load.min() >= 0


def test_littles_law_on_a_constant_step_pool():
    # With a constant 1 s step, output tokens are decode seconds: mean decode load ~ throughput x mean
    # decode time. Loose (25%): a 10-minute run starts empty and its output lengths are a finite sample.
    config = replace(SHORT_SHORT_PREFILL, decode=_constant(40, 0.01), decode_mean_tokens=2000.0)
    r = ov.simulate_config(config, ov.poisson_workload(config, np.random.default_rng(1)), BASE)
    little = r.completed * 20.0 / config.duration_s
    assert math.isclose(r.decode_load.mean(), little, rel_tol=0.25), (
        f"mean decode load {r.decode_load.mean():.1f} requests vs Little's law {little:.1f}")


def test_baseline_never_rejects_for_decode_and_huge_oversubscription_equals_baseline():
    w = ov.poisson_workload(SHORT, np.random.default_rng(2))
    base = ov.simulate_config(SHORT, w, BASE)
    assert base.rejected_for_decode == 0, "baseline must not look at the decode pool at arrival"
    loose = ov.simulate_config(SHORT, w, ov.Policy("loose", "predictive", 1000.0), PREDICT, ADMIT)
    assert loose.counts() == base.counts(), (
        f"a predictive threshold 1000x the slots never binds, so it must equal the baseline: {loose.counts()} vs "
        f"{base.counts()}")


def test_same_seed_same_result_and_workload_shape():
    a = ov.poisson_workload(SHORT, np.random.default_rng(5))
    b = ov.poisson_workload(SHORT, np.random.default_rng(5))
    assert np.array_equal(a.arrival_s, b.arrival_s) and np.array_equal(a.decode_tokens, b.decode_tokens)
    assert np.all(np.diff(a.arrival_s) >= 0) and a.arrival_s[-1] < SHORT.duration_s
    # Poisson count over 600 s at 2.6 req/s: mean 1560, sd 39.5; 5 sd bounds.
    assert abs(a.arrival_s.size - 1560) < 5 * 39.5, f"{a.arrival_s.size} arrivals, expected about 1560"
    assert a.prefill_s.min() >= 10.0 and a.prefill_s.max() <= 20.0 + 1e-9, "prefills of 10-20 s"


@pytest.mark.parametrize("field,value", [("prefill_instances", 2.5), ("duration_s", -1.0),
                                         ("prefill_spread", 1.0), ("arrival_rate_per_s", math.inf),
                                         ("load_report_interval_s", -1.0), ("load_report_interval_s", math.nan),
                                         ("load_report_interval_s", True), ("decode_mean_tokens", 0.0),
                                         ("decode", "fast")])
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
    stale = ov.simulate(w, 1, _constant(1), 100.0, 5.0, EARLY, sample_dt_s=1.0,
                        report_interval_s=10.0)
    assert (live.completed, live.rejected_for_decode) == (3, 0), f"live view: every request fits, got {live.counts()}"
    assert (stale.completed, stale.rejected_for_decode, stale.wasted_prefills) == (2, 1, 0), (
        f"reported view: B (14 s) must be rejected on the 10 s report that showed the slot taken, got {stale.counts()}")


def test_lecture_configuration_follows_the_lecture_words():
    for config in (ov.DEFAULT, ov.SHORT_PREFILL):
        assert math.isclose(config.prefill_capacity_per_s, 2.0, rel_tol=1e-12)
        # 238 whole output tokens: 1.999 req/s at the threshold.
        assert math.isclose(config.decode_capacity_per_s, 2.0, rel_tol=1e-3)
        assert math.isclose(config.arrival_rate_per_s, 2.6, rel_tol=1e-12) and config.duration_s == 3600.0
    d = ov.DEFAULT
    low, high = d.prefill_mean_s * (1 - d.prefill_spread), d.prefill_mean_s * (1 + d.prefill_spread)
    assert math.isclose(low, 10.0, rel_tol=1e-9) and math.isclose(high, 20.0, rel_tol=1e-9), "prefills of 10-20 s"
    assert d.ttft_slo_s == ov.PAPER_TTFT_SLO_S == 30.0 and d.load_report_interval_s == 0.0


def test_run_scenario_harness_and_load_series_builder_return_plain_data():
    out = hov.run_scenario(KEY, {"duration_s": 300.0}, 3)
    assert set(out) == {"completed", "rejected_at_arrival", "wasted_prefills"}
    assert all(type(v) is int for v in out.values()), f"harness must return ints, got {out}"
    with pytest.raises(ValueError, match="unknown scenario fields"):
        hov.run_scenario(KEY, {"duration": 300.0}, 3)
    small = {"duration_s": 300.0, "prefill_instances": 2, "prefill_mean_s": 1.0, "ttft_slo_s": 3.0,
             "decode": {"base_s": 0.01, "kv_s_per_request": 0.002, "compute_s_per_request": 0.0,
                        "tbt_slo_s": 0.02, "kv_capacity_requests": 100}, "decode_mean_tokens": 150.0}
    assert hov._scenario_config(small).decode.max_batch == 5, "(20 - 10) / 2 = 5 requests"
    assert all(type(v) is int for v in hov.run_scenario(KEY, small, 3).values())
    series = hov.load_series("default", "early", 3, "decode", duration_s=300.0)
    assert len(series) == 300 - int(ov.WARMUP_S) and all(type(x) is float for x in series)
    assert series == hov.load_series("default", "early", 3, "decode", duration_s=300.0)


def test_experiment_figures_findings_and_render():
    scenarios = {"default": SHORT, "short_prefill": SHORT_SHORT_PREFILL}
    figures = ov.experiment(PREDICT, ADMIT, KEY.antiphase_correlation, KEY.dominant_period_s,
                            seeds=(0, 1), scenarios=scenarios)
    json.dumps(figures)  # JSON-able
    assert list(figures["default"]["policies"]) == [p.name for p in ov.POLICIES]
    assert list(figures["short_prefill"]["policies"]) == [p.name for p in ov.OSCILLATION_POLICIES]
    base = figures["default"]["policies"]["baseline"]
    assert abs(base["completed_vs_baseline_pct"]["mean"]) < 1e-12, "baseline vs itself must be 0%"
    # The lag of the lecture configuration is ten-plus seconds, of the short-prefill one under ten.
    assert base["mean_lag_s"]["mean"] > 10.0 > figures["short_prefill"]["policies"]["baseline"]["mean_lag_s"]["mean"], (
        "the admission-to-decode lag must be ten-plus seconds with 10-20 s prefills and under 10 s with 2-6 s ones")
    assert set(figures["findings"]) and all(set(f) == {"measured", "target", "holds"} for f in figures["findings"].values())
    text = ov.render(figures)
    for name in ("baseline", "early", "predictive x1.1", "4,183", "corr(prefill, decode)", "TBT SLO 35.9 ms",
                 "threshold 13 requests (KV room for 13; step 27.3 ms", "lag s", "max TBT ms", "Short prefills", "holds"):
        assert name in text, f"rendered table lacks {name!r}"


def test_lag_sweep_rows_render_and_configs():
    # Capacity stays 2 req/s and the TTFT SLO 2 x the mean prefill at every point of the sweep.
    for mean_s in ov.LAG_SWEEP_PREFILL_MEAN_S:
        c = ov.lag_config(mean_s)
        assert math.isclose(c.prefill_capacity_per_s, 2.0, rel_tol=1e-9) and math.isclose(c.ttft_slo_s, 2 * mean_s)
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
    o = ov.oscillation(r, replace(ov.DEFAULT, prefill_instances=100, decode=_constant(40)), KEY.antiphase_correlation,
                       KEY.dominant_period_s)
    # Rounding to whole requests perturbs r by < 0.01 and cannot move the extremes by a whole sample.
    assert o["trough_lag_s"] == pytest.approx(15.0, abs=0.5), f"trough at {o['trough_lag_s']} s, expected +15 s"
    assert o["peak_lag_s"] == pytest.approx(-35.0, abs=0.5), f"peak at {o['peak_lag_s']} s, expected -35 s"
    assert o["trough_correlation"] < -0.99 and o["peak_correlation"] > 0.99, (
        f"a shifted sine correlates with r = -1 / +1 at the trough / peak: got {o['trough_correlation']:+.3f} / "
        f"{o['peak_correlation']:+.3f}")
    assert o["prefill_period_s"] == pytest.approx(100.0, rel=1e-9), "the dominant period of a 100 s sine is 100 s"



@pytest.mark.slow
def test_plots_are_written(tmp_path):
    scenarios = {"default": SHORT, "short_prefill": SHORT_SHORT_PREFILL}
    figures = ov.experiment(PREDICT, ADMIT, KEY.antiphase_correlation, KEY.dominant_period_s,
                            seeds=(0, 1), scenarios=scenarios)
    paths = ov.plot(figures, tmp_path)
    paths += ov.plot_lag(ov.lag_sweep(PREDICT, ADMIT, seeds=(0, 1), prefill_means_s=(2.0, 8.0), base=SHORT), tmp_path)
    assert len(paths) == 2 and all(p.stat().st_size > 10_000 for p in paths), f"plots not written: {paths}"


def test_part_reports_missing_exercise_for_a_stub(tmp_path):
    stub = tmp_path / "ex05_overload.py"
    stub.write_text("def predicted_decode_load(*a, **k):\n    raise NotImplementedError('ex05: predicted_decode_load')\n"
                    "def admit_predictive(*a, **k):\n    raise NotImplementedError('ex05: admit_predictive')\n"
                    "def antiphase_correlation(*a, **k):\n    raise NotImplementedError('ex05: antiphase_correlation')\n"
                    "def dominant_period_s(*a, **k):\n    raise NotImplementedError('ex05: dominant_period_s')\n")
    with pytest.raises(MissingExercise, match="ex05"):
        ov.PARTS[0].run(str(tmp_path))
    assert ov_cli.main_or_missing(["--impl", str(tmp_path), "--seeds", "2"]) == 1


# ---------------------------------------------------------------------------------------------
# Trace mode

def _write_trace(path: Path, n: int = 300, seed: int = 0) -> Path:
    rng = np.random.default_rng(seed)
    ts = np.cumsum(rng.exponential(150.0, size=n)).astype(int)  # ~6.7 req/s, ms
    lines = []
    for t in ts:
        inp = int(rng.integers(1000, 60000))
        lines.append(json.dumps({"timestamp": int(t), "input_length": inp, "output_length": int(rng.integers(1, 400)),
                                 "hash_ids": list(range(-(-inp // 512)))}))
    path.write_text("\n".join(lines) + "\n")
    return path


def test_trace_cost_model_reproduces_the_lecture_prefill_time_and_scales_to_the_paper_gpu():
    t = ov.TraceCostModel(gpu="H800").prefill_s(np.array([8192]))[0]
    assert math.isclose(t, 0.26, rel_tol=0.02), f"8K-token prefill on 8 x H800: expected ~0.26 s (lecture §1.2), got {t:.3f} s"
    # The paper's A800 (the catalog's A100-80GB, 312 TFLOP/s) is 989 / 312 = 3.17x slower at the same efficiency.
    a800 = ov.TraceCostModel().prefill_s(np.array([8192]))[0]
    assert math.isclose(a800 / t, 989.0 / 312.0, rel_tol=1e-9), f"A800 / H800 prefill time {a800 / t:.3f}, expected 3.17"
    # Decode at 0.1 s TBT on 8 x 80 GB: the KV memory binds first. (8 x 80 GB - 141.1 GB) x 0.9 / 320 KiB
    # = 1,370,249 tokens (lecture §7 Q2: about 1.37 M); / 12,000 = 114 requests per instance.
    assert ov.trace.PAPER_INSTANCE_KV_TOKENS == 1_370_249
    d = ov.TraceCostModel().decode_model(12_000, 8)
    assert d.max_batch_per_instance == 114 and d.max_batch == 912, (d.max_batch_per_instance, d.max_batch)
    assert d.step_s(912) < ov.PAPER_TBT_SLO_S, "the TBT SLO does not bind before the KV memory on the paper's cluster"


def test_trace_cli_json_counts(tmp_path, capsys):
    trace = _write_trace(tmp_path / "t.jsonl")
    code = ov.main(["--impl", "solutions", "--trace", str(trace), "--speedup", "2", "--prefill-instances", "8", "--decode-instances", "1",
                    "--decode-slots", "1", "--policy", "all", "--json"])
    assert code == 0
    out = json.loads(capsys.readouterr().out)
    assert list(out["policies"]) == ["baseline", "early", "predictive", "predictive x1.1"]
    for name, c in out["policies"].items():
        assert c["arrivals"] == 300 == c["completed"] + c["rejected_at_arrival"] + c["wasted_prefills"], (name, c)
    assert out["policies"]["baseline"]["wasted_prefills"] > 0, "one decode slot behind 8 prefill instances must overflow"
    assert out["decode_max_batch"] == 1


@pytest.mark.parametrize("argv,message", [
    (["--policy", "fastest"], "unknown policy 'fastest'"),
    (["--speedup", "0"], "--speedup must be > 0"),
    (["--prefill-instances", "0"], "--prefill-instances must be >= 1"),
    (["--decode-instances", "-2"], "--decode-instances must be >= 1"),
])
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


def test_sample_trace_on_the_paper_cluster_rejects_in_prefill_only(capsys):
    # 8 + 8 instances of 8 x A800 at 2x: the prefill pool is overloaded (TTFT rejections for every policy), the
    # decode pool never reaches its threshold, so the three policies reject the same requests
    # (docs/figures_overload.md, trace mode).
    assert ov.main(["--impl", "solutions", "--trace", str(SAMPLE_TRACE), "--speedup", "2", "--policy", "all", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    totals = {name: c["rejected_total"] for name, c in out["policies"].items()}
    assert all(v > 0 for v in totals.values()), f"every policy must reject some requests: {totals}"
    assert len(set(totals.values())) == 1 and out["policies"]["baseline"]["wasted_prefills"] == 0, (
        f"with the decode pool under its threshold all policies must agree: {totals}")
    assert out["prefill_capacity_per_s"] < out["arrival_rate_per_s"] < out["decode_capacity_per_s"], (
        "prefill capacity below the 2x arrival rate, decode capacity above it")
