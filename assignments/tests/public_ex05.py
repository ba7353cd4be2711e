"""Public cases for ex05 (overload scheduling): small hand-checkable decode states, the admission
threshold at and above its boundary, a three-sample correlation and a sine wave's period."""

import math

from hetero.checks import Case

INT = "a count of requests: exact integer, no tolerance"
BOOL = "a yes/no decision: exact"
CORR = ("a few sums over 3 exact samples: any correct Pearson formula agrees to ~1e-15; "
        "1e-9 absolute allows only rounding")
PERIOD = "the period of one FFT bin, n x dt / k, from exact inputs: agrees to float rounding (1e-9)"

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
         tol_note=INT, unit="requests",
         hint="a request whose predicted end equals enter_decode_s has left (end > enter to count); a request "
              "whose prefill ends exactly at enter_decode_s has joined (done <= enter)"),
    Case("ex05.admit_predictive.at_threshold", "admit_predictive", (40, 40), expect=False,
         tol_note=BOOL, unit="admit?",
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
    Case("ex05.predicted_decode_load.zero_mean", "predicted_decode_load", (10.0, [1.0], [], 0.0),
         raises="ValueError",
         hint="mean_decode_s must be > 0: raise ValueError naming mean_decode_s"),
    Case("ex05.antiphase_correlation.constant", "antiphase_correlation", ([3.0, 3.0, 3.0], [1.0, 2.0, 4.0]),
         raises="ValueError",
         hint="a constant series has zero variance, so its correlation is undefined: raise ValueError naming it"),
]
