"""Experiment 01: what each kind of hardware is good at (lecture §1.2). The parts of `python -m hetero.lecture 01`.

Three parts, each a `hetero.parts.Part` in `PARTS`; `run(impl)` returns JSON-able figures under these keys:

"cost" (needs ex01): what $1000 buys on the A100 80 GB ($15,000) and on the CPU server ($8,000).
    {"gpu": name, "cpu": name,
     "devices": {name: {"price_usd", "usd_per_gb", "usd_per_gb_per_s",
                        "per_1000_usd": {"tflops", "bandwidth_gb_per_s", "capacity_gb"}}},
     "ratios": {"tflops": gpu/cpu, "bandwidth_gb_per_s": gpu/cpu, "capacity_gb": cpu/gpu}}   # per $1000
"roofline" (needs ex02 for the KV bytes a decode step reads): LLaMA-3.1-70B on 8 x H800 vs 8 x H20 with the
    fixed-efficiency roofline of `hetero.roofline` (efficiencies and decode context from catalog.ASSUMPTIONS).
    {"model", "num_gpus", "gpus": [names], "prefill_tokens", "decode_context_tokens", "kv_bytes_per_token",
     "compute_efficiency", "memory_efficiency",
     "cases": {"prefill": {gpu: phase}, "decode_batch1": {gpu: phase}, "decode_batch64": {gpu: phase}},
     "prefill_ratio": time on the slower GPU / time on the faster}
    where phase = {"flops", "bytes", "compute_ms", "memory_ms", "time_ms", "bound": "compute"|"memory"}.
"kv_capacity" (needs ex02): how many tokens of LLaMA-3-70B KV fit in the 8 x H800 server's HBM (after the
    weights, with the catalog's headroom), its 2 TB of DRAM and its SSDs; and how many Kimi requests.
    The weights subtracted are the lecture's own §7 Q2 figure, 141 GB ("8 x 80 - 141 = 499 GB"), not the
    catalog's 141.1 GB (70.55 B parameters x 2 B), so the driver shows the public test's 1,370,544 tokens.
    {"model", "server", "kv_bytes_per_token", "mean_tokens_per_request",
     "tiers": {"hbm"|"dram"|"ssd": {"raw_bytes", "kv_bytes", "tokens", "requests"}},
     "weight_bytes", "headroom_frac"}
DRAM and SSD are counted whole (no weights, no headroom), as the lecture's "about 6.1 M tokens" does.

Every exercise function comes from `--impl` through `hetero.impl.exercise_function`; a stub raises
`MissingExercise`, which the lecture driver reports. Unknown hardware or model names raise the catalog's
`UnknownHardware` / `UnknownModel`, listing the known names.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from hetero import catalog, plotting, roofline
from hetero.impl import exercise_function
from hetero.parts import Part

LECTURE_GPU, LECTURE_CPU = "A100-80GB", "CPU-server"
ROOFLINE_MODEL, ROOFLINE_GPUS, ROOFLINE_NUM_GPUS = "LLaMA-3.1-70B", ("H800", "H20"), 8
PREFILL_TOKENS = 8192  # "prefill of 8K tokens"
LECTURE_WEIGHT_BYTES = {"LLaMA-3-70B": 141e9}  # §7 Q2: "8 x 80 - 141 = 499 GB"; other models: the catalog's
DECODE_BATCHES = (1, 64)
KV_MODEL, KV_SERVER = "LLaMA-3-70B", "8xH800"


# ------------------------------------------------------------------------------------------ figures


def cost_figures(impl: str, gpu: str = LECTURE_GPU, cpu: str = LECTURE_CPU) -> dict[str, Any]:
    """Per-$1000 purchases, $/GB and $/(GB/s) of two priced catalog devices (ex01)."""
    usd_per_gb = exercise_function("ex01", "usd_per_gb", impl)
    usd_per_gb_per_s = exercise_function("ex01", "usd_per_gb_per_s", impl)
    per_thousand = exercise_function("ex01", "per_thousand_usd", impl)
    devices: dict[str, Any] = {}
    for name in (gpu, cpu):
        acc = catalog.gpu(name)
        if acc.price_usd is None:
            raise ValueError(
                f"accelerator {name!r} has no price in the catalog; priced: "
                + ", ".join(sorted(n for n, a in catalog.GPUS.items() if a.price_usd is not None))
            )
        devices[name] = {
            "price_usd": acc.price_usd,
            "usd_per_gb": usd_per_gb(acc.price_usd, acc.mem_capacity_gb),
            "usd_per_gb_per_s": usd_per_gb_per_s(acc.price_usd, acc.mem_bandwidth_gb_per_s),
            "per_1000_usd": per_thousand(
                acc.price_usd, acc.peak_tflops, acc.mem_bandwidth_gb_per_s, acc.mem_capacity_gb
            ),
        }
    g, c = devices[gpu]["per_1000_usd"], devices[cpu]["per_1000_usd"]
    ratios = {
        "tflops": g["tflops"] / c["tflops"],
        "bandwidth_gb_per_s": g["bandwidth_gb_per_s"] / c["bandwidth_gb_per_s"],
        "capacity_gb": c["capacity_gb"] / g["capacity_gb"],
    }
    return {"gpu": gpu, "cpu": cpu, "devices": devices, "ratios": ratios}


def _phase(p: roofline.PhaseTime) -> dict[str, Any]:
    return {
        "flops": p.flops,
        "bytes": p.bytes_moved,
        "compute_ms": p.compute_s * 1e3,
        "memory_ms": p.memory_s * 1e3,
        "time_ms": p.time_s * 1e3,
        "bound": p.bound,
    }


def roofline_figures(
    impl: str, model: str = ROOFLINE_MODEL, gpus: tuple[str, ...] = ROOFLINE_GPUS, num_gpus: int = ROOFLINE_NUM_GPUS
) -> dict[str, Any]:
    """Prefill and decode-step times of `model` on `num_gpus` x each of `gpus` (KV bytes from ex02)."""
    m = catalog.dense_model(model, "these figures")
    for name in gpus:
        catalog.gpu(name)  # unknown names fail here, before any exercise runs
    kv_per_token = exercise_function("ex02", "kv_bytes_per_token", impl)(
        m.num_layers, m.num_kv_heads, m.head_dim, m.kv_bytes_per_elem
    )
    context = int(catalog.ASSUMPTIONS["decode_context_tokens"])
    eff = roofline.Efficiency()
    cases: dict[str, dict[str, Any]] = {"prefill": {}}
    for name in gpus:
        cases["prefill"][name] = _phase(roofline.prefill(model, name, num_gpus, PREFILL_TOKENS, eff))
    for batch in DECODE_BATCHES:
        cases[f"decode_batch{batch}"] = {
            name: _phase(roofline.decode_step(model, name, num_gpus, batch, context, kv_per_token, eff))
            for name in gpus
        }
    prefill_ms = [cases["prefill"][n]["time_ms"] for n in gpus]
    return {
        "model": model,
        "num_gpus": num_gpus,
        "gpus": list(gpus),
        "prefill_tokens": PREFILL_TOKENS,
        "decode_context_tokens": context,
        "kv_bytes_per_token": kv_per_token,
        "compute_efficiency": eff.compute,
        "memory_efficiency": eff.memory,
        "cases": cases,
        "prefill_ratio": max(prefill_ms) / min(prefill_ms),
    }


def kv_capacity_figures(impl: str, model: str = KV_MODEL, server: str = KV_SERVER) -> dict[str, Any]:
    """Tokens and requests of KV that fit in a server's HBM, DRAM and SSD tiers (ex02)."""
    m = catalog.dense_model(model, "these figures")
    node = catalog.server(server)
    acc, drive = catalog.gpu(node.gpu), catalog.ssd(node.ssd)
    kv_bytes_per_token = exercise_function("ex02", "kv_bytes_per_token", impl)
    hbm_for_kv_bytes = exercise_function("ex02", "hbm_for_kv_bytes", impl)
    kv_capacity_tokens = exercise_function("ex02", "kv_capacity_tokens", impl)
    requests_that_fit = exercise_function("ex02", "requests_that_fit", impl)
    per_token = kv_bytes_per_token(m.num_layers, m.num_kv_heads, m.head_dim, m.kv_bytes_per_elem)
    headroom = catalog.ASSUMPTIONS["hbm_headroom_frac"]
    weight_bytes = LECTURE_WEIGHT_BYTES.get(model, m.weight_bytes)
    mean_tokens = catalog.ASSUMPTIONS["kimi_mean_input_tokens"]
    kv_bytes = {  # bytes available for KV per tier
        "hbm": hbm_for_kv_bytes(node.num_gpus, acc.mem_capacity_gb, weight_bytes, headroom),
        "dram": node.dram_gb * 1e9,
        "ssd": drive.capacity_tb * 1e12 * drive.drives_per_node,
    }
    raw = {"hbm": node.num_gpus * acc.mem_capacity_gb * 1e9, "dram": kv_bytes["dram"], "ssd": kv_bytes["ssd"]}
    tiers = {}
    for tier, free in kv_bytes.items():
        tokens = kv_capacity_tokens(free, per_token)
        tiers[tier] = {
            "raw_bytes": raw[tier],
            "kv_bytes": free,
            "tokens": tokens,
            "requests": requests_that_fit(tokens, mean_tokens),
        }
    return {
        "model": model,
        "server": server,
        "kv_bytes_per_token": per_token,
        "mean_tokens_per_request": mean_tokens,
        "weight_bytes": weight_bytes,
        "headroom_frac": headroom,
        "tiers": tiers,
    }


# ------------------------------------------------------------------------------------------ text


def render_cost(fig: dict[str, Any]) -> str:
    gpu, cpu = fig["gpu"], fig["cpu"]
    d = fig["devices"]
    lines = [f"{'per $1000':<22}{gpu:>14}{cpu:>14}{'ratio':>10}"]
    for key, label, unit in (
        ("tflops", "compute", "TFLOPS"),
        ("bandwidth_gb_per_s", "bandwidth", "GB/s"),
        ("capacity_gb", "capacity", "GB"),
    ):
        lines.append(
            f"{label + ' (' + unit + ')':<22}{d[gpu]['per_1000_usd'][key]:>14.1f}"
            f"{d[cpu]['per_1000_usd'][key]:>14.1f}{fig['ratios'][key]:>9.1f}x"
        )
    lines.append(f"{'$ per GB':<22}{d[gpu]['usd_per_gb']:>14.1f}{d[cpu]['usd_per_gb']:>14.1f}")
    lines.append(f"{'$ per GB/s':<22}{d[gpu]['usd_per_gb_per_s']:>14.1f}{d[cpu]['usd_per_gb_per_s']:>14.1f}")
    lines.append(
        f"(prices: {gpu} ${d[gpu]['price_usd']:,.0f}, {cpu} ${d[cpu]['price_usd']:,.0f}; "
        "illustrative, as in the slides; ratio = GPU/CPU, capacity CPU/GPU)"
    )
    return "\n".join(lines)


def render_roofline(fig: dict[str, Any]) -> str:
    lines = [
        f"{fig['model']} on {fig['num_gpus']} GPUs; compute efficiency {fig['compute_efficiency']:.2f}, "
        f"memory efficiency {fig['memory_efficiency']:.2f}; decode context {fig['decode_context_tokens']} "
        f"tokens/sequence, KV {fig['kv_bytes_per_token']:,.0f} B/token",
        f"{'case':<18}{'GPU':<7}{'compute ms':>12}{'memory ms':>12}{'time ms':>11}  bound",
    ]
    labels = {
        "prefill": f"prefill {fig['prefill_tokens']} tok",
        "decode_batch1": "decode, batch 1",
        "decode_batch64": "decode, batch 64",
    }
    for case, per_gpu in fig["cases"].items():
        for name, p in per_gpu.items():
            lines.append(
                f"{labels.get(case, case):<18}{name:<7}{p['compute_ms']:>12.2f}{p['memory_ms']:>12.2f}"
                f"{p['time_ms']:>11.2f}  {p['bound']}"
            )
    lines.append(f"prefill: the slower GPU takes {fig['prefill_ratio']:.1f}x as long")
    return "\n".join(lines)


def render_kv_capacity(fig: dict[str, Any]) -> str:
    lines = [
        f"{fig['model']}: {fig['kv_bytes_per_token']:,.0f} B of KV per token "
        f"({fig['kv_bytes_per_token'] / 1024:.0f} KiB); server {fig['server']}; "
        f"HBM after {fig['weight_bytes'] / 1e9:.1f} GB of weights (§7 Q2), {fig['headroom_frac']:.0%} headroom",
        f"{'tier':<6}{'raw GB':>12}{'KV GB':>12}{'tokens':>16}{'requests':>14}",
    ]
    for tier, t in fig["tiers"].items():
        lines.append(
            f"{tier:<6}{t['raw_bytes'] / 1e9:>12,.0f}{t['kv_bytes'] / 1e9:>12,.1f}{t['tokens']:>16,}"
            f"{t['requests']:>14,}"
        )
    lines.append(f"(requests of {fig['mean_tokens_per_request']:,.0f} tokens, Kimi's mean input)")
    return "\n".join(lines)


# ------------------------------------------------------------------------------------------ plots


def plot_cost(fig: dict[str, Any], outdir: Path) -> list[Path]:
    plt = plotting.pyplot()
    keys = (("tflops", "TFLOPS"), ("bandwidth_gb_per_s", "GB/s"), ("capacity_gb", "GB"))
    figure, axes = plt.subplots(1, 3, figsize=(10, 3.4))
    for ax, (key, unit) in zip(axes, keys, strict=False):
        names = [fig["gpu"], fig["cpu"]]
        ax.bar(names, [fig["devices"][n]["per_1000_usd"][key] for n in names], color=["tab:green", "tab:blue"])
        ax.set_ylabel(f"{unit} per $1000")
        ax.set_title(key.split("_")[0])
    figure.suptitle("What $1000 buys (lecture §1.2; illustrative prices)")
    path = plotting.save(figure, outdir, "exp01_cost.png")
    return [path]


def plot_roofline(fig: dict[str, Any], outdir: Path) -> list[Path]:
    plt = plotting.pyplot()
    figure, axes = plt.subplots(1, len(fig["cases"]), figsize=(4 * len(fig["cases"]), 3.4))
    for ax, (case, per_gpu) in zip(axes, fig["cases"].items(), strict=False):
        names = list(per_gpu)
        xs = range(len(names))
        ax.bar([x - 0.2 for x in xs], [per_gpu[n]["compute_ms"] for n in names], 0.4, label="compute")
        ax.bar([x + 0.2 for x in xs], [per_gpu[n]["memory_ms"] for n in names], 0.4, label="memory")
        ax.set_xticks(list(xs), names)
        ax.set_ylabel("time (ms)")
        ax.set_title(case.replace("_batch", ", batch "))
        ax.legend(fontsize=8)
    figure.suptitle(f"{fig['model']} on {fig['num_gpus']} GPUs: the larger bar bounds the phase")
    path = plotting.save(figure, outdir, "exp01_roofline.png")
    return [path]


def plot_kv_capacity(fig: dict[str, Any], outdir: Path) -> list[Path]:
    """Tokens and requests of KV per storage tier, on a log axis from one token, each bar labelled."""
    plt = plotting.pyplot()
    figure, ax = plt.subplots(figsize=(7, 4.2))
    tiers = list(fig["tiers"])
    tokens = [fig["tiers"][t]["tokens"] for t in tiers]
    bars = ax.bar([t.upper() for t in tiers], tokens, color=["tab:green", "tab:blue", "tab:purple"][: len(tiers)])
    labels = [
        f"{fig['tiers'][t]['tokens'] / 1e6:,.2f} M tokens\n{fig['tiers'][t]['requests']:,} requests" for t in tiers
    ]
    ax.bar_label(bars, labels, fontsize=8)
    ax.set_yscale("log")
    ax.set_ylim(1.0, 30 * max(tokens))  # from one token: each bar's height is its true ratio to the others
    ax.set_ylabel("tokens of KV that fit (log scale)")
    ax.set_xlabel(
        f"storage tier of one {fig['server']} server; requests of {fig['mean_tokens_per_request']:,.0f} tokens"
    )
    ax.set_title(
        f"{fig['model']}: {fig['kv_bytes_per_token'] / 1024:.0f} KiB of KV per token; HBM after the weights "
        f"and {fig['headroom_frac']:.0%} headroom",
        fontsize=9,
    )
    path = plotting.save(figure, outdir, "exp01_kv_capacity.png")
    return [path]


PARTS: list[Part] = [
    Part(
        "cost",
        "What $1000 buys: GPU vs CPU server",
        "§1.2, §7 Q1",
        ("ex01",),
        lambda impl: cost_figures(impl),
        render_cost,
        plot_cost,
    ),
    Part(
        "roofline",
        "H800 vs H20 on LLaMA-3.1-70B: prefill and decode (fixed-efficiency roofline)",
        "§1.2",
        ("ex02",),
        lambda impl: roofline_figures(impl),
        render_roofline,
        plot_roofline,
    ),
    Part(
        "kv_capacity",
        "How much KV fits in HBM, DRAM and SSD",
        "§1.2, §7 Q2",
        ("ex02",),
        lambda impl: kv_capacity_figures(impl),
        render_kv_capacity,
        plot_kv_capacity,
    ),
]
