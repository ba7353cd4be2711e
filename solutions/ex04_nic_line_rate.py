"""Exercise ex04: the transfer engine, NIC line rate, link efficiency, transfer vs recompute (lecture §2.4, §7 Q4).

Mooncake fetches a prefix's KV cache over RDMA instead of recomputing it. The lecture's numbers: a
128K-token LLaMA-3-70B KV is about 42 GB; one 200 Gb/s NIC moves it in about 2 s; the transfer engine
aggregates NICs and measured 87 GB/s on 4 x 200 Gb/s RoCE and 190 GB/s on 8 x 400 Gb/s; recomputing
the prefill costs about 10 s. Experiment 02 (part "transfer") calls these functions.

Units: `_gbit_per_s` = 1e9 bits/s (network line rates are quoted in bits); `_gb_per_s` = 1e9 bytes/s;
`num_bytes` bytes; `_s` seconds. Efficiencies are fractions (0.87, not 87). Invalid input raises
ValueError with a message naming the argument.
"""

from __future__ import annotations

import math


def _require_positive(name: str, value: float) -> None:
    if not (math.isfinite(value) and value > 0):
        raise ValueError(f"{name} must be a finite number > 0, got {value}")


def line_rate_gb_per_s(num_nics: int, gbit_per_s_per_nic: float) -> float:
    """Aggregate line rate of `num_nics` NICs in GB/s (lecture §7 Q4: 4 x 200 Gb/s = 100 GB/s).

    num_nics:           NICs used together (int >= 1).
    gbit_per_s_per_nic: line rate of one NIC, 1e9 bits/s (> 0).
    Returns:            aggregate line rate in GB/s = 1e9 bytes/s (8 bits per byte).
    Raises ValueError naming the argument: num_nics not an int >= 1, gbit_per_s_per_nic not > 0.
    """
    # BEGIN SOLUTION
    if isinstance(num_nics, bool) or not isinstance(num_nics, int) or num_nics < 1:
        raise ValueError(f"num_nics must be an int >= 1, got {num_nics!r}")
    _require_positive("gbit_per_s_per_nic", gbit_per_s_per_nic)
    return num_nics * gbit_per_s_per_nic / 8.0
    # END SOLUTION


def link_efficiency(measured_gb_per_s: float, line_rate_gb_per_s: float) -> float:
    """Measured throughput as a fraction of line rate (lecture §7 Q4: 87 / 100 = 0.87).

    measured_gb_per_s:  measured throughput, GB/s (> 0).
    line_rate_gb_per_s: line rate of the same NICs, GB/s (> 0).
    Returns:            a fraction in (0, 1] (0.87 for 87%, not 87).
    Raises ValueError naming the argument when a value is not > 0, and when measured_gb_per_s >
    line_rate_gb_per_s: a measurement above line rate is physically impossible (it means mixed units,
    e.g. Gb/s against GB/s).
    """
    # BEGIN SOLUTION
    _require_positive("measured_gb_per_s", measured_gb_per_s)
    _require_positive("line_rate_gb_per_s", line_rate_gb_per_s)
    if measured_gb_per_s > line_rate_gb_per_s:
        raise ValueError(f"measured_gb_per_s {measured_gb_per_s} exceeds line_rate_gb_per_s "
                         f"{line_rate_gb_per_s}: check the units (Gb/s vs GB/s)")
    return measured_gb_per_s / line_rate_gb_per_s
    # END SOLUTION


def transfer_time_s(num_bytes: float, bandwidth_gb_per_s: float) -> float:
    """Seconds to move `num_bytes` at `bandwidth_gb_per_s` (lecture §2.4: 42 GB at 25 GB/s, about 2 s).

    num_bytes:          bytes to move (finite, >= 0).
    bandwidth_gb_per_s: sustained bandwidth, GB/s = 1e9 bytes/s (> 0).
    Returns:            seconds (float); latency and setup costs are not modelled.
    Raises ValueError naming the argument: num_bytes < 0, bandwidth_gb_per_s not > 0 (or not finite).
    """
    # BEGIN SOLUTION
    if not (math.isfinite(num_bytes) and num_bytes >= 0):
        raise ValueError(f"num_bytes must be a finite number >= 0, got {num_bytes}")
    _require_positive("bandwidth_gb_per_s", bandwidth_gb_per_s)
    return num_bytes / (bandwidth_gb_per_s * 1e9)
    # END SOLUTION


def speedup_over_recompute(recompute_s: float, transfer_s: float) -> float:
    """How many times faster fetching the KV is than recomputing it (lecture §2.4: 10 s / 2 s = about 5x).

    recompute_s: seconds to recompute the prefill (> 0).
    transfer_s:  seconds to transfer its KV (> 0).
    Returns:     recompute_s / transfer_s (> 1 means fetching wins).
    Raises ValueError naming the argument when either is not a finite number > 0.
    """
    # BEGIN SOLUTION
    _require_positive("recompute_s", recompute_s)
    _require_positive("transfer_s", transfer_s)
    return recompute_s / transfer_s
    # END SOLUTION
