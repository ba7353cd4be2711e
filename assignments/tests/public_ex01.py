"""Public cases for ex01 (what a dollar buys): the lecture's §1.2 / §7 Q1 answers and a hand-checkable case."""

from hetero.checks import Case

EXACT = "a single division: any correct order of operations agrees to ~1e-15; 1e-9 leaves room for that only"

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
    Case("ex01.usd_per_gb.zero_capacity", "usd_per_gb", (15000.0, 0.0), raises="ValueError",
         hint="a capacity of 0 GB is invalid input: raise ValueError naming capacity_gb instead of dividing by zero"),
    Case("ex01.per_thousand_usd.negative_price", "per_thousand_usd", (-1.0, 312.0, 2000.0, 80.0),
         raises="ValueError", hint="a negative price is invalid: raise ValueError naming price_usd"),
]
