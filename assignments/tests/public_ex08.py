"""Public cases for ex08 (expert deferral overlap): a hand-checkable layer with binary-exact times.

The layer: GPU part 0.5 s, 0.125 s per expert on the CPU, 8 active experts (slow on purpose: every
time is exact in binary, so the checks can be done by hand; the model is linear in time).
"""

from hetero.checks import Case

EXACT = "sums and maxima of binary-exact times: correct code agrees to ~1e-16; 1e-9 allows only float rounding"
G, C, A = 0.5, 0.125, 8  # GPU part (s), one CPU expert (s), active experts per token


def invalid(func: str, label: str, args: tuple, argument: str, why: str, **kwargs) -> Case:
    """An invalid input of `func`: it must raise ValueError naming `argument`."""
    return Case(f"ex08.{func}.{label}", func, args, kwargs=kwargs, raises="ValueError",
                hint=f"{why}; raise ValueError naming {argument}")


CASES = [
    Case("ex08.layer_time_s.no_deferral", "layer_time_s", (G, C, A, 0), expect=1.5, rel_tol=1e-9,
         tol_note=EXACT, unit="s", kind="smallest valid",
         hint="without deferral the GPU part and the 8 CPU experts alternate: 0.5 + 8 x 0.125 = 1.5 s"),
    Case("ex08.layer_time_s.defer_2", "layer_time_s", (G, C, A, 2), expect=1.25, rel_tol=1e-9, tol_note=EXACT,
         unit="s",
         hint="2 deferred experts (0.25 s) hide under the next layer's 0.5 s of GPU work, the other 6 run alone: "
              "max(0.5, 0.25) + 6 x 0.125 = 1.25 s"),
    Case("ex08.layer_time_s.defer_6", "layer_time_s", (G, C, A, 6), expect=1.0, rel_tol=1e-9, tol_note=EXACT,
         unit="s",
         hint="6 deferred experts take 0.75 s, longer than the GPU's 0.5 s, so the CPU is the critical path: "
              "max(0.5, 0.75) + 2 x 0.125 = 1.0 s; 0.75 means deferred experts were treated as free"),
    Case("ex08.best_deferred.just_enough", "best_deferred", (G, C, A), expect=4, tol_note="integer: exact",
         unit="experts",
         hint="4 experts (0.5 s) fill the GPU's 0.5 s exactly; deferring 5 or 6 gives the same 1.0 s, and the "
              "smallest such d is wanted"),
    Case("ex08.best_deferred.capped_by_min_immediate", "best_deferred", (0.9, C, A), expect=6,
         tol_note="integer: exact", unit="experts",
         hint="the GPU part (0.9 s) would hide 7 experts, but 2 must stay immediate: at most 8 - 2 = 6"),
    Case("ex08.deferral_speedup.just_enough", "deferral_speedup", (G, C, A, 4), expect=1.5, rel_tol=1e-9,
         tol_note=EXACT, unit="x", hint="1.5 s without deferral / 1.0 s with 4 deferred = 1.5x (not 0.667)"),
    Case("ex08.deferral_speedup.defer_2", "deferral_speedup", (G, C, A, 2), expect=1.2, rel_tol=1e-9,
         tol_note=EXACT, unit="x",
         hint="layer time without deferral / with 2 deferred = 1.5 s / 1.25 s = 1.2x; 1.875 means the two times "
              "were multiplied, 0.833 that the ratio is upside down"),
    Case("ex08.layer_time_s.top1", "layer_time_s", (G, C, 1, 0), expect=0.625, rel_tol=1e-9, tol_note=EXACT,
         unit="s", kind="smallest valid",
         hint="top-1 routing (active_experts = 1) is valid: 0.5 + 1 x 0.125 = 0.625 s"),
    Case("ex08.layer_time_s.gpu_idle", "layer_time_s", (0.0, C, A, 3), expect=1.0, rel_tol=1e-9, tol_note=EXACT,
         unit="s", kind="smallest valid",
         hint="gpu_s = 0 is valid (the rule is >= 0): max(0, 3 x 0.125) + 5 x 0.125 = 1.0 s"),
    Case("ex08.layer_time_s.defer_all", "layer_time_s", (G, C, A, 8), expect=1.0, rel_tol=1e-9, tol_note=EXACT,
         unit="s", kind="largest valid",
         hint="deferring all 8 (valid: 0 <= deferred <= active_experts) overlaps 1.0 s of CPU work with the 0.5 s "
              "GPU part and leaves nothing to run alone: max(0.5, 1.0) + 0 = 1.0 s"),
    Case("ex08.best_deferred.no_minimum", "best_deferred", (1.5, C, A), kwargs={"min_immediate": 0}, expect=8,
         tol_note="integer: exact", unit="experts", kind="smallest valid",
         hint="min_immediate = 0 is valid: a 1.5 s GPU part hides all 8 experts (1.0 s), so deferring all 8 is best"),
    Case("ex08.best_deferred.all_immediate", "best_deferred", (G, C, A), kwargs={"min_immediate": 8}, expect=0,
         tol_note="integer: exact", unit="experts", kind="largest valid",
         hint="min_immediate = 8 = active_experts is valid: every expert stays immediate, so 0 are deferred"),
    Case("ex08.deferral_speedup.none_deferred", "deferral_speedup", (G, C, A, 0), expect=1.0, rel_tol=1e-9,
         tol_note=EXACT, unit="x", kind="smallest valid",
         hint="deferring none is valid and changes nothing: 1.5 s / 1.5 s = 1.0"),
    Case("ex08.deferral_speedup.all_deferred", "deferral_speedup", (G, C, A, 8), expect=1.5, rel_tol=1e-9,
         tol_note=EXACT, unit="x", kind="largest valid",
         hint="all 8 deferred (valid): 1.5 s / max(0.5, 1.0) s = 1.5x"),
    invalid("layer_time_s", "defer_too_many", (G, C, A, 9), "deferred",
            "9 deferred experts out of 8 active is impossible"),
    invalid("layer_time_s", "gpu_below_zero", (-0.5, C, A, 2), "gpu_s", "gpu_s must be >= 0"),
    invalid("layer_time_s", "negative_cpu", (G, -0.125, A, 2), "cpu_per_expert_s", "cpu_per_expert_s must be > 0"),
    invalid("layer_time_s", "cpu_zero", (G, 0.0, A, 2), "cpu_per_expert_s", "an expert that takes 0 s is not > 0"),
    invalid("layer_time_s", "negative_active", (G, C, -8, 0), "active_experts", "active_experts must be >= 1"),
    invalid("best_deferred", "min_immediate_too_large", (G, C, A), "min_immediate",
            "min_immediate = 9 > 8 active experts", min_immediate=9),
    invalid("deferral_speedup", "negative_deferred", (G, C, A, -1), "deferred",
            "deferred must lie in [0, active_experts] (checked by layer_time_s if you call it)"),
]
