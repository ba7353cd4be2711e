"""Public cases for ex01 (what a dollar buys): the lecture's §1.2 / §7 Q1 answers, hand-checkable cases, values
below 1, and an invalid value of every argument of every function."""

import math

from hetero.checks import Case

EXACT = "a single division: any correct order of operations agrees to ~1e-15; 1e-9 leaves room for that only"
NOT_FINITE = ("nan and infinity are not finite numbers > 0: test math.isfinite(x) and x > 0 (a test x <= 0 lets "
              "nan through, since every comparison with nan is False)")
ZERO = "0 is not > 0 (the rule is strict: test x > 0, not x >= 0)"


def invalid(func: str, label: str, args: tuple, argument: str, why: str) -> Case:
    """An invalid input of `func`: it must raise ValueError naming `argument`."""
    return Case(f"ex01.{func}.{label}", func, args, raises="ValueError",
                hint=f"{why}; raise ValueError naming {argument}")


CASES = [
    Case("ex01.usd_per_gb.a100", "usd_per_gb", (15000.0, 80.0), expect=187.5,
         rel_tol=1e-9, tol_note=EXACT, unit="$ per GB",
         hint="the A100 has 80 GB = 80e9 bytes; 15000 / 80 = 187.5 (do not convert to GiB: 80 GB is not 80 GiB)"),
    Case("ex01.usd_per_gb.cpu_server", "usd_per_gb", (8000.0, 512.0), expect=15.625,
         rel_tol=1e-9, tol_note=EXACT, unit="$ per GB",
         hint="price divided by capacity: 8000 / 512 = 15.625 (the lecture rounds to 15.6)"),
    Case("ex01.usd_per_gb_per_s.a100", "usd_per_gb_per_s", (15000.0, 2000.0), expect=7.5,
         rel_tol=1e-9, tol_note=EXACT, unit="$ per GB/s",
         hint="2 TB/s is 2000 GB/s; 15000 / 2000 = 7.5 (a result of 7500 means the bandwidth was taken in TB/s)"),
    Case("ex01.usd_per_gb_per_s.cpu_server", "usd_per_gb_per_s", (8000.0, 320.0), expect=25.0,
         rel_tol=1e-9, tol_note=EXACT, unit="$ per GB/s",
         hint="price divided by bandwidth, not bandwidth divided by price"),
    Case("ex01.per_thousand_usd.a100", "per_thousand_usd", (15000.0, 312.0, 2000.0, 80.0),
         expect={"tflops": 20.8, "bandwidth_gb_per_s": 133.33333333333334, "capacity_gb": 5.333333333333333},
         rel_tol=1e-9, tol_note=EXACT, unit="resource per $1000",
         hint="$1000 buys resource x 1000 / price: 312 x 1000 / 15000 = 20.8 TFLOPS; use exactly the keys "
              "'tflops', 'bandwidth_gb_per_s', 'capacity_gb'"),
    Case("ex01.per_thousand_usd.cpu_server", "per_thousand_usd", (8000.0, 20.0, 320.0, 512.0),
         expect={"tflops": 2.5, "bandwidth_gb_per_s": 40.0, "capacity_gb": 64.0},
         rel_tol=1e-9, tol_note=EXACT, unit="resource per $1000",
         hint="per $1000, not per dollar: multiply by 1000 after dividing by the price"),
    # Values below 1 are valid: the rule is > 0, not >= 1 (a 0.5 GB part at $0.75).
    Case("ex01.usd_per_gb.below_one", "usd_per_gb", (0.75, 0.5), expect=1.5,
         rel_tol=1e-9, tol_note=EXACT, unit="$ per GB", kind="below one",
         hint="0.75 / 0.5 = 1.5: a price or capacity below 1 is valid (every argument must be > 0, not >= 1)"),
    Case("ex01.usd_per_gb_per_s.below_one", "usd_per_gb_per_s", (0.6, 0.8), expect=0.75,
         rel_tol=1e-9, tol_note=EXACT, unit="$ per GB/s", kind="below one",
         hint="0.6 / 0.8 = 0.75: a bandwidth below 1 GB/s is valid (every argument must be > 0, not >= 1)"),
    Case("ex01.per_thousand_usd.below_one", "per_thousand_usd", (0.8, 0.5, 0.2, 0.4),
         expect={"tflops": 625.0, "bandwidth_gb_per_s": 250.0, "capacity_gb": 500.0},
         rel_tol=1e-9, tol_note=EXACT, unit="resource per $1000", kind="below one",
         hint="$1000 buys 1000 / 0.8 = 1250 of these parts: 625 TFLOPS, 250 GB/s, 500 GB; values below 1 are valid"),
    # Invalid input: every argument of every function is checked (each must be a finite number > 0).
    invalid("usd_per_gb", "zero_capacity", (15000.0, 0.0), "capacity_gb",
            "a capacity of 0 GB is invalid input: do not divide by zero"),
    invalid("usd_per_gb", "negative_price", (-5.0, 80.0), "price_usd",
            "a negative price is invalid: check the price too, not only the capacity"),
    invalid("usd_per_gb", "infinite_capacity", (15000.0, math.inf), "capacity_gb", NOT_FINITE),
    invalid("usd_per_gb", "negative_capacity", (8000.0, -512.0), "capacity_gb", "a negative capacity is invalid"),
    invalid("usd_per_gb", "zero_price", (0.0, 512.0), "price_usd", "a price of 0 is invalid: " + ZERO),
    invalid("usd_per_gb_per_s", "zero_bandwidth", (8000.0, 0.0), "bandwidth_gb_per_s", "a bandwidth of 0: " + ZERO),
    invalid("usd_per_gb_per_s", "negative_bandwidth", (15000.0, -2000.0), "bandwidth_gb_per_s",
            "a negative bandwidth is invalid: do not return a negative price"),
    invalid("usd_per_gb_per_s", "nan_price", (math.nan, 2000.0), "price_usd", NOT_FINITE),
    invalid("per_thousand_usd", "negative_price", (-1.0, 312.0, 2000.0, 80.0), "price_usd",
            "a negative price is invalid"),
    invalid("per_thousand_usd", "negative_tflops", (15000.0, -312.0, 2000.0, 80.0), "peak_tflops",
            "check every argument, not only the price: a negative TFLOPS figure is invalid"),
    invalid("per_thousand_usd", "zero_bandwidth", (15000.0, 312.0, 0.0, 80.0), "bandwidth_gb_per_s",
            "check every argument, not only the price: a bandwidth of 0 is invalid"),
    invalid("per_thousand_usd", "negative_capacity", (15000.0, 312.0, 2000.0, -80.0), "capacity_gb",
            "check every argument, not only the price: a negative capacity is invalid"),
    invalid("per_thousand_usd", "nan_bandwidth", (15000.0, 312.0, math.nan, 80.0), "bandwidth_gb_per_s",
            "check every argument, not only the price: " + NOT_FINITE),
    invalid("per_thousand_usd", "negative_bandwidth", (8000.0, 20.0, -320.0, 512.0), "bandwidth_gb_per_s",
            "check every argument, not only the price: a negative bandwidth is invalid"),
    invalid("per_thousand_usd", "zero_tflops", (8000.0, 0.0, 320.0, 512.0), "peak_tflops", ZERO),
    invalid("per_thousand_usd", "zero_capacity", (8000.0, 20.0, 320.0, 0.0), "capacity_gb", ZERO),
]
