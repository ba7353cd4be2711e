"""Public cases for ex08 (expert deferral overlap): a hand-checkable layer with binary-exact times.

The layer: GPU part 0.5 s, 0.125 s per expert on the CPU, 8 active experts (slow on purpose: every
time is exact in binary, so the checks can be done by hand; the model is linear in time).
"""

from hetero.checks import Case

EXACT = "sums and maxima of binary-exact times: correct code agrees to ~1e-16; 1e-9 allows only float rounding"
G, C, K = 0.5, 0.125, 8

CASES = [
    Case("ex08.layer_time_s.no_deferral", "layer_time_s", (G, C, K, 0), expect=1.5, rel_tol=1e-9,
         tol_note=EXACT, unit="s",
         hint="without deferral the GPU part and the 8 CPU experts alternate: 0.5 + 8 x 0.125 = 1.5 s"),
    Case("ex08.layer_time_s.defer_2", "layer_time_s", (G, C, K, 2), expect=1.25, rel_tol=1e-9, tol_note=EXACT,
         unit="s",
         hint="2 deferred experts (0.25 s) hide under the next layer's 0.5 s of GPU work, the other 6 run alone: "
              "max(0.5, 0.25) + 6 x 0.125 = 1.25 s"),
    Case("ex08.layer_time_s.defer_6", "layer_time_s", (G, C, K, 6), expect=1.0, rel_tol=1e-9, tol_note=EXACT,
         unit="s",
         hint="6 deferred experts take 0.75 s, longer than the GPU's 0.5 s, so the CPU is the critical path: "
              "max(0.5, 0.75) + 2 x 0.125 = 1.0 s; 0.75 means deferred experts were treated as free"),
    Case("ex08.best_deferred.just_enough", "best_deferred", (G, C, K), expect=4, tol_note="integer: exact",
         unit="experts",
         hint="4 experts (0.5 s) fill the GPU's 0.5 s exactly; deferring 5 or 6 gives the same 1.0 s, and the "
              "smallest such d is wanted"),
    Case("ex08.best_deferred.capped_by_min_immediate", "best_deferred", (0.9, C, K), expect=6,
         tol_note="integer: exact", unit="experts",
         hint="the GPU part (0.9 s) would hide 7 experts, but 2 must stay immediate: at most 8 - 2 = 6"),
    Case("ex08.deferral_speedup.just_enough", "deferral_speedup", (G, C, K, 4), expect=1.5, rel_tol=1e-9,
         tol_note=EXACT, unit="x", hint="1.5 s without deferral / 1.0 s with 4 deferred = 1.5x (not 0.667)"),
    Case("ex08.deferral_speedup.defer_2", "deferral_speedup", (G, C, K, 2), expect=1.2, rel_tol=1e-9,
         tol_note=EXACT, unit="x",
         hint="layer time without deferral / with 2 deferred = 1.5 s / 1.25 s = 1.2x; 1.875 means the two times "
              "were multiplied, 0.833 that the ratio is upside down"),
    Case("ex08.layer_time_s.defer_too_many", "layer_time_s", (G, C, K, 9), raises="ValueError",
         hint="9 deferred experts out of 8 active is impossible: raise ValueError naming deferred"),
    Case("ex08.best_deferred.min_immediate_too_large", "best_deferred", (G, C, K),
         kwargs={"min_immediate": 9}, raises="ValueError",
         hint="min_immediate = 9 > 8 active experts: raise ValueError naming min_immediate"),
]
