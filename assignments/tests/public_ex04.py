"""Public cases for ex04 (transfer engine): the lecture's §2.4 / §7 Q4 numbers and a hand-checkable case."""

from hetero.checks import Case

EXACT = "one multiplication or division of exact inputs: correct code agrees to ~1e-15; 1e-9 allows only that"

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
    Case("ex04.link_efficiency.above_line_rate", "link_efficiency", (800.0, 100.0), raises="ValueError",
         hint="800 'GB/s' measured on a 100 GB/s link is impossible (it is 800 Gb/s): raise ValueError naming "
              "measured_gb_per_s"),
    Case("ex04.transfer_time_s.zero_bandwidth", "transfer_time_s", (1e9, 0.0), raises="ValueError",
         hint="a bandwidth of 0 GB/s is invalid: raise ValueError naming bandwidth_gb_per_s"),
]
