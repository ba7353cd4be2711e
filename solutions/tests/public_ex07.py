"""Public cases for ex07 (tokens per parameter and the offload order): the lecture's §7 Q7 numbers and hand cases."""

import math

from hetero.checks import Case

EXACT = "one product and quotient of small integers: exact in binary floating point up to ~1e-16; 1e-9 is ample"


def invalid(func: str, label: str, args: tuple, argument: str, why: str) -> Case:
    """An invalid input of `func`: it must raise ValueError naming `argument`."""
    return Case(f"ex07.{func}.{label}", func, args, raises="ValueError",
                hint=f"{why}; raise ValueError naming {argument}")


CASES = [
    Case("ex07.tokens_per_routed_expert.lecture_b64", "tokens_per_routed_expert", (64, 8, 256), expect=2.0,
         rel_tol=1e-9, tol_note=EXACT, unit="tokens",
         hint="64 tokens x 8 experts each / 256 experts = 2 tokens per routed expert"),
    Case("ex07.tokens_per_routed_expert.batch_1", "tokens_per_routed_expert", (1, 8, 256), expect=0.03125,
         rel_tol=1e-9, tol_note=EXACT, unit="tokens",
         hint="1 x 8 / 256 = 0.03125: an average can be below 1; 0 means integer division (//) was used"),
    Case("ex07.tokens_per_shared_expert.lecture_b64", "tokens_per_shared_expert", (64,), expect=64.0,
         rel_tol=1e-9, tol_note=EXACT, unit="tokens",
         hint="every token passes through the shared expert, so each of its parameters serves all 64 tokens; "
              "return a float"),
    Case("ex07.offload_order.lecture", "offload_order",
         ({"routed experts": 2.0, "shared expert": 64.0, "attention": 64.0},),
         expect=["routed experts", "shared expert", "attention"], unit="part names",
         tol_note="list of names: exact", kind="tie",
         hint="lowest tokens per parameter first; tied parts keep their order in the dict (a stable sort), "
              "so the shared expert (listed first) goes before attention"),
    # Three parts tie: their dict order (b, c, a) is neither alphabetical (a, b, c) nor reversed (a, c, b).
    Case("ex07.offload_order.ties_keep_input_order", "offload_order", ({"b": 1.0, "c": 1.0, "a": 1.0, "d": 0.5},),
         expect=["d", "b", "c", "a"], unit="part names", tol_note="list of names: exact", kind="tie",
         hint="d (0.5) first; b, c and a tie at 1.0 and keep their dict order b, c, a: sorted() with key= is stable "
              "and does exactly that (no secondary key, no reverse=True)"),
    Case("ex07.offload_order.one_part", "offload_order", ({"experts": 0.5},), expect=["experts"],
         unit="part names", tol_note="list of names: exact", kind="smallest valid",
         hint="a model of one part is valid: a list of that one name"),
    Case("ex07.tokens_per_routed_expert.all_active", "tokens_per_routed_expert", (3, 4, 4), expect=3.0,
         rel_tol=1e-9, tol_note=EXACT, unit="tokens", kind="largest valid",
         hint="every token uses all 4 of the 4 experts (active = routed is valid): each expert serves 3 x 4 / 4 = 3"),
    Case("ex07.tokens_per_routed_expert.top1", "tokens_per_routed_expert", (3, 1, 16), expect=0.1875,
         rel_tol=1e-9, tol_note=EXACT, unit="tokens", kind="smallest valid",
         hint="top-1 routing (active_experts = 1) is valid: 3 x 1 / 16 = 0.1875 tokens per expert"),
    Case("ex07.tokens_per_shared_expert.batch_1", "tokens_per_shared_expert", (1,), expect=1.0,
         rel_tol=1e-9, tol_note=EXACT, unit="tokens", kind="smallest valid",
         hint="batch 1 is valid: the shared expert serves that one token (return 1.0, a float)"),
    invalid("tokens_per_routed_expert", "more_active_than_experts", (64, 8, 4), "num_routed_experts",
            "8 active experts out of 4 is impossible"),
    invalid("tokens_per_routed_expert", "negative_batch", (-64, 8, 256), "batch", "batch must be >= 1"),
    invalid("tokens_per_routed_expert", "negative_active", (64, -1, 256), "active_experts",
            "every count is checked: active_experts >= 1"),
    invalid("tokens_per_shared_expert", "negative_batch", (-1,), "batch", "batch must be >= 1"),
    invalid("offload_order", "empty", ({},), "tokens_per_param", "an empty model has nothing to order"),
    invalid("offload_order", "negative_value", ({"attention": 2.0, "experts": -1.0},), "tokens_per_param",
            "every value must be > 0 (the message names the part)"),
    invalid("offload_order", "nan_value", ({"attention": math.nan},), "tokens_per_param",
            "every value must be a finite number > 0: nan sorts nowhere (every comparison with it is False)"),
    invalid("offload_order", "zero_value", ({"attention": 64.0, "embedding": 0.0},), "tokens_per_param",
            "0 tokens per parameter is not > 0"),
    invalid("offload_order", "infinite_value", ({"attention": math.inf},), "tokens_per_param",
            "every value must be finite: infinity is not"),
]
