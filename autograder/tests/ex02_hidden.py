"""Hidden cases for ex02 (KV capacity): other models and GPUs, unit and rounding traps, invalid input.

Expected values are computed from the answer key by `python -m autograder expected`. Model shapes are
from each model's published config.json (layers, KV heads, head_dim); weight bytes are parameter count
x bytes per parameter.
"""

from typing import Any

import numpy as np
from hypothesis import strategies as st

from autograder.tests._generated import examples
from hetero.checks import Case

EXACT = "products and one subtraction of exact inputs: correct code agrees to ~1e-15; 1e-9 allows only that"
INT = "a count of whole tokens or requests: exact integer (floor), no tolerance"
KV_HINT = (
    "2 (one K and one V) x layers x KV heads (not query heads) x head_dim x bytes per element; "
    "bytes_per_elem can be 1 (FP8) or 0.5 (4-bit)"
)
HBM_HINT = (
    "(num_gpus x hbm_per_gpu_gb x 1e9 - weight_bytes) x (1 - headroom_frac): GB are 1e9 bytes, subtract "
    "the weights before taking the headroom"
)
FLOOR_HINT = "round down to whole tokens / requests and return an int (not round(), not a float)"

# (label, num_layers, num_kv_heads, head_dim, bytes_per_elem)
_KV_MODELS = (
    ("llama3_8b_bf16", 32, 8, 128, 2.0),  # Meta-Llama-3-8B
    ("mixtral_8x7b_fp8", 32, 8, 128, 1.0),  # Mixtral-8x7B, FP8 KV cache
    ("qwen3_235b_a22b_bf16", 94, 4, 128, 2.0),  # Qwen3-235B-A22B
    ("llama31_405b_bf16", 126, 8, 128, 2.0),  # Llama-3.1-405B
    ("llama2_7b_mha_bf16", 32, 32, 128, 2.0),  # Llama-2-7B: no GQA, KV heads = query heads
    ("llama31_70b_int4", 80, 8, 128, 0.5),  # the lecture's model with a 4-bit KV cache
)
CASES = [
    Case(
        f"ex02.kv_bytes_per_token.{label}",
        "kv_bytes_per_token",
        (layers, kv_heads, head_dim, b),
        rel_tol=1e-9,
        tol_note=EXACT,
        unit="bytes per token",
        hint=KV_HINT,
        points=1.5,
        kind="below one" if b < 1 else "",
    )
    for label, layers, kv_heads, head_dim, b in _KV_MODELS
]

# (label, num_gpus, hbm_per_gpu_gb, weight_bytes, headroom_frac)
_HBM = (
    ("eight_h20_llama70b", 8, 96.0, 141.107e9, 0.10),  # 8 x H20 96 GB, LLaMA-3.1-70B BF16
    ("one_h100_llama8b", 1, 80.0, 16.06e9, 0.10),  # LLaMA-3-8B BF16 on one H100
    ("eight_h200_405b_fp8", 8, 141.0, 405.85e9, 0.05),  # LLaMA-3.1-405B FP8 on 8 x H200
    ("four_a100_mixtral", 4, 80.0, 93.4e9, 0.10),  # Mixtral 8x7B (46.7B params) BF16 on 4 x A100
    ("eight_h800_qwen3_235b", 8, 80.0, 470.2e9, 0.15),  # Qwen3-235B-A22B BF16 on 8 x H800
)
CASES += [
    Case(
        f"ex02.hbm_for_kv_bytes.{label}",
        "hbm_for_kv_bytes",
        (n, gb, w, h),
        rel_tol=1e-9,
        tol_note=EXACT,
        unit="bytes",
        hint=HBM_HINT,
        points=1.5,
    )
    for label, n, gb, w, h in _HBM
]
CASES.append(
    Case(
        "ex02.hbm_for_kv_bytes.exactly_full",
        "hbm_for_kv_bytes",
        (1, 24.0, 24e9, 0.10),
        rel_tol=1e-9,
        abs_tol=1.0,
        tol_note="expected 0 B; 1 byte of absolute slack absorbs float rounding of 24e9 - 24e9",
        unit="bytes",
        hint="weights that exactly fill the HBM leave 0 bytes: that is valid, not an error",
        points=0.5,
        kind="zero result",
    )
)

# (label, free_bytes, kv_bytes_per_token)
_CAPACITY = (
    ("eight_h20_llama70b", (8 * 96e9 - 141.107e9) * 0.9, 327680.0),
    ("dram_2tb", 2e12, 327680.0),  # the lecture's 2 TB of host DRAM
    ("ssd_61tb", 8 * 7.68e12, 327680.0),  # 8 x 7.68 TB NVMe
    ("exact_multiple", 327680.0 * 1000, 327680.0),  # exactly 1000 tokens
    ("one_byte_short", 327680.0 * 1000 - 1, 327680.0),  # 999: a partial token does not fit
    ("empty", 0.0, 131072.0),
    ("qwen3_one_gpu", 40e9, 192512.0),
)
_KINDS = {
    "exact_multiple": "rounding",
    "one_byte_short": "rounding",
    "empty": "zero result",
    "exact": "rounding",
    "just_short": "rounding",
    "zero": "zero result",
    "fractional_mean": "rounding",
}
CASES += [
    Case(
        f"ex02.kv_capacity_tokens.{label}",
        "kv_capacity_tokens",
        (free, kv),
        rel_tol=0.0,
        tol_note=INT,
        unit="tokens",
        hint=FLOOR_HINT,
        points=1.5 if "short" in label or "exact" in label else 1.0,
        kind=_KINDS.get(label, ""),
    )
    for label, free, kv in _CAPACITY
]

# (label, capacity_tokens, mean_tokens_per_request)
_REQUESTS = (
    ("dram_kimi", 6103515, 8590.0),
    ("exact", 1000, 1000.0),
    ("just_short", 999, 1000.0),
    ("zero", 0, 8590.0),
    ("fractional_mean", 10, 2.5),
    ("short_chats", 1370544, 512.0),
)
CASES += [
    Case(
        f"ex02.requests_that_fit.{label}",
        "requests_that_fit",
        (cap, mean),
        rel_tol=0.0,
        tol_note=INT,
        unit="requests",
        hint=FLOOR_HINT,
        points=1.0,
        kind=_KINDS.get(label, ""),
    )
    for label, cap, mean in _REQUESTS
]

# Seeded random configurations: a whole chain KV/token -> free bytes -> tokens -> requests per seed.
_rng = np.random.default_rng(7)
for i in range(3):
    layers = int(_rng.integers(8, 128))
    kv_heads = int(_rng.choice([1, 2, 4, 8, 16]))
    head_dim = int(_rng.choice([64, 96, 128, 256]))
    n_gpus = int(_rng.integers(1, 9))
    hbm_gb = float(_rng.choice([24.0, 40.0, 80.0, 96.0, 141.0, 192.0]))
    weights = float(_rng.uniform(0.1, 0.8) * n_gpus * hbm_gb * 1e9)
    headroom = float(_rng.uniform(0.0, 0.3))
    free = (n_gpus * hbm_gb * 1e9 - weights) * (1 - headroom)
    kv = 2.0 * layers * kv_heads * head_dim * 2.0
    CASES += [
        Case(
            f"ex02.kv_bytes_per_token.random{i}",
            "kv_bytes_per_token",
            (layers, kv_heads, head_dim, 2.0),
            rel_tol=1e-9,
            tol_note=EXACT,
            unit="bytes per token",
            hint=KV_HINT,
            points=0.5,
        ),
        Case(
            f"ex02.hbm_for_kv_bytes.random{i}",
            "hbm_for_kv_bytes",
            (n_gpus, hbm_gb, weights, headroom),
            rel_tol=1e-9,
            tol_note=EXACT,
            unit="bytes",
            hint=HBM_HINT,
            points=0.5,
        ),
        Case(
            f"ex02.kv_capacity_tokens.random{i}",
            "kv_capacity_tokens",
            (free, kv),
            rel_tol=0.0,
            tol_note=INT,
            unit="tokens",
            hint=FLOOR_HINT,
            points=0.5,
        ),
        Case(
            f"ex02.requests_that_fit.random{i}",
            "requests_that_fit",
            (int(free // kv), float(_rng.uniform(500, 20000))),
            rel_tol=0.0,
            tol_note=INT,
            unit="requests",
            hint=FLOOR_HINT,
            points=0.5,
        ),
    ]

_INVALID = (
    ("kv_bytes_per_token", "zero_kv_heads", (80, 0, 128, 2.0)),
    ("kv_bytes_per_token", "negative_bytes", (80, 8, 128, -2.0)),
    ("hbm_for_kv_bytes", "qwen3_bf16_on_four_gpus", (4, 80.0, 470.2e9, 0.10)),
    ("hbm_for_kv_bytes", "headroom_one", (8, 80.0, 141e9, 1.0)),
    ("hbm_for_kv_bytes", "headroom_negative", (8, 80.0, 141e9, -0.1)),
    ("hbm_for_kv_bytes", "zero_gpus", (0, 80.0, 141e9, 0.1)),
    ("hbm_for_kv_bytes", "negative_weights", (8, 80.0, -1.0, 0.1)),
    ("kv_capacity_tokens", "negative_free", (-1.0, 327680.0)),
    ("kv_capacity_tokens", "zero_kv", (449.1e9, 0.0)),
    ("requests_that_fit", "negative_capacity", (-5, 8590.0)),
    ("requests_that_fit", "zero_mean", (1370544, 0.0)),
)
_RULES = {  # what each function rejects, in its docstring's words
    "kv_bytes_per_token": "counts that are not ints >= 1, bytes_per_elem not a finite number > 0",
    "hbm_for_kv_bytes": "num_gpus not an int >= 1, hbm_per_gpu_gb not > 0, weight_bytes < 0 or larger than the "
    "total HBM, headroom_frac outside [0, 1)",
    "kv_capacity_tokens": "free_bytes < 0, kv_bytes_per_token <= 0 or not finite",
    "requests_that_fit": "capacity_tokens not an int >= 0, mean_tokens_per_request not a finite number > 0",
}
CASES += [
    Case(
        f"ex02.{func}.invalid_{what}",
        func,
        args,
        raises="ValueError",
        points=0.5,
        hint=f"check the argument ranges in the docstring and raise ValueError naming the argument ({_RULES[func]})",
    )
    for func, what, args in _INVALID
]

# Boundaries of the valid ranges: the smallest valid values must return, the first invalid ones must raise.
# (label, func, args, kind)
_VALID_EDGES = (
    ("kv_bytes_per_token", "one_of_each", (1, 1, 1, 0.5), "smallest valid"),  # 4-bit KV of one head of one element
    ("hbm_for_kv_bytes", "no_weights", (8, 80.0, 0.0, 0.10), "smallest valid"),  # weight_bytes = 0 is allowed (>= 0)
    ("hbm_for_kv_bytes", "half_gb_per_gpu", (2, 0.5, 0.2e9, 0.0), "below one"),  # hbm_per_gpu_gb below 1 is > 0
    ("kv_capacity_tokens", "sub_byte_per_token", (1000.0, 0.75), "below one"),  # kv_bytes_per_token below 1 is > 0
    ("requests_that_fit", "sub_token_mean", (10, 0.5), "below one"),  # mean_tokens_per_request below 1 is > 0
)
for func, what, args, edge in _VALID_EDGES:
    tol: dict[str, Any] = (
        dict(rel_tol=0.0, tol_note=INT)
        if func in ("kv_capacity_tokens", "requests_that_fit")
        else dict(rel_tol=1e-9, tol_note=EXACT)
    )
    CASES.append(
        Case(
            f"ex02.{func}.edge_{what}",
            func,
            args,
            points=0.5,
            unit={
                "kv_bytes_per_token": "bytes per token",
                "hbm_for_kv_bytes": "bytes",
                "kv_capacity_tokens": "tokens",
                "requests_that_fit": "requests",
            }[func],
            hint="a value at the edge of the docstring's valid range (0 weights, sizes below 1) is "
            "valid: compare with > 0 or >= 0 exactly as the docstring says, not >= 1",
            kind=edge,
            **tol,
        )
    )

_INVALID_EDGES = (
    ("kv_bytes_per_token", "zero_bytes", (80, 8, 128, 0.0)),
    ("kv_bytes_per_token", "inf_bytes", (80, 8, 128, float("inf"))),
    ("hbm_for_kv_bytes", "zero_hbm_no_weights", (8, 0.0, 0.0, 0.1)),  # 0 GB of HBM is not a GPU
    ("hbm_for_kv_bytes", "inf_hbm", (8, float("inf"), 141e9, 0.1)),
    ("hbm_for_kv_bytes", "nan_weights", (8, 80.0, float("nan"), 0.1)),
    ("kv_capacity_tokens", "inf_free", (float("inf"), 327680.0)),
    ("requests_that_fit", "float_capacity", (1370544.0, 8590.0)),  # capacity_tokens must be an int
    ("requests_that_fit", "nan_mean", (1370544, float("nan"))),
)
CASES += [
    Case(
        f"ex02.{func}.invalid_{what}",
        func,
        args,
        raises="ValueError",
        points=0.5,
        hint="zero sizes, infinities and nan are invalid: check `math.isfinite(x) and x > 0` (or >= 0 where the "
        "docstring allows 0) and raise ValueError naming the argument",
    )
    for func, what, args in _INVALID_EDGES
]

# Hypothesis-generated inputs (autograder/tests/_generated.py: derandomized, so the same inputs on every run);
# the expected values come from the answer key. Sizes are built so that the floors and the weights-fit check
# are decided by exact arithmetic: HBM in half-GB steps and integer weight bytes (exact in any multiplication
# order), free bytes at, one byte below or one byte above a whole number of tokens.
for i, args in enumerate(
    examples(
        st.tuples(st.integers(1, 256), st.integers(1, 128), st.integers(1, 512), st.sampled_from([0.5, 1.0, 2.0, 4.0])),
        1,
    )
):
    CASES.append(
        Case(
            f"ex02.kv_bytes_per_token.hyp_{i}",
            "kv_bytes_per_token",
            args,
            rel_tol=1e-9,
            tol_note=EXACT,
            unit="bytes per token",
            hint=KV_HINT,
            points=0.5,
        )
    )


@st.composite
def _hbm_args(draw):
    n_gpus = draw(st.integers(1, 64))
    hbm_gb = draw(st.integers(1, 600)) / 2  # 0.5 .. 300 GB per GPU, exact in binary
    weight_frac = draw(st.integers(0, 1000)) / 1000  # 0 (no weights) and 1 (exactly full) are both valid
    weights = float(round(weight_frac * n_gpus * hbm_gb * 1e9))  # whole bytes, never above the total
    return n_gpus, hbm_gb, weights, draw(st.floats(0.0, 1.0, exclude_max=True))


for i, args in enumerate(examples(_hbm_args(), 2)):
    CASES.append(
        Case(
            f"ex02.hbm_for_kv_bytes.hyp_{i}",
            "hbm_for_kv_bytes",
            args,
            rel_tol=1e-9,
            abs_tol=1.0,
            tol_note=EXACT + "; 1 byte of absolute slack for a result of 0 (weights exactly fill the HBM)",
            unit="bytes",
            hint=HBM_HINT,
            points=0.5,
        )
    )


@st.composite
def _capacity_args(draw):
    kv = draw(st.integers(2, 4 * 2**20)) / 4  # 0.5 B .. 1 MiB per token in quarter bytes: exact in binary
    tokens = draw(st.integers(0, 10**7))
    step = draw(st.sampled_from([0.0, -1.0, 1.0]))  # at, one byte short of, one byte past a whole token
    return max(tokens * kv + step, 0.0), kv


for i, args in enumerate(examples(_capacity_args(), 2)):
    CASES.append(
        Case(
            f"ex02.kv_capacity_tokens.hyp_{i}",
            "kv_capacity_tokens",
            args,
            rel_tol=0.0,
            tol_note=INT,
            unit="tokens",
            hint=FLOOR_HINT,
            points=0.5,
        )
    )


@st.composite
def _requests_args(draw):
    mean = draw(st.integers(1, 40000)) / 4  # 0.25 .. 10,000 tokens in quarter tokens: exact in binary
    requests = draw(st.integers(0, 10**5))
    step = draw(st.sampled_from([0, -1, 1]))  # at, one token short of, one token past a whole request
    return max(round(requests * mean) + step, 0), mean


for i, args in enumerate(examples(_requests_args(), 1)):
    CASES.append(
        Case(
            f"ex02.requests_that_fit.hyp_{i}",
            "requests_that_fit",
            args,
            rel_tol=0.0,
            tol_note=INT,
            unit="requests",
            hint=FLOOR_HINT,
            points=0.5,
        )
    )
