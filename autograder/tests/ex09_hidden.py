"""Hidden cases for ex09 (AMX): other tile shapes, CPUs, precisions and prompts, unit traps, invalid input.

Expected values are computed from the answer key by `python -m autograder expected`.
"""

from hypothesis import strategies as st

from autograder.tests._generated import examples, finite_floats, magnitudes
from hetero.checks import Case

EXACT = "products and quotients of exact inputs: correct code agrees to ~1e-15; 1e-9 allows only float rounding"
OPS_HINT = "m x n outputs, k multiply-accumulates each, and a MAC is 2 ops"
OPC_HINT = "ops per instruction / cycles per instruction, as a float"
PEAK_HINT = "cores x clock_ghz x 1e9 cycles/s x ops per cycle, divided by 1e12 for TOPS"
FRACTION_HINT = "measured / peak as a fraction (not a percentage)"
PREFILL_HINT = "2 FLOP per parameter per token: 2 x tokens x params / (TFLOPS x 1e12)"

# (label, m, k, n)
_TILES = [
    ("bf16_tile", 16, 32, 16),  # AMX BF16: 16 x 32 x 16
    ("vnni_instruction", 1, 4, 16),  # VPDPBUSD: 16 lanes x 4 INT8 MACs
    ("cube_8", 8, 8, 8),
    ("one_mac", 1, 1, 1),
    ("rectangular", 3, 5, 7),
]
CASES = [
    Case(
        f"ex09.amx_ops_per_instruction.{label}",
        "amx_ops_per_instruction",
        (m, k, n),
        tol_note="integer count: exact",
        unit="ops",
        hint=OPS_HINT,
        points=1.0,
        kind="smallest valid" if (m, k, n) == (1, 1, 1) else "",
    )
    for label, m, k, n in _TILES
]
CASES += [
    Case(
        "ex09.amx_ops_per_instruction.zero_m",
        "amx_ops_per_instruction",
        (0, 64, 16),
        raises="ValueError",
        hint="m = 0 must raise ValueError naming m",
        points=0.5,
    ),
    Case(
        "ex09.amx_ops_per_instruction.negative_n",
        "amx_ops_per_instruction",
        (16, 64, -1),
        raises="ValueError",
        hint="n = -1 must raise ValueError naming n",
        points=0.5,
    ),
]

# (label, ops_per_instruction, cycles_per_instruction)
_OPC = [
    ("amx_bf16", 16384, 16),
    ("vnni_one_per_cycle", 128, 1),
    ("slow_unit", 32768, 32),
    ("not_whole", 100, 3),
    ("one_cycle_tile", 32768, 1),
]
CASES += [
    Case(
        f"ex09.ops_per_cycle_per_core.{label}",
        "ops_per_cycle_per_core",
        (o, c),
        rel_tol=1e-9,
        tol_note=EXACT,
        unit="ops/cycle/core",
        hint=OPC_HINT,
        points=1.0,
    )
    for label, o, c in _OPC
]
CASES += [
    Case(
        "ex09.ops_per_cycle_per_core.zero_cycles",
        "ops_per_cycle_per_core",
        (32768, 0),
        raises="ValueError",
        hint="0 cycles per instruction must raise ValueError naming cycles_per_instruction",
        points=0.5,
    ),
    Case(
        "ex09.ops_per_cycle_per_core.zero_ops",
        "ops_per_cycle_per_core",
        (0, 16),
        raises="ValueError",
        hint="0 ops per instruction must raise ValueError naming ops_per_instruction",
        points=0.5,
    ),
]

# (label, cores, clock_ghz, ops_per_cycle_per_core)
_PEAK = [
    ("xeon_6980p_amx", 128, 2.0, 2048.0),
    ("xeon_8480_avx512", 56, 2.0, 256.0),
    ("xeon_8490h_bf16", 60, 1.9, 1024.0),
    ("turbo_all_core", 56, 3.0, 2048.0),
    ("one_core", 1, 1.0, 2048.0),
]
CASES += [
    Case(
        f"ex09.peak_tops.{label}",
        "peak_tops",
        (c, g, o),
        rel_tol=1e-9,
        tol_note=EXACT,
        unit="TOPS",
        hint=PEAK_HINT,
        points=1.0,
        kind="smallest valid" if c == 1 else "",
    )
    for label, c, g, o in _PEAK
]
CASES += [
    Case(
        "ex09.peak_tops.zero_clock",
        "peak_tops",
        (56, 0.0, 2048.0),
        raises="ValueError",
        hint="clock_ghz = 0 must raise ValueError naming clock_ghz",
        points=0.5,
    ),
    Case(
        "ex09.peak_tops.zero_ops",
        "peak_tops",
        (56, 2.0, 0.0),
        raises="ValueError",
        hint="ops_per_cycle_per_core = 0 must raise ValueError naming ops_per_cycle_per_core",
        points=0.5,
    ),
]

# (label, measured_tops, peak_tops)
_FRACTION = [
    ("bf16_20_of_114", 20.0, 114.688),
    ("nothing_measured", 0.0, 229.376),
    ("above_peak", 250.0, 229.376),
    ("avx512", 12.0, 28.672),
    ("half", 64.0, 128.0),
]
CASES += [
    Case(
        f"ex09.fraction_of_peak.{label}",
        "fraction_of_peak",
        (m, p),
        rel_tol=1e-9,
        abs_tol=1e-15,
        tol_note=EXACT + "; 1e-15 absolute slack for the 0 case",
        unit="fraction",
        hint=FRACTION_HINT,
        points=1.0,
        kind="zero result" if m == 0 else "above one" if m > p else "",
    )
    for label, m, p in _FRACTION
]
CASES += [
    Case(
        "ex09.fraction_of_peak.zero_peak",
        "fraction_of_peak",
        (37.0, 0.0),
        raises="ValueError",
        hint="peak_tops = 0 must raise ValueError naming peak_tops",
        points=0.5,
    ),
    Case(
        "ex09.fraction_of_peak.negative_measured",
        "fraction_of_peak",
        (-1.0, 229.0),
        raises="ValueError",
        hint="measured_tops < 0 must raise ValueError naming measured_tops",
        points=0.5,
    ),
]

# (label, num_tokens, active_params_per_token, achieved_tflops); routed params from config.json shapes
_PREFILL = [
    ("kimi_k2_4k_amx", 4096, 8 * 3 * 7168 * 2048 * 60.0, 20.0),
    ("qwen3_235b_512_int8", 512, 8 * 3 * 4096 * 1536 * 94.0, 37.0),
    ("mixtral_one_token_avx512", 1, 2 * 3 * 4096 * 14336 * 32.0, 2.5),
    ("deepseek_v3_16k_amx", 16384, 8 * 3 * 7168 * 2048 * 58.0, 20.0),  # 8K at 20 = the public 1K at 2.5
    ("deepseek_v3_1k_pytorch", 1024, 8 * 3 * 7168 * 2048 * 58.0, 3.0),  # 5.0 gave the public 1K at 2.5, halved
]
CASES += [
    Case(
        f"ex09.prefill_expert_time_s.{label}",
        "prefill_expert_time_s",
        (t, p, f),
        rel_tol=1e-9,
        tol_note=EXACT,
        unit="s",
        hint=PREFILL_HINT,
        points=1.0,
    )
    for label, t, p, f in _PREFILL
]
CASES += [
    Case(
        "ex09.prefill_expert_time_s.no_tokens",
        "prefill_expert_time_s",
        (0, 2e10, 20.0),
        raises="ValueError",
        hint="num_tokens = 0 must raise ValueError naming num_tokens",
        points=0.5,
    ),
    Case(
        "ex09.prefill_expert_time_s.zero_tflops",
        "prefill_expert_time_s",
        (1024, 2e10, 0.0),
        raises="ValueError",
        hint="achieved_tflops = 0 must raise ValueError naming achieved_tflops",
        points=0.5,
    ),
]

# Boundaries of the valid ranges: 1 is a valid count (>= 1), and values below 1 are valid where the rule
# is > 0 (a scalar unit issuing one op every other cycle, a sub-TOPS embedded CPU, a desktop CPU without
# AMX reaching 0.8 TFLOPS, a single parameter per token).
CASES += [
    Case(
        "ex09.ops_per_cycle_per_core.scalar_op",
        "ops_per_cycle_per_core",
        (1, 2),
        rel_tol=1e-9,
        tol_note=EXACT,
        unit="ops/cycle/core",
        hint="ops_per_instruction = 1 is valid (>= 1); " + OPC_HINT,
        points=0.5,
        kind="smallest valid",
    ),
    Case(
        "ex09.peak_tops.half_op_per_cycle",
        "peak_tops",
        (4, 1.5, 0.5),
        rel_tol=1e-9,
        tol_note=EXACT,
        unit="TOPS",
        hint="ops_per_cycle_per_core = 0.5 is valid (> 0); " + PEAK_HINT,
        points=0.5,
        kind="below one",
    ),
    Case(
        "ex09.peak_tops.sub_ghz_clock",
        "peak_tops",
        (4, 0.8, 16.0),
        rel_tol=1e-9,
        tol_note=EXACT,
        unit="TOPS",
        hint="clock_ghz = 0.8 is valid (> 0); " + PEAK_HINT,
        points=0.5,
        kind="below one",
    ),
    Case(
        "ex09.fraction_of_peak.sub_tops_peak",
        "fraction_of_peak",
        (0.1, 0.5),
        rel_tol=1e-9,
        tol_note=EXACT,
        unit="fraction",
        hint="peak_tops = 0.5 is valid (> 0); " + FRACTION_HINT,
        points=0.5,
        kind="below one",
    ),
    Case(
        "ex09.prefill_expert_time_s.deepseek_v3_1k_avx2_desktop",
        "prefill_expert_time_s",
        (1024, 8 * 3 * 7168 * 2048 * 58.0, 0.8),
        rel_tol=1e-9,
        tol_note=EXACT,
        unit="s",
        hint="achieved_tflops = 0.8 is valid (> 0); " + PREFILL_HINT,
        points=0.5,
        kind="below one",
    ),
    Case(
        "ex09.prefill_expert_time_s.one_param",
        "prefill_expert_time_s",
        (1, 1.0, 1.0),
        rel_tol=1e-9,
        tol_note=EXACT,
        unit="s",
        hint="num_tokens = 1 and active_params_per_token = 1 are valid; " + PREFILL_HINT,
        points=0.5,
        kind="smallest valid",
    ),
    Case(
        "ex09.prefill_expert_time_s.zero_params",
        "prefill_expert_time_s",
        (1024, 0.0, 20.0),
        raises="ValueError",
        hint="active_params_per_token = 0 must raise ValueError naming active_params_per_token",
        points=0.5,
    ),
    Case(
        "ex09.peak_tops.zero_cores",
        "peak_tops",
        (0, 2.0, 2048.0),
        raises="ValueError",
        hint="cores = 0 must raise ValueError naming cores",
        points=0.5,
    ),
]

# Hypothesis-generated inputs (autograder/tests/_generated.py: derandomized, so the same inputs on every run);
# the expected values come from the answer key. Tile dimensions up to 4096 keep 2 x m x k x n exact even in
# a float; measured_tops = 0 is a valid boundary; clocks, rates and sizes span several decades.
for i, args in enumerate(examples(st.tuples(st.integers(1, 4096), st.integers(1, 4096), st.integers(1, 4096)), 1)):
    CASES.append(
        Case(
            f"ex09.amx_ops_per_instruction.hyp_{i}",
            "amx_ops_per_instruction",
            args,
            tol_note="integer count: exact",
            unit="ops",
            hint=OPS_HINT,
            points=0.5,
        )
    )
for i, args in enumerate(examples(st.tuples(st.integers(1, 10**6), st.integers(1, 64)), 1)):
    CASES.append(
        Case(
            f"ex09.ops_per_cycle_per_core.hyp_{i}",
            "ops_per_cycle_per_core",
            args,
            rel_tol=1e-9,
            tol_note=EXACT,
            unit="ops/cycle/core",
            hint=OPC_HINT,
            points=0.5,
        )
    )
for i, args in enumerate(examples(st.tuples(st.integers(1, 1024), finite_floats(0.1, 6.0), magnitudes(-1, 4)), 1)):
    CASES.append(
        Case(
            f"ex09.peak_tops.hyp_{i}",
            "peak_tops",
            args,
            rel_tol=1e-9,
            tol_note=EXACT,
            unit="TOPS",
            hint=PEAK_HINT,
            points=0.5,
        )
    )
for i, args in enumerate(examples(st.tuples(st.one_of(st.just(0.0), magnitudes(-2, 3)), magnitudes(-1, 3)), 1)):
    CASES.append(
        Case(
            f"ex09.fraction_of_peak.hyp_{i}",
            "fraction_of_peak",
            args,
            rel_tol=1e-9,
            abs_tol=1e-15,
            tol_note=EXACT + "; 1e-15 absolute slack for a measurement of 0",
            unit="fraction",
            hint=FRACTION_HINT,
            points=0.5,
        )
    )
for i, args in enumerate(examples(st.tuples(st.integers(1, 10**6), magnitudes(0, 12), magnitudes(-2, 3)), 2)):
    CASES.append(
        Case(
            f"ex09.prefill_expert_time_s.hyp_{i}",
            "prefill_expert_time_s",
            args,
            rel_tol=1e-9,
            tol_note=EXACT,
            unit="s",
            hint=PREFILL_HINT,
            points=0.5,
        )
    )
