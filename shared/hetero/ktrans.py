"""KTransformers accounting: experiment 03 parts 1-3 (lecture §4.2 placement, §4.3 decode, §4.5 AMX),
their tables and their plots (exp03_placement.png, exp03_decode_breakdown.png, exp03_amx.png).

The figures come from the students' exercise functions (ex06 expert bytes, ex07 arithmetic
intensity, ex08 deferral overlap, ex09 AMX), called through `hetero.impl.exercise_function`; a stub
raises `MissingExercise` and the lecture driver reports it. Everything here is arithmetic on the
catalog (`hetero.catalog`) and on the named constants of `HybridAssumptions`: one constant per
assumption, shared by every configuration, none fitted to a single figure.

Parts and the stable keys of their figures (`python -m hetero.lecture 03 --json`):

"placement" (§4.2; ex06, ex07), DeepSeek-V3:
    params_per_expert, routed_params, active_routed_params, other_params (counts);
    tokens_per_param: {"batch": [1, 8, 64, 256], "routed": [...], "shared": [...]} (tokens);
    offload_order (list of part names at batch `order_batch`), order_batch;
    gpu_bits_per_param, cpu_bits_per_param (bits); gpu_gb, cpu_gb (1e9 B);
    gpu_capacity_gb (the decode GPU's memory); slides_cpu_memory_gb (382, the slides' machine).
"decode" (§4.3; ex06, ex08), batch 1, one RTX 4090-class GPU + a two-socket Xeon server:
    cpu_gb_per_token, gpu_gb_per_token (1e9 B); cpu_bandwidth_gb_per_s {"numa_aware", "numa_naive"};
    q6_bound_tokens_per_s (§7 Q6: 0.7 x 300 GB/s / 11.5 GB);
    configs: {name: {launches, numa_aware, deferral, shared_overlap, deferred, gpu_layer_ms (attention +
              router per layer), cpu_expert_ms, layer_speedup (ex08's, attention + router part),
              launch_ms, gpu_ms, shared_ms (the shared experts' part of gpu_ms), cpu_ms, cpu_exposed_ms,
              total_ms, tokens_per_s, launch_share}} (ms per token unless named per layer / per expert;
              tokens/s; fraction); the last MoE layer never defers;
    speedups: {"vs_llamacpp", "vs_fiddler", "deferral"}: {"estimate", "slides"};
    launch_share_slides: {"Fiddler-like": 0.73, "llama.cpp-like": 0.21}; assumptions (the constants).
"amx" (§4.5, §7 Q9; ex09), one Xeon-8480+ socket:
    amx_ops_per_instruction (ops); amx_ops_per_cycle, avx512_ops_per_cycle (ops/cycle/core);
    amx_over_avx512; peak_tops, measured_tops (1e12 op/s); fraction_of_peak;
    prefill: {num_tokens, active_params_per_token, flop, amx_tflops, avx512_tflops, amx_s, avx512_s}.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, TypedDict

from hetero import catalog, plotting
from hetero.impl import exercise_function
from hetero.parts import Part

MODEL = "DeepSeek-V3"


@dataclass(frozen=True)
class HybridAssumptions:
    """The unstated assumptions of the §4.3 decode account, one constant each."""

    # 8-bit GPU weights with one 16-bit scale per block of 32 (GGUF Q8_0): 8 + 16/32 = 8.5 bits,
    # the 8-bit analogue of the lecture's 4-bit = 4.5 bits. 17.1B x 8.5 / 8 = 18.1 GB (lecture "~18 GB").
    gpu_bits_per_param: float = 8.5
    # 4-bit CPU weights with one 16-bit scale per 32 (GGUF Q4_0): lecture §7 Q6.
    cpu_bits_per_param: float = 4.5
    # Fraction of peak DRAM bandwidth a streaming expert read achieves on the CPU (lecture §7 Q6).
    cpu_memory_efficiency: float = 0.7
    # Fraction of peak HBM/GDDR bandwidth for the GPU's weight reads (catalog, shared with §1.2).
    gpu_memory_efficiency: float = catalog.ASSUMPTIONS["memory_efficiency"]
    # Host-side cost of launching one CUDA kernel. At batch 1 the kernels are shorter than their
    # launch and every layer synchronises with the CPU experts, so launches add to the token time.
    # Python-framework overhead per operator (Fiddler runs PyTorch eagerly) is not included.
    kernel_launch_s: float = 5e-6
    # A NUMA-naive loader first-touches every weight page from one thread, so all expert weights sit
    # on one socket's DRAM and both sockets' threads share that socket's bandwidth.
    naive_weight_sockets: int = 1
    # Experts kept immediate in every layer when deferring (lecture §4.3).
    min_immediate: int = 2


@dataclass(frozen=True)
class HybridMachine:
    """The §4.3 machine: one consumer GPU and a multi-socket CPU server."""

    gpu: str = "RTX4090"
    cpu: str = "Xeon-8480+"
    sockets: int = 2


@dataclass(frozen=True)
class DecodeConfig:
    """One system in the decode comparison; they share the machine, model and weight precision."""

    name: str
    launches_per_token: int  # CUDA kernel (or graph) launches per decoded token
    numa_aware: bool  # expert weights split across sockets, each socket reads local memory
    deferral: bool  # expert deferral (ex08) with `best_deferred` experts per layer
    # The GPU runs the shared expert while the CPU computes the routed experts (KTransformers submits
    # the routed experts to the CPU asynchronously); False: the layer's operators run one after another.
    shared_overlap: bool


# Kernel launches per token from the slides (Fiddler ~7,000, llama.cpp ~3,000); KTransformers
# records the whole forward as one CUDA graph, i.e. one launch per token.
DECODE_CONFIGS: tuple[DecodeConfig, ...] = (
    DecodeConfig("Fiddler-like", 7000, False, False, False),
    DecodeConfig("llama.cpp-like", 3000, False, False, False),
    DecodeConfig("KTransformers", 1, True, False, True),
    DecodeConfig("KTransformers+deferral", 1, True, True, True),
)


class Slides(TypedDict):
    """Measured figures quoted by the lecture (slides), reported next to the estimates."""

    vs_llamacpp: float
    vs_fiddler: float
    deferral: float
    launch_share: dict[str, float]
    cpu_memory_gb: float


SLIDES: Slides = {
    "vs_llamacpp": 1.92,
    "vs_fiddler": 4.09,
    "deferral": 1.45,
    "launch_share": {"Fiddler-like": 0.73, "llama.cpp-like": 0.21},
    "cpu_memory_gb": 382.0,
}
PLACEMENT_BATCHES = (1, 8, 64, 256)
ORDER_BATCH = 64  # §7 Q7
Q6_BANDWIDTH_GB_PER_S = 300.0  # §7 Q6's CPU memory bandwidth
PROMPT_TOKENS = 1024  # §4.5 "1K-token prompt"


def _moe() -> catalog.MoEModel:
    model = catalog.model(MODEL)
    assert isinstance(model, catalog.MoEModel)
    return model


# ---------------------------------------------------------------------------------------------
# Part 1: placement by arithmetic intensity (§4.2)


def placement(
    impl: str, assumptions: HybridAssumptions = HybridAssumptions(), machine: HybridMachine = HybridMachine()
) -> dict[str, Any]:
    expert_params = exercise_function("ex06", "expert_params", impl)
    expert_bytes = exercise_function("ex06", "expert_bytes_per_token", impl)
    routed_tokens = exercise_function("ex07", "tokens_per_routed_expert", impl)
    shared_tokens = exercise_function("ex07", "tokens_per_shared_expert", impl)
    offload_order = exercise_function("ex07", "offload_order", impl)

    m = _moe()
    per_expert = expert_params(m.hidden, m.expert_dim, m.matrices_per_expert)
    routed = per_expert * m.num_routed_experts * m.num_moe_layers  # params, all routed experts
    active = per_expert * m.num_active_experts * m.num_moe_layers  # params one token uses
    other = m.num_params - routed  # attention (MLA), dense layers, shared experts, embeddings
    # All 256 experts of every layer, stored at the CPU precision: bytes of "256 active experts".
    cpu_bytes = expert_bytes(m.num_routed_experts, per_expert, m.num_moe_layers, assumptions.cpu_bits_per_param)
    gpu_bytes = other * assumptions.gpu_bits_per_param / 8
    # Attention is listed after the shared expert: on a tie it stays on the GPU longest, with its KV cache.
    intensity = {
        "routed experts": routed_tokens(ORDER_BATCH, m.num_active_experts, m.num_routed_experts),
        "shared expert": shared_tokens(ORDER_BATCH),
        "attention": shared_tokens(ORDER_BATCH),
    }
    return {
        "params_per_expert": per_expert,
        "routed_params": routed,
        "active_routed_params": active,
        "other_params": other,
        "tokens_per_param": {
            "batch": list(PLACEMENT_BATCHES),
            "routed": [routed_tokens(b, m.num_active_experts, m.num_routed_experts) for b in PLACEMENT_BATCHES],
            "shared": [shared_tokens(b) for b in PLACEMENT_BATCHES],
        },
        "order_batch": ORDER_BATCH,
        "offload_order": offload_order(intensity),
        "gpu_bits_per_param": assumptions.gpu_bits_per_param,
        "cpu_bits_per_param": assumptions.cpu_bits_per_param,
        "gpu_gb": gpu_bytes / 1e9,
        "cpu_gb": cpu_bytes / 1e9,
        "gpu_capacity_gb": catalog.gpu(machine.gpu).mem_capacity_gb,
        "slides_cpu_memory_gb": SLIDES["cpu_memory_gb"],
    }


def render_placement(fig: dict[str, Any]) -> str:
    tp = fig["tokens_per_param"]
    lines = [
        f"DeepSeek-V3 parameters: routed experts {fig['routed_params'] / 1e9:.1f}B, "
        f"active routed per token {fig['active_routed_params'] / 1e9:.1f}B, "
        f"everything else {fig['other_params'] / 1e9:.1f}B",
        "",
        f"{'batch B':>8} {'tokens/param routed':>20} {'tokens/param shared':>20}",
    ]
    lines += [f"{b:>8} {r:>20.4g} {s:>20.4g}" for b, r, s in zip(tp["batch"], tp["routed"], tp["shared"], strict=False)]
    lines += [
        "",
        f"offload order at B={fig['order_batch']}, first to the CPU first: "
        + ", ".join(f"{i}. {name}" for i, name in enumerate(fig["offload_order"], start=1)),
        f"GPU: other params at {fig['gpu_bits_per_param']:g} bits = {fig['gpu_gb']:.1f} GB "
        f"(fits a {fig['gpu_capacity_gb']:g} GB card)",
        f"CPU: routed experts at {fig['cpu_bits_per_param']:g} bits = {fig['cpu_gb']:.1f} GB "
        f"(slides' machine: {fig['slides_cpu_memory_gb']:g} GB of DRAM)",
    ]
    return "\n".join(lines)


def plot_placement(fig: dict[str, Any], outdir: Path) -> list[Path]:
    """Tokens per parameter against the batch (why routed experts go to the CPU first) and where the
    weights land (GB beside each memory's capacity)."""
    plt = plotting.pyplot()

    tp = fig["tokens_per_param"]
    figure, (left, right) = plt.subplots(1, 2, figsize=(10, 4.2))
    left.loglog(tp["batch"], tp["shared"], "o-", label="shared expert, attention (every token)")
    left.loglog(tp["batch"], tp["routed"], "s-", label="routed expert (its share of the tokens)")
    left.axvline(fig["order_batch"], color="grey", linestyle=":")
    left.set_xlabel("batch B (tokens per step)")
    left.set_ylabel("tokens per parameter read")
    order = ", ".join(f"{i}. {name}" for i, name in enumerate(fig["offload_order"], start=1))
    left.set_title(f"moved to the CPU first to last at B={fig['order_batch']}: {order}", fontsize=9)
    left.legend(fontsize=8)
    names = [
        f"GPU: other params\n{fig['gpu_bits_per_param']:g} bits",
        f"CPU: routed experts\n{fig['cpu_bits_per_param']:g} bits",
    ]
    sizes = [fig["gpu_gb"], fig["cpu_gb"]]
    right.bar(names, sizes, color=["tab:green", "tab:blue"])
    for i, (size, room) in enumerate(zip(sizes, [fig["gpu_capacity_gb"], fig["slides_cpu_memory_gb"]], strict=True)):
        right.hlines(room, i - 0.4, i + 0.4, colors="black", linestyles="--")
        right.text(i, room, f"{size:.0f} GB of {room:g} GB", ha="center", va="bottom", fontsize=8)
    right.set_ylim(0, 1.12 * max(sizes + [fig["slides_cpu_memory_gb"]]))
    right.set_ylabel("weights (GB); dashed: that memory's size")
    right.set_title(f"{MODEL}: where the weights live", fontsize=9)
    figure.suptitle("Placement by arithmetic intensity (lecture §4.2)", fontsize=10)
    return [plotting.save(figure, outdir, "exp03_placement.png")]


# ---------------------------------------------------------------------------------------------
# Part 2: the decode-time account at batch 1 (§4.3)


def decode(
    impl: str, assumptions: HybridAssumptions = HybridAssumptions(), machine: HybridMachine = HybridMachine()
) -> dict[str, Any]:
    expert_params = exercise_function("ex06", "expert_params", impl)
    expert_bytes = exercise_function("ex06", "expert_bytes_per_token", impl)
    bound = exercise_function("ex06", "decode_tokens_per_s_bound", impl)
    layer_time_s = exercise_function("ex08", "layer_time_s", impl)
    best_deferred = exercise_function("ex08", "best_deferred", impl)
    deferral_speedup = exercise_function("ex08", "deferral_speedup", impl)

    m = _moe()
    k = m.num_active_experts
    per_expert = expert_params(m.hidden, m.expert_dim, m.matrices_per_expert)
    cpu_bytes = expert_bytes(k, per_expert, m.num_moe_layers, assumptions.cpu_bits_per_param)  # B/token
    other = m.num_params - per_expert * m.num_routed_experts * m.num_moe_layers
    gpu_bytes = other * assumptions.gpu_bits_per_param / 8  # B/token: every non-routed weight once
    shared_bytes = per_expert * m.num_shared_experts * assumptions.gpu_bits_per_param / 8  # B per MoE layer
    socket_bw = catalog.cpu_socket(machine.cpu).mem_bandwidth_gb_per_s
    cpu_bw = {"numa_aware": machine.sockets * socket_bw, "numa_naive": assumptions.naive_weight_sockets * socket_bw}
    gpu_bw = catalog.gpu(machine.gpu).mem_bandwidth_gb_per_s
    gpu_s = 1.0 / bound(gpu_bytes, gpu_bw, assumptions.gpu_memory_efficiency)
    # The shared expert's share of the GPU time, per MoE layer. KTransformers submits the routed experts
    # to the CPU as soon as the router has chosen them and runs the shared expert on the GPU meanwhile, so
    # that part of a layer's GPU work overlaps the CPU's routed experts; attention and the router do not
    # (the CPU needs the router's choice).
    shared_s = 1.0 / bound(shared_bytes, gpu_bw, assumptions.gpu_memory_efficiency)

    configs: dict[str, dict[str, Any]] = {}
    for cfg in DECODE_CONFIGS:
        bw = cpu_bw["numa_aware" if cfg.numa_aware else "numa_naive"]
        cpu_s = 1.0 / bound(cpu_bytes, bw, assumptions.cpu_memory_efficiency)
        launch_s = cfg.launches_per_token * assumptions.kernel_launch_s
        # Per MoE layer: the GPU's work before the CPU can start (attention, router: the GPU time without
        # the shared experts, spread evenly over all layers) and the shared expert; the CPU time spread
        # over the MoE layers' active experts (s per expert).
        gpu_layer_s = (gpu_s - m.num_moe_layers * shared_s) / m.num_layers
        cpu_expert_s = cpu_s / (m.num_moe_layers * k)
        deferred = best_deferred(gpu_layer_s, cpu_expert_s, k, assumptions.min_immediate) if cfg.deferral else 0

        # ex08's schedule for the attention + router part; with the overlap the shared expert then runs
        # on the GPU while the CPU computes the k - d immediate experts, and delays the layer only by what
        # it exceeds them; without it, it runs before the CPU starts.
        def moe_layer_s(
            d: int,
            overlap: bool = cfg.shared_overlap,
            gpu_layer_s: float = gpu_layer_s,
            cpu_expert_s: float = cpu_expert_s,
        ) -> float:
            if not overlap:
                return layer_time_s(gpu_layer_s + shared_s, cpu_expert_s, k, d)
            return layer_time_s(gpu_layer_s, cpu_expert_s, k, d) + max(0.0, shared_s - (k - d) * cpu_expert_s)

        # The last MoE layer defers nothing: no next layer exists to take its deferred experts.
        compute_s = (
            (m.num_moe_layers - 1) * moe_layer_s(deferred)
            + moe_layer_s(0)
            + (m.num_layers - m.num_moe_layers) * gpu_layer_s
        )
        total_s = launch_s + compute_s
        configs[cfg.name] = {
            "launches": cfg.launches_per_token,
            "numa_aware": cfg.numa_aware,
            "deferral": cfg.deferral,
            "shared_overlap": cfg.shared_overlap,
            "deferred": deferred,
            "gpu_layer_ms": gpu_layer_s * 1e3,
            "cpu_expert_ms": cpu_expert_s * 1e3,
            "layer_speedup": deferral_speedup(gpu_layer_s, cpu_expert_s, k, deferred),
            "launch_ms": launch_s * 1e3,
            "gpu_ms": gpu_s * 1e3,
            "cpu_ms": cpu_s * 1e3,
            "shared_ms": m.num_moe_layers * shared_s * 1e3,  # part of gpu_ms that overlaps the CPU
            "cpu_exposed_ms": (compute_s - gpu_s) * 1e3,  # time beyond the GPU's own (CPU not hidden)
            "total_ms": total_s * 1e3,
            "tokens_per_s": 1.0 / total_s,
            "launch_share": launch_s / total_s,
        }
    speed = {name: c["tokens_per_s"] for name, c in configs.items()}
    return {
        "cpu_gb_per_token": cpu_bytes / 1e9,
        "gpu_gb_per_token": gpu_bytes / 1e9,
        "cpu_bandwidth_gb_per_s": cpu_bw,
        "q6_bound_tokens_per_s": bound(cpu_bytes, Q6_BANDWIDTH_GB_PER_S, assumptions.cpu_memory_efficiency),
        "configs": configs,
        "speedups": {
            "vs_llamacpp": {
                "estimate": speed["KTransformers"] / speed["llama.cpp-like"],
                "slides": SLIDES["vs_llamacpp"],
            },
            "vs_fiddler": {"estimate": speed["KTransformers"] / speed["Fiddler-like"], "slides": SLIDES["vs_fiddler"]},
            "deferral": {
                "estimate": speed["KTransformers+deferral"] / speed["KTransformers"],
                "slides": SLIDES["deferral"],
            },
        },
        "launch_share_slides": dict(SLIDES["launch_share"]),
        "machine": asdict(machine),
        "assumptions": asdict(assumptions),
    }


def render_decode(fig: dict[str, Any]) -> str:
    bw = fig["cpu_bandwidth_gb_per_s"]
    lines = [
        f"per token: CPU reads {fig['cpu_gb_per_token']:.2f} GB of routed experts, "
        f"GPU reads {fig['gpu_gb_per_token']:.2f} GB; CPU DRAM {bw['numa_aware']:.0f} GB/s NUMA-aware, "
        f"{bw['numa_naive']:.0f} GB/s NUMA-naive (peak)",
        f"§7 Q6 bound (300 GB/s x {fig['assumptions']['cpu_memory_efficiency']:g}): "
        f"{fig['q6_bound_tokens_per_s']:.1f} tokens/s",
        "",
        f"{'system':<24} {'launches':>8} {'NUMA':>6} {'defer':>5} {'launch ms':>9} {'GPU ms':>7} "
        f"{'CPU ms':>7} {'CPU exposed':>11} {'total ms':>8} {'tok/s':>6} {'launch %':>8}",
    ]
    for name, c in fig["configs"].items():
        slides = fig["launch_share_slides"].get(name)
        share = f"{100 * c['launch_share']:.0f}" + (f" ({100 * slides:.0f})" if slides is not None else "")
        lines.append(
            f"{name:<24} {c['launches']:>8} {'aware' if c['numa_aware'] else 'naive':>6} "
            f"{'yes' if c['deferral'] else 'no':>5} {c['launch_ms']:>9.2f} {c['gpu_ms']:>7.2f} {c['cpu_ms']:>7.2f} "
            f"{c['cpu_exposed_ms']:>11.2f} {c['total_ms']:>8.2f} {c['tokens_per_s']:>6.1f} {share:>8}"
        )
    d = fig["configs"]["KTransformers+deferral"]
    lines += [
        "(launch %: estimate, slides' measurement in parentheses)",
        "",
        f"deferral: GPU {d['gpu_layer_ms']:.3f} ms per layer (attention + router; the shared expert's "
        f"{d['shared_ms']:.2f} ms per token overlap the CPU), CPU {d['cpu_expert_ms']:.4f} ms per expert "
        f"-> defer {d['deferred']} experts per layer (not in the last MoE layer); that part of a MoE layer "
        f"{d['layer_speedup']:.2f}x faster",
        "",
        f"{'speed-up':<36} {'estimate':>8} {'slides':>7}",
    ]
    labels = {
        "vs_llamacpp": "KTransformers vs llama.cpp-like",
        "vs_fiddler": "KTransformers vs Fiddler-like",
        "deferral": "deferral on top of KTransformers",
    }
    for key, label in labels.items():
        s = fig["speedups"][key]
        lines.append(f"{label:<36} {s['estimate']:>7.2f}x {s['slides']:>6.2f}x")
    lines.append("(slides: measured, 'up to'; estimates: this model's assumptions, see docs/figures_ktrans.md)")
    return "\n".join(lines)


def plot_decode(fig: dict[str, Any], outdir: Path) -> list[Path]:
    plt = plotting.pyplot()

    names = list(fig["configs"])
    stacks = (
        ("launch_ms", "kernel launches"),
        ("gpu_ms", "GPU weight reads"),
        ("cpu_exposed_ms", "CPU expert reads (not overlapped)"),
    )
    figure, ax = plt.subplots(figsize=(8, 4.5))
    bottom = [0.0] * len(names)
    for key, label in stacks:
        values = [fig["configs"][n][key] for n in names]
        ax.bar(names, values, bottom=bottom, label=label)
        bottom = [b + v for b, v in zip(bottom, values, strict=False)]
    for i, n in enumerate(names):
        ax.text(i, bottom[i], f"{fig['configs'][n]['tokens_per_s']:.1f} tok/s", ha="center", va="bottom")
    ax.set_ylim(0, 1.25 * max(bottom))  # room for the labels and the legend
    ax.set_ylabel("time per decoded token (ms)")
    m = fig["machine"]
    ax.set_xlabel(f"system ({MODEL}, batch 1, {m['gpu']} + {m['sockets']} x {m['cpu']})")
    ax.set_title("Decode-time breakdown per token (lecture §4.3)")
    ax.legend()
    path = plotting.save(figure, outdir, "exp03_decode_breakdown.png")
    return [path]


# ---------------------------------------------------------------------------------------------
# Part 3: AMX for prefill (§4.5, §7 Q9)


def amx(impl: str) -> dict[str, Any]:
    ops_per_instruction = exercise_function("ex09", "amx_ops_per_instruction", impl)
    ops_per_cycle = exercise_function("ex09", "ops_per_cycle_per_core", impl)
    peak_tops = exercise_function("ex09", "peak_tops", impl)
    fraction_of_peak = exercise_function("ex09", "fraction_of_peak", impl)
    prefill_time = exercise_function("ex09", "prefill_expert_time_s", impl)

    cpu = catalog.cpu_socket(HybridMachine().cpu)
    m = _moe()
    ops = ops_per_instruction(cpu.amx_tile_m, cpu.amx_tile_k, cpu.amx_tile_n)
    amx_opc = ops_per_cycle(ops, cpu.amx_cycles_per_instruction)
    ratio = amx_opc / cpu.avx512_int8_ops_per_cycle_per_core
    peak = peak_tops(cpu.cores, cpu.base_ghz, amx_opc)
    active = m.params_per_expert * m.num_active_experts * m.num_moe_layers  # routed params per token
    # AVX-512 is assumed to reach the same fraction of its peak as the measured AMX BF16 kernel.
    avx512_tflops = cpu.amx_bf16_measured_tflops / ratio
    return {
        "amx_ops_per_instruction": ops,
        "amx_cycles_per_instruction": cpu.amx_cycles_per_instruction,
        "amx_ops_per_cycle": amx_opc,
        "avx512_ops_per_cycle": cpu.avx512_int8_ops_per_cycle_per_core,
        "amx_over_avx512": ratio,
        "cores": cpu.cores,
        "clock_ghz": cpu.base_ghz,
        "peak_tops": peak,
        "measured_tops": cpu.amx_int8_measured_tops,
        "fraction_of_peak": fraction_of_peak(cpu.amx_int8_measured_tops, peak),
        "prefill": {
            "num_tokens": PROMPT_TOKENS,
            "active_params_per_token": active,
            "flop": 2.0 * PROMPT_TOKENS * active,
            "amx_tflops": cpu.amx_bf16_measured_tflops,
            "avx512_tflops": avx512_tflops,
            "amx_s": prefill_time(PROMPT_TOKENS, active, cpu.amx_bf16_measured_tflops),
            "avx512_s": prefill_time(PROMPT_TOKENS, active, avx512_tflops),
        },
    }


def render_amx(fig: dict[str, Any]) -> str:
    p = fig["prefill"]
    return "\n".join(
        [
            f"AMX tile product: {fig['amx_ops_per_instruction']:,} ops per instruction, "
            f"{fig['amx_cycles_per_instruction']} cycles",
            f"ops per cycle per core: AMX {fig['amx_ops_per_cycle']:,.0f} vs AVX-512 {fig['avx512_ops_per_cycle']:,} "
            f"({fig['amx_over_avx512']:.0f}x)",
            f"peak of one socket ({fig['cores']} cores x {fig['clock_ghz']:g} GHz): {fig['peak_tops']:.0f} TOPS; "
            f"measured {fig['measured_tops']:g} TOPS = {100 * fig['fraction_of_peak']:.0f}% of peak",
            f"{p['num_tokens']}-token prompt, routed experts on the CPU ({p['flop']:.3g} FLOP): "
            f"AVX-512 at {p['avx512_tflops']:g} TFLOPS {p['avx512_s']:.1f} s, "
            f"AMX at {p['amx_tflops']:g} TFLOPS {p['amx_s']:.1f} s",
        ]
    )


def plot_amx(fig: dict[str, Any], outdir: Path) -> list[Path]:
    """Ops per cycle per core (AMX vs AVX-512) and the 1K-token prefill of the routed experts on each."""
    plt = plotting.pyplot()

    p = fig["prefill"]
    figure, (left, right) = plt.subplots(1, 2, figsize=(10, 4.2))
    units = ["AVX-512", "AMX"]
    for ax, values, label, fmt in (
        (left, [fig["avx512_ops_per_cycle"], fig["amx_ops_per_cycle"]], "ops per cycle per core", "{:,.0f}"),
        (right, [p["avx512_s"], p["amx_s"]], f"prefill of a {p['num_tokens']}-token prompt (s)", "{:.1f} s"),
    ):
        ax.bar(units, values, color=["tab:grey", "tab:orange"])
        for i, value in enumerate(values):
            ax.text(i, value, fmt.format(value), ha="center", va="bottom", fontsize=9)
        ax.set_ylim(0, 1.15 * max(values))
        ax.set_ylabel(label)
    left.set_title(
        f"peak {fig['peak_tops']:.0f} TOPS per socket, measured {fig['measured_tops']:g} "
        f"({100 * fig['fraction_of_peak']:.0f}%)",
        fontsize=9,
    )
    right.set_title(f"routed experts on the CPU: {p['flop']:.3g} FLOP", fontsize=9)
    figure.suptitle("AMX: the CPU's prefill becomes compute-bound (lecture §4.5)", fontsize=10)
    return [plotting.save(figure, outdir, "exp03_amx.png")]


PARTS: list[Part] = [
    Part(
        "placement",
        "Placement by arithmetic intensity (DeepSeek-V3)",
        "§4.2",
        ("ex06", "ex07"),
        placement,
        render_placement,
        plot_placement,
    ),
    Part(
        "decode",
        "Decode-time account at batch 1 (RTX 4090 + 2 x Xeon 8480+)",
        "§4.3",
        ("ex06", "ex08"),
        decode,
        render_decode,
        plot_decode,
    ),
    Part("amx", "AMX: the CPU's prefill becomes compute-bound", "§4.5", ("ex09",), amx, render_amx, plot_amx),
]
