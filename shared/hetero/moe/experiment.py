"""The lecture part "deferral" (§4.4, experiment 03 part 4): does expert deferral hurt accuracy?

Its figures (`deferral_figures`), their text table and plot, and `PARTS` for `hetero.lecture`.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import torch

from hetero import plotting
from hetero.moe.checkpoint import ensure_checkpoint, load_checkpoint
from hetero.moe.config import DEFAULT_CONFIG, TrainConfig
from hetero.moe.data import build_data
from hetero.moe.evaluate import Ex10Functions, evaluate, loss_table
from hetero.parts import Part

# torch threads of the experiment's evaluation (not of training, not of the grading harness, which
# runs one thread per sandboxed child): on the shared 2-core machine two threads evaluated the seven
# modes in 2.1-2.4 s against 3.3-3.5 s with one (benchmarks/bench_moe.py, docs/figures_moe.md).
EVAL_THREADS = min(2, os.cpu_count() or 1)


def deferral_figures(
    impl: str = "solutions", config: TrainConfig = DEFAULT_CONFIG, progress: bool = True, val_names: int = 0
) -> dict[str, Any]:
    """The experiment-03 part-4 figures for one training config (JSON shape of PARTS key "deferral").

    val_names: 0 evaluates the whole validation split; N > 0 only its first N names (quick checks)."""
    fns = Ex10Functions.from_impl(impl)
    fns.split_topk_weights(torch.ones(1, config.top_k), 0, "full")  # raises MissingExercise before training
    path = ensure_checkpoint(config, progress=progress)
    model, meta = load_checkpoint(path)
    data = build_data(config.min_char_count, config.max_len)
    result = evaluate(
        model, data.val[:val_names] if val_names > 0 else data.val, fns, threads=EVAL_THREADS, progress=progress
    )
    table = loss_table(result["loss_nats"])
    return {
        "full_loss_nats": table["full_loss_nats"],
        "delta_mnats": table["delta_mnats"],
        "top1_weight_by_layer": result["top1_weight_by_layer"],
        "train_seconds": float(meta["train_seconds"]),
    }


def run_deferral(impl: str) -> dict[str, Any]:
    return deferral_figures(impl)


def render_deferral(fig: dict[str, Any]) -> str:
    lines = [
        "Validation loss of the city-name MoE (4 layers, 16 experts top-4 + 1 shared)",
        f"  full             {fig['full_loss_nats']:.4f} nats/char",
        "  mode      k   change vs full (milli-nats/char)",
    ]
    for k in (1, 2, 3):
        lines.append(f"  skip      {k}   {fig['delta_mnats'][f'skip_{k}']:+8.2f}")
    for k in (1, 2, 3):
        lines.append(f"  defer     {k}   {fig['delta_mnats'][f'defer_{k}']:+8.2f}")
    top1 = ", ".join(f"{w:.3f}" for w in fig["top1_weight_by_layer"])
    lines.append(f"  mean top-1 routing weight by layer: {top1}")
    lines.append(f"  training time: {fig['train_seconds']:.1f} s (cached checkpoint)")
    return "\n".join(lines)


def plot_deferral(fig: dict[str, Any], outdir: Path) -> list[Path]:
    plt = plotting.pyplot()
    ks = [1, 2, 3]
    figure, ax = plt.subplots(figsize=(5, 3.5))
    ax.plot(ks, [fig["delta_mnats"][f"skip_{k}"] for k in ks], "o-", label="skip k lowest")
    ax.plot(ks, [fig["delta_mnats"][f"defer_{k}"] for k in ks], "s-", label="defer k lowest")
    ax.axhline(0.0, color="grey", linewidth=0.8)
    ax.set_xticks(ks)
    ax.set_xlabel("k (experts of 4 skipped or deferred per token)")
    ax.set_ylabel("validation loss change (milli-nats/char)")
    ax.set_title("Skip vs defer on the city-name MoE")
    ax.legend()
    path = plotting.save(figure, outdir, "moe_deferral.png")
    return [path]


PARTS = [
    Part(
        key="deferral",
        title="Experiment 03 part 4: does expert deferral hurt accuracy?",
        lecture="§4.4",
        needs=("ex10",),
        run=run_deferral,
        render=render_deferral,
        plot=plot_deferral,
    )
]
