"""The prefill cost model of experiment 02 part 1: a token's weight FLOPs plus attention FLOPs that grow
with its position, so reusing a long prefix saves more than its share of tokens.
"""

from __future__ import annotations

import numpy as np

from hetero import catalog


def attention_equal_tokens(model_name: str = "LLaMA-3-70B") -> float:
    """Context length at which a token's attention FLOPs equal its weight FLOPs.

    Per token at position p: weights 2 x params FLOPs, attention 4 x layers x attn_dim x p FLOPs
    (QK^T and AV). LLaMA-3-70B: 2 x 70.6e9 / (4 x 80 x 8192) = 53,800 tokens. Dense models only.
    """
    m = catalog.dense_model(model_name, "the cost model")
    return 2.0 * m.num_params / (4.0 * m.num_layers * m.attn_dim)


def prefill_cost(reused_tokens: np.ndarray, tokens: np.ndarray, equal_tokens: float) -> np.ndarray:
    """Prefill FLOPs of positions [reused, tokens), in units of one token's weight FLOPs."""
    r, n = reused_tokens.astype(np.float64), tokens.astype(np.float64)
    return (n - r) + (n * n - r * r) / (2.0 * equal_tokens)
