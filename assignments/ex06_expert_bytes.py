"""Exercise ex06: how many bytes of routed experts one decoded token reads, and the CPU decode bound
(lecture §4.2-§4.3, §7 Q6).

At batch 1 every decoded token activates `active_experts` routed experts in each MoE layer; their
weights live in CPU memory and the CPU reads all of them once per token. Reading is the bottleneck,
so bytes per token and the usable memory bandwidth bound the decode speed of the CPU side.

Units: parameters are counts; `bits_per_param` is bits (8 bits per byte; 4-bit weights with a
16-bit scale per block of 32 cost 4.5 bits); bytes are bytes; `_gb_per_s` is 1e9 bytes per second
(not 2**30).
"""

from __future__ import annotations


def expert_params(hidden: int, expert_dim: int, matrices_per_expert: int = 3) -> int:
    """Parameters of one routed expert (lecture §4.2, §7 Q6).

    A SwiGLU expert has `matrices_per_expert` weight matrices (gate, up, down: 3), each of
    `hidden` x `expert_dim` parameters. DeepSeek-V3: 3 x 7168 x 2048 = 44,040,192.

    hidden:              model width (count, > 0).
    expert_dim:          the expert's intermediate width, moe_intermediate_size (count, > 0).
    matrices_per_expert: weight matrices per expert (count, > 0).
    Returns:             parameters of one expert (int, count).
    Raises ValueError naming the argument when an argument is < 1.
    """
    # TODO(ex06): implement expert_params
    raise NotImplementedError("ex06: expert_params")


def expert_bytes_per_token(active_experts: int, params_per_expert: int, num_moe_layers: int,
                           bits_per_param: float) -> float:
    """Bytes of routed-expert weights one token reads at batch 1 (lecture §4.3, §7 Q6).

    Every MoE layer reads `active_experts` experts of `params_per_expert` parameters, each stored in
    `bits_per_param` bits. DeepSeek-V3 at 4.5 bits: 8 x 44,040,192 x 58 x 4.5 / 8 = 11.49e9 bytes.

    active_experts:    routed experts per token per layer (count, >= 1).
    params_per_expert: parameters of one expert (count, >= 1).
    num_moe_layers:    layers with routed experts (count, >= 1).
    bits_per_param:    storage bits per parameter including quantisation scales (bits, > 0).
    Returns:           bytes read per token (float, bytes; divide by 1e9 for GB).
    Raises ValueError naming the argument when a count is < 1 or bits_per_param <= 0.
    """
    # TODO(ex06): implement expert_bytes_per_token
    raise NotImplementedError("ex06: expert_bytes_per_token")


def decode_tokens_per_s_bound(bytes_per_token: float, bandwidth_gb_per_s: float, efficiency: float) -> float:
    """Upper bound on decode speed when every token must stream `bytes_per_token` (lecture §7 Q6).

    Usable bandwidth is `efficiency` x `bandwidth_gb_per_s` x 1e9 bytes/s; the bound is usable
    bandwidth / bytes per token. Lecture: 0.7 x 300e9 / 11.5e9 = 18 tokens/s.

    bytes_per_token:    bytes read per decoded token (bytes, > 0).
    bandwidth_gb_per_s: peak memory bandwidth (1e9 bytes/s, > 0).
    efficiency:         fraction of the peak a streaming read achieves (dimensionless, 0 < e <= 1).
    Returns:            tokens per second (float, tokens/s).
    Raises ValueError naming the argument when bytes_per_token <= 0, bandwidth_gb_per_s <= 0 or
    efficiency is outside (0, 1].
    """
    # TODO(ex06): implement decode_tokens_per_s_bound
    raise NotImplementedError("ex06: decode_tokens_per_s_bound")
