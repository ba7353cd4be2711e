"""Public cases for ex06 (expert bytes and the CPU decode bound): the lecture's §7 Q6 numbers and small hand cases."""

from hetero.checks import Case

EXACT = "products and quotients of exact inputs: correct code agrees to ~1e-15; 1e-9 allows only float rounding"


def invalid(func: str, label: str, args: tuple, argument: str, why: str) -> Case:
    """An invalid input of `func`: it must raise ValueError naming `argument`."""
    return Case(f"ex06.{func}.{label}", func, args, raises="ValueError",
                hint=f"{why}; raise ValueError naming {argument}")


CASES = [
    Case("ex06.expert_params.deepseek_v3", "expert_params", (7168, 2048), expect=44_040_192,
         tol_note="integer count: exact", unit="parameters",
         hint="a SwiGLU expert has 3 matrices (gate, up, down) of hidden x expert_dim = 3 x 7168 x 2048; "
              "29,360,128 means the gate matrix was forgotten"),
    Case("ex06.expert_bytes_per_token.lecture_q6", "expert_bytes_per_token", (8, 44_040_192, 58, 4.5),
         expect=11_494_490_112.0, rel_tol=1e-9, tol_note=EXACT, unit="bytes",
         hint="8 experts x 44,040,192 params x 58 layers = 20.4e9 params; x 4.5 bits / 8 bits per byte = 11.49e9 "
              "bytes (the lecture's 11.5 GB). 9.2e10 means bits were not divided by 8; 1.02e10 means 4 bits "
              "were used instead of 4.5"),
    Case("ex06.expert_bytes_per_token.hand_8bit", "expert_bytes_per_token", (2, 1000, 10, 8.0),
         expect=20_000.0, rel_tol=1e-9, tol_note=EXACT, unit="bytes",
         hint="2 experts x 1000 params x 10 layers at 8 bits (1 byte) each = 20,000 bytes"),
    Case("ex06.decode_tokens_per_s_bound.lecture_q6", "decode_tokens_per_s_bound",
         (11_494_490_112.0, 300.0, 0.7), expect=18.269622919659962, rel_tol=1e-9, tol_note=EXACT,
         unit="tokens/s",
         hint="0.7 x 300e9 B/s / 11.49e9 B per token = 18.3 tokens/s (the lecture rounds to 18); 26.1 means the "
              "efficiency was ignored, 19.6 means GB/s was taken as 2**30 B/s"),
    Case("ex06.decode_tokens_per_s_bound.hand", "decode_tokens_per_s_bound", (2e9, 100.0, 0.5),
         expect=25.0, rel_tol=1e-9, tol_note=EXACT, unit="tokens/s",
         hint="0.5 x 100e9 B/s / 2e9 B per token = 25 tokens/s; 1 GB/s is 1e9 bytes per second"),
    Case("ex06.expert_params.single_matrix", "expert_params", (1, 96, 1), expect=96,
         tol_note="integer count: exact", unit="parameters", kind="smallest valid",
         hint="hidden = 1 and a single matrix are valid (counts >= 1): 1 x 1 x 96 = 96 parameters"),
    Case("ex06.expert_bytes_per_token.one_tiny_expert", "expert_bytes_per_token", (1, 3, 1, 4.5), expect=1.6875,
         rel_tol=1e-9, tol_note=EXACT, unit="bytes", kind="smallest valid",
         hint="1 expert of 3 parameters in 1 layer at 4.5 bits: 13.5 bits = 1.6875 bytes (counts of 1 are valid, and "
              "bytes need not be whole: divide with /)"),
    Case("ex06.expert_bytes_per_token.binary_weights", "expert_bytes_per_token", (4, 1000, 2, 1.0), expect=1000.0,
         rel_tol=1e-9, tol_note=EXACT, unit="bytes",
         hint="1-bit (binary) weights are valid (bits_per_param > 0): 4 x 1000 x 2 x 1 bit = 8000 bits = 1000 bytes"),
    Case("ex06.decode_tokens_per_s_bound.half_a_byte", "decode_tokens_per_s_bound", (0.5, 3.0, 0.25), expect=1.5e9,
         rel_tol=1e-9, tol_note=EXACT, unit="tokens/s", kind="below one",
         hint="half a byte per token is valid (bytes_per_token > 0): 0.25 x 3e9 B/s / 0.5 B = 1.5e9 tokens/s"),
    Case("ex06.decode_tokens_per_s_bound.slow_disk", "decode_tokens_per_s_bound", (2e9, 0.5, 0.8), expect=0.2,
         rel_tol=1e-9, tol_note=EXACT, unit="tokens/s", kind="below one",
         hint="0.8 x 0.5e9 B/s / 2e9 B per token = 0.2 tokens/s; a bandwidth below 1 GB/s (a disk) is valid"),
    Case("ex06.decode_tokens_per_s_bound.efficiency_one", "decode_tokens_per_s_bound", (1e9, 100.0, 1.0),
         expect=100.0, rel_tol=1e-9, tol_note=EXACT, unit="tokens/s", kind="largest valid",
         hint="efficiency = 1.0 is valid (the range is (0, 1], 1 included): 100e9 B/s / 1e9 B = 100 tokens/s"),
    invalid("expert_params", "zero_hidden", (0, 2048), "hidden", "hidden = 0 is not a model"),
    invalid("expert_params", "zero_expert_dim", (7168, 0), "expert_dim", "every dimension is checked: expert_dim >= 1"),
    invalid("expert_params", "negative_matrices", (7168, 2048, -3), "matrices_per_expert",
            "matrices_per_expert must be >= 1"),
    invalid("expert_bytes_per_token", "bits_below_zero", (8, 1000, 58, -8.0), "bits_per_param",
            "bits_per_param must be > 0"),
    invalid("expert_bytes_per_token", "bits_zero", (4, 500, 30, 0.0), "bits_per_param",
            "0 bits per parameter is not > 0"),
    invalid("expert_bytes_per_token", "negative_layers", (8, 1000, -58, 4.5), "num_moe_layers",
            "every count is checked: num_moe_layers >= 1"),
    invalid("decode_tokens_per_s_bound", "efficiency_percent", (11.5e9, 300.0, 70.0), "efficiency",
            "efficiency is a fraction in (0, 1]; 70 (a percentage) is invalid"),
    invalid("decode_tokens_per_s_bound", "efficiency_120", (11.5e9, 300.0, 1.2), "efficiency",
            "efficiency lies in (0, 1]: 1.2 is above 1"),
    invalid("decode_tokens_per_s_bound", "negative_bandwidth", (11.5e9, -300.0, 0.7), "bandwidth_gb_per_s",
            "bandwidth_gb_per_s must be > 0"),
    invalid("decode_tokens_per_s_bound", "bandwidth_zero", (2e9, 0.0, 0.5), "bandwidth_gb_per_s",
            "a bandwidth of 0 is not > 0"),
    invalid("decode_tokens_per_s_bound", "bytes_below_zero", (-1e9, 300.0, 0.7), "bytes_per_token",
            "bytes_per_token must be > 0"),
    invalid("decode_tokens_per_s_bound", "efficiency_zero", (2e9, 100.0, 0.0), "efficiency",
            "efficiency lies in (0, 1]: 0 itself is excluded"),
    invalid("decode_tokens_per_s_bound", "no_bytes", (0.0, 100.0, 0.5), "bytes_per_token",
            "bytes_per_token must be > 0 (not a ZeroDivisionError)"),
]
