"""Public cases for ex05 (overload scheduling): small hand-checkable decode states, the admission
threshold at and above its boundary, a three-sample correlation and a sine wave's period."""

import math

from hetero.checks import Case

INT = "a count of requests: exact integer, no tolerance"
BOOL = "a yes/no decision: exact"
CORR = ("a few sums over 3 exact samples: any correct Pearson formula agrees to ~1e-15; "
        "1e-9 absolute allows only rounding")
PERIOD = "the period of one FFT bin, n x dt / k, from exact inputs: agrees to float rounding (1e-9)"


def invalid(func: str, label: str, args: tuple, argument: str, why: str) -> Case:
    """An invalid input of `func`: it must raise ValueError naming `argument`."""
    return Case(f"ex05.{func}.{label}", func, args, raises="ValueError",
                hint=f"{why}; raise ValueError naming {argument}")


CASES = [
    # Decoders started at 0, 2, 5, 8 s leave (predicted) at 6, 8, 11, 14 s: 2 are still decoding at 10 s.
    # Admitted prefills end at 3 (joined, left at 9), 9 (joined, leaves at 15) and 12 s (not yet joined).
    Case("ex05.predicted_decode_load.hand_state", "predicted_decode_load",
         (10.0, [0.0, 2.0, 5.0, 8.0], [3.0, 9.0, 12.0], 6.0), expect=3,
         tol_note=INT, unit="requests",
         hint="count current decoders whose start + mean_decode_s is still after enter_decode_s (2 here: those "
              "started at 0 and 2 s have left at 6 and 8 s), plus admitted prefills that end at or before enter_decode_s "
              "and have not finished decoding by then (1 here: the one ending at 3 s also left at 9 s). "
              "5 or 6 means you kept requests that finish decoding before the enter time; 4 = "
              "len(decoding_since_s) means you used the current load instead of a prediction"),
    # Boundaries: a decoder ending exactly at 10 s has left; a prefill ending exactly at 10 s has joined;
    # a prefill that ended at 4 s left decode exactly at 10 s.
    Case("ex05.predicted_decode_load.boundaries", "predicted_decode_load",
         (10.0, [4.0], [10.0, 4.0], 6.0), expect=1,
         tol_note=INT, unit="requests", kind="strict boundary",
         hint="a request whose predicted end equals enter_decode_s has left (end > enter to count); a request "
              "whose prefill ends exactly at enter_decode_s has joined (done <= enter)"),
    Case("ex05.admit_predictive.at_threshold", "admit_predictive", (40, 40), expect=False,
         tol_note=BOOL, unit="admit?", kind="strict boundary",
         hint="40 decode instances whose predicted loads (TBT / SLO) add up to 40 average exactly 1.0, at the SLO: "
              "no headroom left, so admit only if predicted_load < decode_slots x oversubscription (strict <, not <=)"),
    Case("ex05.admit_predictive.oversubscribed", "admit_predictive", (43, 40, 1.1), expect=True,
         tol_note=BOOL, unit="admit?",
         hint="with oversubscription 1.1 the threshold of 40 instances is 40 x 1.1 = 44, and a summed load of 43 "
              "(average 1.075) < 44 admits; the factor multiplies the threshold"),
    Case("ex05.antiphase_correlation.three_samples", "antiphase_correlation",
         ([2.0, 4.0, 6.0], [5.0, 3.0, 4.0]), expect=-0.5,
         rel_tol=0.0, abs_tol=1e-9, tol_note=CORR, unit="Pearson r",
         hint="subtract each series' mean first: (-2, 0, 2) and (1, -1, 0) give -2 / (sqrt(8) x sqrt(2)) = -0.5. "
              "0.869 means the means were not subtracted (a cosine similarity of raw loads)"),
    # 60 samples every 2 s of 5 + sin(2 pi t / 30 s): 4 whole periods, FFT bin k = 4, period 120 s / 4.
    Case("ex05.dominant_period_s.sine", "dominant_period_s",
         ([5.0 + math.sin(2 * math.pi * (2.0 * i) / 30.0) for i in range(60)], 2.0),
         expect=30.0, rel_tol=1e-9, tol_note=PERIOD, unit="s",
         hint="skip the DC bin (the mean 5.0 is not an oscillation), take the largest remaining bin k and return "
              "n x dt_s / k = 60 x 2 / 4 = 30 s; 15 means the period is in samples (dt_s forgotten)"),
    Case("ex05.predicted_decode_load.nothing_anywhere", "predicted_decode_load", (7.0, [], [], 0.5), expect=0,
         tol_note=INT, unit="requests", kind="zero result, below one",
         hint="no request decoding and none in prefill: 0 (empty lists are valid, and so is a mean decode time "
              "below 1 s: the rule is > 0)"),
    Case("ex05.predicted_decode_load.started_at_enter", "predicted_decode_load", (10.0, [10.0, 3.0], [], 4.0),
         expect=1, tol_note=INT, unit="requests", kind="strict boundary",
         hint="a decoder that started exactly at enter_decode_s is valid (only a start AFTER it is invalid) and is "
              "decoding then: 10 + 4 > 10 counts, 3 + 4 = 7 does not"),
    Case("ex05.predicted_decode_load.huge_times", "predicted_decode_load", (1e308, [0.0], [1e308, 1e308], 1e308),
         expect=2, tol_note=INT, unit="requests", kind="huge values",
         hint="1e308 is a finite time, so valid, though the sum of two of them overflows to inf: check each time with "
              "math.isfinite, not their sum. The decoder started at 0 ends at exactly 1e308 (left); both prefills "
              "end at 1e308 (joined) and leave at inf > 1e308: 2"),
    Case("ex05.admit_predictive.idle_pool", "admit_predictive", (0.0, 1), expect=True,
         tol_note=BOOL, unit="admit?", kind="smallest valid",
         hint="a predicted load of 0 (an idle pool) and a single decode instance are valid: 0 < 1 admits"),
    Case("ex05.antiphase_correlation.two_points", "antiphase_correlation", ([1.0, 2.0], [4.0, 8.0]), expect=1.0,
         rel_tol=0.0, abs_tol=1e-9, tol_note=CORR, unit="Pearson r", kind="smallest valid",
         hint="2 samples are enough (only fewer than 2 is invalid): two points on a rising line give r = +1"),
    Case("ex05.dominant_period_s.four_points", "dominant_period_s", ([1.0, 3.0, 1.0, 3.0], 0.5), expect=1.0,
         rel_tol=1e-9, tol_note=PERIOD, unit="s", kind="smallest valid",
         hint="4 samples are enough (only fewer than 4 is invalid): the series alternates every sample, bin k = 2 "
              "of 4, so the period is 4 x 0.5 s / 2 = 1 s"),
    # 10 samples every 1 s of 5 + cos(2 pi 3 t / 10 s): bin k = 3, a period of 10 / 3 s.
    Case("ex05.dominant_period_s.three_cycles_in_ten", "dominant_period_s",
         ([5.0 + math.cos(2 * math.pi * 3 * i / 10) for i in range(10)], 1.0), expect=3.3333333333333335,
         rel_tol=1e-9, tol_note=PERIOD, unit="s",
         hint="3 cycles in 10 samples: the largest bin is k = 3 and the period n x dt_s / k = 10 / 3 = 3.33 s, not a "
              "whole number (divide with /, not //)"),
    # Invalid input: every argument, every rule of the docstrings.
    invalid("predicted_decode_load", "zero_mean", (10.0, [1.0], [], 0.0), "mean_decode_s",
            "mean_decode_s must be > 0"),
    invalid("predicted_decode_load", "mean_below_zero", (10.0, [1.0], [], -2.0), "mean_decode_s",
            "mean_decode_s must be > 0"),
    invalid("predicted_decode_load", "started_after_enter", (20.0, [5.0, 25.0], [], 10.0), "decoding_since_s",
            "a request decoding now cannot have started after enter_decode_s (25 > 20)"),
    invalid("predicted_decode_load", "infinite_prefill_end", (20.0, [5.0], [math.inf], 10.0), "prefill_done_s",
            "every time must be finite: test math.isfinite on each"),
    invalid("admit_predictive", "negative_load", (-0.5, 10), "predicted_load", "predicted_load must be >= 0"),
    invalid("admit_predictive", "no_instances", (0.0, -4), "decode_slots", "decode_slots must be an int >= 1"),
    invalid("admit_predictive", "bool_slots", (2.0, False), "decode_slots",
            "decode_slots is a count, and a bool is not one (isinstance(False, int) is True: test for bool first)"),
    invalid("admit_predictive", "oversubscription_below_one", (30.0, 40, 0.5), "oversubscription",
            "oversubscription must be >= 1 (it raises the threshold, never lowers it)"),
    invalid("antiphase_correlation", "constant", ([3.0, 3.0, 3.0], [1.0, 2.0, 4.0]), "prefill_load",
            "a constant series has zero variance, so its correlation is undefined"),
    invalid("antiphase_correlation", "flat_decode", ([1.0, 2.0, 3.0], [5.0, 5.0, 5.0]), "decode_load",
            "a constant decode series has zero variance too: check both series"),
    invalid("antiphase_correlation", "unequal_lengths", ([1.0, 2.0], [1.0, 2.0, 3.0]), "prefill_load",
            "the two series must be sampled at the same instants: as many samples each"),
    invalid("antiphase_correlation", "no_samples", ([], []), "prefill_load", "at least 2 samples are needed"),
    invalid("dominant_period_s", "negative_dt", ([1.0, 2.0, 1.0, 2.0], -1.0), "dt_s", "dt_s must be > 0"),
    invalid("dominant_period_s", "dt_zero", ([3.0, 1.0, 3.0, 1.0], 0.0), "dt_s", "dt_s = 0 is not > 0"),
    invalid("dominant_period_s", "flat", ([2.0] * 8, 0.5), "load", "a constant series has no oscillation"),
    invalid("dominant_period_s", "two_samples", ([1.0, 2.0], 1.0), "load", "at least 4 samples are needed"),
]
