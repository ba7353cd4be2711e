"""Exercise ex10: skip vs defer on the small MoE (lecture §4.4).

KTransformers' expert deferral (§4.3) lets the k lowest-weighted of a token's routed experts finish
one layer late: their output of layer l is added to the residual stream together with layer l+1's
MoE output, so the CPU can compute them while the GPU already runs layer l+1's attention. Skipping
the same k experts instead throws their output away. You write the three pieces the small MoE in
`hetero.moe` calls for every layer when it evaluates `full`, `skip-k` and `defer-k`:

1. `lowest_k_mask`: which k of each token's routed experts have the smallest weights (with a tie rule);
2. `split_topk_weights`: split the routing weights into the part added now and the part added later;
3. `moe_residual_update`: the residual update of one layer, including the output carried from the
   layer before and the output carried to the layer after.

Conventions used by all three functions
- T tokens, K routed experts per token (K = 4 in the lecture's model), D the model width.
- `topk_weights[t, j]` is the gate weight of token t's j-th routed expert ("slot" j). The router in
  `hetero.moe` lists slots in descending weight order, but these functions must not rely on that:
  they work for any slot order.
- Tie rule: when several slots of a token have equal weights, the slot with the HIGHER index counts as
  the smaller one (it is dropped / deferred first). In router order, a higher slot index is a lower rank.
- Weights are dimensionless (they are the renormalised softmax gate of the router; any non-negative
  values are accepted). Hidden states, shared and expert outputs are in the model's hidden units.
- Skipped weights are NOT renormalised over the remaining experts: skipping simply drops their output.
- Modes: "full" (nothing skipped or deferred; k is checked but otherwise ignored), "skip" (the k
  smallest are dropped), "defer" (the k smallest are added one layer later).
- The last layer has no next layer, so it defers nothing: in "defer" mode all K experts are added
  immediately there. Skipping still applies to the last layer.
- The lecture's rule keeps at least 2 of 4 experts immediate (k <= 2); k = 3 is allowed here for the
  experiment and goes beyond that rule.
"""

from __future__ import annotations

from typing import Optional

import torch

MODES = ("full", "skip", "defer")


def lowest_k_mask(topk_weights: torch.Tensor, k: int) -> torch.Tensor:
    """Mark, per token, the k routed experts with the smallest weights (lecture §4.3-§4.4).

    topk_weights: float tensor [T, K], dimensionless gate weights of each token's K routed experts.
    k:            number of experts to mark per token, 0 <= k <= K.
    Returns:      bool tensor [T, K]: True where the slot is among the token's k smallest weights.
                  Exactly k True values per row. Ties: among equal weights the higher slot index counts
                  as smaller.
    Raises ValueError naming the argument: topk_weights not a 2-D floating tensor ("topk_weights ...");
    k not an int or outside [0, K] ("k ...").
    """
    # BEGIN SOLUTION
    if not isinstance(topk_weights, torch.Tensor) or topk_weights.dim() != 2:
        raise ValueError(f"topk_weights must be a 2-D tensor [T, K], got {type(topk_weights).__name__} "
                         f"of shape {tuple(getattr(topk_weights, 'shape', ()))}")
    if not topk_weights.is_floating_point():
        raise ValueError(f"topk_weights must be a floating tensor, got dtype {topk_weights.dtype}")
    num_slots = topk_weights.shape[1]
    if isinstance(k, bool) or not isinstance(k, int) or not 0 <= k <= num_slots:
        raise ValueError(f"k must be an int in [0, {num_slots}], got {k!r}")
    # Reverse the slots so that a stable ascending sort puts the higher original index first among ties.
    flipped = topk_weights.flip(dims=(1,))  # [T, K]
    order = torch.sort(flipped, dim=1, stable=True).indices  # [T, K], ascending weight
    smallest = (num_slots - 1) - order[:, :k]  # [T, k] original slot indices
    mask = torch.zeros(topk_weights.shape, dtype=torch.bool, device=topk_weights.device)
    mask.scatter_(1, smallest, True)
    return mask
    # END SOLUTION


def split_topk_weights(topk_weights: torch.Tensor, k: int, mode: str) -> tuple[torch.Tensor, torch.Tensor]:
    """Split the routing weights into (immediate, deferred) weights for one layer (lecture §4.4).

    topk_weights: float tensor [T, K], dimensionless gate weights.
    k:            number of lowest-weighted experts per token to skip or defer, 0 <= k <= K.
    mode:         "full", "skip" or "defer".
    Returns:      (immediate, deferred), two float tensors [T, K] of the same dtype as topk_weights.
                  full:  immediate = topk_weights, deferred = 0.
                  skip:  immediate = topk_weights with the k smallest per token set to 0; deferred = 0
                         (a skipped expert is neither added now nor later).
                  defer: immediate = topk_weights with the k smallest set to 0; deferred = the k smallest
                         (and 0 elsewhere), so immediate + deferred == topk_weights.
                  The k smallest are chosen with the tie rule of `lowest_k_mask`. No renormalisation.
    Raises ValueError naming the argument: unknown mode ("mode ..."), and the rules of `lowest_k_mask`
    for topk_weights and k.
    """
    # BEGIN SOLUTION
    if mode not in MODES:
        raise ValueError(f"mode must be one of {MODES}, got {mode!r}")
    mask = lowest_k_mask(topk_weights, k)  # [T, K] bool, validates topk_weights and k
    zeros = torch.zeros_like(topk_weights)
    if mode == "full":
        return topk_weights.clone(), zeros
    immediate = torch.where(mask, zeros, topk_weights)
    if mode == "skip":
        return immediate, zeros
    return immediate, torch.where(mask, topk_weights, zeros)
    # END SOLUTION


def moe_residual_update(x: torch.Tensor, shared_out: torch.Tensor, expert_out: torch.Tensor,
                        topk_weights: torch.Tensor, carry: Optional[torch.Tensor], k: int, mode: str,
                        last_layer: bool) -> tuple[torch.Tensor, Optional[torch.Tensor]]:
    """One layer's MoE residual update with skipping or deferral (lecture §4.3-§4.4).

    x:            float tensor [T, D], the residual stream after this layer's attention (hidden units).
    shared_out:   float tensor [T, D], this layer's shared-expert output.
    expert_out:   float tensor [T, K, D], the (unweighted) outputs of each token's K routed experts,
                  slot j matching topk_weights[:, j].
    topk_weights: float tensor [T, K], dimensionless gate weights.
    carry:        float tensor [T, D] or None: the deferred expert output from the previous layer
                  (already weighted), added here; None when nothing was deferred into this layer.
    k:            number of lowest-weighted experts to skip or defer, 0 <= k <= K.
    mode:         "full", "skip" or "defer".
    last_layer:   True for the model's last layer, which defers nothing.
    Returns:      (x_new, carry_out):
                  x_new [T, D] = x + shared_out + sum_j immediate[:, j] * expert_out[:, j] (+ carry if not
                      None), summed in that order: (x + shared_out) + weighted expert sum, then + carry;
                  carry_out [T, D] = sum_j deferred[:, j] * expert_out[:, j] in "defer" mode on a layer
                      that is not the last one (a tensor even when k = 0); None otherwise (full, skip,
                      last layer).
                  On the last layer in "defer" mode all K experts are immediate.
    Raises ValueError naming the argument: unknown mode ("mode ..."); k outside [0, K] ("k ...");
    shapes that do not match x [T, D] ("shared_out ...", "expert_out ...", "topk_weights ...",
    "carry ...").
    """
    # BEGIN SOLUTION
    if mode not in MODES:
        raise ValueError(f"mode must be one of {MODES}, got {mode!r}")
    if not isinstance(x, torch.Tensor) or x.dim() != 2:
        raise ValueError(f"x must be a 2-D tensor [T, D], got shape {tuple(getattr(x, 'shape', ()))}")
    num_tokens, width = x.shape
    if not isinstance(shared_out, torch.Tensor) or shared_out.shape != x.shape:
        raise ValueError(f"shared_out must have the shape of x {tuple(x.shape)}, "
                         f"got {tuple(getattr(shared_out, 'shape', ()))}")
    if (not isinstance(expert_out, torch.Tensor) or expert_out.dim() != 3
            or expert_out.shape[0] != num_tokens or expert_out.shape[2] != width):
        raise ValueError(f"expert_out must have shape [T={num_tokens}, K, D={width}], "
                         f"got {tuple(getattr(expert_out, 'shape', ()))}")
    if (not isinstance(topk_weights, torch.Tensor)
            or tuple(topk_weights.shape) != tuple(expert_out.shape[:2])):
        raise ValueError(f"topk_weights must have shape {tuple(expert_out.shape[:2])}, "
                         f"got {tuple(getattr(topk_weights, 'shape', ()))}")
    if carry is not None and (not isinstance(carry, torch.Tensor) or carry.shape != x.shape):
        raise ValueError(f"carry must be None or have the shape of x {tuple(x.shape)}, "
                         f"got {tuple(getattr(carry, 'shape', ()))}")
    defers_here = mode == "defer" and not last_layer
    immediate, deferred = split_topk_weights(topk_weights, k, mode if defers_here or mode == "skip" else "full")
    x_new = x + shared_out + (immediate.unsqueeze(-1) * expert_out).sum(dim=1)  # [T, D]
    if carry is not None:
        x_new = x_new + carry
    carry_out = (deferred.unsqueeze(-1) * expert_out).sum(dim=1) if defers_here else None  # [T, D]
    return x_new, carry_out
    # END SOLUTION
