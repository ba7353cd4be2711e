"""Public cases for ex02 (KV capacity): the lecture's §7 Q2 chain (LLaMA-3-70B on 8 x 80 GB) and small cases."""

import math

from hetero.checks import Case

EXACT = "products and one subtraction of exact inputs: correct code agrees to ~1e-15; 1e-9 allows only that"
INT = "a count of whole tokens or requests: exact integer (floor), no tolerance"
NOT_FINITE = ("nan and infinity are invalid: test math.isfinite(x) first (a test x <= 0 lets nan through, "
              "since every comparison with nan is False)")
ZERO = "0 is not > 0 (the rule is strict: test x > 0, not x >= 0)"


def invalid(func: str, label: str, args: tuple, argument: str, why: str) -> Case:
    """An invalid input of `func`: it must raise ValueError naming `argument`."""
    return Case(f"ex02.{func}.{label}", func, args, raises="ValueError",
                hint=f"{why}; raise ValueError naming {argument}")


CASES = [
    Case("ex02.kv_bytes_per_token.llama3_70b", "kv_bytes_per_token", (80, 8, 128, 2.0), expect=327680.0,
         rel_tol=1e-9, tol_note=EXACT, unit="bytes per token",
         hint="2 (K and V) x 80 layers x 8 KV heads x 128 x 2 bytes = 327,680 B = 320 KiB; 163,840 means the "
              "factor 2 for K and V is missing, 2,621,440 means the 64 query heads were used instead of 8 KV heads"),
    Case("ex02.kv_bytes_per_token.tiny", "kv_bytes_per_token", (2, 1, 4, 2.0), expect=32.0,
         rel_tol=1e-9, tol_note=EXACT, unit="bytes per token",
         hint="2 layers x 1 KV head x 4 elements x 2 bytes = 16 B for K, and as much again for V: 32 B"),
    Case("ex02.hbm_for_kv_bytes.eight_h800", "hbm_for_kv_bytes", (8, 80.0, 141e9, 0.10), expect=449.1e9,
         rel_tol=1e-9, tol_note=EXACT, unit="bytes",
         hint="(8 x 80e9 - 141e9) x 0.9 = 449.1e9 B: subtract the weights first, then keep 10% headroom "
              "(435e9 means the headroom was taken off the total before subtracting the weights; GB here are "
              "1e9 bytes, not GiB)"),
    Case("ex02.hbm_for_kv_bytes.no_headroom", "hbm_for_kv_bytes", (1, 24.0, 16e9, 0.0), expect=8e9,
         rel_tol=1e-9, tol_note=EXACT, unit="bytes",
         hint="one 24 GB card with 16e9 B of weights and no headroom leaves 24e9 - 16e9 = 8e9 B"),
    Case("ex02.kv_capacity_tokens.lecture", "kv_capacity_tokens", (449.1e9, 327680.0), expect=1370544,
         rel_tol=0.0, tol_note=INT, unit="tokens",
         hint="floor(449.1e9 / 327,680) = 1,370,544 tokens (about 1.37 M); return an int, rounded down"),
    Case("ex02.requests_that_fit.kimi", "requests_that_fit", (1370544, 8590.0), expect=159,
         rel_tol=0.0, tol_note=INT, unit="requests", kind="rounding",
         hint="1,370,544 / 8,590 = 159.55: only 159 whole requests fit (round down, do not round to nearest)"),
    # The edges of the valid ranges: the smallest counts, values below 1, nothing left, rounding down.
    Case("ex02.kv_bytes_per_token.one_layer_one_head", "kv_bytes_per_token", (1, 1, 1, 4.0), expect=8.0,
         rel_tol=1e-9, tol_note=EXACT, unit="bytes per token", kind="smallest valid",
         hint="1 layer, 1 KV head of 1 element at 4 bytes (FP32): 4 B for K and 4 B for V = 8 B; counts of 1 are "
              "valid (>= 1)"),
    Case("ex02.kv_bytes_per_token.four_bit", "kv_bytes_per_token", (4, 2, 64, 0.5), expect=512.0,
         rel_tol=1e-9, tol_note=EXACT, unit="bytes per token", kind="below one",
         hint="a 4-bit KV cache stores half a byte per element: 2 x 4 x 2 x 64 x 0.5 = 512 B (bytes_per_elem below 1 "
              "is valid: the rule is > 0)"),
    Case("ex02.hbm_for_kv_bytes.no_weights", "hbm_for_kv_bytes", (1, 80.0, 0.0, 0.25), expect=60e9,
         rel_tol=1e-9, tol_note=EXACT, unit="bytes", kind="smallest valid",
         hint="weight_bytes = 0 is valid (>= 0): 80e9 x (1 - 0.25) = 60e9 B"),
    Case("ex02.hbm_for_kv_bytes.half_gb_card", "hbm_for_kv_bytes", (1, 0.5, 3.0, 0.5), expect=249999998.5,
         rel_tol=1e-9, tol_note=EXACT, unit="bytes", kind="below one",
         hint="a 0.5 GB card (below 1 is valid: the rule is > 0) with 3 bytes of weights and half kept free: "
              "(0.5e9 - 3) x 0.5 = 249,999,998.5 B; the budget need not be a whole number of bytes"),
    Case("ex02.hbm_for_kv_bytes.weights_fill_it", "hbm_for_kv_bytes", (2, 40.0, 80e9, 0.2), expect=0.0,
         rel_tol=1e-9, abs_tol=1.0, tol_note="expected 0 B; 1 byte of absolute slack for the float rounding of 80e9 - 80e9",
         unit="bytes", kind="zero result",
         hint="weights that exactly fill the 2 x 40 GB leave 0 bytes: valid (weights must not EXCEED the HBM), "
              "not an error"),
    Case("ex02.kv_capacity_tokens.two_gb", "kv_capacity_tokens", (2e9, 327680.0), expect=6103,
         rel_tol=0.0, tol_note=INT, unit="tokens", kind="rounding",
         hint="2e9 / 327,680 = 6,103.5: a half token does not fit, so 6,103 (round down with math.floor or //, "
              "never round(), which gives 6,104)"),
    Case("ex02.kv_capacity_tokens.less_than_a_token", "kv_capacity_tokens", (100.0, 327680.0), expect=0,
         rel_tol=0.0, tol_note=INT, unit="tokens", kind="zero result",
         hint="100 bytes hold no whole token of 327,680 B: 0 (valid, not an error)"),
    Case("ex02.kv_capacity_tokens.sub_byte_tokens", "kv_capacity_tokens", (10.0, 0.75), expect=13,
         rel_tol=0.0, tol_note=INT, unit="tokens", kind="below one",
         hint="10 / 0.75 = 13.3: 13 tokens; kv_bytes_per_token below 1 is valid (the rule is > 0)"),
    Case("ex02.requests_that_fit.one_token_short", "requests_that_fit", (8589, 8590.0), expect=0,
         rel_tol=0.0, tol_note=INT, unit="requests", kind="zero result",
         hint="8,589 tokens are one short of a single 8,590-token request: 0 requests (valid, not an error)"),
    Case("ex02.kv_capacity_tokens.no_free_bytes", "kv_capacity_tokens", (0.0, 327680.0), expect=0,
         rel_tol=0.0, tol_note=INT, unit="tokens", kind="smallest valid",
         hint="free_bytes = 0 is valid (the rule is >= 0): no token fits, 0"),
    Case("ex02.requests_that_fit.no_capacity", "requests_that_fit", (0, 512.0), expect=0,
         rel_tol=0.0, tol_note=INT, unit="requests", kind="smallest valid",
         hint="capacity_tokens = 0 is valid (the rule is >= 0): no request fits, 0"),
    Case("ex02.requests_that_fit.sub_token_mean", "requests_that_fit", (10, 0.4), expect=25,
         rel_tol=0.0, tol_note=INT, unit="requests", kind="below one",
         hint="10 / 0.4 = 25 requests; a mean below 1 token is valid (the rule is > 0)"),
    # Invalid input: every argument is checked, with each rule its docstring states.
    invalid("hbm_for_kv_bytes", "weights_too_big", (2, 80.0, 200e9, 0.10), "weight_bytes",
            "200e9 B of weights do not fit in 2 x 80e9 B: do not return a negative capacity"),
    invalid("hbm_for_kv_bytes", "negative_weights", (8, 80.0, -1e9, 0.10), "weight_bytes",
            "negative weights are invalid (weight_bytes >= 0)"),
    invalid("hbm_for_kv_bytes", "infinite_weights", (8, 80.0, math.inf, 0.10), "weight_bytes", NOT_FINITE),
    invalid("hbm_for_kv_bytes", "negative_gpus", (-2, 80.0, 141e9, 0.10), "num_gpus",
            "num_gpus must be an int >= 1"),
    invalid("hbm_for_kv_bytes", "negative_hbm", (8, -80.0, 141e9, 0.10), "hbm_per_gpu_gb",
            "hbm_per_gpu_gb must be > 0"),
    invalid("hbm_for_kv_bytes", "nan_hbm", (8, math.nan, 141e9, 0.10), "hbm_per_gpu_gb", NOT_FINITE),
    invalid("hbm_for_kv_bytes", "headroom_above_one", (8, 80.0, 141e9, 1.5), "headroom_frac",
            "headroom_frac is a fraction in [0, 1): 1.5 would keep more than everything free"),
    invalid("kv_bytes_per_token", "zero_layers", (0, 8, 128, 2.0), "num_layers",
            "a model with 0 layers is invalid input"),
    invalid("kv_bytes_per_token", "negative_kv_heads", (80, -8, 128, 2.0), "num_kv_heads",
            "every count is checked, not only the first: num_kv_heads must be an int >= 1"),
    invalid("kv_bytes_per_token", "zero_bytes", (32, 8, 128, 0.0), "bytes_per_elem",
            "bytes_per_elem must be > 0"),
    invalid("kv_bytes_per_token", "nan_bytes", (80, 8, 128, math.nan), "bytes_per_elem", NOT_FINITE),
    invalid("kv_bytes_per_token", "negative_bytes", (80, 8, 128, -1.0), "bytes_per_elem", "bytes_per_elem must be > 0"),
    invalid("hbm_for_kv_bytes", "zero_hbm", (4, 0.0, 0.0, 0.2), "hbm_per_gpu_gb",
            "0 GB of HBM is not a GPU, even with no weights to hold: " + ZERO),
    invalid("hbm_for_kv_bytes", "headroom_one", (1, 24.0, 16e9, 1.0), "headroom_frac",
            "headroom_frac lies in [0, 1): 1.0 itself would keep everything free and leave no KV cache"),
    invalid("kv_capacity_tokens", "zero_kv", (1e9, 0.0), "kv_bytes_per_token", "0 bytes per token: " + ZERO),
    invalid("requests_that_fit", "mean_of_zero", (1000, 0.0), "mean_tokens_per_request", "a mean of 0 tokens: " + ZERO),
    invalid("kv_capacity_tokens", "negative_free", (-5.0, 327680.0), "free_bytes", "free_bytes must be >= 0"),
    invalid("kv_capacity_tokens", "nan_free", (math.nan, 327680.0), "free_bytes", NOT_FINITE),
    invalid("kv_capacity_tokens", "negative_kv", (449.1e9, -327680.0), "kv_bytes_per_token",
            "kv_bytes_per_token must be > 0"),
    invalid("requests_that_fit", "negative_capacity", (-1, 8590.0), "capacity_tokens",
            "capacity_tokens must be an int >= 0"),
    invalid("requests_that_fit", "float_capacity", (1000.0, 10.0), "capacity_tokens",
            "capacity_tokens is a count of tokens, an int: a float (1000.0) is invalid"),
    invalid("requests_that_fit", "negative_mean", (1370544, -8590.0), "mean_tokens_per_request",
            "mean_tokens_per_request must be > 0"),
    invalid("requests_that_fit", "infinite_mean", (1370544, math.inf), "mean_tokens_per_request", NOT_FINITE),
]
