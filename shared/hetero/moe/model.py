"""The model: a decoder-only transformer over characters whose feed-forward blocks are MoE layers
(16 routed experts, top-4 softmax routing of the router logits divided by the router temperature,
with the top-4 weights renormalised to sum to 1, plus 1 shared expert), with a pluggable MoE residual update per layer, and the training loss.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import NamedTuple, cast

import torch
import torch.nn.functional as F
from torch import nn

from hetero.moe.config import ModelConfig
from hetero.moe.data import PAD

MAX_EXPERT_BLOCK = 128  # largest block (rows) in the vectorised expert dispatch


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
        self.temperature = cfg.router_temperature  # router logits are divided by it (dimensionless)
        self.router = _param(generator, dtype, d, e, std=0.02)  # [D, E]
        self.w_in = _param(generator, dtype, e, d, h, std=d**-0.5)  # [E, D, H]
        self.w_out = _param(generator, dtype, e, h, d, std=h**-0.5 / (2 * cfg.n_layers) ** 0.5)  # [E, H, D]
        # shared_hidden 0: no shared expert (a departure from the lecture's model, shown beside it in
        # docs/figures_moe.md); its weights are then empty and its output is zero.
        sh = cfg.shared_hidden
        self.shared_in = _param(generator, dtype, d, sh, std=d**-0.5)
        self.shared_out = _param(generator, dtype, sh, d, std=(sh**-0.5 if sh else 0.0) / (2 * cfg.n_layers) ** 0.5)

    def route(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """x [T, D] -> (weights [T, K] descending, renormalised to sum 1; expert ids [T, K]).

        The gate is softmax((x @ router) / temperature) over the E experts (temperature 1: plain softmax;
        dividing by 1.0 is exact, so such a model routes bit for bit as before the field existed)."""
        probs = torch.softmax(x @ self.router / self.temperature, dim=-1)  # [T, E]
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
        self.qkv = _param(generator, dtype, d, 3 * d, std=d**-0.5)  # [D, 3D]
        self.proj = _param(generator, dtype, d, d, std=d**-0.5 / (2 * cfg.n_layers) ** 0.5)  # [D, D]
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
ResidualUpdate = Callable[
    [int, torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor | None],
    tuple[torch.Tensor, torch.Tensor | None],
]


def full_update(
    layer: int,
    h: torch.Tensor,
    shared_out: torch.Tensor,
    expert_out: torch.Tensor,
    weights: torch.Tensor,
    carry: torch.Tensor | None,
) -> tuple[torch.Tensor, torch.Tensor | None]:
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
        self.head = _param(generator, dtype, cfg.d_model, cfg.vocab_size, std=cfg.d_model**-0.5)  # [D, V]

    def embed(self, tokens: torch.Tensor) -> torch.Tensor:
        """tokens [B, L] int64 -> input of layer 0 [B, L, D]."""
        return self.tok_emb[tokens] + self.pos_emb[: tokens.shape[1]]

    def block(self, layer: int) -> Block:
        """The `Block` of layer `layer` (`self.blocks` holds only Blocks; a ModuleList item is typed Module)."""
        return cast(Block, self.blocks[layer])

    def layer_parts(self, layer: int, x: torch.Tensor) -> LayerParts:
        """Layer `layer` on its input x [B, L, D], up to (not including) the MoE residual update."""
        b, length, _ = x.shape
        block = self.block(layer)
        h = x + block.attention(x)  # [B, L, D]
        flat = block.ln_moe(h).reshape(b * length, -1)  # [T=B*L, D]
        weights, ids = block.moe.route(flat)  # [T, K] each
        return LayerParts(h.reshape(b * length, -1), block.moe.shared(flat), block.moe.experts(flat, ids), weights)

    def forward(self, tokens: torch.Tensor, update: ResidualUpdate = full_update) -> torch.Tensor:
        """tokens [B, L] int64 -> logits [B, L, V], with `update` as every layer's MoE residual update."""
        b, length = tokens.shape
        x = self.embed(tokens)  # [B, L, D]
        carry: torch.Tensor | None = None  # [B*L, D] deferred output of the previous layer
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
