"""Public cases for ex07 (tokens per parameter and the offload order): the lecture's §7 Q7 numbers and hand cases."""

from hetero.checks import Case

EXACT = "one product and quotient of small integers: exact in binary floating point up to ~1e-16; 1e-9 is ample"

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
         tol_note="list of names: exact",
         hint="lowest tokens per parameter first; tied parts keep their order in the dict (a stable sort), "
              "so the shared expert (listed first) goes before attention"),
    Case("ex07.offload_order.ties_keep_input_order", "offload_order", ({"b": 1.0, "a": 1.0, "c": 0.5},),
         expect=["c", "b", "a"], unit="part names", tol_note="list of names: exact",
         hint="c (0.5) first; b and a tie at 1.0 and keep their input order: do not break ties alphabetically"),
    Case("ex07.tokens_per_routed_expert.more_active_than_experts", "tokens_per_routed_expert", (64, 8, 4),
         raises="ValueError",
         hint="8 active experts out of 4 is impossible: raise ValueError naming num_routed_experts"),
    Case("ex07.offload_order.empty", "offload_order", ({},), raises="ValueError",
         hint="an empty model has nothing to order: raise ValueError naming tokens_per_param"),
]
