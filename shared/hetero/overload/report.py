"""Text and plots of the overload figures (presentation only): the parts' tables and findings, the
pool-load and lag-sweep plots, and the trace-replay table."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from hetero import plotting
from hetero.overload.config import OSCILLATION_POLICIES, PAPER_REJECTED


def _pm(s: dict[str, float], fmt: str = "{:.0f}") -> str:
    return f"{fmt.format(s['mean'])} ± {fmt.replace('+', '').format(s['std'])}"


def _config_line(cfg: dict[str, Any], fig: dict[str, Any]) -> str:
    lo = cfg["prefill_mean_s"] * (1 - cfg["prefill_spread"])
    hi = cfg["prefill_mean_s"] * (1 + cfg["prefill_spread"])
    return (
        f"{cfg['prefill_instances']} prefill instances x {lo:g}-{hi:g} s prefills "
        f"({fig['prefill_capacity_per_s']:.2f} req/s), TTFT SLO {cfg['ttft_slo_s']:g} s; decode: "
        f"{fig['decode_instances']} instance(s), load = max(TBT / SLO, KV / HBM), full at "
        f"{fig['decode_max_batch']} requests of {cfg['context_tokens']:,} tokens (step "
        f"{1e3 * fig['decode_step_at_max_batch_s']:.1f} ms = {fig['decode_tbt_ratio_at_max_batch']:.2f} of the TBT SLO "
        f"{1e3 * fig['tbt_slo_s']:.1f} ms, KV {100 * fig['decode_kv_fraction_at_max_batch']:.1f} % of HBM; one more "
        f"breaks the {fig['decode_binding']}), "
        f"mean decode {fig['decode_mean_s']:.1f} s at that batch ({fig['decode_capacity_per_s']:.2f} req/s); "
        f"arrivals {cfg['arrival_rate_per_s']:g} req/s for {cfg['duration_s']:g} s"
    )


def _policy_lines(table: dict[str, Any]) -> list[str]:
    lines = [
        f"{'policy':<16} {'completed':>13} {'rej. arrival':>13} {'wasted':>11} {'wasted GPU-s':>14}"
        f" {'Δcompleted %':>14} {'Δwasted %':>14} {'lag s':>11} {'max TBT ms':>10}"
    ]
    for name, e in table.items():
        lines.append(
            f"{name:<16} {_pm(e['completed']):>13} {_pm(e['rejected_at_arrival']):>13} "
            f"{_pm(e['wasted_prefills']):>11} {_pm(e['wasted_prefill_s']):>14} "
            f"{_pm(e['completed_vs_baseline_pct'], '{:+.2f}'):>14} "
            f"{_pm(e['wasted_vs_baseline_pct'], '{:+.1f}'):>14} {_pm(e['mean_lag_s'], '{:.1f}'):>11} "
            f"{1e3 * e['max_tbt_s']['max']:>10.1f}"
        )
    return lines


def render(figures: dict[str, Any]) -> str:
    n = len(figures["seeds"])
    d = figures["default"]
    lines = [
        f"Lecture configuration ({n} seeds, mean ± sample std; changes paired by seed):",
        "  " + _config_line(figures["configs"]["default"], d),
        *_policy_lines(d["policies"]),
    ]
    lines.append(
        "Paper (Mooncake §8.2, 8P + 8D, ~23,000 real requests at 2x), rejected requests: "
        + ", ".join(f"{k} {v:,}" for k, v in figures["paper_rejected"].items())
    )
    lines.append("")
    lines.append(
        "Oscillation, lecture configuration: the two pools' loads (prefill per instance, decode per "
        "threshold), warm-up dropped"
    )
    lines.append(
        f"{'policy':<12} {'corr(prefill, decode)':>22} {'peak lag s':>11} {'trough lag s':>13}"
        f" {'prefill period s':>17} {'decode period s':>16} {'prefill swing':>14} {'decode swing':>14}"
        f" {'prefill empty %':>16} {'decode at thr. %':>17}"
    )
    for name, e in d["policies"].items():
        if name not in {p.name for p in OSCILLATION_POLICIES}:
            continue
        o = e["oscillation"]
        lines.append(
            f"{name:<12} {_pm(o['correlation'], '{:+.2f}'):>22} "
            f"{_pm(o['peak_lag_s']):>11} {_pm(o['trough_lag_s']):>13} "
            f"{_pm(o['prefill_period_s']):>17} {_pm(o['decode_period_s']):>16} "
            f"{_pm(o['prefill_swing'], '{:.2f}'):>14} {_pm(o['decode_swing'], '{:.2f}'):>14} "
            f"{100 * o['prefill_empty']['mean']:>16.1f} {100 * o['decode_at_threshold']['mean']:>17.1f}"
        )
    lines.append(
        "(swing: 5th-95th percentile range of the normalised load; peak / trough lag: the shift of the "
        "decode series at which its correlation with the prefill series is highest / lowest)"
    )
    lines.append("")
    s = figures["short_prefill"]
    lines.append("Short prefills, the same cluster:")
    lines.append("  " + _config_line(figures["configs"]["short_prefill"], s))
    lines.extend(_policy_lines(s["policies"]))
    lines.append("")
    lines.extend(render_findings(figures["findings"]))
    return "\n".join(lines)


def render_findings(findings: dict[str, Any]) -> list[str]:
    """The lecture's claims beside this simulator's measured means. A claim outside its range says that the
    simulator's figure is not the lecture's (the simulator was not tuned to it): a property of the package's
    model of the cluster, the same for the answer key, not a sign of a mistake in the exercises."""
    lines = [
        "The lecture's claims beside this simulator's means (ranges fixed in advance; 'simulator differs': the "
        "simulator's figure is not the lecture's, for the answer key too: the package's cluster model, not your "
        "code; your code is checked against the answer key above; 'fitted': the calibration chose the toy's "
        "settings to meet it, 'predicted': it follows from them):"
    ]
    for claim, f in findings.items():
        verdict = "as the lecture" if f["holds"] else "simulator differs"
        how = "fitted" if f.get("fitted") else "predicted"
        lines.append(f"  [{verdict}, {how}] {claim}: {f['measured']:+.2f}")
    return lines


def render_lag(figures: dict[str, Any]) -> str:
    lines = [
        f"Admission-to-decode lag vs what early and prediction-based rejection achieve ({len(figures['seeds'])} "
        f"seeds; mean decode time at a full decode instance {figures['decode_mean_s']:.1f} s; changes against the "
        "baseline, paired by seed)",
        f"{'prefill s':>9} {'P':>3} {'TTFT s':>6} {'lag s':>6} {'early Δwasted %':>16} {'early Δcompl. %':>16} "
        f"{'pred. Δwasted %':>16} {'pred. Δcompl. %':>16} {'wasted b/e/p':>16}",
    ]
    for r in figures["rows"]:
        e, p = r["early"], r["predictive"]
        lines.append(
            f"{r['prefill_mean_s']:>9g} {r['prefill_instances']:>3} {r['ttft_slo_s']:>6g} "
            f"{r['lag_s']['mean']:>6.1f} {_pm(e['wasted_vs_baseline_pct'], '{:+.1f}'):>16} "
            f"{_pm(e['completed_vs_baseline_pct'], '{:+.2f}'):>16} "
            f"{_pm(p['wasted_vs_baseline_pct'], '{:+.1f}'):>16} "
            f"{_pm(p['completed_vs_baseline_pct'], '{:+.2f}'):>16} "
            f"{r['baseline']['wasted_prefills']['mean']:>5.0f}/{e['wasted_prefills']['mean']:.0f}/"
            f"{p['wasted_prefills']['mean']:.0f}"
        )
    return "\n".join(lines)


SMOOTH_S = 60.0  # the load plot's moving average: the swings of the lecture last minutes, the noise seconds


def _moving_average(x: np.ndarray, width: int) -> np.ndarray:
    """Centred mean over `width` samples; near the ends, over the samples there are (no fall to zero)."""
    if width <= 1 or len(x) < width:
        return x
    kernel = np.ones(width)
    return np.convolve(x, kernel, mode="same") / np.convolve(np.ones(len(x)), kernel, mode="same")


def _standardised(x: np.ndarray) -> np.ndarray:
    std = float(x.std())
    return (x - x.mean()) / std if std > 0 else x - x.mean()


def plot(figures: dict[str, Any], outdir: Path) -> list[Path]:
    """The two pools' loads per policy, smoothed over a minute and standardised (each series minus its mean,
    over its standard deviation), so their swings share one scale: anti-phase (one pool full while the other
    drains) shows as mirror images, in phase as curves that move together. The raw scales are in the text."""
    plt = plotting.pyplot()

    fig_data = figures["default"]
    series = {p.name: fig_data["series"][p.name] for p in OSCILLATION_POLICIES}
    fig, axes = plt.subplots(len(series), 1, figsize=(10, 2.4 * len(series)), sharex=True, squeeze=False)
    t0 = fig_data["series"]["window_s"][0]
    width = max(1, round(SMOOTH_S / fig_data["dt_s"]))
    for ax, (policy, s) in zip(axes[:, 0], series.items(), strict=True):
        t = t0 + np.arange(len(s["decode"])) * fig_data["dt_s"]
        prefill = _standardised(_moving_average(np.asarray(s["prefill"], dtype=float), width))
        decode = _standardised(_moving_average(np.asarray(s["decode"], dtype=float), width))
        ax.fill_between(
            t,
            prefill,
            decode,
            where=np.sign(prefill) != np.sign(decode),
            color="tab:red",
            alpha=0.12,
            lw=0,
            label="pools on opposite sides of their means",
        )
        ax.plot(t, prefill, color="tab:blue", lw=1.6, label="prefill pool: requests running + queued")
        ax.plot(t, decode, color="tab:orange", lw=1.6, label="decode pool: requests decoding")
        ax.axhline(0.0, color="grey", lw=0.6)
        o = fig_data["policies"][policy]["oscillation"]
        e = fig_data["policies"][policy]
        ax.set_title(
            f"{policy}: correlation of the two pools {o['correlation']['mean']:+.2f} (-1 = anti-phase); wasted "
            f"{e['wasted_prefills']['mean']:.0f}, completed {e['completed']['mean']:.0f} (means over seeds)",
            fontsize=9,
        )
        ax.set_ylabel(f"load, standardised\n({SMOOTH_S:g} s mean)", fontsize=8)
        ax.set_ylim(-3.5, 4.5)
        ax.legend(loc="upper left", fontsize=7, ncol=3)
    axes[-1, 0].set_xlabel("simulated time (s)")
    cfg = figures["configs"]["default"]
    fig.suptitle(
        f"Pool loads per admission policy: {cfg['prefill_instances']} prefill instances, prefills "
        f"{cfg['prefill_mean_s']:g} s mean, TTFT SLO {cfg['ttft_slo_s']:g} s, decode full at "
        f"{fig_data['decode_max_batch']} requests; seed {figures['seeds'][0]}\n"
        "the lecture's point: under early rejection the two pools swing in anti-phase (shaded)",
        fontsize=9,
    )
    path = plotting.save(fig, outdir, "overload_default_load.png", dpi=110)
    return [path]


def plot_lag(figures: dict[str, Any], outdir: Path) -> list[Path]:
    plt = plotting.pyplot()

    rows = figures["rows"]
    lag = np.array([r["lag_s"]["mean"] for r in rows])
    fig, axes = plt.subplots(1, 2, figsize=(11, 4))
    for ax, key, label in (
        (axes[0], "wasted_vs_baseline_pct", "wasted prefills vs baseline (%)"),
        (axes[1], "completed_vs_baseline_pct", "completed requests vs baseline (%)"),
    ):
        for policy, marker in (("early", "o"), ("predictive", "s")):
            mean = np.array([r[policy][key]["mean"] for r in rows])
            std = np.array([r[policy][key]["std"] for r in rows])
            ax.errorbar(lag, mean, yerr=std, marker=marker, capsize=3, label=f"{policy} rejection")
        ax.axhline(0.0, color="grey", lw=0.6)
        ax.set_xlabel("measured admission-to-decode lag (s)")
        ax.set_ylabel(label)
        ax.legend(fontsize=8)
        ax.grid(alpha=0.3)
    fig.suptitle(
        f"Early vs prediction-based rejection as the admission-to-decode lag grows (mean decode "
        f"{figures['decode_mean_s']:.1f} s "
        f"at a full decode instance; {len(figures['seeds'])} seeds, ± std)",
        fontsize=10,
    )
    path = plotting.save(fig, outdir, "overload_lag_sweep.png", dpi=110)
    return [path]


def render_arithmetic(a: dict[str, Any], slo_s: float) -> list[str]:
    """The decode pool's roofline arithmetic against the trace's demand (trace.decode_arithmetic)."""
    return [
        f"Decode pool arithmetic (every request at the trace's mean context {a['mean_context_tokens']:,.0f} tokens and "
        f"mean output {a['mean_output_tokens']:.0f} tokens; TBT SLO {1e3 * slo_s:g} ms):",
        f"  one request alone: {1e3 * a['single_request_step_s']:.1f} ms per step; a full instance: "
        f"{a['full_batch_per_instance']} requests (one more breaks the {a['binding_at_full_batch']}) at "
        f"{1e3 * a['step_at_full_batch_s']:.1f} ms per step",
        f"  capacity {a['instances']} x {a['full_batch_per_instance']} / ({a['mean_output_tokens']:.0f} x "
        f"{1e3 * a['step_at_full_batch_s']:.1f} ms) = {a['capacity_per_s']:.1f} req/s against "
        f"{a['arrival_rate_per_s']:.2f} req/s arriving ({a['capacity_over_arrivals']:.1f}x)",
        f"  Little's law: b = {a['arrival_rate_per_s']:.2f} req/s x {a['mean_output_tokens']:.0f} x step(b) / "
        f"{a['instances']} gives {a['littles_law_batch_per_instance']:.1f} requests per instance at "
        f"{1e3 * a['step_at_littles_law_batch_s']:.1f} ms per step: "
        f"{100 * a['littles_law_utilisation']:.1f} % of a full instance",
    ]


def render_trace(out: dict[str, Any]) -> str:
    cached = [c.get("cached_token_fraction", 0.0) for c in out["policies"].values()]
    lines = [
        f"Trace replay: {out['requests']} requests at {out['speedup']:g}x ({out['arrival_rate_per_s']:.2f} req/s), "
        f"{out['prefill_instances']} prefill + {out['decode_instances']} decode instances; mean prefill without "
        f"reuse {out['mean_prefill_s']:.2f} s (prefill capacity {out['prefill_capacity_per_s']:.2f} req/s); prefix "
        f"reuse {'on' if out['prefix_reuse'] else 'off'}"
        + (
            f" ({100 * max(cached):.1f} % of the admitted prompt tokens fetched)"
            if cached and out["prefix_reuse"]
            else ""
        ),
        *render_arithmetic(out["decode_arithmetic"], out["cost_model"]["tbt_slo_s"]),
        f"{'policy':<18} {'completed':>10} {'rejected at arrival':>20} {'of which decode':>16} {'wasted prefills':>16} "
        f"{'rejected total':>15} {'max decoding':>13}",
    ]
    for name, c in out["policies"].items():
        lines.append(
            f"{name:<18} {c['completed']:>10} {c['rejected_at_arrival']:>20} {c['rejected_for_decode']:>16} "
            f"{c['wasted_prefills']:>16} {c['rejected_total']:>15} {c['decode_load_max']:>13}"
        )
    lines.append(
        "Paper (Mooncake §8.2, ~23,000 requests at 2x), rejected: "
        + ", ".join(f"{k} {v:,}" for k, v in PAPER_REJECTED.items())
    )
    return "\n".join(lines)


def render_sweep(out: dict[str, Any]) -> str:
    a = out["decode_arithmetic"]
    paper = out["paper_rejected"]
    total_paper = 23_000
    lines = [
        f"Sensitivity sweep: {out['requests']} requests at {out['speedup']:g}x ({out['arrival_rate_per_s']:.2f} req/s), "
        f"{out['prefill_instances']} prefill + {out['decode_instances']} decode instances, prefix reuse "
        f"{'on' if out['prefix_reuse'] else 'off'}; prefill capacity without reuse {out['prefill_capacity_per_s']:.2f} req/s",
        *render_arithmetic(a, out["cost_model"]["tbt_slo_s"]),
        "Rejected requests (rejected at arrival + wasted prefills) per policy; cap: the engine's batch cap per decode "
        "instance (none: HBM and the TBT SLO only); full: requests of the mean context one instance runs; "
        "util.: Little's-law batch / full",
        f"{'TBT SLO ms':>10} {'cap':>5} {'full':>5} {'binds':>10} {'cap. req/s':>10} {'util.':>6} "
        f"{'baseline':>14} {'early':>14} {'predictive':>14}  ordering",
    ]
    n = out["requests"]
    for cell in out["cells"]:
        p = cell["policies"]
        cols = []
        for name in ("baseline", "early", "predictive"):
            c = p.get(name)
            cols.append(f"{c['rejected_total']:>6} ({c['wasted_prefills']:>4}w)" if c else f"{'':>14}")
        cap = "none" if cell["cap_per_instance"] is None else str(cell["cap_per_instance"])
        lines.append(
            f"{1e3 * cell['tbt_slo_s']:>10g} {cap:>5} {cell['full_batch_per_instance']:>5} {cell['binding']:>10} "
            f"{cell['decode_capacity_per_s']:>10.1f} {100 * cell['littles_law_utilisation']:>5.0f}% "
            + " ".join(f"{x:>14}" for x in cols)
            + f"  {cell['ordering']}"
        )
    lines.append("(w: of which wasted prefills, rejected by the pre-selected decode instance at entry)")
    lines.append(
        "Paper (Mooncake §8.2: 8 P + 8 D A800 instances, ~23,000 real requests at 2x), rejected: "
        + " / ".join(f"{k} {v:,} ({100 * v / total_paper:.1f} %)" for k, v in paper.items())
        + f"; ordering {out['paper_ordering']}. This trace: {n:,} requests, so 1 % is {n / 100:.0f} requests."
    )
    return "\n".join(lines)


def plot_sweep(out: dict[str, Any], outdir: Path, name: str = "overload_trace_sweep.png") -> list[Path]:
    """Rejections and wasted prefills against how full the decode pool runs (Little's-law batch over the
    full batch of one instance), every TBT SLO x batch cap of the sweep in one panel: the policies part
    only where the decode pool binds, which is where the paper's figures (grey) sit."""
    plt = plotting.pyplot()

    n = out["requests"]
    fig, axes = plt.subplots(1, 2, figsize=(11, 4.2))
    for policy, marker, color in (
        ("baseline", "o", "tab:gray"),
        ("early", "s", "tab:red"),
        ("predictive", "^", "tab:green"),
    ):
        util = [100.0 * c["littles_law_utilisation"] for c in out["cells"] if policy in c["policies"]]
        cells = [c for c in out["cells"] if policy in c["policies"]]
        rejected = [100.0 * c["policies"][policy]["rejected_total"] / n for c in cells]
        wasted = [100.0 * c["policies"][policy]["wasted_prefills"] / n for c in cells]
        axes[0].scatter(util, rejected, marker=marker, color=color, label=policy, alpha=0.7)
        axes[1].scatter(util, wasted, marker=marker, color=color, label=policy, alpha=0.7)
    shares = {policy: 100.0 * out["paper_rejected"][policy] / 23_000 for policy in ("baseline", "early", "predictive")}
    for share, style in zip(shares.values(), (":", "--", "-."), strict=True):
        axes[0].axhline(share, color="grey", lw=0.9, ls=style)
    axes[0].annotate(
        "grey lines, the paper (real trace, ~23,000 requests):\n"
        + ", ".join(f"{p} {v:.1f}%" for p, v in shares.items()),
        (0.02, max(shares.values()) + 12.0),
        xycoords=("axes fraction", "data"),
        fontsize=7,
        color="dimgray",
        va="bottom",
    )
    for ax, label in ((axes[0], "rejected requests (% of the trace)"), (axes[1], "wasted prefills (% of the trace)")):
        ax.set_xscale("log")
        ax.axvline(100.0, color="black", lw=0.6)
        ax.set_xlabel("decode pool load: Little's-law batch / full batch (%, log scale)")
        ax.set_ylabel(label)
        ax.grid(alpha=0.3)
        ax.legend(fontsize=8, loc="upper left", bbox_to_anchor=(0.0, 0.85))
    fig.suptitle(
        f"{n:,} requests at {out['speedup']:g}x on {out['prefill_instances']} P + {out['decode_instances']} D, "
        f"every TBT SLO ({', '.join(f'{1e3 * s:g}' for s in out['tbt_slos_s'])} ms) and batch cap of the sweep: "
        "the policies differ only once the decode pool is near full",
        fontsize=9,
    )
    return [plotting.save(fig, outdir, name, dpi=110)]
