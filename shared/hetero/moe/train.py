"""The trainer: deterministic on one machine (same config + data + torch + CPU -> bit-identical weights; not
across machines, whose float kernels take other code paths: docs/figures_moe.md, "Reproducibility"), with
the torch thread and determinism settings it (and the evaluation) runs under.
"""

from __future__ import annotations

import contextlib
import math
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass

import torch

from hetero.moe.config import DEFAULT_CONFIG, TrainConfig, torch_dtype
from hetero.moe.data import CityData, bucketed_pass, build_data
from hetero.moe.model import CityMoE, masked_loss


@contextlib.contextmanager
def torch_settings(threads: int, deterministic: bool = True) -> Iterator[None]:
    """Fixed thread count (and, by default, deterministic algorithms) inside the block; previous
    settings restored.

    Deterministic mode would also fill every new uninitialised tensor with NaN (a debugging aid that
    costs a pass over memory per allocation); every buffer here is written before it is read, so
    that fill is switched off. `deterministic=False` is for evaluation: its forward ops (matmuls,
    gathers, index writes to distinct rows, sorts) have deterministic CPU kernels anyway, and
    torch 2.13's `use_deterministic_algorithms` imports torch._inductor (about 3 s, once per process),
    which would dominate a grading run."""
    old_threads = torch.get_num_threads()
    torch.set_num_threads(threads)
    if not deterministic:
        try:
            yield
        finally:
            torch.set_num_threads(old_threads)
        return
    old_det = torch.are_deterministic_algorithms_enabled()
    old_warn = torch.is_deterministic_algorithms_warn_only_enabled()
    # torch.utils.deterministic declares this flag as a property of its module class, which mypy cannot see.
    old_fill = torch.utils.deterministic.fill_uninitialized_memory  # type: ignore[attr-defined]
    torch.use_deterministic_algorithms(True)
    torch.utils.deterministic.fill_uninitialized_memory = False  # type: ignore[attr-defined]
    try:
        yield
    finally:
        torch.set_num_threads(old_threads)
        torch.use_deterministic_algorithms(old_det, warn_only=old_warn)
        torch.utils.deterministic.fill_uninitialized_memory = old_fill  # type: ignore[attr-defined]


@dataclass(frozen=True)
class TrainResult:
    """A trained model and what its training run measured."""

    model: CityMoE
    train_seconds: float
    steps: int
    tokens: int  # predicted positions seen in training
    final_loss_nats: float  # mean training loss of the last 20 steps


def train(config: TrainConfig = DEFAULT_CONFIG, data: CityData | None = None, progress: bool = True) -> TrainResult:
    """Train a CityMoE from scratch; same config + data + torch + CPU -> bit-identical weights (other
    machines' kernels give other weights, with figures within about the seed spread)."""
    if data is None:
        data = build_data(config.min_char_count, config.max_len)
    names = data.train[: config.max_train_names] if config.max_train_names > 0 else data.train
    dtype = torch_dtype(config.dtype)
    with torch_settings(config.threads):
        gen = torch.Generator().manual_seed(config.seed)
        model = CityMoE(config.model_config(len(data.vocab)), gen, dtype)
        total_steps = config.steps
        opt = torch.optim.AdamW(
            model.parameters(), lr=config.lr, weight_decay=config.weight_decay, betas=(0.9, 0.98), fused=True
        )

        def lr_at(step: int) -> float:
            if step < config.warmup_steps:
                return config.lr * (step + 1) / config.warmup_steps
            frac = (step - config.warmup_steps) / max(1, total_steps - config.warmup_steps)
            return config.lr * (0.1 + 0.9 * 0.5 * (1 + math.cos(math.pi * frac)))

        from tqdm import tqdm

        bar = tqdm(
            total=total_steps, desc="train city MoE", file=sys.stderr, disable=not progress, leave=False, unit="step"
        )
        recent: list[float] = []
        tokens_seen = 0
        start = time.perf_counter()
        queue: list[torch.Tensor] = []
        for step in range(total_steps):
            if not queue:
                queue = bucketed_pass(names, config.batch_size, config.bucket_batches, gen)[::-1]
            batch = queue.pop()
            for group in opt.param_groups:
                group["lr"] = lr_at(step)
            loss, n = masked_loss(model(batch), batch)
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
            recent = (recent + [loss.item()])[-20:]
            tokens_seen += n
            bar.update(1)
            if step % 10 == 9:
                bar.set_postfix(loss=f"{sum(recent) / len(recent):.3f}")
        seconds = time.perf_counter() - start
        bar.close()
    model.eval()
    return TrainResult(model, seconds, total_steps, tokens_seen, sum(recent) / len(recent))
