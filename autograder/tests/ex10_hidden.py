"""Hidden cases of exercise 10 (skip vs defer, lecture §4.4). Expected values come from solutions/.

Inputs are tensors of random tiny MoE layers (`Gen("moe.tiny_layer", ...)`, built by `hetero.moe`
from a seeded torch.Generator: real routing weights in router order, real shared and expert
outputs), gate weights with many ties (`Gen("moe.tied_weights", ...)`), invalid input, and the harness
`moe.deferral_table` (hetero.harness.moe), which loads a tiny trained float64 MoE
(shared/hetero/data/citymoe-grading-seed*.pt) and evaluates all seven forward modes with the
submitted functions.
"""

from typing import Any

from hetero.checks import Case, Gen

F32: dict[str, Any] = dict(
    rel_tol=1e-5,
    abs_tol=1e-6,
    tol_note="float32 tensors: 1e-5 relative allows another summation order of the 4 products",
)
F64: dict[str, Any] = dict(
    rel_tol=1e-10, abs_tol=1e-12, tol_note="float64 tensors: any summation order agrees to 1e-10"
)
MASK: dict[str, Any] = dict(tol_note="exact (booleans)", unit="bool mask [T, K]")
SPLIT_UNIT = "dimensionless weights (immediate, deferred)"
UPDATE_UNIT = "hidden units ([T, D] new residual, [T, D] carry or None)"


def layer(seed, part, **shape):
    return Gen("moe.tiny_layer", {"seed": seed, "part": part, **shape})


def update_args(seed, carry, k, mode, last_layer, **shape):
    parts = ("x", "shared_out", "expert_out", "topk_weights")
    return tuple(layer(seed, p, **shape) for p in parts) + (layer(seed, carry, **shape), k, mode, last_layer)


TIE_HINT = "among equal weights the higher slot index counts as smaller and goes first"
K_HINT = "mark exactly k experts per token: the k smallest weights, not k+1 or k-1"

CASES = [
    # lowest_k_mask: real router weights and tie-heavy weights
    Case(
        id="ex10.lowest_k_mask.layer_k1", func="lowest_k_mask", args=(layer(3, "topk_weights"), 1), hint=K_HINT, **MASK
    ),
    Case(
        id="ex10.lowest_k_mask.layer16_k3",
        func="lowest_k_mask",
        args=(layer(11, "topk_weights", tokens=10, n_experts=16), 3),
        hint=K_HINT,
        **MASK,
    ),
    Case(
        id="ex10.lowest_k_mask.ties_k1",
        func="lowest_k_mask",
        args=(Gen("moe.tied_weights", {"seed": 9}), 1),
        hint=TIE_HINT,
        points=1.5,
        kind="tie",
        **MASK,
    ),
    Case(
        id="ex10.lowest_k_mask.ties_k2",
        func="lowest_k_mask",
        args=(Gen("moe.tied_weights", {"seed": 5, "levels": 2, "tokens": 12}), 2),
        hint=TIE_HINT,
        points=1.5,
        kind="tie",
        **MASK,
    ),
    Case(
        id="ex10.lowest_k_mask.ties_k3",
        func="lowest_k_mask",
        args=(Gen("moe.tied_weights", {"seed": 21}), 3),
        hint=TIE_HINT,
        points=1.5,
        kind="tie",
        **MASK,
    ),
    Case(
        id="ex10.lowest_k_mask.k_all",
        func="lowest_k_mask",
        args=(layer(4, "topk_weights"), 4),
        hint="k = K marks every slot",
        kind="largest valid",
        **MASK,
    ),
    Case(
        id="ex10.lowest_k_mask.k_negative",
        func="lowest_k_mask",
        args=(layer(3, "topk_weights"), -1),
        raises="ValueError",
        points=0.5,
        tol_note="an exception is expected",
        hint="k < 0 is invalid: raise ValueError naming k",
    ),
    Case(
        id="ex10.lowest_k_mask.k_too_large",
        func="lowest_k_mask",
        args=(Gen("moe.tied_weights", {"seed": 1, "tokens": 1}), 5),
        raises="ValueError",
        points=0.5,
        tol_note="an exception is expected",
        hint="k larger than the number of routed experts (4) is invalid",
    ),
    # split_topk_weights
    Case(
        id="ex10.split_topk_weights.defer_k1",
        func="split_topk_weights",
        args=(layer(7, "topk_weights"), 1, "defer"),
        unit=SPLIT_UNIT,
        hint="deferred holds the k smallest weights, immediate the rest",
        **F32,
    ),
    Case(
        id="ex10.split_topk_weights.skip_k3",
        func="split_topk_weights",
        args=(layer(8, "topk_weights", tokens=9, n_experts=16), 3, "skip"),
        unit=SPLIT_UNIT,
        hint="skip: the k smallest weights are dropped (deferred is all zeros, no renormalisation)",
        **F32,
    ),
    Case(
        id="ex10.split_topk_weights.ties_defer_k2",
        func="split_topk_weights",
        args=(Gen("moe.tied_weights", {"seed": 13}), 2, "defer"),
        unit=SPLIT_UNIT,
        hint=TIE_HINT,
        points=1.5,
        kind="tie",
        **F32,
    ),
    Case(
        id="ex10.split_topk_weights.full",
        func="split_topk_weights",
        args=(layer(9, "topk_weights"), 3, "full"),
        unit=SPLIT_UNIT,
        hint="full mode ignores k: everything is immediate, nothing deferred",
        kind="mode",
        **F32,
    ),
    Case(
        id="ex10.split_topk_weights.defer_all_f64",
        func="split_topk_weights",
        args=(layer(10, "topk_weights", dtype="float64"), 4, "defer"),
        unit=SPLIT_UNIT,
        hint="keep the input dtype (float64 here) and defer all K when k = K",
        kind="dtype",
        **F64,
    ),
    Case(
        id="ex10.split_topk_weights.bad_mode",
        func="split_topk_weights",
        args=(layer(7, "topk_weights"), 1, "deferred"),
        raises="ValueError",
        points=0.5,
        tol_note="an exception is expected",
        hint="mode must be 'full', 'skip' or 'defer'; raise ValueError naming mode",
    ),
    # moe_residual_update
    Case(
        id="ex10.moe_residual_update.defer_k1",
        func="moe_residual_update",
        args=update_args(7, "none", 1, "defer", False),
        unit=UPDATE_UNIT,
        points=1.5,
        hint="the deferred output goes into the returned carry, not into this layer's residual",
        **F32,
    ),
    Case(
        id="ex10.moe_residual_update.defer_k2_carry",
        func="moe_residual_update",
        args=update_args(14, "carry", 2, "defer", False, tokens=8, n_experts=16),
        unit=UPDATE_UNIT,
        points=2,
        hint="add the incoming carry to this layer's residual and return this layer's own deferred output",
        kind="carry",
        **F32,
    ),
    Case(
        id="ex10.moe_residual_update.last_layer_k3",
        func="moe_residual_update",
        args=update_args(12, "carry", 3, "defer", True),
        unit=UPDATE_UNIT,
        points=2,
        hint="the last layer defers nothing: all K experts and the incoming carry are added, carry None",
        kind="last layer",
        **F32,
    ),
    Case(
        id="ex10.moe_residual_update.skip_k3",
        func="moe_residual_update",
        args=update_args(15, "none", 3, "skip", False),
        unit=UPDATE_UNIT,
        points=1.5,
        hint="skip drops the k smallest experts' output and carries nothing",
        **F32,
    ),
    Case(
        id="ex10.moe_residual_update.skip_last",
        func="moe_residual_update",
        args=update_args(16, "none", 2, "skip", True),
        unit=UPDATE_UNIT,
        hint="skipping also applies to the last layer (only deferral is impossible there)",
        kind="skip on the last layer",
        **F32,
    ),
    Case(
        id="ex10.moe_residual_update.full",
        func="moe_residual_update",
        args=update_args(17, "none", 0, "full", False, tokens=5, d_model=12),
        unit=UPDATE_UNIT,
        hint="full: x + shared + sum_j w_j * expert_j, carry None",
        kind="mode",
        **F32,
    ),
    Case(
        id="ex10.moe_residual_update.defer_k0",
        func="moe_residual_update",
        args=update_args(18, "carry", 0, "defer", False),
        unit=UPDATE_UNIT,
        hint="defer with k = 0 carries a zero tensor (not None) on a layer that is not the last",
        kind="smallest valid",
        **F32,
    ),
    Case(
        id="ex10.moe_residual_update.defer_f64",
        func="moe_residual_update",
        args=update_args(19, "carry", 2, "defer", False, tokens=12, d_model=16, n_experts=16, dtype="float64"),
        unit=UPDATE_UNIT,
        hint="keep the input dtype (float64 here)",
        kind="dtype",
        **F64,
    ),
    Case(
        id="ex10.moe_residual_update.bad_expert_shape",
        func="moe_residual_update",
        args=(
            layer(7, "x"),
            layer(7, "shared_out"),
            layer(7, "expert_out", d_model=6),
            layer(7, "topk_weights"),
            None,
            1,
            "defer",
            False,
        ),
        raises="ValueError",
        points=0.5,
        tol_note="an exception is expected",
        hint="expert_out must be [T, K, D] with the T and D of x; raise ValueError naming expert_out",
    ),
    Case(
        id="ex10.moe_residual_update.bad_carry_shape",
        func="moe_residual_update",
        args=(
            layer(7, "x"),
            layer(7, "shared_out"),
            layer(7, "expert_out"),
            layer(7, "topk_weights"),
            layer(7, "carry", tokens=5),
            1,
            "defer",
            False,
        ),
        raises="ValueError",
        points=0.5,
        tol_note="an exception is expected",
        hint="carry must be None or [T, D] like x; raise ValueError naming carry",
    ),
    Case(
        id="ex10.moe_residual_update.bad_k",
        func="moe_residual_update",
        args=update_args(7, "none", 5, "skip", False),
        raises="ValueError",
        points=0.5,
        tol_note="an exception is expected",
        hint="k must lie in [0, K]; raise ValueError naming k",
    ),
    # the whole forward: a tiny MoE trained in float64, seven modes, with the submitted functions
    Case(
        id="ex10.deferral_table.seed0",
        func="deferral_table",
        harness="moe.deferral_table",
        uses=("split_topk_weights", "moe_residual_update"),
        kwargs={"seed": 0},
        unit="nats/char (full_loss_nats) and milli-nats/char (delta_mnats)",
        rel_tol=1e-7,
        abs_tol=1e-6,
        tol_note="float64 model: losses agree to ~1e-12 across machines; 1e-6 absolute covers summation order",
        hint="run every mode: skip drops, defer carries to the next layer, the last layer defers nothing",
        points=4,
    ),
    Case(
        id="ex10.deferral_table.seed1",
        func="deferral_table",
        harness="moe.deferral_table",
        uses=("split_topk_weights", "moe_residual_update"),
        kwargs={"seed": 1, "val_names": 120},
        unit="nats/char (full_loss_nats) and milli-nats/char (delta_mnats)",
        rel_tol=1e-7,
        abs_tol=1e-6,
        tol_note="float64 model: losses agree to ~1e-12 across machines; 1e-6 absolute covers summation order",
        hint="run every mode: skip drops, defer carries to the next layer, the last layer defers nothing",
        points=4,
    ),
]

# Shape validation that tensor broadcasting or a permissive check would hide: a 3-D tensor or a plain
# list as gate weights, and [1, ...] tensors that would broadcast silently over the T tokens.
CASES += [
    Case(
        id="ex10.lowest_k_mask.weights_3d",
        func="lowest_k_mask",
        args=(layer(3, "expert_out"), 1),
        raises="ValueError",
        points=0.5,
        tol_note="an exception is expected",
        hint="topk_weights must be a 2-D tensor [T, K]; a 3-D tensor must raise ValueError naming topk_weights "
        "(check the tensor AND its dimension)",
    ),
    Case(
        id="ex10.lowest_k_mask.weights_list",
        func="lowest_k_mask",
        args=([[0.5, 0.3, 0.2]], 1),
        raises="ValueError",
        points=0.5,
        tol_note="an exception is expected",
        hint="topk_weights must be a torch tensor; a plain list must raise ValueError naming topk_weights",
    ),
    Case(
        id="ex10.moe_residual_update.broadcast_shared_out",
        func="moe_residual_update",
        args=(
            layer(7, "x"),
            layer(7, "shared_out", tokens=1),
            layer(7, "expert_out"),
            layer(7, "topk_weights"),
            None,
            1,
            "defer",
            False,
        ),
        raises="ValueError",
        points=0.5,
        tol_note="an exception is expected",
        hint="shared_out must have exactly the shape of x [T, D]; a [1, D] tensor would broadcast silently: "
        "raise ValueError naming shared_out",
    ),
    Case(
        id="ex10.moe_residual_update.broadcast_topk_weights",
        func="moe_residual_update",
        args=(
            layer(7, "x"),
            layer(7, "shared_out"),
            layer(7, "expert_out"),
            layer(7, "topk_weights", tokens=1),
            None,
            1,
            "skip",
            False,
        ),
        raises="ValueError",
        points=0.5,
        tol_note="an exception is expected",
        hint="topk_weights must be [T, K] matching expert_out; a [1, K] tensor would broadcast silently: "
        "raise ValueError naming topk_weights",
    ),
]
