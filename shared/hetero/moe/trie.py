"""The prefix trie of a set of encoded names: the structure the evaluation runs its forward over."""

from __future__ import annotations

from collections.abc import Sequence
from typing import NamedTuple

import torch


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
    return PrefixTrie(
        torch.tensor(tokens, dtype=torch.long),
        tuple(groups),
        torch.tensor(counts, dtype=torch.float64),
        torch.tensor([n for n, _ in scored], dtype=torch.long),
        torch.tensor([t for _, t in scored], dtype=torch.long),
    )
