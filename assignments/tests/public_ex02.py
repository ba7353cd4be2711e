"""Public cases for ex02 (KV capacity): the lecture's §7 Q2 chain (LLaMA-3-70B on 8 x 80 GB) and small cases."""

from hetero.checks import Case

EXACT = "products and one subtraction of exact inputs: correct code agrees to ~1e-15; 1e-9 allows only that"
INT = "a count of whole tokens or requests: exact integer (floor), no tolerance"

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
         rel_tol=0.0, tol_note=INT, unit="requests",
         hint="1,370,544 / 8,590 = 159.55: only 159 whole requests fit (round down, do not round to nearest)"),
    Case("ex02.hbm_for_kv_bytes.weights_too_big", "hbm_for_kv_bytes", (2, 80.0, 200e9, 0.10),
         raises="ValueError",
         hint="200e9 B of weights do not fit in 2 x 80e9 B: raise ValueError naming weight_bytes, do not return "
              "a negative capacity"),
    Case("ex02.kv_bytes_per_token.zero_layers", "kv_bytes_per_token", (0, 8, 128, 2.0), raises="ValueError",
         hint="a model with 0 layers is invalid input: raise ValueError naming num_layers"),
]
