"""Public cases for ex09 (AMX): the lecture's §4.5 and §7 Q9 numbers."""

from hetero.checks import Case

EXACT = "products and quotients of exact inputs: correct code agrees to ~1e-15; 1e-9 allows only float rounding"
ACTIVE_ROUTED = 20_434_649_088.0  # DeepSeek-V3: 8 experts x 3 x 7168 x 2048 x 58 layers

CASES = [
    Case("ex09.amx_ops_per_instruction.int8_tile", "amx_ops_per_instruction", (16, 64, 16), expect=32_768,
         tol_note="integer count: exact", unit="ops",
         hint="16 x 16 outputs, each 64 multiply-accumulates, 2 ops per MAC = 32,768; 16,384 means MACs were "
              "counted as 1 op"),
    Case("ex09.ops_per_cycle_per_core.amx", "ops_per_cycle_per_core", (32_768, 16), expect=2048.0,
         rel_tol=1e-9, tol_note=EXACT, unit="ops/cycle/core",
         hint="32,768 ops every 16 cycles = 2,048 ops per cycle (8x AVX-512's 256)"),
    Case("ex09.peak_tops.lecture_q9", "peak_tops", (56, 2.0, 2048.0), expect=229.376, rel_tol=1e-9,
         tol_note=EXACT, unit="TOPS",
         hint="56 cores x 2.0e9 cycles/s x 2048 ops = 229.4e12 ops/s = 229 TOPS; GHz is 1e9 cycles/s and "
              "TOPS is 1e12 ops/s"),
    Case("ex09.fraction_of_peak.lecture_q9", "fraction_of_peak", (37.0, 229.376), expect=0.16130719866071427,
         rel_tol=1e-9, tol_note=EXACT, unit="fraction",
         hint="37 / 229.4 = 0.161 (16%): return a fraction, not a percentage (16.1)"),
    Case("ex09.prefill_expert_time_s.amx_1k", "prefill_expert_time_s", (1024, ACTIVE_ROUTED, 20.0),
         expect=2.0925080666112, rel_tol=1e-9, tol_note=EXACT, unit="s",
         hint="2 FLOP x 1024 tokens x 20.43e9 params = 4.19e13 FLOP at 20e12 FLOP/s = 2.09 s (the lecture's "
              "~2 s); 1.05 s means the factor 2 (multiply + add) was left out"),
    Case("ex09.prefill_expert_time_s.avx512_1k", "prefill_expert_time_s", (1024, ACTIVE_ROUTED, 2.5),
         expect=16.7400645328896, rel_tol=1e-9, tol_note=EXACT, unit="s",
         hint="AVX-512 reaches 1/8 of AMX: 2.5 TFLOPS, so 4.19e13 FLOP take 16.7 s (the lecture's ~17 s)"),
    Case("ex09.peak_tops.no_cores", "peak_tops", (0, 2.0, 2048.0), raises="ValueError",
         hint="a socket with 0 cores is invalid: raise ValueError naming cores"),
    Case("ex09.amx_ops_per_instruction.zero_k", "amx_ops_per_instruction", (16, 0, 16), raises="ValueError",
         hint="a tile with k = 0 is invalid: raise ValueError naming k"),
]
