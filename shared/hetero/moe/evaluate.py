"""Evaluation of the forward modes `full`, `skip-k` and `defer-k` with the exercise-10 functions.

The skip/defer logic is exercise 10 (`solutions/ex10_deferral_accuracy.py`), called through
`hetero.impl.exercise_function`; the evaluation runs over the prefix trie of the names
(`hetero.moe.trie`) with the modes sharing identical layers.

Deferral semantics (the ex10 API): layer l computes h = x + attn(x); the MoE reads h and gives the
shared output, the K routed outputs and their weights; `moe_residual_update` returns the new residual
stream and the deferred (carried) output, which layer l+1 adds in its own residual update. Layer l+1's
attention and MoE therefore compute without the carried output, and the residual stream still
receives it. The last layer defers nothing.

The loss is the mean cross entropy, in nats, over every predicted position (each character and the
<eos>), i.e. nats per character with the end of the name counted as one character.
"""

from __future__ import annotations

import sys
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import torch

from hetero.impl import exercise_function
from hetero.moe.model import Block, CityMoE, LayerParts, ResidualUpdate
from hetero.moe.train import torch_settings
from hetero.moe.trie import PrefixTrie, prefix_trie

MODES_EVALUATED = ("full", "skip_1", "skip_2", "skip_3", "defer_1", "defer_2", "defer_3")


@dataclass(frozen=True)
class Ex10Functions:
    """The student's (or the answer key's) ex10 functions the evaluation calls."""

    split_topk_weights: Callable[..., Any]
    moe_residual_update: Callable[..., Any]

    @staticmethod
    def from_impl(impl: str) -> Ex10Functions:
        return Ex10Functions(
            exercise_function("ex10", "split_topk_weights", impl),
            exercise_function("ex10", "moe_residual_update", impl),
        )

    @staticmethod
    def from_module(module: Any) -> Ex10Functions:
        return Ex10Functions(module.split_topk_weights, module.moe_residual_update)


def mode_update(fns: Ex10Functions, n_layers: int, mode: str, k: int) -> ResidualUpdate:
    """The per-layer residual update of one forward mode, delegating to ex10's moe_residual_update."""

    def update(
        layer: int,
        h: torch.Tensor,
        shared_out: torch.Tensor,
        expert_out: torch.Tensor,
        weights: torch.Tensor,
        carry: torch.Tensor | None,
    ) -> tuple[torch.Tensor, torch.Tensor | None]:
        return fns.moe_residual_update(h, shared_out, expert_out, weights, carry, k, mode, layer == n_layers - 1)

    return update


def parse_mode(name: str) -> tuple[str, int]:
    """Mode name -> (mode, k): "full" -> ("full", 0); "skip_2" -> ("skip", 2); "defer_3" -> ("defer", 3)."""
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
        scores = (qg * k).sum(dim=-1) * width**-0.5  # [n, keys, S, h]; k, v: [n, keys, S, h, D/h]
        weights = torch.softmax(scores, dim=1).unsqueeze(-1)  # [n, keys, S, h, 1]
        out.append((weights * v).sum(dim=1).transpose(0, 1).reshape(s, n, d))  # [S, n, D]
    return torch.cat(out, dim=1) @ block.proj


def stacked_layer_parts(model: CityMoE, layer: int, x: torch.Tensor, trie: PrefixTrie) -> LayerParts:
    """Layer `layer` up to its MoE residual update for S hidden states of the same trie nodes at once:
    x [S, N, D] -> LayerParts with S*N rows (state i in rows i*N .. (i+1)*N - 1). Same operations as
    `CityMoE.layer_parts`, with the attention over each node's ancestors (`trie_attention`)."""
    s, n, d = x.shape
    block = model.block(layer)
    h = x + trie_attention(block, x, trie)  # [S, N, D]
    flat = block.ln_moe(h).reshape(s * n, d)  # [S*N, D]
    weights, ids = block.moe.route(flat)  # [S*N, K] each
    return LayerParts(h.reshape(s * n, d), block.moe.shared(flat), block.moe.experts(flat, ids), weights)


def _evaluate_trie(
    model: CityMoE, trie: PrefixTrie, fns: Ex10Functions, modes: Sequence[str]
) -> tuple[dict[str, float], list[float]]:
    """Summed cross entropy (nats) of every mode over the trie's targets, and the summed top-1 routing
    weight per layer over every token of every name in the "full" forward.

    Modes run layer by layer together. A layer runs once per DISTINCT input hidden state (exact
    equality): every mode shares layer 0, and skip-k and defer-k share layer 1 (layer 1's attention and
    MoE read the residual stream without the carried output). Each mode's update then gets its own
    slice of the layer's outputs (a copy while a later mode still reads the same slice, so an update that
    writes into its inputs cannot leak into another mode)."""
    n_layers = model.cfg.n_layers
    n = trie.tokens.shape[0]
    depth = torch.cat(
        [
            torch.full((end - first,), ancestors.shape[1] - 1, dtype=torch.long)
            for first, end, ancestors in trie.depth_groups
        ]
    )  # [N] position of each node
    states = (model.tok_emb[trie.tokens] + model.pos_emb[depth]).unsqueeze(0)  # [S=1, N, D]
    state_of = {m: 0 for m in modes}  # mode -> index of its hidden state in `states`
    carry: dict[str, torch.Tensor | None] = {m: None for m in modes}  # mode -> deferred output [N, D]
    top1 = [0.0] * n_layers
    for layer in range(n_layers):
        parts = stacked_layer_parts(model, layer, states, trie)  # S*N rows
        if "full" in state_of:
            i = state_of["full"]
            best = parts.weights[i * n : (i + 1) * n].max(dim=-1).values  # [N]
            top1[layer] = float(best.to(torch.float64) @ trie.names_through)
        readers = Counter(state_of.values())
        new_x = {}
        for m in modes:
            mode, k = parse_mode(m)
            i = state_of[m]
            readers[i] -= 1
            own = [p[i * n : (i + 1) * n] for p in parts]  # h [N, D], shared [N, D], experts [N, K, D], weights [N, K]
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


def evaluate(
    model: CityMoE,
    seqs: Sequence[Sequence[int]],
    fns: Ex10Functions,
    modes: Sequence[str] = MODES_EVALUATED,
    chunk_names: int = 512,
    threads: int = 1,
    progress: bool = False,
) -> dict[str, Any]:
    """Loss (nats per character) of every mode on `seqs`, and the mean top-1 routing weight per layer
    (renormalised top-4 weight of the first routed expert, over every real token, in the "full" forward).

    Names are evaluated in chunks of `chunk_names` (in sorted order, so that a chunk holds names with
    common prefixes; the chunk size bounds memory), each as a `PrefixTrie`, with all modes sharing the
    layers they compute identically (`_evaluate_trie`). `progress` shows a bar (stderr) over the names."""
    from tqdm import tqdm

    ordered = sorted(tuple(s) for s in seqs)
    totals = {m: 0.0 for m in modes}
    top1_sum = [0.0] * model.cfg.n_layers
    bar = tqdm(
        total=len(ordered), desc="evaluate skip/defer", unit="names", file=sys.stderr, disable=not progress, leave=False
    )
    with bar, torch_settings(threads, deterministic=False), torch.inference_mode():
        for start in range(0, len(ordered), chunk_names):
            losses, top1 = _evaluate_trie(model, prefix_trie(ordered[start : start + chunk_names]), fns, modes)
            for m in modes:
                totals[m] += losses[m]
            top1_sum = [a + b for a, b in zip(top1_sum, top1, strict=True)]
            bar.update(len(ordered[start : start + chunk_names]))
    count = sum(len(s) - 1 for s in seqs)  # predicted positions: every character and the <eos>
    n_real = sum(len(s) for s in seqs)
    return {"loss_nats": {m: totals[m] / count for m in modes}, "top1_weight_by_layer": [s / n_real for s in top1_sum]}


def loss_table(losses: dict[str, float]) -> dict[str, Any]:
    """{"full_loss_nats", "delta_mnats"} from per-mode losses in nats."""
    full = losses["full"]
    return {"full_loss_nats": full, "delta_mnats": {m: 1000.0 * (losses[m] - full) for m in losses if m != "full"}}
