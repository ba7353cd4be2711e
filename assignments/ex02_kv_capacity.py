"""Exercise ex02: how much KV cache fits in HBM, DRAM and SSD (lecture §1.2, §2.2, §7 Q2).

A decoder with grouped-query attention stores, for every token and every layer, one key and one
value vector per KV head. The lecture's example: LLaMA-3-70B (80 layers, 8 KV heads of 128 elements,
BF16) needs 320 KiB = 327,680 bytes per token; on 8 x 80 GB GPUs, after 141 GB of weights and 10%
headroom, about 449 GB are left, about 1.37 M tokens, about 159 Kimi requests of 8,590 tokens.
Experiment 01 (part "kv_capacity") and experiment 02 (part "transfer") call these functions.

Units: `_bytes` bytes; `_gb` = 1e9 bytes (not GiB); `_frac` a fraction in [0, 1); token and request
counts are ints. Invalid input raises ValueError with a message naming the argument.
"""

from __future__ import annotations

import math


def _require_count(name: str, value: int) -> None:
    """Counts (layers, heads, GPUs, ...) are ints >= 1; bool is not a count."""
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ValueError(f"{name} must be an int >= 1, got {value!r}")


def kv_bytes_per_token(num_layers: int, num_kv_heads: int, head_dim: int, bytes_per_elem: float) -> float:
    """KV-cache bytes one token occupies across all layers (lecture §2.2, §7 Q2).

    num_layers:     transformer layers (int >= 1).
    num_kv_heads:   key/value heads per layer (int >= 1); with GQA this is fewer than the query heads.
    head_dim:       elements per head (int >= 1).
    bytes_per_elem: bytes per stored element (> 0): 2 for BF16/FP16, 1 for FP8, 0.5 for 4-bit.
    Returns:        bytes per token (float), counting both the K and the V vector.
    Raises ValueError naming the argument: counts not ints >= 1, bytes_per_elem not a finite number > 0.
    """
    # TODO(ex02): implement kv_bytes_per_token
    raise NotImplementedError("ex02: kv_bytes_per_token")


def hbm_for_kv_bytes(num_gpus: int, hbm_per_gpu_gb: float, weight_bytes: float, headroom_frac: float) -> float:
    """HBM left for the KV cache once the weights are loaded, minus headroom (lecture §7 Q2).

    num_gpus:       GPUs serving one model replica (int >= 1).
    hbm_per_gpu_gb: HBM per GPU in GB = 1e9 bytes (> 0); an "80 GB" card is 80.
    weight_bytes:   bytes of all model weights across the GPUs (>= 0), e.g. 141e9 for 70B in BF16.
    headroom_frac:  fraction of what is left after the weights that stays free for activations and
                    fragmentation, in [0, 1).
    Returns:        bytes available for KV = (num_gpus x hbm_per_gpu_gb x 1e9 - weight_bytes) x (1 - headroom_frac),
                    the order the lecture's answer uses (subtract the weights first, then keep the headroom).
    Raises ValueError naming the argument: num_gpus not an int >= 1, hbm_per_gpu_gb not > 0,
    weight_bytes < 0 or larger than the total HBM ("weight_bytes ... do not fit"), headroom_frac outside [0, 1).
    """
    # TODO(ex02): implement hbm_for_kv_bytes
    raise NotImplementedError("ex02: hbm_for_kv_bytes")


def kv_capacity_tokens(free_bytes: float, kv_bytes_per_token: float) -> int:
    """Whole tokens whose KV fits in `free_bytes` (lecture §1.2: ~1.37 M tokens in 449 GB).

    free_bytes:         bytes available for KV (finite, >= 0).
    kv_bytes_per_token: bytes one token's KV occupies (finite, > 0).
    Returns:            floor(free_bytes / kv_bytes_per_token) as an int (a partial token does not fit).
    Raises ValueError naming the argument when free_bytes < 0 or kv_bytes_per_token <= 0 (or not finite).
    """
    # TODO(ex02): implement kv_capacity_tokens
    raise NotImplementedError("ex02: kv_capacity_tokens")


def requests_that_fit(capacity_tokens: int, mean_tokens_per_request: float) -> int:
    """Whole requests whose KV fits, at a mean length per request (lecture §1.2: ~159 of 8,590 tokens).

    capacity_tokens:         tokens of KV that fit (int >= 0).
    mean_tokens_per_request: mean tokens per request (finite, > 0).
    Returns:                 floor(capacity_tokens / mean_tokens_per_request) as an int.
    Raises ValueError naming the argument when capacity_tokens is not an int >= 0 or
    mean_tokens_per_request is not a finite number > 0.
    """
    # TODO(ex02): implement requests_that_fit
    raise NotImplementedError("ex02: requests_that_fit")
