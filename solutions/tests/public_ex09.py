"""Public cases for ex09 (AMX): the lecture's §4.5 and §7 Q9 numbers."""

from hetero.checks import Case

EXACT = "products and quotients of exact inputs: correct code agrees to ~1e-15; 1e-9 allows only float rounding"
ACTIVE_ROUTED = 20_434_649_088.0  # DeepSeek-V3: 8 experts x 3 x 7168 x 2048 x 58 layers


def invalid(func: str, label: str, args: tuple, argument: str, why: str) -> Case:
    """An invalid input of `func`: it must raise ValueError naming `argument`."""
    return Case(f"ex09.{func}.{label}", func, args, raises="ValueError",
                hint=f"{why}; raise ValueError naming {argument}")


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
    # The edges of the valid ranges: counts of 1, values below 1, answers of 0, above 1, not whole.
    Case("ex09.amx_ops_per_instruction.row_times_column", "amx_ops_per_instruction", (1, 3, 1), expect=6,
         tol_note="integer count: exact", unit="ops", kind="smallest valid",
         hint="m = n = 1 is valid: a 1 x 3 row times a 3 x 1 column is 3 MACs = 6 ops"),
    Case("ex09.ops_per_cycle_per_core.thousand_in_three", "ops_per_cycle_per_core", (1000, 3), expect=333.3333333333333,
         rel_tol=1e-9, tol_note=EXACT, unit="ops/cycle/core",
         hint="1000 ops every 3 cycles = 333.33 ops per cycle: a float, not a whole number (divide with /, not //)"),
    Case("ex09.ops_per_cycle_per_core.one_cycle", "ops_per_cycle_per_core", (256, 1), expect=256.0,
         rel_tol=1e-9, tol_note=EXACT, unit="ops/cycle/core", kind="smallest valid",
         hint="an instruction every cycle is valid (cycles_per_instruction >= 1): 256 ops per cycle"),
    Case("ex09.ops_per_cycle_per_core.one_op", "ops_per_cycle_per_core", (1, 4), expect=0.25,
         rel_tol=1e-9, tol_note=EXACT, unit="ops/cycle/core", kind="smallest valid",
         hint="1 op every 4 cycles = 0.25 ops per cycle (ops_per_instruction = 1 is valid)"),
    Case("ex09.peak_tops.single_core", "peak_tops", (1, 2.0, 2048.0), expect=4.096, rel_tol=1e-9, tol_note=EXACT,
         unit="TOPS", kind="smallest valid",
         hint="1 core (valid) x 2.0e9 cycles/s x 2048 ops = 4.096e12 ops/s = 4.096 TOPS"),
    Case("ex09.peak_tops.slow_core", "peak_tops", (2, 0.5, 0.25), expect=0.00025, rel_tol=1e-9, tol_note=EXACT,
         unit="TOPS", kind="below one",
         hint="2 cores x 0.5e9 cycles/s x 0.25 ops = 2.5e8 ops/s = 0.00025 TOPS; a clock or a rate below 1 is valid "
              "(the rule is > 0)"),
    Case("ex09.fraction_of_peak.zero_measured", "fraction_of_peak", (0.0, 114.688), expect=0.0, rel_tol=1e-9,
         abs_tol=1e-15, tol_note=EXACT + "; 1e-15 absolute slack for the 0 case", unit="fraction",
         kind="zero result", hint="a measurement of 0 is valid (the rule is >= 0): 0 / 114.688 = 0.0"),
    Case("ex09.fraction_of_peak.above_the_peak", "fraction_of_peak", (10.0, 8.0), expect=1.25, rel_tol=1e-9,
         tol_note=EXACT, unit="fraction", kind="above one",
         hint="10 / 8 = 1.25: a measurement above the peak is returned as it is (it says the peak is wrong), not an "
              "error"),
    Case("ex09.fraction_of_peak.small_peak", "fraction_of_peak", (0.2, 0.8), expect=0.25, rel_tol=1e-9,
         tol_note=EXACT, unit="fraction", kind="below one",
         hint="0.2 / 0.8 = 0.25; a peak below 1 TOPS is valid (the rule is > 0)"),
    Case("ex09.prefill_expert_time_s.slow_kernel", "prefill_expert_time_s", (512, 1e9, 0.5), expect=2.048,
         rel_tol=1e-9, tol_note=EXACT, unit="s", kind="below one",
         hint="2 x 512 x 1e9 FLOP at 0.5e12 FLOP/s = 2.048 s; achieved_tflops below 1 is valid (the rule is > 0)"),
    Case("ex09.prefill_expert_time_s.single_parameter", "prefill_expert_time_s", (1000, 1.0, 2.0), expect=1e-9,
         rel_tol=1e-9, tol_note=EXACT, unit="s",
         hint="a single parameter per token is valid (the rule is > 0): 2 x 1000 x 1 FLOP at 2e12 FLOP/s = 1e-9 s"),
    Case("ex09.prefill_expert_time_s.one_token", "prefill_expert_time_s", (1, 1e6, 1.0), expect=2e-6,
         rel_tol=1e-9, tol_note=EXACT, unit="s", kind="smallest valid",
         hint="1 token (valid) x 1e6 parameters x 2 FLOP at 1e12 FLOP/s = 2e-6 s"),
    # Invalid input: every argument of every function.
    invalid("amx_ops_per_instruction", "zero_k", (16, 0, 16), "k", "a tile with k = 0 is invalid"),
    invalid("amx_ops_per_instruction", "negative_m", (-16, 64, 16), "m", "every dimension is checked: m >= 1"),
    invalid("amx_ops_per_instruction", "zero_n", (16, 64, 0), "n", "every dimension is checked: n >= 1"),
    invalid("ops_per_cycle_per_core", "negative_cycles", (32_768, -16), "cycles_per_instruction",
            "cycles_per_instruction must be >= 1"),
    invalid("ops_per_cycle_per_core", "negative_ops", (-32_768, 16), "ops_per_instruction",
            "ops_per_instruction must be >= 1"),
    invalid("peak_tops", "no_cores", (0, 2.0, 2048.0), "cores", "a socket with 0 cores is invalid"),
    invalid("peak_tops", "negative_clock", (56, -2.0, 2048.0), "clock_ghz", "clock_ghz must be > 0"),
    invalid("peak_tops", "negative_ops", (56, 2.0, -2048.0), "ops_per_cycle_per_core",
            "ops_per_cycle_per_core must be > 0"),
    invalid("peak_tops", "clock_zero", (8, 0.0, 256.0), "clock_ghz", "a clock of 0 GHz is not > 0"),
    invalid("peak_tops", "ops_per_cycle_zero", (8, 1.5, 0.0), "ops_per_cycle_per_core", "0 ops per cycle is not > 0"),
    invalid("fraction_of_peak", "measured_below_zero", (-37.0, 229.376), "measured_tops", "measured_tops must be >= 0"),
    invalid("fraction_of_peak", "negative_peak", (37.0, -229.376), "peak_tops", "peak_tops must be > 0"),
    invalid("fraction_of_peak", "peak_zero", (12.0, 0.0), "peak_tops", "a peak of 0 is not > 0 (no ZeroDivisionError)"),
    invalid("prefill_expert_time_s", "negative_tokens", (-1024, ACTIVE_ROUTED, 20.0), "num_tokens",
            "num_tokens must be >= 1"),
    invalid("prefill_expert_time_s", "negative_params", (1024, -1e9, 20.0), "active_params_per_token",
            "active_params_per_token must be > 0"),
    invalid("prefill_expert_time_s", "negative_tflops", (1024, ACTIVE_ROUTED, -20.0), "achieved_tflops",
            "achieved_tflops must be > 0"),
    invalid("prefill_expert_time_s", "tflops_zero", (1024, ACTIVE_ROUTED, 0.0), "achieved_tflops",
            "0 TFLOPS is not > 0"),
    invalid("prefill_expert_time_s", "params_zero", (512, 0.0, 2.5), "active_params_per_token",
            "0 parameters per token is not > 0"),
]
