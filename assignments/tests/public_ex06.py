"""Public cases for ex06 (expert bytes and the CPU decode bound): the lecture's §7 Q6 numbers and small hand cases."""

from hetero.checks import Case

EXACT = "products and quotients of exact inputs: correct code agrees to ~1e-15; 1e-9 allows only float rounding"

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
    Case("ex06.expert_params.zero_hidden", "expert_params", (0, 2048), raises="ValueError",
         hint="hidden = 0 is not a model: raise ValueError naming hidden"),
    Case("ex06.decode_tokens_per_s_bound.efficiency_percent", "decode_tokens_per_s_bound",
         (11.5e9, 300.0, 70.0), raises="ValueError",
         hint="efficiency is a fraction in (0, 1]; 70 (a percentage) must raise ValueError naming efficiency"),
]
