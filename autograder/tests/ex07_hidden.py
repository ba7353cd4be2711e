"""Hidden cases for ex07 (tokens per parameter, offload order): other MoE models and batches, ties, invalid input.

Expected values are computed from the answer key by `python -m autograder expected`.
"""

import numpy as np
from hypothesis import strategies as st

from autograder.tests._generated import examples, magnitudes
from hetero.checks import Case

EXACT = "one product and quotient of integers: correct code agrees to ~1e-16; 1e-9 allows only float rounding"
ROUTED_HINT = "batch x active_experts / num_routed_experts, as a float (no integer division)"
SHARED_HINT = "every token uses every shared-expert parameter: the batch size, as a float"
ORDER_HINT = "ascending tokens per parameter; ties keep the dict's order (stable sort, not alphabetical)"

# (label, batch, active_experts, num_routed_experts)
_ROUTED = [
    ("kimi_k2_b64", 64, 8, 384),
    ("qwen3_235b_b32", 32, 8, 128),
    ("mixtral_b1", 1, 2, 8),
    ("deepseek_v2_b128", 128, 6, 160),
    ("deepseek_v3_b3", 3, 8, 256),
    ("all_experts_active", 5, 8, 8),
]
CASES = [
    Case(
        f"ex07.tokens_per_routed_expert.{label}",
        "tokens_per_routed_expert",
        (b, k, n),
        rel_tol=1e-9,
        tol_note=EXACT,
        unit="tokens",
        hint=ROUTED_HINT,
        points=1.0,
        kind="largest valid" if k == n else "",
    )
    for label, b, k, n in _ROUTED
]
CASES += [
    Case(
        "ex07.tokens_per_routed_expert.zero_batch",
        "tokens_per_routed_expert",
        (0, 8, 256),
        raises="ValueError",
        hint="batch 0 must raise ValueError naming batch",
        points=0.5,
    ),
    Case(
        "ex07.tokens_per_routed_expert.zero_active",
        "tokens_per_routed_expert",
        (64, 0, 256),
        raises="ValueError",
        hint="active_experts 0 must raise ValueError naming active_experts",
        points=0.5,
    ),
]

CASES += [
    Case(
        f"ex07.tokens_per_shared_expert.b{b}",
        "tokens_per_shared_expert",
        (b,),
        rel_tol=1e-9,
        tol_note=EXACT,
        unit="tokens",
        hint=SHARED_HINT,
        points=0.5,
    )
    for b in (2, 7, 256, 1000)  # batch 1 is a public case
]
CASES += [
    Case(
        f"ex07.tokens_per_shared_expert.invalid_{label}",
        "tokens_per_shared_expert",
        (b,),
        raises="ValueError",
        hint="a batch below 1 must raise ValueError naming batch",
        points=0.5,
    )
    for label, b in (("zero", 0), ("negative", -3))
]

_rng = np.random.default_rng(707)
_random_parts = {f"part{i}": float(v) for i, v in enumerate(_rng.uniform(0.01, 100.0, size=6))}
# (label, tokens_per_param)
_ORDER = [
    # the embedding table: each token reads one of its 163,840 rows (Kimi K2's vocabulary), so it goes first
    (
        "kimi_k2_b64_with_embedding",
        {"routed experts": 64 * 8 / 384, "shared expert": 64.0, "attention": 64.0, "embedding": 64 / 163840},
    ),
    ("tie_in_reverse_listing", {"attention": 64.0, "shared expert": 64.0, "routed experts": 2.0}),
    ("mixtral_no_shared", {"attention": 32.0, "experts": 8.0}),
    ("single_part", {"attention": 1.0}),
    ("three_way_tie_not_alphabetical", {"zeta": 1.0, "alpha": 1.0, "mid": 1.0}),
    ("random_six", _random_parts),
]
CASES += [
    Case(
        f"ex07.offload_order.{label}",
        "offload_order",
        (d,),
        unit="part names",
        tol_note="list of names: exact",
        hint=ORDER_HINT,
        points=1.0,
        kind="tie" if "tie" in label else "smallest valid" if len(d) == 1 else "",
    )
    for label, d in _ORDER
]
CASES += [
    Case(
        f"ex07.offload_order.invalid_{label}",
        "offload_order",
        (d,),
        raises="ValueError",
        hint="a value that is not a finite number > 0 must raise ValueError naming the part",
        points=0.5,
    )
    for label, d in (
        ("zero", {"attention": 64.0, "experts": 0.0}),
        ("negative", {"experts": -2.0}),
        ("infinite", {"experts": float("inf")}),
    )
]

# Top-1 routing (Llama 4 Maverick: 1 of 128 routed experts per token; Switch Transformer) is valid:
# active_experts >= 1, and 1 is the boundary.
CASES += [
    Case(
        f"ex07.tokens_per_routed_expert.{label}",
        "tokens_per_routed_expert",
        (b, k, n),
        rel_tol=1e-9,
        tol_note=EXACT,
        unit="tokens",
        hint="active_experts = 1 (top-1 routing) is valid (>= 1); " + ROUTED_HINT,
        points=0.5,
        kind="smallest valid",
    )
    for label, b, k, n in (("llama4_maverick_top1_b64", 64, 1, 128), ("switch_top1_b1", 1, 1, 1))
]
CASES += [
    Case(
        "ex07.tokens_per_routed_expert.fewer_experts_than_active",
        "tokens_per_routed_expert",
        (64, 8, 7),
        raises="ValueError",
        hint="num_routed_experts < active_experts must raise ValueError naming num_routed_experts",
        points=0.5,
    ),
]

# Hypothesis-generated inputs (autograder/tests/_generated.py: derandomized, so the same inputs on every run);
# the expected values come from the answer key. Routed-expert counts never below the active ones (equal is
# valid); offload dicts whose values often tie (drawn from a few levels), so the stable order is tested.
_ROUTING = st.integers(1, 16).flatmap(
    lambda k: st.tuples(st.integers(1, 10**6), st.just(k), st.integers(k, 512))
)  # (batch, active, routed)
for i, args in enumerate(examples(_ROUTING, 3)):
    CASES.append(
        Case(
            f"ex07.tokens_per_routed_expert.hyp_{i}",
            "tokens_per_routed_expert",
            args,
            rel_tol=1e-9,
            tol_note=EXACT,
            unit="tokens",
            hint=ROUTED_HINT,
            points=0.5,
        )
    )
for i, args in enumerate(examples(st.tuples(st.integers(1, 10**9)), 1)):
    CASES.append(
        Case(
            f"ex07.tokens_per_shared_expert.hyp_{i}",
            "tokens_per_shared_expert",
            args,
            rel_tol=1e-9,
            tol_note=EXACT,
            unit="tokens",
            hint=SHARED_HINT,
            points=0.5,
        )
    )
# Names from letters, "_" and " " (joined from a list: st.text would write a Unicode table cache to disk).
_PART_NAMES = st.lists(st.sampled_from("abcdefghijklmnopqrstuvwxyz _"), min_size=1, max_size=12).map("".join)
_LEVELS = st.one_of(st.sampled_from([0.03125, 2.0, 64.0]), magnitudes(-3, 4))  # ties, and arbitrary values
for i, d in enumerate(examples(st.dictionaries(_PART_NAMES, _LEVELS, min_size=1, max_size=8), 2)):
    CASES.append(
        Case(
            f"ex07.offload_order.hyp_{i}",
            "offload_order",
            (d,),
            unit="part names",
            tol_note="list of names: exact",
            hint=ORDER_HINT,
            points=0.5,
        )
    )
