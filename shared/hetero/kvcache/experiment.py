"""The lecture's experiment 02 part 1 (`PARTS`, keys "cache_pool" and "hot_blocks"): run, render and
plot.

"cache_pool" (§2.2-§2.3): 8 prefill instances serve 20,000 requests over 400 long documents with Zipf
popularity under the four dispatches of `hetero.kvcache.cluster` (the TTFT-aware dispatch and the
cache measurements are the student's ex03 functions); then the capacity one shared cache needs to
match local caches, and the hit rate vs capacity on the shipped sample trace. "hot_blocks" (§2.2)
serves the same workload from a pool with sender-side bandwidth and replication
(`hetero.kvcache.hotblocks`).
"""

from __future__ import annotations

import textwrap
from dataclasses import asdict
from pathlib import Path
from typing import Any

import numpy as np

from hetero import plotting
from hetero.impl import exercise_function
from hetero.kvcache.caches import POLICIES
from hetero.kvcache.cluster import DISPATCHES, hit_equivalent_capacity, simulate_cluster
from hetero.kvcache.hotblocks import HOT_BLOCK_CONFIGS, simulate_hot_blocks
from hetero.kvcache.replay import capacity_sweep, render_sweep
from hetero.kvcache.workload import WorkloadConfig, generate_workload
from hetero.parts import Part
from hetero.traces import SAMPLE_TRACE, read_trace

WORKLOAD_SEED = 2024_02_01
SWEEP_CAPACITIES = (100, 200, 500, 1000, 2000, 5000)  # blocks, for the 2,000-request sample trace

LABELS = {
    "local_round_robin": "local + round-robin",
    "local_sticky": "local + document-sticky",
    "global_round_robin": "global pool + round-robin",
    "global_ttft": "global pool + TTFT-aware",
}

SHORT_LABELS = {
    "local_round_robin": "local\nround-robin",
    "local_sticky": "local\nsticky",
    "global_round_robin": "global\nround-robin",
    "global_ttft": "global\nTTFT-aware",
}


def run(impl: str) -> dict[str, Any]:
    """Experiment 02 part 1 with the ex03 functions of `impl` (raises MissingExercise for stubs)."""
    effective = exercise_function("ex03", "effective_capacity_blocks", impl)
    duplication = exercise_function("ex03", "duplication_factor", impl)
    dispatch = exercise_function("ex03", "ttft_dispatch", impl)
    config = WorkloadConfig()
    workload = generate_workload(np.random.default_rng(WORKLOAD_SEED), config)
    policies = {
        name: simulate_cluster(
            workload, name, ttft_dispatch=dispatch, effective_capacity=effective, duplication=duplication
        )
        for name in DISPATCHES
    }
    local, pooled = policies["local_round_robin"], policies["global_round_robin"]
    per_instance = config.instance_capacity_blocks
    equivalent = hit_equivalent_capacity(
        workload, local["block_hit_rate"], (per_instance // 2, per_instance, 2 * per_instance)
    )
    return {
        "config": asdict(config),
        "policies": policies,
        "local_over_global_capacity": local["effective_capacity_blocks"] / pooled["effective_capacity_blocks"],
        "local_hit_equivalent": {
            **equivalent,
            "pool_capacity_blocks": per_instance * config.num_instances,
            "fraction_of_pool": equivalent["equivalent_capacity_blocks"] / (per_instance * config.num_instances),
        },
        "sweep": {"trace": SAMPLE_TRACE.name, **capacity_sweep(read_trace(SAMPLE_TRACE), SWEEP_CAPACITIES)},
    }


def render(figures: dict[str, Any]) -> str:
    c = figures["config"]
    lines = [
        f"{c['num_instances']} prefill instances x {c['instance_capacity_blocks']} blocks (LRU); "
        f"{c['num_requests']:,} requests over {c['num_documents']} documents (Zipf s={c['zipf_s']}); "
        f"work and TTFT in prefill-block-times",
        f"{'policy':26s} {'hit rate':>8s} {'compute':>8s} {'work':>8s} {'requests':>8s} "
        f"{'distinct':>8s} {'copies':>7s} {'copies':>7s} {'remote':>7s} {'TTFT':>6s} {'TTFT':>6s}",
        f"{'':26s} {'(blocks)':>8s} {'saved':>8s} {'max/mean':>8s} {'max/mean':>8s} "
        f"{'blocks':>8s} {'/block':>7s} {'/hot':>7s} {'hits':>7s} {'mean':>6s} {'p99':>6s}",
    ]
    for name, p in figures["policies"].items():
        lines.append(
            f"{LABELS[name]:26s} {p['block_hit_rate']:8.1%} {p['compute_saved']:8.1%} "
            f"{p['work_imbalance']:8.2f} {p['request_imbalance']:8.2f} "
            f"{p['effective_capacity_blocks']:8,.0f} {p['duplication_factor']:7.2f} "
            f"{p.get('hot_duplication_factor', float('nan')):7.2f} "
            f"{p['transferred_fraction']:7.1%} {p['ttft_mean_blocks']:6.1f} {p['ttft_p99_blocks']:6.1f}"
        )
    eq = figures["local_hit_equivalent"]
    rates = ", ".join(
        f"{cap:,} blocks {rate:.1%}" for cap, rate in zip(eq["capacities_blocks"], eq["hit_rates"], strict=True)
    )
    hot_copies = figures["policies"]["local_round_robin"].get("hot_duplication_factor", float("nan"))
    lines += [
        f"effective capacity of local + round-robin: one shared cache reaches its hit rate with "
        f"{eq['equivalent_capacity_blocks']:,.0f} blocks = {eq['fraction_of_pool']:.3f} of the "
        f"{eq['pool_capacity_blocks']:,}-block pool (1/{1 / eq['fraction_of_pool']:.1f}; lecture §7 Q3: about 1/8)",
        f"  (one shared cache: {rates}); hot-document blocks are held {hot_copies:.1f} times;",
        f"  distinct blocks held: {figures['local_over_global_capacity']:.3f} of the pool's (cold blocks, used once, "
        "are held once and fill the rest of each cache)",
        "",
        f"hit rate vs capacity on the shipped sample trace ({figures['sweep']['trace']}):",
        render_sweep(figures["sweep"]),
    ]
    return "\n".join(lines)


def plot(figures: dict[str, Any], outdir: Path) -> list[Path]:
    """Hit rate vs capacity (LRU, LFU, infinite) and the policy comparison, as PNGs in `outdir`."""
    plt = plotting.pyplot()
    sweep = figures["sweep"]
    fig, ax = plt.subplots(figsize=(6, 4))
    for policy, marker in zip(POLICIES, "os", strict=True):
        ax.plot(
            sweep["capacities_blocks"],
            [100 * x for x in sweep[policy]["block_hit_rate"]],
            marker=marker,
            label=policy.upper(),
        )
    ax.axhline(100 * sweep["infinite"]["block_hit_rate"], color="gray", linestyle="--", label="infinite cache")
    ax.set_xscale("log")
    ax.set_xlabel("cache capacity (512-token blocks)")
    ax.set_ylabel("block hit rate (%)")
    ax.set_title(f"Prefix-cache hit rate vs capacity ({sweep['trace']})")
    ax.legend()
    sweep_png = plotting.save(fig, outdir, "cache_pool_hit_rate_vs_capacity.png")

    names = list(figures["policies"])
    rows = figures["policies"]
    fig, axes = plt.subplots(1, 4, figsize=(14, 3.9))
    colors = ["tab:gray", "tab:olive", "tab:blue", "tab:green"]
    x = np.arange(len(names))
    panels = (
        ("block hit rate (%)\nhigher is better", [100 * rows[n]["block_hit_rate"] for n in names], "{:.0f}"),
        (
            "distinct blocks held\n(effective capacity; higher is better)",
            [rows[n]["effective_capacity_blocks"] for n in names],
            "{:,.0f}",
        ),
        (
            "prefill work, busiest / mean instance\n(imbalance; 1 is even)",
            [rows[n]["work_imbalance"] for n in names],
            "{:.2f}",
        ),
    )
    for ax, (label, values, fmt) in zip(axes[:3], panels, strict=True):
        bars = ax.bar(x, values, color=colors)
        ax.bar_label(bars, [fmt.format(v) for v in values], fontsize=8)
        ax.set_ylabel(label, fontsize=8)
        ax.margins(y=0.15)
    ttft = axes[3]  # what the TTFT-aware Conductor optimises: it wins here, and pays with imbalance
    mean = [rows[n]["ttft_mean_blocks"] for n in names]
    p99 = [rows[n]["ttft_p99_blocks"] for n in names]
    bars = ttft.bar(x - 0.2, mean, 0.4, color=colors, label="mean")
    ttft.bar_label(bars, [f"{v:.1f}" for v in mean], fontsize=7)
    bars = ttft.bar(x + 0.2, p99, 0.4, color=colors, alpha=0.45, hatch="//", label="p99")
    ttft.bar_label(bars, [f"{v:.0f}" for v in p99], fontsize=7)
    ttft.set_ylabel("TTFT (prefill-block-times)\nlower is better; solid mean, hatched p99", fontsize=8)
    ttft.margins(y=0.15)
    for ax in axes:
        ax.set_xticks(x)
        ax.set_xticklabels([SHORT_LABELS[n] for n in names], fontsize=7)
    fig.suptitle(
        "Local caches vs the global pool (8 instances, 20,000 requests): the pool holds each block once (more distinct\n"
        "blocks, a higher hit rate); the TTFT-aware Conductor gives the lowest TTFT, at the price of uneven work",
        fontsize=9,
    )
    policy_png = plotting.save(fig, outdir, "cache_pool_policies.png")
    return [sweep_png, policy_png]


def run_hot_blocks(impl: str) -> dict[str, Any]:
    """Experiment part "hot_blocks" (needs no exercise; `impl` is unused)."""
    config = WorkloadConfig()
    workload = generate_workload(np.random.default_rng(WORKLOAD_SEED), config)
    return {"config": asdict(config), "rows": [simulate_hot_blocks(workload, c) for c in HOT_BLOCK_CONFIGS]}


def render_hot_blocks(figures: dict[str, Any]) -> str:
    c = figures["config"]
    lines = [
        f"{c['num_instances']} instances x {c['instance_capacity_blocks']} blocks (LRU) forming one pool, "
        f"round-robin; a NIC sends {c['transfer_blocks_per_prefill_block']:g} blocks per prefill-block-time; "
        "times in prefill-block-times",
        f"{'configuration':32s} {'hit':>6s} {'local':>6s} {'remote':>7s} {'hot share':>9s} {'busiest':>8s} "
        f"{'fetch wait':>10s} {'fetch wait':>10s} {'TTFT':>7s} {'TTFT':>7s} {'copies':>7s}",
        f"{'':32s} {'rate':>6s} {'hits':>6s} {'blk/req':>7s} {'of remote':>9s} {'sender':>8s} "
        f"{'mean':>10s} {'p99':>10s} {'mean':>7s} {'p99':>7s} {'/block':>7s}",
    ]
    for r in figures["rows"]:
        lines.append(
            f"{r['name']:32s} {r['block_hit_rate']:6.1%} {r['local_hit_rate']:6.1%} "
            f"{r['remote_blocks_per_request']:7.2f} {r['hot_fraction_of_remote']:9.1%} "
            f"{r['busiest_sender_share']:8.1%} {r['transfer_wait_mean']:10.2f} {r['transfer_wait_p99']:10.2f} "
            f"{r['ttft_mean']:7.1f} {r['ttft_p99']:7.1f} {r['copies_per_block']:7.2f}"
        )
    lines.append(
        "(busiest sender: its share of all blocks sent; remote: blocks fetched per request; "
        "fetch wait: arrival to the end of a request's fetches)"
    )
    return "\n".join(lines)


def plot_hot_blocks(figures: dict[str, Any], outdir: Path) -> list[Path]:
    plt = plotting.pyplot()

    rows = figures["rows"]
    # Five configurations per panel: a 2 x 2 grid gives each label about 1 inch; wrapped at 16 characters
    # and slanted, neighbouring labels stay apart (tests/test_kvcache.py measures their boxes).
    names = [textwrap.fill(r["name"].replace(",", ""), 16) for r in rows]
    fig, axes = plt.subplots(2, 2, figsize=(11, 7.5))
    for ax, (keys, label) in zip(
        axes.flat,
        (
            (("transfer_wait_mean", "transfer_wait_p99"), "fetch wait (prefill-block-times)"),
            (("ttft_mean", "ttft_p99"), "TTFT (prefill-block-times)"),
            (("remote_blocks_per_request",), "remote blocks fetched per request"),
            (("busiest_sender_share",), "busiest sender's share of traffic"),
        ),
        strict=True,
    ):
        width = 0.8 / len(keys)
        for j, key in enumerate(keys):
            ax.bar(
                np.arange(len(rows)) + j * width,
                [r[key] for r in rows],
                width=width,
                label=key.replace("ttft_", "TTFT ").replace("transfer_wait_", "fetch wait "),
            )
        ax.set_xticks(np.arange(len(rows)) + 0.4 - width / 2)
        ax.set_xticklabels(names, fontsize=8, rotation=20, ha="right", rotation_mode="anchor")
        ax.set_ylabel(label)
        if len(keys) > 1:
            ax.legend(fontsize=8)
    fig.suptitle("Hot blocks in the global pool: sender-side bandwidth and replication", fontsize=10)
    path = plotting.save(fig, outdir, "cache_pool_hot_blocks.png", dpi=110)
    return [path]


PARTS = [
    Part(
        key="cache_pool",
        title="Global KV cache pool vs local caches",
        lecture="§2.2-§2.3",
        needs=("ex03",),
        run=run,
        render=render,
        plot=plot,
    ),
    Part(
        key="hot_blocks",
        title="Hot blocks in the global pool: sender bandwidth and replication",
        lecture="§2.2",
        needs=(),
        run=run_hot_blocks,
        render=render_hot_blocks,
        plot=plot_hot_blocks,
    ),
]
