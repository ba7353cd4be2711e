"""Exercise ex01: what a dollar buys on a GPU and on a CPU server (lecture §1.2, §7 Q1).

The slides compare hardware along three axes: compute (TFLOPS), memory bandwidth (GB/s) and memory
capacity (GB). Prices are the lecture's illustrative ones ("not accurate, only a demonstration"):
an A100 80 GB at $15,000 and a CPU server at $8,000. Experiment 01 (`python -m hetero.lecture 01`,
part "cost") calls these functions to print the per-$1000 table and the $/GB, $/(GB/s) comparison.

Units: `_usd` US dollars; `_gb` = 1e9 bytes (not GiB = 2**30); `_gb_per_s` = 1e9 bytes/s;
`_tflops` = 1e12 FLOP/s. Every argument must be a finite number > 0, otherwise the function raises
ValueError with a message naming the argument, e.g. "price_usd must be a finite number > 0, got 0".
"""

from __future__ import annotations

import math


def usd_per_gb(price_usd: float, capacity_gb: float) -> float:
    """Price of one GB of memory capacity (lecture §7 Q1).

    price_usd:   price of the device, US dollars (> 0).
    capacity_gb: its memory capacity in GB = 1e9 bytes (> 0); an "80 GB" A100 is 80, not 74.5 GiB.
    Returns:     US dollars per GB. Example: usd_per_gb(15000, 80) == 187.5.
    Raises ValueError naming the argument when an argument is not a finite number > 0.
    """
    # TODO(ex01): implement usd_per_gb
    raise NotImplementedError("ex01: usd_per_gb")


def usd_per_gb_per_s(price_usd: float, bandwidth_gb_per_s: float) -> float:
    """Price of one GB/s of memory bandwidth (lecture §7 Q1).

    price_usd:          price of the device, US dollars (> 0).
    bandwidth_gb_per_s: its memory bandwidth in GB/s = 1e9 bytes/s (> 0); 2 TB/s is 2000.
    Returns:            US dollars per (GB/s). Example: usd_per_gb_per_s(15000, 2000) == 7.5.
    Raises ValueError naming the argument when an argument is not a finite number > 0.
    """
    # TODO(ex01): implement usd_per_gb_per_s
    raise NotImplementedError("ex01: usd_per_gb_per_s")


def per_thousand_usd(price_usd: float, peak_tflops: float, bandwidth_gb_per_s: float,
                     capacity_gb: float) -> dict:
    """What $1000 buys of each resource (lecture §1.2: the A100 buys 20.8 TFLOPS, 133 GB/s, 5.3 GB).

    price_usd:          price of the device, US dollars (> 0).
    peak_tflops:        its dense peak compute, 1e12 FLOP/s (> 0).
    bandwidth_gb_per_s: its memory bandwidth, 1e9 bytes/s (> 0).
    capacity_gb:        its memory capacity, 1e9 bytes (> 0).
    Returns a dict with exactly the keys
        "tflops"              TFLOPS per $1000,
        "bandwidth_gb_per_s"  GB/s per $1000,
        "capacity_gb"         GB per $1000,
    each a float (resource x 1000 / price).
    Raises ValueError naming the argument when an argument is not a finite number > 0.
    """
    # TODO(ex01): implement per_thousand_usd
    raise NotImplementedError("ex01: per_thousand_usd")
