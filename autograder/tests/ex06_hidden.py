"""Hidden cases for ex06 (expert bytes, CPU decode bound): other MoE models, precisions, machines, unit traps.

Model shapes are from each model's released config.json (hidden_size, moe_intermediate_size or
intermediate_size, experts per token, MoE layers). Expected values are computed from the answer key by
`python -m autograder expected`.
"""

import numpy as np
from hypothesis import strategies as st

from autograder.tests._generated import examples, finite_floats, magnitudes
from hetero.checks import Case

EXACT = "products and quotients of exact inputs: correct code agrees to ~1e-15; 1e-9 allows only float rounding"
PARAMS_HINT = "an expert is matrices_per_expert matrices of hidden x expert_dim parameters (SwiGLU: 3)"
BYTES_HINT = (
    "active experts x params per expert x MoE layers x bits per param / 8 bits per byte; "
    "use bits_per_param as given (4.5 includes the scales)"
)
BOUND_HINT = "efficiency x bandwidth_gb_per_s x 1e9 bytes/s / bytes per token (GB/s is 1e9 B/s, not 2**30)"

# (label, hidden, expert_dim, matrices_per_expert)
_SHAPES = [
    ("dbrx", 6144, 10752, 3),  # Kimi K2's experts are DeepSeek-V3's shape (the public answer)
    ("qwen3_235b_a22b", 4096, 1536, 3),
    ("mixtral_8x7b", 4096, 14336, 3),
    ("deepseek_v2", 5120, 1536, 3),
    ("llama3_8b_mlp", 4096, 14336, 3),  # a dense FFN is one always-active expert
    ("gpt3_mlp_two_matrices", 12288, 49152, 2),  # a GELU MLP has 2 matrices
]
_rng = np.random.default_rng(606)
_SHAPES += [(f"random_{i}", int(_rng.integers(256, 16384)), int(_rng.integers(64, 8192)), 3) for i in range(2)]
CASES = [
    Case(
        f"ex06.expert_params.{label}",
        "expert_params",
        (h, e, m),
        tol_note="integer count: exact",
        unit="parameters",
        hint=PARAMS_HINT,
        points=1.0,
    )
    for label, h, e, m in _SHAPES
]
CASES += [
    Case(
        "ex06.expert_params.negative_expert_dim",
        "expert_params",
        (4096, -1),
        raises="ValueError",
        hint="expert_dim = -1 must raise ValueError naming expert_dim",
        points=0.5,
    ),
    Case(
        "ex06.expert_params.no_matrices",
        "expert_params",
        (4096, 1536, 0),
        raises="ValueError",
        hint="matrices_per_expert = 0 must raise ValueError naming matrices_per_expert",
        points=0.5,
    ),
]

# (label, active_experts, params_per_expert, num_moe_layers, bits_per_param)
_BYTES = [
    ("kimi_k2_q4", 8, 3 * 7168 * 2048, 60, 4.5),
    ("qwen3_235b_q8", 8, 3 * 4096 * 1536, 94, 8.5),  # 8-bit with a 16-bit scale per 32
    ("mixtral_bf16", 2, 3 * 4096 * 14336, 32, 16.0),
    ("deepseek_v2_q4", 6, 3 * 5120 * 1536, 59, 4.5),
    ("deepseek_v3_bf16", 8, 3 * 7168 * 2048, 58, 16.0),
    ("qwen3_30b_a3b_plain_int4", 8, 3 * 2048 * 768, 48, 4.0),
    ("fp8", 8, 3 * 7168 * 2048, 58, 8.0),
]
CASES += [
    Case(
        f"ex06.expert_bytes_per_token.{label}",
        "expert_bytes_per_token",
        (k, p, n, b),
        rel_tol=1e-9,
        tol_note=EXACT,
        unit="bytes",
        hint=BYTES_HINT,
        points=1.0,
    )
    for label, k, p, n, b in _BYTES
]
CASES += [
    Case(
        "ex06.expert_bytes_per_token.zero_bits",
        "expert_bytes_per_token",
        (8, 1000, 58, 0.0),
        raises="ValueError",
        hint="bits_per_param = 0 must raise ValueError naming bits_per_param",
        points=0.5,
    ),
    Case(
        "ex06.expert_bytes_per_token.no_layers",
        "expert_bytes_per_token",
        (8, 1000, 0, 4.5),
        raises="ValueError",
        hint="num_moe_layers = 0 must raise ValueError naming num_moe_layers",
        points=0.5,
    ),
]

# (label, bytes_per_token, bandwidth_gb_per_s, efficiency)
_BOUND = [
    ("kimi_k2_two_sockets", 8 * 3 * 7168 * 2048 * 60 * 4.5 / 8, 614.4, 0.7),  # 2 x 8 x DDR5-4800
    ("mixtral_bf16_ddr4", 2 * 3 * 4096 * 14336 * 32 * 2.0, 204.8, 0.6),  # 8 x DDR4-3200
    ("qwen3_q4_unified_memory", 8 * 3 * 4096 * 1536 * 94 * 4.5 / 8, 800.0, 0.8),
    ("full_efficiency", 5e9, 100.0, 1.0),
    ("one_gib_per_token", float(2**30), 100.0, 0.7),  # a GiB is 1.0737e9 bytes
    ("rtx4090_other_weights", 18.16e9, 1008.0, 0.8),
]
CASES += [
    Case(
        f"ex06.decode_tokens_per_s_bound.{label}",
        "decode_tokens_per_s_bound",
        (b, bw, e),
        rel_tol=1e-9,
        tol_note=EXACT,
        unit="tokens/s",
        hint=BOUND_HINT,
        points=1.0,
        kind="largest valid" if e == 1.0 else "",
    )
    for label, b, bw, e in _BOUND
]
CASES += [
    Case(
        "ex06.decode_tokens_per_s_bound.zero_bandwidth",
        "decode_tokens_per_s_bound",
        (11.5e9, 0.0, 0.7),
        raises="ValueError",
        hint="bandwidth 0 must raise ValueError naming bandwidth_gb_per_s",
        points=0.5,
    ),
    Case(
        "ex06.decode_tokens_per_s_bound.zero_efficiency",
        "decode_tokens_per_s_bound",
        (11.5e9, 300.0, 0.0),
        raises="ValueError",
        hint="efficiency 0 must raise ValueError naming efficiency",
        points=0.5,
    ),
    Case(
        "ex06.decode_tokens_per_s_bound.negative_bytes",
        "decode_tokens_per_s_bound",
        (-1.0, 300.0, 0.7),
        raises="ValueError",
        hint="negative bytes must raise ValueError naming bytes_per_token",
        points=0.5,
    ),
]

# Boundaries of the valid ranges. A count of 1 is valid (>= 1): a single-matrix expert, top-1 routing
# (Switch Transformer, Llama 4 Maverick's one routed expert). Sizes below 1 are valid where the rule is > 0:
# 1-bit weights, a bandwidth under 1 GB/s (weights streamed from a hard disk).
CASES += [
    Case(
        "ex06.expert_params.one_matrix",
        "expert_params",
        (4096, 1024, 1),
        tol_note="integer count: exact",
        unit="parameters",
        hint="matrices_per_expert = 1 is valid (>= 1): one hidden x expert_dim matrix",
        points=0.5,
        kind="smallest valid",
    ),
    Case(
        "ex06.expert_params.unit_dims",
        "expert_params",
        (1, 1),
        tol_note="integer count: exact",
        unit="parameters",
        hint="hidden = expert_dim = 1 is valid (>= 1): 3 matrices of 1 x 1",
        points=0.5,
        kind="smallest valid",
    ),
    Case(
        "ex06.expert_bytes_per_token.top1_routing",
        "expert_bytes_per_token",
        (1, 3 * 5120 * 8192, 24, 4.5),
        rel_tol=1e-9,
        tol_note=EXACT,
        unit="bytes",
        hint="active_experts = 1 (top-1 routing, Llama 4 Maverick) is valid (>= 1); " + BYTES_HINT,
        points=0.5,
        kind="smallest valid",
    ),
    Case(
        "ex06.expert_bytes_per_token.one_bit",
        "expert_bytes_per_token",
        (8, 3 * 7168 * 2048, 58, 1.0),
        rel_tol=1e-9,
        tol_note=EXACT,
        unit="bytes",
        hint="bits_per_param = 1 (binary weights) is valid (> 0); " + BYTES_HINT,
        points=0.5,
    ),
    Case(
        "ex06.expert_bytes_per_token.one_param_one_layer",
        "expert_bytes_per_token",
        (2, 1, 1, 16.0),
        rel_tol=1e-9,
        tol_note=EXACT,
        unit="bytes",
        hint="params_per_expert = 1 and num_moe_layers = 1 are valid (>= 1)",
        points=0.5,
        kind="smallest valid",
    ),
    Case(
        "ex06.expert_bytes_per_token.negative_bits",
        "expert_bytes_per_token",
        (8, 1000, 58, -4.5),
        raises="ValueError",
        hint="bits_per_param < 0 must raise ValueError naming bits_per_param",
        points=0.5,
    ),
    Case(
        "ex06.decode_tokens_per_s_bound.hdd_streaming",
        "decode_tokens_per_s_bound",
        (11_494_490_112.0, 0.285, 1.0),
        rel_tol=1e-9,
        tol_note=EXACT,
        unit="tokens/s",
        hint="a bandwidth below 1 GB/s (an HDD streams ~0.285 GB/s) is valid (> 0); " + BOUND_HINT,
        points=0.5,
        kind="below one",
    ),
    Case(
        "ex06.decode_tokens_per_s_bound.one_byte_per_token",
        "decode_tokens_per_s_bound",
        (1.0, 100.0, 0.5),
        rel_tol=1e-9,
        tol_note=EXACT,
        unit="tokens/s",
        hint="bytes_per_token = 1 is valid (> 0); " + BOUND_HINT,
        points=0.5,
    ),
    Case(
        "ex06.decode_tokens_per_s_bound.zero_bytes",
        "decode_tokens_per_s_bound",
        (0.0, 300.0, 0.7),
        raises="ValueError",
        hint="bytes_per_token = 0 must raise ValueError naming bytes_per_token (not ZeroDivisionError)",
        points=0.5,
    ),
    Case(
        "ex06.decode_tokens_per_s_bound.efficiency_above_one",
        "decode_tokens_per_s_bound",
        (11.5e9, 300.0, 1.5),
        raises="ValueError",
        hint="efficiency is a fraction in (0, 1]; 1.5 must raise ValueError naming efficiency",
        points=0.5,
    ),
]

# Hypothesis-generated inputs (autograder/tests/_generated.py: derandomized, so the same inputs on every run);
# the expected values come from the answer key. Counts from 1 upwards (1 is valid), bits per parameter in
# quarter bits from 1 to 32 (4.5 and 8.5 included), efficiencies in (0, 1] with 1.0 itself valid.
for i, args in enumerate(examples(st.tuples(st.integers(1, 32768), st.integers(1, 32768), st.integers(1, 4)), 2)):
    CASES.append(
        Case(
            f"ex06.expert_params.hyp_{i}",
            "expert_params",
            args,
            tol_note="integer count: exact",
            unit="parameters",
            hint=PARAMS_HINT,
            points=0.5,
        )
    )
_BITS = st.integers(4, 128).map(lambda quarters: quarters / 4)  # 1.0 .. 32.0 bits, exact in binary
for i, args in enumerate(examples(st.tuples(st.integers(1, 16), st.integers(1, 10**9), st.integers(1, 128), _BITS), 2)):
    CASES.append(
        Case(
            f"ex06.expert_bytes_per_token.hyp_{i}",
            "expert_bytes_per_token",
            args,
            rel_tol=1e-9,
            tol_note=EXACT,
            unit="bytes",
            hint=BYTES_HINT,
            points=0.5,
        )
    )
for i, args in enumerate(
    examples(st.tuples(magnitudes(0, 12), magnitudes(-1, 4), st.one_of(st.just(1.0), finite_floats(1e-3, 1.0))), 2)
):
    CASES.append(
        Case(
            f"ex06.decode_tokens_per_s_bound.hyp_{i}",
            "decode_tokens_per_s_bound",
            args,
            rel_tol=1e-9,
            tol_note=EXACT,
            unit="tokens/s",
            hint=BOUND_HINT,
            points=0.5,
        )
    )
