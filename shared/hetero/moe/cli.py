"""The command line `python -m hetero.moe train|evaluate [--impl solutions] [--seeds 0 1 2] [--json]
[--steps N] [--router-temperature T]`: train (or load from the cache) the default checkpoint per seed,
or print the skip/defer loss table per seed and its mean and standard deviation over the seeds.
`--steps` and `--router-temperature` replace those two fields of the default config (the runs that
chose the default, docs/figures_moe.md).
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys
from typing import Any

import numpy as np

from hetero.impl import add_impl_argument, load_exercise, resolve_impl_dir, untrusted_impl
from hetero.moe.checkpoint import ensure_checkpoint, load_checkpoint
from hetero.moe.config import DEFAULT_CONFIG
from hetero.moe.experiment import deferral_figures, render_deferral

DESCRIPTION = (
    "The small MoE on city names and the expert-deferral accuracy experiment (lecture §4.4, experiment 03 part 4)."
)


def _seed_summary(figs: list[dict[str, Any]]) -> dict[str, Any]:
    def stat(values: list[float]) -> dict[str, float]:
        arr = np.asarray(values, dtype=float)
        return {"mean": float(arr.mean()), "std": float(arr.std(ddof=1)) if len(arr) > 1 else 0.0}

    return {
        "full_loss_nats": stat([f["full_loss_nats"] for f in figs]),
        "delta_mnats": {m: stat([f["delta_mnats"][m] for f in figs]) for m in figs[0]["delta_mnats"]},
        "top1_weight_by_layer": [
            stat([f["top1_weight_by_layer"][i] for f in figs]) for i in range(len(figs[0]["top1_weight_by_layer"]))
        ],
        "train_seconds": stat([f["train_seconds"] for f in figs]),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m hetero.moe", description=DESCRIPTION)
    sub = parser.add_subparsers(dest="command", required=True)
    p_train = sub.add_parser("train", help="train (or load from cache) the default checkpoint")
    p_eval = sub.add_parser("evaluate", help="the skip/defer loss table with an ex10 implementation")
    for p in (p_train, p_eval):
        p.add_argument("--seeds", type=int, nargs="+", default=[DEFAULT_CONFIG.seed], help="training seeds")
        p.add_argument("--quiet", action="store_true", help="no progress bar")
        p.add_argument("--steps", type=int, default=DEFAULT_CONFIG.steps, help="optimizer steps (default %(default)s)")
        p.add_argument(
            "--router-temperature",
            type=float,
            default=DEFAULT_CONFIG.router_temperature,
            help="router logits are divided by this before the softmax (default %(default)s)",
        )
    add_impl_argument(p_eval, "ex10")
    p_eval.add_argument("--json", action="store_true", help="print the figures as JSON")
    args = parser.parse_args(argv)
    refused = untrusted_impl(args.impl, args.trust_impl) if hasattr(args, "impl") else None
    if refused:
        parser.error(refused)
    configs = [
        dataclasses.replace(DEFAULT_CONFIG, seed=s, steps=args.steps, router_temperature=args.router_temperature)
        for s in args.seeds
    ]
    if args.command == "train":
        for config in configs:
            path = ensure_checkpoint(config, progress=not args.quiet)
            meta = load_checkpoint(path)[1]
            print(
                f"seed {config.seed}: {path} ({path.stat().st_size / 1e6:.2f} MB), trained in "
                f"{meta['train_seconds']:.1f} s, {meta['steps']} steps, final train loss "
                f"{meta['final_train_loss_nats']:.4f} nats/char; data {meta['data_stats']}"
            )
        return 0
    print(f"exercise files: {resolve_impl_dir(args.impl)}", file=sys.stderr)
    load_exercise("ex10", args.impl)
    figs = [deferral_figures(args.impl, c, progress=not args.quiet) for c in configs]
    if args.json:
        print(
            json.dumps(
                figs[0] if len(figs) == 1 else {"seeds": args.seeds, "per_seed": figs, "summary": _seed_summary(figs)},
                indent=2,
            )
        )
        return 0
    for config, fig in zip(configs, figs, strict=True):
        print(f"== training seed {config.seed}")
        print(render_deferral(fig))
    if len(figs) > 1:
        summary = _seed_summary(figs)
        print(f"== mean ± std over seeds {args.seeds}")
        print(f"  full {summary['full_loss_nats']['mean']:.4f} ± {summary['full_loss_nats']['std']:.4f} nats/char")
        for m, s in summary["delta_mnats"].items():
            print(f"  {m:<8} {s['mean']:+8.2f} ± {s['std']:.2f} mnats")
        top1 = ", ".join(f"{s['mean']:.3f}±{s['std']:.3f}" for s in summary["top1_weight_by_layer"])
        print(f"  top-1 weight by layer: {top1}")
    return 0
