"""Exercise ex09: Intel AMX in numbers: ops per instruction, peak TOPS, and the CPU's prefill time
(lecture §4.5, §7 Q9).

In prefill every expert weight serves many tokens, so the CPU side becomes compute-bound. An AMX
tile instruction (TDPBSSD) multiplies an m x k INT8 tile by a k x n INT8 tile and accumulates
into m x n INT32; a multiply-accumulate counts as 2 operations.

Units: ops are integer/float operations (a MAC = 2); `_ghz` is 1e9 cycles per second; `_tops` is
1e12 operations per second; `_tflops` is 1e12 floating-point operations per second; `_s` seconds.
"""

from __future__ import annotations


def amx_ops_per_instruction(m: int, k: int, n: int) -> int:
    """Operations of one tile matrix product (m x k) . (k x n) (lecture §4.5).

    A multiply-accumulate counts as 2 ops. Lecture: a 16 x 64 x 16 INT8 tile product is 32,768 ops.

    m, k, n: tile dimensions (count, >= 1 each).
    Returns: ops per instruction (int, ops).
    Raises ValueError naming the argument when a dimension is < 1.
    """
    # TODO(ex09): implement amx_ops_per_instruction
    raise NotImplementedError("ex09: amx_ops_per_instruction")


def ops_per_cycle_per_core(ops_per_instruction: int, cycles_per_instruction: int) -> float:
    """Throughput of one core issuing back-to-back tile instructions (lecture §4.5).

    Lecture: 32,768 ops every 16 cycles = 2,048 ops per cycle per core (AVX-512 VNNI: 256).

    ops_per_instruction:    ops of one instruction (ops, >= 1).
    cycles_per_instruction: cycles one instruction occupies the unit (cycles, >= 1).
    Returns:                ops per cycle per core (float, ops/cycle).
    Raises ValueError naming the argument when either is < 1.
    """
    # TODO(ex09): implement ops_per_cycle_per_core
    raise NotImplementedError("ex09: ops_per_cycle_per_core")


def peak_tops(cores: int, clock_ghz: float, ops_per_cycle_per_core: float) -> float:
    """Theoretical peak of a CPU socket in TOPS (lecture §7 Q9).

    Lecture: 56 cores at 2.0 GHz with 2,048 ops/cycle/core is about 229 TOPS.

    cores:                  cores of the socket (count, >= 1).
    clock_ghz:              sustained clock (1e9 cycles/s, > 0).
    ops_per_cycle_per_core: ops per cycle per core (ops/cycle, > 0).
    Returns:                peak throughput (float, TOPS = 1e12 ops/s).
    Raises ValueError naming the argument when cores < 1 or clock_ghz or ops_per_cycle_per_core <= 0.
    """
    # TODO(ex09): implement peak_tops
    raise NotImplementedError("ex09: peak_tops")


def fraction_of_peak(measured_tops: float, peak_tops: float) -> float:
    """Measured throughput as a fraction of the peak (lecture §7 Q9: 37 / 229 = 0.16).

    measured_tops: measured throughput (TOPS, >= 0).
    peak_tops:     theoretical peak (TOPS, > 0).
    Returns:       fraction (float, dimensionless, 0.16 means 16%; may exceed 1 if the peak is wrong).
    Raises ValueError naming the argument when measured_tops < 0 or peak_tops <= 0.
    """
    # TODO(ex09): implement fraction_of_peak
    raise NotImplementedError("ex09: fraction_of_peak")


def prefill_expert_time_s(num_tokens: int, active_params_per_token: float, achieved_tflops: float) -> float:
    """CPU time for the routed experts of a prompt's prefill (lecture §4.5).

    Each token multiplies its activations by every active expert parameter once: 2 FLOP (one
    multiply-accumulate) per parameter per token. Lecture: a 1K-token DeepSeek-V3 prompt takes about
    17 s with AVX-512 and about 2 s with AMX.

    num_tokens:              prompt tokens (count, >= 1).
    active_params_per_token: routed-expert parameters each token uses, all layers (count, > 0).
    achieved_tflops:         sustained throughput of the CPU kernel (1e12 FLOP/s, > 0).
    Returns:                 seconds (float, s).
    Raises ValueError naming the argument when num_tokens < 1 or another argument is <= 0.
    """
    # TODO(ex09): implement prefill_expert_time_s
    raise NotImplementedError("ex09: prefill_expert_time_s")
