"""Public cases of exercise 10 (skip vs defer on the small MoE, lecture §4.4).

Every case uses tensors small enough to check by hand. One token's weights [0.5, 0.25, 0.15, 0.1]
over 4 routed experts; with k = 2 the two smallest (slots 2 and 3) are skipped or deferred.
"""

import torch

from hetero.checks import Case

W = torch.tensor([[0.5, 0.3, 0.15, 0.05], [0.4, 0.2, 0.2, 0.2]])  # [T=2, K=4]; row 1 has a 3-way tie
X = torch.tensor([[1.0, 2.0]])  # [T=1, D=2], residual stream after attention
SHARED = torch.tensor([[0.5, -0.5]])  # [T, D]
EXPERTS = torch.tensor([[[1.0, 0.0], [0.0, 1.0], [2.0, 2.0], [4.0, -4.0]]])  # [T, K=4, D]
W1 = torch.tensor([[0.5, 0.25, 0.15, 0.1]])  # [T, K]

FLOAT_TOL = dict(rel_tol=1e-6, abs_tol=1e-6,
                 tol_note="float32 sums of four products; 1e-6 allows any summation order")

CASES = [
    Case(id="ex10.lowest_k_mask.ties", func="lowest_k_mask", args=(W, 2),
         expect=torch.tensor([[False, False, True, True], [False, False, True, True]]),
         unit="bool mask [T, K]", tol_note="exact (booleans)",
         hint="mark the k SMALLEST weights of each row; among equal weights the higher slot index goes "
              "first (row 2: slots 2 and 3, not 1 and 2)"),
    Case(id="ex10.lowest_k_mask.k_zero", func="lowest_k_mask", args=(W, 0),
         expect=torch.zeros(2, 4, dtype=torch.bool), unit="bool mask [T, K]", tol_note="exact (booleans)",
         hint="k = 0 marks nothing (an off-by-one marks one expert)"),
    Case(id="ex10.split_topk_weights.defer", func="split_topk_weights", args=(W1, 2, "defer"),
         expect=(torch.tensor([[0.5, 0.25, 0.0, 0.0]]), torch.tensor([[0.0, 0.0, 0.15, 0.1]])),
         unit="dimensionless weights (immediate, deferred)", **FLOAT_TOL,
         hint="defer keeps the deferred weights for the next layer: immediate + deferred == weights"),
    Case(id="ex10.split_topk_weights.skip", func="split_topk_weights", args=(W1, 2, "skip"),
         expect=(torch.tensor([[0.5, 0.25, 0.0, 0.0]]), torch.tensor([[0.0, 0.0, 0.0, 0.0]])),
         unit="dimensionless weights (immediate, deferred)", **FLOAT_TOL,
         hint="a skipped expert is dropped: its weight is neither immediate nor deferred, and the "
              "remaining weights are not renormalised"),
    Case(id="ex10.moe_residual_update.defer_2", func="moe_residual_update",
         args=(X, SHARED, EXPERTS, W1, None, 2, "defer", False),
         expect=(torch.tensor([[2.0, 1.75]]), torch.tensor([[0.7, -0.1]])),
         unit="hidden units ([T, D] new residual, [T, D] carry)", **FLOAT_TOL,
         hint="x + shared + 0.5*e0 + 0.25*e1 now; 0.15*e2 + 0.1*e3 is carried to the next layer"),
    Case(id="ex10.moe_residual_update.last_layer", func="moe_residual_update",
         args=(X, SHARED, EXPERTS, W1, torch.tensor([[1.0, 1.0]]), 2, "defer", True),
         expect=(torch.tensor([[3.7, 2.65]]), None),
         unit="hidden units ([T, D] new residual, carry)", **FLOAT_TOL,
         hint="the last layer has no next layer: it adds all 4 experts and the incoming carry, "
              "and returns None as carry"),
    Case(id="ex10.moe_residual_update.skip_2", func="moe_residual_update",
         args=(X, SHARED, EXPERTS, W1, None, 2, "skip", False),
         expect=(torch.tensor([[2.0, 1.75]]), None),
         unit="hidden units ([T, D] new residual, carry)", **FLOAT_TOL,
         hint="skip drops the 2 smallest experts' output; nothing is carried (carry None)"),
    Case(id="ex10.split_topk_weights.bad_k", func="split_topk_weights", args=(W1, 5, "defer"),
         raises="ValueError", tol_note="an exception is expected",
         hint="k must lie in [0, K] with K = 4 routed experts per token; raise ValueError naming k"),
]
