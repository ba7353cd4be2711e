"""The lecture's own figures next to this run's: the first lines the drivers print for each part.

Each part's tables are long (configurations, every policy, every seed). What a student checks first is
whether the lecture's figures come out, so `hetero.lecture` prints, above each part's tables, one line
per figure the lecture (or the paper it cites) states: what it is, the lecture's value as the lecture
gives it, and this run's value from the part's figures. Parts for which the lecture gives no number
print none. A figure the run could not compute (a stub returned something unusable) shows as "?".
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

Figures = dict[str, Any]
Headline = tuple[str, str, Callable[[Figures], str]]  # (figure, the lecture's value, this run's value)


def _mean(stat: Any) -> float:
    return float(stat["mean"]) if isinstance(stat, dict) else float(stat)


def _cost(device: str) -> Callable[[Figures], str]:
    def value(f: Figures) -> str:
        p = f["devices"][device]["per_1000_usd"]
        return f"{p['tflops']:.3g}, {p['bandwidth_gb_per_s']:.0f}, {p['capacity_gb']:.2g}"

    return value


def _roofline(case: str, scale: float, fmt: str) -> Callable[[Figures], str]:
    def value(f: Figures) -> str:
        c = f["cases"][case]
        return ", ".join(fmt.format(c[gpu]["time_ms"] * scale) for gpu in ("H800", "H20"))

    return value


def _policy(f: Figures, policy: str, key: str) -> float:
    return _mean(f["default"]["policies"][policy][key])


def _trace_shares(f: Figures) -> str:
    n = f["requests"]
    shares = {
        p: [100.0 * c["policies"][p]["rejected_total"] / n for c in f["cells"] if p in c["policies"]]
        for p in ("baseline", "early", "predictive")
    }
    return " / ".join(f"{min(v):.1f}-{max(v):.1f}" for v in shares.values()) + " % over the sweep"


HEADLINES: dict[str, list[Headline]] = {
    "cost": [
        ("A100 per $1000: TFLOPS, GB/s, GB", "20.8, 133, 5.3", _cost("A100-80GB")),
        ("CPU server per $1000: TFLOPS, GB/s, GB", "2.5, 40, 64", _cost("CPU-server")),
        (
            "$ per GB: A100, CPU server",
            "about 187, about 15.6",
            lambda f: f"{f['devices']['A100-80GB']['usd_per_gb']:.1f}, {f['devices']['CPU-server']['usd_per_gb']:.1f}",
        ),
    ],
    "roofline": [
        ("prefill of 8K tokens: H800, H20 (s)", "0.26, 1.75", _roofline("prefill", 1e-3, "{:.2f}")),
        ("decode step at batch 1: H800, H20 (ms)", "6.6, 5.6", _roofline("decode_batch1", 1.0, "{:.1f}")),
        ("decode step at batch 64: H800, H20 (ms)", "10.6, 13.7", _roofline("decode_batch64", 1.0, "{:.1f}")),
    ],
    "kv_capacity": [
        (
            "HBM of 8 x H800: tokens, requests of 8,590",
            "about 1.37 M, about 159",
            lambda f: f"{f['tiers']['hbm']['tokens'] / 1e6:.2f} M, {f['tiers']['hbm']['requests']}",
        ),
        ("2 TB of DRAM: tokens", "about 6.1 M", lambda f: f"{f['tiers']['dram']['tokens'] / 1e6:.2f} M"),
        ("SSD: tokens", "hundreds of millions", lambda f: f"{f['tiers']['ssd']['tokens'] / 1e6:.0f} M"),
    ],
    "cache_pool": [
        (
            "local caches + round-robin: effective capacity of the global pool's",
            "about 1/8",
            lambda f: f"1/{1 / f['local_hit_equivalent']['fraction_of_pool']:.1f}",
        ),
        (
            "block hit rate: local + round-robin, global pool",
            "the global pool's is higher",
            lambda f: (
                f"{f['policies']['local_round_robin']['block_hit_rate']:.0%}, "
                f"{f['policies']['global_round_robin']['block_hit_rate']:.0%}"
            ),
        ),
    ],
    "transfer": [
        ("KV of a 128K-token prefix (GB)", "about 42", lambda f: f"{f['kv_bytes'] / 1e9:.1f}"),
        ("fetch it over one 200 Gb/s NIC (s)", "about 2", lambda f: f"{f['links']['1x200G']['transfer_s']:.2f}"),
        (
            "87 GB/s on 4 x 200 Gb/s, 190 GB/s on 8 x 400 Gb/s: share of line rate",
            "87%, 47.5% (§7 Q4)",
            lambda f: f"{f['links']['4x200G']['efficiency']:.1%}, {f['links']['8x400G']['efficiency']:.1%}",
        ),
        ("recompute the prefill on 8 x H800 (s)", "about 10", lambda f: f"{f['recompute']['time_s']:.2f}"),
        (
            "speed-up of fetching: 1 NIC, 4 x 200G, 8 x 400G",
            "5x, 21x, 46x",
            lambda f: ", ".join(f"{f['links'][k]['speedup']:.1f}x" for k in ("1x200G", "4x200G", "8x400G")),
        ),
    ],
    "overload": [
        (
            "admission-to-decode lag, no rejection policy (s)",
            "ten-plus seconds",
            lambda f: f"{_policy(f, 'baseline', 'mean_lag_s'):.1f}",
        ),
        (
            "early rejection: wasted prefills vs none",
            "almost no reduction",
            lambda f: f"{_policy(f, 'early', 'wasted_vs_baseline_pct'):+.0f}%",
        ),
        (
            "prediction-based rejection: wasted prefills vs none",
            "about a quarter fewer",
            lambda f: f"{_policy(f, 'predictive', 'wasted_vs_baseline_pct'):+.0f}%",
        ),
    ],
    "overload_lag": [
        (
            "longest lag: wasted prefills vs none, early / prediction-based",
            "prediction cuts more as the lag grows",
            lambda f: (
                f"{_mean(f['rows'][-1]['early']['wasted_vs_baseline_pct']):+.0f}% / "
                f"{_mean(f['rows'][-1]['predictive']['wasted_vs_baseline_pct']):+.0f}% "
                f"at {_mean(f['rows'][-1]['lag_s']):.0f} s"
            ),
        ),
    ],
    "overload_trace": [
        (
            "rejected, baseline / early / predictive (paper: 8P + 8D, ~23,000 requests)",
            "18.2 / 16.4 / 15.6 %",
            _trace_shares,
        ),
    ],
    "placement": [
        (
            "routed-expert params each token reads (DeepSeek-V3)",
            "20.4B",
            lambda f: f"{f['active_routed_params'] / 1e9:.1f}B",
        ),
        (
            "weights on the GPU (8-bit), on the CPU (4-bit)",
            "about 18 GB, about 368 GB",
            lambda f: f"{f['gpu_gb']:.1f} GB, {f['cpu_gb']:.1f} GB",
        ),
        (
            "offload order, first to the CPU first",
            "routed experts, shared expert, attention",
            lambda f: ", ".join(f["offload_order"]),
        ),
    ],
    "decode": [
        (
            "CPU decode bound, 11.5 GB per token at 0.7 x 300 GB/s (§7 Q6)",
            "about 18 tokens/s",
            lambda f: f"{f['q6_bound_tokens_per_s']:.1f} tokens/s",
        ),
        (
            "speed-ups: vs llama.cpp, vs Fiddler, of deferral (slides: measured, 'up to')",
            "1.92x, 4.09x, 1.45x",
            lambda f: ", ".join(
                f"{f['speedups'][k]['estimate']:.2f}x" for k in ("vs_llamacpp", "vs_fiddler", "deferral")
            ),
        ),
    ],
    "amx": [
        (
            "AMX ops per cycle per core, AVX-512's",
            "2,048, 256",
            lambda f: f"{f['amx_ops_per_cycle']:,.0f}, {f['avx512_ops_per_cycle']}",
        ),
        ("peak INT8 TOPS of 56 cores at 2 GHz (§7 Q9)", "about 229", lambda f: f"{f['peak_tops']:.1f}"),
        ("37 TOPS measured: share of the peak", "about 16%", lambda f: f"{f['fraction_of_peak']:.1%}"),
        (
            "prefill of 1K tokens on the CPU: AVX-512, AMX (s)",
            "about 17, about 2",
            lambda f: f"{f['prefill']['avx512_s']:.1f}, {f['prefill']['amx_s']:.1f}",
        ),
    ],
    "deferral": [
        ("skip 3 experts of 4 (milli-nats per char)", "+21.4", lambda f: f"{f['delta_mnats']['skip_3']:+.1f}"),
        (
            "defer 1 / 2 / 3 experts (milli-nats per char)",
            "nearly lossless",
            lambda f: " / ".join(f"{f['delta_mnats'][f'defer_{k}']:+.2f}" for k in (1, 2, 3)),
        ),
        (
            "mean top-1 routing weight by layer",
            "0.88-0.99",
            lambda f: f"{min(f['top1_weight_by_layer']):.2f}-{max(f['top1_weight_by_layer']):.2f}",
        ),
    ],
}


def render(key: str, figures: Figures) -> str:
    """The part's headline lines ("" when the lecture gives no figure for it)."""
    rows = HEADLINES.get(key, [])
    if not rows:
        return ""
    shown = []
    for what, lecture, value in rows:
        try:
            mine = value(figures)
        except (KeyError, TypeError, ValueError, IndexError, ZeroDivisionError):
            mine = "?"
        shown.append((what, lecture, mine))
    width = max(len(w) for w, _, _ in shown)
    lecture_width = max(len("lecture"), *(len(lec) for _, lec, _ in shown))
    lines = [f"   {'':<{width}}  {'lecture':<{lecture_width}}  this run"]
    lines += [f"   {what:<{width}}  {lecture:<{lecture_width}}  {mine}" for what, lecture, mine in shown]
    return "\n".join(lines)
