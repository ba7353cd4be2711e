"""Hidden cases for ex08 (deferral overlap): DeepSeek-V3-, Kimi K2- and Mixtral-like layers, seeded random layers.

Random layers keep gpu_s / cpu_per_expert_s away from whole numbers (fractional part in [0.1, 0.9]),
so the best deferral is never decided by float rounding. Expected values are computed from the answer
key by `python -m autograder expected`.
"""

import numpy as np
from hypothesis import strategies as st

from autograder.tests._generated import examples, finite_floats
from hetero.checks import Case

REL = "sums, products and a max of the inputs: correct code agrees to ~1e-15; 1e-9 allows only float rounding"
LAYER_HINT = (
    "the deferred experts run on the CPU while the GPU runs the next layer (they overlap: take the "
    "longer), the immediate ones run alone"
)
BEST_HINT = (
    "try d = 0 .. active_experts - min_immediate and return the smallest d with the minimal layer time "
    "(ties within float rounding count as equal)"
)
SPEEDUP_HINT = "layer time without deferral / layer time with the given deferral (> 1 is faster)"

# Per-layer times of the experiment 03 account (DeepSeek-V3 on an RTX 4090 + 2 Xeon sockets), in s.
DSV3_G, DSV3_C = 0.3692e-3, 0.05761e-3
_rng = np.random.default_rng(808)


def _random_layer() -> tuple[float, float, int]:
    k = int(_rng.integers(2, 13))
    c = float(_rng.uniform(0.02e-3, 0.2e-3))
    ratio = int(_rng.integers(0, k + 1)) + float(_rng.uniform(0.1, 0.9))
    return ratio * c, c, k


_RANDOM = [_random_layer() for _ in range(4)]

# (label, gpu_s, cpu_per_expert_s, active_experts, deferred)
_LAYER = [
    ("deepseek_v3_d0", DSV3_G, DSV3_C, 8, 0),
    ("deepseek_v3_d3", DSV3_G, DSV3_C, 8, 3),
    ("deepseek_v3_d6", DSV3_G, DSV3_C, 8, 6),
    ("deepseek_v3_all_deferred", DSV3_G, DSV3_C, 8, 8),
    ("kimi_k2_d4", 0.2e-3, 0.06e-3, 8, 4),
    ("mixtral_d1", 1.0e-3, 0.8e-3, 2, 1),
    ("no_gpu_work", 0.0, 0.05e-3, 8, 3),
] + [(f"random_{i}", g, c, k, int(_rng.integers(0, k + 1))) for i, (g, c, k) in enumerate(_RANDOM)]
CASES = [
    Case(
        f"ex08.layer_time_s.{label}",
        "layer_time_s",
        (g, c, k, d),
        rel_tol=1e-9,
        tol_note=REL,
        unit="s",
        hint=LAYER_HINT,
        points=1.0,
        kind="smallest valid" if d == 0 or g == 0 else "largest valid" if d == k else "",
    )
    for label, g, c, k, d in _LAYER
]
CASES += [
    Case(
        "ex08.layer_time_s.negative_gpu",
        "layer_time_s",
        (-1e-3, 0.05e-3, 8, 2),
        raises="ValueError",
        hint="gpu_s < 0 must raise ValueError naming gpu_s",
        points=0.5,
    ),
    Case(
        "ex08.layer_time_s.zero_cpu",
        "layer_time_s",
        (1e-3, 0.0, 8, 2),
        raises="ValueError",
        hint="cpu_per_expert_s = 0 must raise ValueError naming cpu_per_expert_s",
        points=0.5,
    ),
    Case(
        "ex08.layer_time_s.negative_deferred",
        "layer_time_s",
        (1e-3, 0.05e-3, 8, -1),
        raises="ValueError",
        hint="deferred = -1 must raise ValueError naming deferred",
        points=0.5,
    ),
]

# (label, gpu_s, cpu_per_expert_s, active_experts, min_immediate)
_BEST = [
    ("deepseek_v3", DSV3_G, DSV3_C, 8, 2),
    ("kimi_k2_fast_gpu", 0.2e-3, 0.06e-3, 8, 2),
    ("mixtral_nothing_to_defer", 1.0e-3, 0.8e-3, 2, 2),
    ("mixtral_one_immediate", 1.0e-3, 0.8e-3, 2, 1),
    ("no_minimum_slow_gpu", 5.0e-3, 0.05e-3, 8, 0),
    ("no_gpu_work", 0.0, 0.05e-3, 8, 2),
] + [(f"random_{i}", g, c, k, int(_rng.integers(0, k))) for i, (g, c, k) in enumerate(_RANDOM)]
CASES += [
    Case(
        f"ex08.best_deferred.{label}",
        "best_deferred",
        (g, c, k),
        kwargs={"min_immediate": m},
        tol_note="integer: exact",
        unit="experts",
        hint=BEST_HINT,
        points=1.5,
        kind="smallest valid" if m == 0 or g == 0 else "largest valid" if m == k else "",
    )
    for label, g, c, k, m in _BEST
]
CASES += [
    Case(
        "ex08.best_deferred.negative_min_immediate",
        "best_deferred",
        (1e-3, 0.05e-3, 8),
        kwargs={"min_immediate": -1},
        raises="ValueError",
        hint="min_immediate = -1 must raise ValueError naming min_immediate",
        points=0.5,
    ),
]

# (label, gpu_s, cpu_per_expert_s, active_experts, deferred)
_SPEEDUP = [
    ("deepseek_v3_d6", DSV3_G, DSV3_C, 8, 6),
    ("deepseek_v3_d0", DSV3_G, DSV3_C, 8, 0),
    ("kimi_k2_d4", 0.2e-3, 0.06e-3, 8, 4),
    ("mixtral_d1", 1.0e-3, 0.8e-3, 2, 1),
    ("cpu_bound_d8", 0.1e-3, 0.1e-3, 8, 8),
] + [(f"random_{i}", g, c, k, int(_rng.integers(0, k + 1))) for i, (g, c, k) in enumerate(_RANDOM)]
CASES += [
    Case(
        f"ex08.deferral_speedup.{label}",
        "deferral_speedup",
        (g, c, k, d),
        rel_tol=1e-9,
        tol_note=REL,
        unit="x",
        hint=SPEEDUP_HINT,
        points=1.0,
        kind="smallest valid" if d == 0 else "largest valid" if d == k else "",
    )
    for label, g, c, k, d in _SPEEDUP
]
CASES += [
    Case(
        "ex08.deferral_speedup.too_many_deferred",
        "deferral_speedup",
        (1e-3, 0.05e-3, 8, 9),
        raises="ValueError",
        hint="deferred = 9 > 8 active experts must raise ValueError naming deferred",
        points=0.5,
    ),
]

# Top-1 routing (active_experts = 1, Llama 4 Maverick / Switch Transformer) is valid: with no deferral the
# expert runs after the GPU part, with its only expert deferred it overlaps the next layer's GPU work.
CASES += [
    Case(
        f"ex08.layer_time_s.top1_d{d}",
        "layer_time_s",
        (0.2e-3, 0.3e-3, 1, d),
        rel_tol=1e-9,
        tol_note=REL,
        unit="s",
        hint="active_experts = 1 is valid (>= 1); " + LAYER_HINT,
        points=0.5,
        kind="smallest valid",
    )
    for d in (0, 1)
]
CASES += [
    Case(
        "ex08.best_deferred.top1_no_minimum",
        "best_deferred",
        (0.2e-3, 0.3e-3, 1),
        kwargs={"min_immediate": 0},
        tol_note="integer: exact",
        unit="experts",
        hint="active_experts = 1 is valid (>= 1); " + BEST_HINT,
        points=0.5,
        kind="smallest valid",
    ),
    Case(
        "ex08.deferral_speedup.top1_d1",
        "deferral_speedup",
        (0.2e-3, 0.3e-3, 1, 1),
        rel_tol=1e-9,
        tol_note=REL,
        unit="x",
        hint="active_experts = 1 is valid (>= 1); " + SPEEDUP_HINT,
        points=0.5,
        kind="smallest valid",
    ),
    Case(
        "ex08.layer_time_s.zero_active",
        "layer_time_s",
        (1e-3, 0.05e-3, 0, 0),
        raises="ValueError",
        hint="active_experts = 0 must raise ValueError naming active_experts",
        points=0.5,
    ),
    Case(
        "ex08.best_deferred.min_immediate_above_active",
        "best_deferred",
        (1e-3, 0.05e-3, 8),
        kwargs={"min_immediate": 9},
        raises="ValueError",
        hint="min_immediate = 9 > 8 active experts must raise ValueError naming min_immediate",
        points=0.5,
    ),
]

# Hypothesis-generated layers (autograder/tests/_generated.py: derandomized, so the same inputs on every run);
# the expected values come from the answer key. gpu_s = 0 and deferred = 0 or active_experts are valid
# boundaries. For best_deferred, gpu_s / cpu_per_expert_s is a whole number plus a fraction in [0.1, 0.9]
# (rounded to 1/1000), as in the seeded layers above, so the best deferral is never decided by float rounding.
_CPU_S = finite_floats(1e-6, 1e-2)  # one expert: 1 us .. 10 ms
_LAYER_ARGS = st.integers(1, 16).flatmap(
    lambda k: st.tuples(st.one_of(st.just(0.0), finite_floats(1e-6, 0.1)), _CPU_S, st.just(k), st.integers(0, k))
)
_LAYERS = examples(_LAYER_ARGS, 4)  # one list, split between layer_time_s and deferral_speedup
for i, args in enumerate(_LAYERS[:2]):
    CASES.append(
        Case(
            f"ex08.layer_time_s.hyp_{i}",
            "layer_time_s",
            args,
            rel_tol=1e-9,
            tol_note=REL,
            unit="s",
            hint=LAYER_HINT,
            points=0.5,
        )
    )
for i, args in enumerate(_LAYERS[2:]):
    CASES.append(
        Case(
            f"ex08.deferral_speedup.hyp_{i}",
            "deferral_speedup",
            args,
            rel_tol=1e-9,
            tol_note=REL,
            unit="x",
            hint=SPEEDUP_HINT,
            points=0.5,
        )
    )


@st.composite
def _best_args(draw):
    k = draw(st.integers(2, 16))  # top-1 routing has its own case above
    c = draw(_CPU_S)
    ratio = draw(st.integers(0, k)) + draw(st.integers(100, 900)) / 1000  # GPU time in expert times
    return ratio * c, c, k, draw(st.integers(0, k))


for i, (g, c, k, m) in enumerate(examples(_best_args(), 3)):
    CASES.append(
        Case(
            f"ex08.best_deferred.hyp_{i}",
            "best_deferred",
            (g, c, k),
            kwargs={"min_immediate": m},
            tol_note="integer: exact",
            unit="experts",
            hint=BEST_HINT,
            points=0.5,
        )
    )
