"""Exercise ex07: how many tokens use each parameter at batch B, and which parts go to the CPU first
(lecture §4.2, §7 Q7).

A weight read from memory is worth as many multiply-adds as there are tokens in the batch that use
it ("tokens per parameter", proportional to arithmetic intensity in FLOP per byte). KTransformers
offloads the parts with the lowest value to CPU memory first and lets the CPU compute them in place.

Units: batch sizes and expert counts are counts; tokens per parameter is tokens (a float, since it
is an average over experts).
"""

from __future__ import annotations


def tokens_per_routed_expert(batch: int, active_experts: int, num_routed_experts: int) -> float:
    """Average number of tokens of a batch that use one routed expert (lecture §4.2, §7 Q7).

    Each of the `batch` tokens picks `active_experts` of the `num_routed_experts` experts; on
    average (balanced routing) an expert serves batch x active_experts / num_routed_experts tokens.
    DeepSeek-V3 at batch 64: 64 x 8 / 256 = 2.0. The result is a real number (batch 1 gives 0.03125).

    batch:              tokens decoded together (count, >= 1).
    active_experts:     routed experts each token uses per layer (count, >= 1).
    num_routed_experts: routed experts per layer (count, >= active_experts).
    Returns:            tokens per routed-expert parameter (float, tokens).
    Raises ValueError naming the argument when batch < 1, active_experts < 1 or
    num_routed_experts < active_experts.
    """
    # BEGIN SOLUTION
    if batch < 1:
        raise ValueError(f"batch must be >= 1, got {batch}")
    if active_experts < 1:
        raise ValueError(f"active_experts must be >= 1, got {active_experts}")
    if num_routed_experts < active_experts:
        raise ValueError(f"num_routed_experts must be >= active_experts ({active_experts}), "
                         f"got {num_routed_experts}")
    return batch * active_experts / num_routed_experts
    # END SOLUTION


def tokens_per_shared_expert(batch: int) -> float:
    """Tokens of a batch that use each shared-expert (or attention) parameter (lecture §4.2, §7 Q7).

    Every token goes through the shared expert and the attention projections, so each of their
    parameters serves all `batch` tokens.

    batch:   tokens decoded together (count, >= 1).
    Returns: tokens per parameter (float, tokens).
    Raises ValueError naming the argument when batch < 1.
    """
    # BEGIN SOLUTION
    if batch < 1:
        raise ValueError(f"batch must be >= 1, got {batch}")
    return float(batch)
    # END SOLUTION


def offload_order(tokens_per_param: dict[str, float]) -> list[str]:
    """The order in which parts of the model move to CPU memory (lecture §4.2, §7 Q7).

    Lowest tokens per parameter (lowest arithmetic intensity) first: that part gains least from the
    GPU's compute and most from the CPU's cheap capacity. Ties keep the order in which the parts
    appear in `tokens_per_param` (a stable sort), so a caller lists tied parts by its secondary
    preference: the lecture keeps attention last because its KV cache lives on the GPU.
    Example: {"routed experts": 2.0, "shared expert": 64.0, "attention": 64.0}
    -> ["routed experts", "shared expert", "attention"].

    tokens_per_param: part name -> tokens per parameter (tokens, finite, > 0); not empty.
    Returns:          part names, first to offload first (list of str).
    Raises ValueError naming the argument when tokens_per_param is empty or a value is not a finite
    number > 0 (the message names the part).
    """
    # BEGIN SOLUTION
    if not tokens_per_param:
        raise ValueError("tokens_per_param must not be empty")
    for name, value in tokens_per_param.items():
        if not (0 < value < float("inf")):
            raise ValueError(f"tokens_per_param[{name!r}] must be a finite number > 0, got {value}")
    return sorted(tokens_per_param, key=lambda name: tokens_per_param[name])
    # END SOLUTION
