"""Hidden cases for ex04 (transfer engine): other NICs, payloads and links, unit traps, invalid input.

Expected values are computed from the answer key by `python -m autograder expected`.
"""

import numpy as np
from hypothesis import strategies as st

from autograder.tests._generated import examples, finite_floats, magnitudes
from hetero.checks import Case

EXACT = "one multiplication or division of exact inputs: correct code agrees to ~1e-15; 1e-9 allows only that"
RATE_HINT = "NIC line rates are bits per second: num_nics x Gb/s / 8 gives GB/s"
EFF_HINT = "measured / line rate as a fraction (0.87, not 87)"
TIME_HINT = "bytes / (GB/s x 1e9): a GB is 1e9 bytes, not 2**30"
SPEEDUP_HINT = "recompute time / transfer time (larger is better for fetching)"

# (label, num_nics, gbit_per_s_per_nic)
_NICS = (
    ("one_100g", 1, 100.0),  # ConnectX-5 class
    ("three_400g", 3, 400.0),  # ConnectX-7 (2 x 400G or 4 x 200G would repeat a public answer)
    ("eight_200g", 8, 200.0),
    ("six_800g", 6, 800.0),  # ConnectX-8 / 800G Ethernet
    ("one_25g", 1, 25.0),  # a 25 GbE storage NIC
    ("sixteen_56g", 16, 56.0),  # FDR InfiniBand
)
CASES = [
    Case(
        f"ex04.line_rate_gb_per_s.{label}",
        "line_rate_gb_per_s",
        (n, g),
        rel_tol=1e-9,
        tol_note=EXACT,
        unit="GB/s",
        hint=RATE_HINT,
        points=1.0,
    )
    for label, n, g in _NICS
]

# (label, measured_gb_per_s, line_rate_gb_per_s)
_EFF = (
    ("single_200g_23", 23.0, 25.0),
    ("two_400g_91", 91.0, 100.0),
    ("eight_200g_150", 150.0, 200.0),
    ("at_line_rate", 50.0, 50.0),  # exactly line rate is allowed: 1.0
    ("tcp_fallback", 3.1, 50.0),
)
CASES += [
    Case(
        f"ex04.link_efficiency.{label}",
        "link_efficiency",
        (m, line),
        rel_tol=1e-9,
        tol_note=EXACT,
        unit="fraction of line rate",
        hint=EFF_HINT,
        points=1.0,
        kind="largest valid" if m == line else "",
    )
    for label, m, line in _EFF
]

# (label, num_bytes, bandwidth_gb_per_s); KV sizes from ex02-style accounting
_TIME = (
    ("llama70b_128k_at_87", 128000 * 327680.0, 87.0),
    ("llama70b_128k_at_190", 128000 * 327680.0, 190.0),
    ("llama8b_32k_single_100g", 32768 * 131072.0, 12.5),
    ("qwen3_235b_64k_eight_400g", 65536 * 192512.0, 400.0),
    ("nothing_to_move", 0.0, 25.0),
    ("one_gib", float(2**30), 25.0),  # 1 GiB is 1.073741824e9 bytes, not 1e9
)
CASES += [
    Case(
        f"ex04.transfer_time_s.{label}",
        "transfer_time_s",
        (b, bw),
        rel_tol=1e-9,
        abs_tol=1e-12,
        tol_note=EXACT + "; 1e-12 s absolute slack for the 0-byte case",
        unit="s",
        hint=TIME_HINT,
        points=1.0,
        kind="zero result" if b == 0 else "",
    )
    for label, b, bw in _TIME
]

# (label, recompute_s, transfer_s)
_SPEEDUP = (
    ("lecture_aggregated_low", 10.0, 0.482),
    ("lecture_aggregated_high", 10.0, 0.2207),
    ("slower_than_recompute", 0.3, 1.2),  # a short prompt: recomputing wins (speed-up < 1)
    ("equal", 2.0, 2.0),
    ("long_context", 95.0, 1.9),
)
CASES += [
    Case(
        f"ex04.speedup_over_recompute.{label}",
        "speedup_over_recompute",
        (r, t),
        rel_tol=1e-9,
        tol_note=EXACT,
        unit="x",
        hint=SPEEDUP_HINT,
        points=1.0,
    )
    for label, r, t in _SPEEDUP
]

# Seeded random links: the chain line rate -> efficiency -> time -> speed-up. A draw whose line rate is a
# public case's answer (100 or 400 GB/s: 8 x 400G was drawn) takes one NIC more, so no hidden answer
# repeats a public one (tests/test_expected.py).
_PUBLIC_LINE_RATES = (100.0, 400.0)
_rng = np.random.default_rng(4)
for i in range(3):
    n = int(_rng.integers(1, 17))
    g = float(_rng.choice([25.0, 100.0, 200.0, 400.0, 800.0]))
    while n * g / 8 in _PUBLIC_LINE_RATES:
        n += 1
    line = n * g / 8
    measured = float(line * _rng.uniform(0.2, 1.0))
    nbytes = float(_rng.uniform(1e8, 1e11))
    CASES += [
        Case(
            f"ex04.line_rate_gb_per_s.random{i}",
            "line_rate_gb_per_s",
            (n, g),
            rel_tol=1e-9,
            tol_note=EXACT,
            unit="GB/s",
            hint=RATE_HINT,
            points=0.5,
        ),
        Case(
            f"ex04.link_efficiency.random{i}",
            "link_efficiency",
            (measured, line),
            rel_tol=1e-9,
            tol_note=EXACT,
            unit="fraction of line rate",
            hint=EFF_HINT,
            points=0.5,
        ),
        Case(
            f"ex04.transfer_time_s.random{i}",
            "transfer_time_s",
            (nbytes, measured),
            rel_tol=1e-9,
            tol_note=EXACT,
            unit="s",
            hint=TIME_HINT,
            points=0.5,
        ),
        Case(
            f"ex04.speedup_over_recompute.random{i}",
            "speedup_over_recompute",
            (float(_rng.uniform(0.5, 60.0)), nbytes / (measured * 1e9)),
            rel_tol=1e-9,
            tol_note=EXACT,
            unit="x",
            hint=SPEEDUP_HINT,
            points=0.5,
        ),
    ]

_INVALID = (
    ("line_rate_gb_per_s", "zero_nics", (0, 200.0)),
    ("line_rate_gb_per_s", "negative_rate", (4, -200.0)),
    ("link_efficiency", "gbit_against_gbyte", (190.0 * 8, 400.0)),
    ("link_efficiency", "zero_line_rate", (87.0, 0.0)),
    ("link_efficiency", "negative_measured", (-1.0, 100.0)),
    ("transfer_time_s", "negative_bytes", (-1.0, 25.0)),
    ("transfer_time_s", "nan_bandwidth", (42e9, float("nan"))),
    ("speedup_over_recompute", "zero_transfer", (10.0, 0.0)),
    ("speedup_over_recompute", "negative_recompute", (-10.0, 2.0)),
)
CASES += [
    Case(
        f"ex04.{func}.invalid_{what}",
        func,
        args,
        raises="ValueError",
        points=0.5,
        hint="check the argument ranges in the docstring and raise ValueError naming the argument "
        "(a measurement above line rate means mixed Gb/s and GB/s)",
    )
    for func, what, args in _INVALID
]

# Hypothesis-generated inputs (autograder/tests/_generated.py: derandomized, so the same inputs on every run);
# the expected values come from the answer key. Rates and sizes span many decades; a measured rate is a
# fraction in (0, 1] of its line rate, so exactly line rate (efficiency 1.0) is among the valid inputs.
for i, args in enumerate(examples(st.tuples(st.integers(1, 64), magnitudes(0, 3)), 1)):
    CASES.append(
        Case(
            f"ex04.line_rate_gb_per_s.hyp_{i}",
            "line_rate_gb_per_s",
            args,
            rel_tol=1e-9,
            tol_note=EXACT,
            unit="GB/s",
            hint=RATE_HINT,
            points=0.5,
        )
    )


@st.composite
def _efficiency_args(draw):
    line = draw(magnitudes(-1, 3))
    fraction = draw(st.one_of(st.just(1.0), finite_floats(1e-3, 1.0)))  # exactly line rate first
    return fraction * line, line  # fraction <= 1, so the rounded product never exceeds line


for i, args in enumerate(examples(_efficiency_args(), 3)):
    CASES.append(
        Case(
            f"ex04.link_efficiency.hyp_{i}",
            "link_efficiency",
            args,
            rel_tol=1e-9,
            tol_note=EXACT,
            unit="fraction of line rate",
            hint=EFF_HINT,
            points=0.5,
        )
    )
_BYTES = st.one_of(magnitudes(0, 14), st.just(0.0))  # 1 B .. 1 PB, or nothing to move
for i, args in enumerate(examples(st.tuples(_BYTES, magnitudes(-1, 3)), 1)):
    CASES.append(
        Case(
            f"ex04.transfer_time_s.hyp_{i}",
            "transfer_time_s",
            args,
            rel_tol=1e-9,
            abs_tol=1e-12,
            tol_note=EXACT + "; 1e-12 s absolute slack for a 0-byte transfer",
            unit="s",
            hint=TIME_HINT,
            points=0.5,
        )
    )
for i, args in enumerate(examples(st.tuples(magnitudes(-3, 3), magnitudes(-3, 3)), 1)):
    CASES.append(
        Case(
            f"ex04.speedup_over_recompute.hyp_{i}",
            "speedup_over_recompute",
            args,
            rel_tol=1e-9,
            tol_note=EXACT,
            unit="x",
            hint=SPEEDUP_HINT,
            points=0.5,
        )
    )
