"""Hidden cases for ex01 (what a dollar buys): other accelerators, seeded random inputs, invalid input.

Expected values are not written here: `python -m autograder expected` computes them from the answer key.
Hardware figures are datasheet values; prices other than the lecture's are illustrative round numbers
(like the slides' own, they only set the scale of the answer).
"""

import numpy as np
from hypothesis import strategies as st

from autograder.tests._generated import examples, magnitudes
from hetero.checks import Case

EXACT = "a single division or product of exact inputs: correct code agrees to ~1e-15; 1e-9 allows only that"
GIB_HINT = "capacities are in GB = 1e9 bytes, as quoted on datasheets; do not convert to GiB"
KEYS_HINT = "return a dict with exactly 'tflops', 'bandwidth_gb_per_s', 'capacity_gb', each resource x 1000 / price"

# (label, price_usd, peak_tflops dense BF16, bandwidth_gb_per_s, capacity_gb)
_DEVICES = (
    ("h100_sxm", 30000.0, 989.0, 3350.0, 80.0),  # H100 SXM datasheet; illustrative price
    ("h20", 12000.0, 148.0, 4000.0, 96.0),  # H20 product brief; illustrative price
    ("rtx4090", 1599.0, 165.2, 1008.0, 24.0),  # Ada whitepaper; launch list price
    ("mi300x", 20000.0, 1307.4, 5300.0, 192.0),  # AMD MI300X datasheet; illustrative price
    ("ddr5_server_1tb", 14000.0, 10.0, 460.8, 1024.0),  # 2 sockets x 12 ch DDR5-4800, 1 TB; illustrative
)

CASES = []
for label, price, tflops, bw, cap in _DEVICES:
    CASES += [
        Case(
            f"ex01.usd_per_gb.{label}",
            "usd_per_gb",
            (price, cap),
            rel_tol=1e-9,
            tol_note=EXACT,
            unit="$ per GB",
            hint=f"price / capacity; {GIB_HINT}",
            points=1.0,
        ),
        Case(
            f"ex01.usd_per_gb_per_s.{label}",
            "usd_per_gb_per_s",
            (price, bw),
            rel_tol=1e-9,
            tol_note=EXACT,
            unit="$ per GB/s",
            hint="price / bandwidth in GB/s (3.35 TB/s is 3350 GB/s)",
            points=1.0,
        ),
        Case(
            f"ex01.per_thousand_usd.{label}",
            "per_thousand_usd",
            (price, tflops, bw, cap),
            rel_tol=1e-9,
            tol_note=EXACT,
            unit="resource per $1000",
            hint=KEYS_HINT,
            points=1.5,
        ),
    ]

# Seeded random devices over several orders of magnitude (log-uniform), so no answer can be memorised.
_rng = np.random.default_rng(20250101)
for i in range(3):
    price, tflops, bw, cap = (float(x) for x in 10.0 ** _rng.uniform([2, -1, 0, -1], [6, 4, 4, 4]))
    CASES += [
        Case(
            f"ex01.usd_per_gb.random{i}",
            "usd_per_gb",
            (price, cap),
            rel_tol=1e-9,
            tol_note=EXACT,
            unit="$ per GB",
            hint="price / capacity, both as given (no unit conversion)",
            points=0.5,
        ),
        Case(
            f"ex01.usd_per_gb_per_s.random{i}",
            "usd_per_gb_per_s",
            (price, bw),
            rel_tol=1e-9,
            tol_note=EXACT,
            unit="$ per GB/s",
            hint="price / bandwidth, both as given",
            points=0.5,
        ),
        Case(
            f"ex01.per_thousand_usd.random{i}",
            "per_thousand_usd",
            (price, tflops, bw, cap),
            rel_tol=1e-9,
            tol_note=EXACT,
            unit="resource per $1000",
            hint=KEYS_HINT,
            points=0.5,
        ),
    ]

# Invalid input: each argument in turn, zero, negative, nan and infinity.
_INVALID = (
    ("usd_per_gb", "price_zero", (0.0, 80.0)),
    ("usd_per_gb", "capacity_negative", (15000.0, -80.0)),
    ("usd_per_gb", "capacity_nan", (15000.0, float("nan"))),
    ("usd_per_gb_per_s", "bandwidth_zero", (15000.0, 0.0)),
    ("usd_per_gb_per_s", "price_inf", (float("inf"), 2000.0)),
    ("per_thousand_usd", "tflops_zero", (15000.0, 0.0, 2000.0, 80.0)),
    ("per_thousand_usd", "bandwidth_negative", (15000.0, 312.0, -2000.0, 80.0)),
    ("per_thousand_usd", "capacity_zero", (15000.0, 312.0, 2000.0, 0.0)),
)
for func, what, args in _INVALID:
    CASES.append(
        Case(
            f"ex01.{func}.invalid_{what}",
            func,
            args,
            raises="ValueError",
            points=0.5,
            hint="every argument must be a finite number > 0: check each one and raise ValueError "
            "naming it (not ZeroDivisionError, not a negative or nan result)",
        )
    )

# Resources below 1 unit are valid (the rule is > 0, not > 1): a hard disk streams ~0.28 GB/s, and a
# sub-dollar price per unit must not be mistaken for an invalid input.
# (label, price_usd, peak_tflops, bandwidth_gb_per_s, capacity_gb)
_BELOW_ONE = (
    ("hdd_20tb", 350.0, 0.001, 0.285, 20000.0),  # 20 TB 7200 rpm HDD: ~285 MB/s sustained; illustrative price
    ("one_dollar_part", 1.0, 0.5, 0.5, 0.5),  # every argument at or below 1: still valid
)
for label, price, tflops, bw, cap in _BELOW_ONE:
    CASES += [
        Case(
            f"ex01.usd_per_gb.{label}",
            "usd_per_gb",
            (price, cap),
            rel_tol=1e-9,
            tol_note=EXACT,
            unit="$ per GB",
            hint="values below 1 are valid: the rule is > 0 (not >= 1)",
            points=0.5,
            kind="below one",
        ),
        Case(
            f"ex01.usd_per_gb_per_s.{label}",
            "usd_per_gb_per_s",
            (price, bw),
            rel_tol=1e-9,
            tol_note=EXACT,
            unit="$ per GB/s",
            hint="a bandwidth below 1 GB/s (an HDD streams ~0.285 GB/s) is valid: the rule is > 0 (not >= 1)",
            points=0.5,
            kind="below one",
        ),
        Case(
            f"ex01.per_thousand_usd.{label}",
            "per_thousand_usd",
            (price, tflops, bw, cap),
            rel_tol=1e-9,
            tol_note=EXACT,
            unit="resource per $1000",
            hint=KEYS_HINT + "; values below 1 are valid",
            points=0.5,
            kind="below one",
        ),
    ]

# Hypothesis-generated devices (autograder/tests/_generated.py: derandomized, so the same inputs on every
# run): prices from $1 to ~$10M and resources from 0.1 to ~1e5 units, every decade equally likely, the
# smallest values first. Only the inputs are generated; the expected values come from the answer key.
_PRICE, _RESOURCE = magnitudes(0, 6), magnitudes(-1, 4)
_PAIRS = examples(st.tuples(_PRICE, _RESOURCE), 4)  # one list, split between the two price-per-unit functions
for i, (price, cap) in enumerate(_PAIRS[:2]):
    CASES.append(
        Case(
            f"ex01.usd_per_gb.hyp_{i}",
            "usd_per_gb",
            (price, cap),
            rel_tol=1e-9,
            tol_note=EXACT,
            unit="$ per GB",
            hint="price / capacity, both as given (no unit conversion); values below 1 are valid",
            points=0.5,
        )
    )
for i, (price, bw) in enumerate(_PAIRS[2:]):
    CASES.append(
        Case(
            f"ex01.usd_per_gb_per_s.hyp_{i}",
            "usd_per_gb_per_s",
            (price, bw),
            rel_tol=1e-9,
            tol_note=EXACT,
            unit="$ per GB/s",
            hint="price / bandwidth, both as given; values below 1 are valid",
            points=0.5,
        )
    )
for i, args in enumerate(examples(st.tuples(_PRICE, _RESOURCE, _RESOURCE, _RESOURCE), 2)):
    CASES.append(
        Case(
            f"ex01.per_thousand_usd.hyp_{i}",
            "per_thousand_usd",
            args,
            rel_tol=1e-9,
            tol_note=EXACT,
            unit="resource per $1000",
            hint=KEYS_HINT,
            points=0.5,
        )
    )
