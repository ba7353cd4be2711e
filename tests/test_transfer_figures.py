"""Experiment 02, transfer part (lecture §2.4): the figures of `run("solutions")` against the lecture.

Two kinds of check, said apart:
- internally consistent quantities (KV size, line rates, efficiencies, transfer times, the speed-ups
  from our own recompute time) are checked tightly: ±2%, or exactly up to float rounding;
- the lecture's rounded statements ("about 2 s", "about 10 s", "about 5x", "21-46x") are checked loosely,
  with the tolerance justified beside each. The recompute time is NOT fitted to "about 10 s": with the
  experiment-01 constants it is 8.33 s, and the lecture's own speed-ups imply ~10.1 s (see
  docs/figures_transfer.md), so the aggregated speed-ups come out at 17x and 38x, below "21-46x".
"""

from __future__ import annotations

import math

import pytest

from hetero import catalog, roofline, transfer
from hetero.impl import MissingExercise

REL = 0.02  # ±2% for figures the lecture states to 2-3 significant digits


@pytest.fixture(scope="module")
def fig():
    return transfer.PARTS[0].run("solutions")


def _close(got, want, rel, what, unit, mistake):
    assert math.isclose(got, want, rel_tol=rel), (
        f"{what}: expected {want} {unit} (±{rel:.1%}), got {got:.4g} {unit}; likely cause: {mistake}"
    )


def test_part_declaration():
    (part,) = transfer.PARTS
    assert part.key == "transfer" and set(part.needs) == {"ex02", "ex04"}


def test_kv_size_matches_42_gb(fig):
    assert fig["context_tokens"] == 128_000
    _close(fig["kv_bytes"], 128_000 * 327_680, 1e-12, "KV bytes of 128,000 tokens", "B", "KV bytes per token")
    # "about 42 GB": 41.94 GB rounds to 42 at 2 significant digits, so ±1.2% (half a GB) is the rounding.
    _close(fig["kv_bytes"], 42e9, 0.012, "KV of the 128K-token prefix", "B", "128K read as 131,072 tokens (43.0 GB)")


@pytest.mark.parametrize(
    "label,line,measured,eff",
    [
        ("1x200G", 25.0, None, None),
        ("4x200G", 100.0, 87.0, 0.87),
        ("8x400G", 400.0, 190.0, 0.475),
    ],
)
def test_line_rates_and_efficiencies(fig, label, line, measured, eff):
    ln = fig["links"][label]
    _close(ln["line_rate_gb_per_s"], line, 1e-12, f"{label} line rate", "GB/s", "bits vs bytes (divide by 8)")
    if measured is None:
        assert ln["efficiency"] is None and ln["measured_gb_per_s"] is None
        _close(ln["used_gb_per_s"], line, 1e-12, f"{label} bandwidth used", "GB/s", "no measurement: use line rate")
    else:
        _close(ln["efficiency"], eff, 1e-12, f"{label} efficiency", "fraction", "a percentage instead of a fraction")
        _close(ln["used_gb_per_s"], measured, 1e-12, f"{label} bandwidth used", "GB/s", "line rate instead of measured")


def test_single_nic_about_two_seconds(fig):
    t = fig["links"]["1x200G"]["transfer_s"]
    _close(t, 41.94304e9 / 25e9, 1e-12, "1 x 200 Gb/s transfer", "s", "GB vs GiB")
    # "about 2 s" is the lecture's rounding of 1.68 s (to 1 significant digit): accept 1.5-2.5 s.
    assert 1.5 <= t <= 2.5, f"1 x 200 Gb/s: expected about 2 s (1.5-2.5 s), got {t:.3f} s"


def test_aggregated_transfer_times(fig):
    _close(fig["links"]["4x200G"]["transfer_s"], 0.482, REL, "4 x 200 Gb/s transfer at 87 GB/s", "s", "unit of GB/s")
    _close(fig["links"]["8x400G"]["transfer_s"], 0.221, REL, "8 x 400 Gb/s transfer at 190 GB/s", "s", "unit of GB/s")


def test_recompute_uses_experiment01_constants(fig):
    rec = fig["recompute"]
    same = roofline.prefill("LLaMA-3-70B", "H800", 8, 128_000).time_s
    _close(rec["time_s"], same, 1e-12, "recompute time", "s", "different roofline constants than experiment 01")
    assert rec["compute_efficiency"] == catalog.ASSUMPTIONS["compute_efficiency"]
    assert rec["bound"] == "compute", "a 128K-token prefill must be compute-bound"
    # Measured with the experiment-01 constants (not fitted): 8.33 s.
    _close(rec["time_s"], 8.33, REL, "recompute of 128,000 tokens on 8 x H800", "s", "attention FLOPs left out")
    # The lecture says "about 10 s" (1 significant digit); our 8.33 s is within 20% of it. A 20% band is the
    # honest width: the lecture's figure is itself implied by rounded speed-ups (see the module docstring).
    assert 8.0 <= rec["time_s"] <= 12.0, f"recompute: lecture says about 10 s, got {rec['time_s']:.2f} s"


@pytest.mark.parametrize("label,want", [("1x200G", 4.96), ("4x200G", 17.3), ("8x400G", 37.7)])
def test_speedups_consistent_with_our_recompute(fig, label, want):
    ln = fig["links"][label]
    _close(
        ln["speedup"],
        fig["recompute"]["time_s"] / ln["transfer_s"],
        1e-12,
        f"{label} speed-up",
        "x",
        "speed-up is recompute / transfer",
    )
    _close(ln["speedup"], want, REL, f"{label} speed-up with the measured 8.33 s recompute", "x", "roofline constants")


def test_lecture_speedups_loosely(fig):
    # "about 5x" (1 significant digit) for one NIC: 4.96x is within the rounding (4.5-5.5).
    single = fig["links"]["1x200G"]["speedup"]
    assert 4.5 <= single <= 5.5, f"single NIC: lecture says about 5x, got {single:.2f}x"
    # "21-46x" aggregated: our recompute is 8.33 s, not ~10.1 s, so we get 17x-38x. Check the ratio to the
    # lecture's bounds equals the recompute ratio 8.33 / 10.1 within 2% (the lecture's bounds are 2 digits).
    for label, lecture in (("4x200G", 21.0), ("8x400G", 46.0)):
        ln = fig["links"][label]
        implied = ln["lecture_implied_recompute_s"]
        _close(
            implied,
            10.1,
            REL,
            f"{label}: recompute time the lecture's {lecture:.0f}x implies",
            "s",
            "transfer time wrong",
        )
        _close(
            ln["speedup"] / lecture,
            fig["recompute"]["time_s"] / implied,
            1e-9,
            f"{label} speed-up ratio",
            "",
            "speed-up not recompute / transfer",
        )
        assert ln["speedup"] > 10, f"{label}: fetching must beat recomputing by more than 10x, got {ln['speedup']:.1f}x"


def test_render(fig):
    text = transfer.render_transfer(fig)
    assert "8x400G" in text and "47.5%" in text


@pytest.mark.slow  # imports matplotlib and writes a PNG: 1-3 s depending on machine load
def test_plot(fig, tmp_path):
    (path,) = transfer.plot_transfer(fig, tmp_path)
    assert path.is_file() and path.stat().st_size > 1000


def test_unknown_nic_and_gpu_are_clear_errors():
    bad_nic = transfer.TransferSetup(links=(transfer.Link("1x999G", "RoCE-999G", 1, None, 5.0, "test"),))
    with pytest.raises(catalog.UnknownHardware, match="RoCE-999G.*known: RoCE-200G"):
        transfer.transfer_figures("solutions", bad_nic)
    with pytest.raises(catalog.UnknownHardware, match="B300"):
        transfer.transfer_figures("solutions", transfer.TransferSetup(recompute_gpu="B300"))


def test_stub_exercise_raises_missing_exercise(tmp_path):
    (tmp_path / "ex02_kv_capacity.py").write_text(
        "def kv_bytes_per_token(num_layers, num_kv_heads, head_dim, bytes_per_elem):\n    return 327680.0\n"
    )
    (tmp_path / "ex04_nic_line_rate.py").write_text(
        "def line_rate_gb_per_s(num_nics, gbit_per_s_per_nic):\n"
        "    raise NotImplementedError('ex04: line_rate_gb_per_s')\n"
    )
    with pytest.raises(MissingExercise, match="ex04"):
        transfer.PARTS[0].run(str(tmp_path))


@pytest.mark.parametrize("label,want", [("1x200G", 0.596), ("4x200G", 0.494), ("8x400G", 0.492)])
def test_the_one_differing_assumption_is_named(fig, label, want):
    # The lecture's speed-ups match this roofline's FLOP count at a compute efficiency of about 0.49 instead
    # of the 0.6 that reproduces §1.2's figures: the recompute is compute-bound, time ~ 1 / efficiency.
    ln = fig["links"][label]
    eff = fig["recompute"]["compute_efficiency"]
    _close(
        ln["lecture_implied_compute_efficiency"],
        eff * fig["recompute"]["time_s"] / ln["lecture_implied_recompute_s"],
        1e-12,
        f"{label} implied compute efficiency",
        "",
        "not 0.6 x our recompute / the implied recompute",
    )
    _close(
        ln["lecture_implied_compute_efficiency"],
        want,
        REL,
        f"{label} implied compute efficiency",
        "",
        "implied recompute time wrong",
    )
