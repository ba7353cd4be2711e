"""Public cases for ex04 (transfer engine): the lecture's §2.4 / §7 Q4 numbers and a hand-checkable case."""

import math

from hetero.checks import Case

EXACT = "one multiplication or division of exact inputs: correct code agrees to ~1e-15; 1e-9 allows only that"


def invalid(func: str, label: str, args: tuple, argument: str, why: str) -> Case:
    """An invalid input of `func`: it must raise ValueError naming `argument`."""
    return Case(f"ex04.{func}.{label}", func, args, raises="ValueError",
                hint=f"{why}; raise ValueError naming {argument}")


CASES = [
    Case("ex04.line_rate_gb_per_s.four_200g", "line_rate_gb_per_s", (4, 200.0), expect=100.0,
         rel_tol=1e-9, tol_note=EXACT, unit="GB/s",
         hint="4 x 200 Gb/s = 800 Gb/s = 100 GB/s: divide bits by 8 to get bytes (800 means the /8 is missing)"),
    Case("ex04.line_rate_gb_per_s.eight_400g", "line_rate_gb_per_s", (8, 400.0), expect=400.0,
         rel_tol=1e-9, tol_note=EXACT, unit="GB/s",
         hint="8 x 400 Gb/s = 3200 Gb/s = 400 GB/s"),
    Case("ex04.link_efficiency.roce_87", "link_efficiency", (87.0, 100.0), expect=0.87,
         rel_tol=1e-9, tol_note=EXACT, unit="fraction of line rate",
         hint="87 GB/s of 100 GB/s is 0.87; return a fraction, not a percentage (87)"),
    Case("ex04.link_efficiency.eight_400g", "link_efficiency", (190.0, 400.0), expect=0.475,
         rel_tol=1e-9, tol_note=EXACT, unit="fraction of line rate",
         hint="190 / 400 = 0.475 (47.5%)"),
    Case("ex04.transfer_time_s.single_nic", "transfer_time_s", (41.94304e9, 25.0), expect=1.6777216,
         rel_tol=1e-9, tol_note=EXACT, unit="s",
         hint="41.94304e9 bytes at 25 GB/s = 25e9 bytes/s take 1.678 s (the lecture rounds to about 2 s); "
              "1.5625 means the bytes were divided by 2**30 (GiB) instead of 1e9"),
    Case("ex04.speedup_over_recompute.lecture", "speedup_over_recompute", (10.0, 2.0), expect=5.0,
         rel_tol=1e-9, tol_note=EXACT, unit="x",
         hint="speed-up = recompute time / transfer time = 10 / 2 = 5 (0.2 means the ratio is upside down)"),
    Case("ex04.line_rate_gb_per_s.three_25g", "line_rate_gb_per_s", (3, 25.0), expect=9.375,
         rel_tol=1e-9, tol_note=EXACT, unit="GB/s",
         hint="3 x 25 Gb/s = 75 Gb/s = 9.375 GB/s: not a whole number, so divide with / (// gives 9)"),
    Case("ex04.line_rate_gb_per_s.one_nic", "line_rate_gb_per_s", (1, 400.0), expect=50.0,
         rel_tol=1e-9, tol_note=EXACT, unit="GB/s", kind="smallest valid",
         hint="a single NIC is valid (num_nics >= 1): 400 Gb/s / 8 = 50 GB/s"),
    Case("ex04.link_efficiency.exactly_line_rate", "link_efficiency", (100.0, 100.0), expect=1.0,
         rel_tol=1e-9, tol_note=EXACT, unit="fraction of line rate", kind="largest valid",
         hint="a measurement exactly at line rate is valid (only above it is impossible): 1.0"),
    Case("ex04.transfer_time_s.zero_bytes", "transfer_time_s", (0.0, 12.5), expect=0.0,
         rel_tol=1e-9, abs_tol=1e-12, tol_note=EXACT + "; 1e-12 s absolute slack for the 0-byte case",
         unit="s", kind="zero result",
         hint="0 bytes take 0 s: num_bytes = 0 is valid (the rule is >= 0)"),
    Case("ex04.speedup_over_recompute.short_prompt", "speedup_over_recompute", (3.0, 4.0), expect=0.75,
         rel_tol=1e-9, tol_note=EXACT, unit="x",
         hint="3 s to recompute, 4 s to fetch: 3 / 4 = 0.75, recomputing wins (a speed-up below 1 is a valid "
              "answer, not an error)"),
    # Invalid input: every argument of every function.
    invalid("line_rate_gb_per_s", "no_nics", (0, 100.0), "num_nics",
            "0 NICs move nothing: num_nics must be an int >= 1 (check it, not only the rate)"),
    invalid("line_rate_gb_per_s", "zero_rate", (4, 0.0), "gbit_per_s_per_nic", "a NIC of 0 Gb/s is invalid"),
    invalid("line_rate_gb_per_s", "negative_rate", (4, -100.0), "gbit_per_s_per_nic", "a negative rate is invalid"),
    invalid("link_efficiency", "above_line_rate", (800.0, 100.0), "measured_gb_per_s",
            "800 'GB/s' measured on a 100 GB/s link is impossible (it is 800 Gb/s)"),
    invalid("link_efficiency", "nothing_measured", (0.0, 100.0), "measured_gb_per_s",
            "a measured throughput of 0 is invalid (the rule is > 0)"),
    invalid("link_efficiency", "negative_line_rate", (50.0, -100.0), "line_rate_gb_per_s",
            "a negative line rate is invalid"),
    invalid("link_efficiency", "zero_line_rate", (50.0, 0.0), "line_rate_gb_per_s",
            "a line rate of 0 is invalid (the rule is > 0)"),
    invalid("link_efficiency", "negative_measured", (-5.0, 100.0), "measured_gb_per_s",
            "a negative measurement is invalid"),
    invalid("transfer_time_s", "zero_bandwidth", (1e9, 0.0), "bandwidth_gb_per_s", "a bandwidth of 0 GB/s is invalid"),
    invalid("transfer_time_s", "infinite_bandwidth", (1e9, math.inf), "bandwidth_gb_per_s",
            "the bandwidth must be a finite number > 0 (test math.isfinite: an infinite link is not a measurement)"),
    invalid("transfer_time_s", "negative_bytes", (-1e9, 25.0), "num_bytes", "num_bytes must be >= 0"),
    invalid("speedup_over_recompute", "zero_recompute", (0.0, 2.0), "recompute_s", "recompute_s must be > 0"),
    invalid("speedup_over_recompute", "negative_transfer", (10.0, -2.0), "transfer_s", "transfer_s must be > 0"),
    invalid("speedup_over_recompute", "negative_recompute", (-3.0, 4.0), "recompute_s", "recompute_s must be > 0"),
    invalid("speedup_over_recompute", "zero_transfer", (3.0, 0.0), "transfer_s",
            "a transfer of 0 s is invalid (the rule is > 0), not a ZeroDivisionError"),
]
