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
TIED = torch.tensor([[0.25, 0.25, 0.25, 0.25]])  # [T=1, K=4]: all four weights equal
F64 = torch.float64


def invalid(func: str, label: str, args: tuple, argument: str, why: str) -> Case:
    """An invalid input of `func`: it must raise ValueError naming `argument`."""
    return Case(f"ex10.{func}.{label}", func, args, raises="ValueError", tol_note="an exception is expected",
                hint=f"{why}; raise ValueError naming {argument}")


CASES = [
    Case(id="ex10.lowest_k_mask.ties", func="lowest_k_mask", args=(W, 2),
         expect=torch.tensor([[False, False, True, True], [False, False, True, True]]),
         unit="bool mask [T, K]", tol_note="exact (booleans)", kind="tie",
         hint="mark the k SMALLEST weights of each row; among equal weights the higher slot index goes "
              "first (row 2: slots 2 and 3, not 1 and 2)"),
    Case(id="ex10.lowest_k_mask.three_way_tie_k1", func="lowest_k_mask", args=(W, 1),
         expect=torch.tensor([[False, False, False, True], [False, False, False, True]]),
         unit="bool mask [T, K]", tol_note="exact (booleans)", kind="tie",
         hint="row 2 ties slots 1, 2 and 3 at 0.2: the HIGHEST index (3) counts as the smallest. torch.topk("
              "largest=False) and an unstable sort pick by their own order among equal values, not by this rule: "
              "sort the reversed row with stable=True, or sort by (weight, -slot)"),
    Case(id="ex10.lowest_k_mask.four_way_tie_k3", func="lowest_k_mask", args=(TIED, 3),
         expect=torch.tensor([[False, True, True, True]]), unit="bool mask [T, K]", tol_note="exact (booleans)",
         kind="tie",
         hint="four equal weights: the 3 highest slot indices (1, 2, 3) count as the 3 smallest; slot 0 stays"),
    Case(id="ex10.lowest_k_mask.k_zero", func="lowest_k_mask", args=(W, 0),
         expect=torch.zeros(2, 4, dtype=torch.bool), unit="bool mask [T, K]", tol_note="exact (booleans)",
         kind="smallest valid", hint="k = 0 marks nothing (an off-by-one marks one expert)"),
    Case(id="ex10.lowest_k_mask.k_equals_K", func="lowest_k_mask", args=(W, 4),
         expect=torch.ones(2, 4, dtype=torch.bool), unit="bool mask [T, K]", tol_note="exact (booleans)",
         kind="largest valid", hint="k = K = 4 is valid and marks every slot"),
    Case(id="ex10.split_topk_weights.defer", func="split_topk_weights", args=(W1, 2, "defer"),
         expect=(torch.tensor([[0.5, 0.25, 0.0, 0.0]]), torch.tensor([[0.0, 0.0, 0.15, 0.1]])),
         unit="dimensionless weights (immediate, deferred)", **FLOAT_TOL,
         hint="defer keeps the deferred weights for the next layer: immediate + deferred == weights"),
    Case(id="ex10.split_topk_weights.skip", func="split_topk_weights", args=(W1, 2, "skip"),
         expect=(torch.tensor([[0.5, 0.25, 0.0, 0.0]]), torch.tensor([[0.0, 0.0, 0.0, 0.0]])),
         unit="dimensionless weights (immediate, deferred)", **FLOAT_TOL,
         hint="a skipped expert is dropped: its weight is neither immediate nor deferred, and the "
              "remaining weights are not renormalised"),
    Case(id="ex10.split_topk_weights.tie_defer_1", func="split_topk_weights",
         args=(torch.tensor([[0.4, 0.2, 0.2, 0.2]]), 1, "defer"),
         expect=(torch.tensor([[0.4, 0.2, 0.2, 0.0]]), torch.tensor([[0.0, 0.0, 0.0, 0.2]])),
         unit="dimensionless weights (immediate, deferred)", kind="tie", **FLOAT_TOL,
         hint="slots 1, 2 and 3 tie at 0.2: the highest index, 3, is the one deferred (lowest_k_mask's tie rule)"),
    Case(id="ex10.split_topk_weights.defer_float64", func="split_topk_weights", args=(W1.to(F64), 2, "defer"),
         expect=(torch.tensor([[0.5, 0.25, 0.0, 0.0]], dtype=F64), torch.tensor([[0.0, 0.0, 0.15, 0.1]], dtype=F64)),
         unit="dimensionless weights (immediate, deferred)", kind="dtype", **FLOAT_TOL,
         hint="float64 weights give float64 results: build zeros with torch.zeros_like(topk_weights) (or its "
              "dtype), not torch.zeros(...), which is float32"),
    Case(id="ex10.split_topk_weights.everything_immediate", func="split_topk_weights", args=(W1, 3, "full"),
         expect=(torch.tensor([[0.5, 0.25, 0.15, 0.1]]), torch.tensor([[0.0, 0.0, 0.0, 0.0]])),
         unit="dimensionless weights (immediate, deferred)", kind="mode", **FLOAT_TOL,
         hint="full mode ignores k (it is only checked): every weight is immediate, nothing is deferred"),
    Case(id="ex10.moe_residual_update.defer_2", func="moe_residual_update",
         args=(X, SHARED, EXPERTS, W1, None, 2, "defer", False),
         expect=(torch.tensor([[2.0, 1.75]]), torch.tensor([[0.7, -0.1]])),
         unit="hidden units ([T, D] new residual, [T, D] carry)", **FLOAT_TOL,
         hint="x + shared + 0.5*e0 + 0.25*e1 now; 0.15*e2 + 0.1*e3 is carried to the next layer"),
    Case(id="ex10.moe_residual_update.carry_in", func="moe_residual_update",
         args=(X, SHARED, EXPERTS, W1, torch.tensor([[1.0, 1.0]]), 2, "defer", False),
         expect=(torch.tensor([[3.0, 2.75]]), torch.tensor([[0.7, -0.1]])),
         unit="hidden units ([T, D] new residual, [T, D] carry)", kind="carry", **FLOAT_TOL,
         hint="the carry from the previous layer [1, 1] is added now: x + shared + 0.5*e0 + 0.25*e1 + carry; this "
              "layer's own 0.15*e2 + 0.1*e3 is carried on"),
    Case(id="ex10.moe_residual_update.defer_0", func="moe_residual_update",
         args=(X, SHARED, EXPERTS, W1, None, 0, "defer", False),
         expect=(torch.tensor([[2.7, 1.65]]), torch.tensor([[0.0, 0.0]])),
         unit="hidden units ([T, D] new residual, [T, D] carry)", kind="smallest valid", **FLOAT_TOL,
         hint="defer with k = 0 adds all four experts now and still carries a tensor (of zeros), not None: only "
              "full, skip and the last layer carry None"),
    Case(id="ex10.moe_residual_update.defer_2_float64", func="moe_residual_update",
         args=(X.to(F64), SHARED.to(F64), EXPERTS.to(F64), W1.to(F64), None, 2, "defer", False),
         expect=(torch.tensor([[2.0, 1.75]], dtype=F64), torch.tensor([[0.7, -0.1]], dtype=F64)),
         unit="hidden units ([T, D] new residual, [T, D] carry)", kind="dtype", **FLOAT_TOL,
         hint="float64 inputs give float64 outputs: keep the input dtype"),
    Case(id="ex10.moe_residual_update.all_experts_now", func="moe_residual_update",
         args=(X, SHARED, EXPERTS, W1, None, 0, "full", False),
         expect=(torch.tensor([[2.7, 1.65]]), None),
         unit="hidden units ([T, D] new residual, carry)", kind="mode", **FLOAT_TOL,
         hint="full: x + shared + all four weighted experts = [2.7, 1.65]; nothing is carried (None)"),
    Case(id="ex10.moe_residual_update.last_layer", func="moe_residual_update",
         args=(X, SHARED, EXPERTS, W1, torch.tensor([[1.0, 1.0]]), 2, "defer", True),
         expect=(torch.tensor([[3.7, 2.65]]), None),
         unit="hidden units ([T, D] new residual, carry)", kind="last layer", **FLOAT_TOL,
         hint="the last layer has no next layer: it adds all 4 experts and the incoming carry, "
              "and returns None as carry"),
    Case(id="ex10.moe_residual_update.skip_2", func="moe_residual_update",
         args=(X, SHARED, EXPERTS, W1, None, 2, "skip", False),
         expect=(torch.tensor([[2.0, 1.75]]), None),
         unit="hidden units ([T, D] new residual, carry)", **FLOAT_TOL,
         hint="skip drops the 2 smallest experts' output; nothing is carried (carry None)"),
    Case(id="ex10.moe_residual_update.skipping_on_the_last_layer", func="moe_residual_update",
         args=(X, SHARED, EXPERTS, W1, None, 2, "skip", True),
         expect=(torch.tensor([[2.0, 1.75]]), None),
         unit="hidden units ([T, D] new residual, carry)", kind="skip on the last layer", **FLOAT_TOL,
         hint="skipping still applies on the last layer (only deferral cannot happen there): the 2 smallest are "
              "dropped, [2.0, 1.75], carry None"),
    invalid("split_topk_weights", "bad_k", (W1, 5, "defer"), "k", "k must lie in [0, K] with K = 4 routed experts"),
    invalid("split_topk_weights", "unknown_mode", (W1, 1, "drop"), "mode", "mode must be 'full', 'skip' or 'defer'"),
    invalid("lowest_k_mask", "negative_k", (W, -2), "k", "k must lie in [0, K]"),
    invalid("lowest_k_mask", "nested_list", ([[0.6, 0.4]], 1), "topk_weights",
            "topk_weights must be a torch tensor, not a list"),
    invalid("lowest_k_mask", "weights_1d", (torch.tensor([0.5, 0.5]), 1), "topk_weights",
            "topk_weights must be 2-D [T, K]: check its dimension too"),
    invalid("moe_residual_update", "k_below_zero", (X, SHARED, EXPERTS, W1, None, -1, "defer", False), "k",
            "k must lie in [0, K]"),
    invalid("moe_residual_update", "bad_shared_out", (X, torch.tensor([[0.5, -0.5, 0.0]]), EXPERTS, W1, None, 2,
                                                      "defer", False), "shared_out",
            "shared_out must have exactly the shape of x [T, D]"),
    invalid("moe_residual_update", "bad_expert_out", (X, SHARED, torch.zeros(1, 4, 3), W1, None, 2, "defer", False),
            "expert_out", "expert_out must be [T, K, D] with the T and D of x"),
    invalid("moe_residual_update", "bad_topk_weights", (X, SHARED, EXPERTS, torch.tensor([[0.5, 0.25, 0.25]]),
                                                        None, 1, "defer", False), "topk_weights",
            "topk_weights must be [T, K] with the K of expert_out"),
    invalid("moe_residual_update", "bad_carry", (X, SHARED, EXPERTS, W1, torch.tensor([[1.0, 1.0, 1.0]]), 2,
                                                 "defer", False), "carry",
            "carry must be None or [T, D] like x"),
]
