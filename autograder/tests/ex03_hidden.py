"""Hidden cases for ex03 (local vs global KV cache): random clusters, random Conductor decisions, the
simulator driven by the submitted functions, and invalid input.

Expected values are computed from the answer key by `python -m autograder expected`.
"""

import math

import numpy as np

from hetero.checks import Case, Gen

COUNT = "a count of blocks: an int, compared exactly"
RATIO = "one division of two counts: correct code agrees to ~1e-16; 1e-9 allows only float rounding"
INDEX = "an instance index: an int, compared exactly"
SIM = (
    "a deterministic simulation driven by your function: the same decisions reproduce every figure to "
    "float rounding (1e-9); a different decision anywhere changes them by far more"
)
DISTINCT_HINT = "count distinct block ids across all instances (a set union), not the total held"
DUP_HINT = "total blocks held / distinct blocks held (>= 1.0), not its inverse"
TTFT_HINT = (
    "each instance's estimate must count its queue, the pool blocks it fetches beyond its own hits "
    "(at the transfer rate, not at prefill cost) and the blocks it still has to prefill; the smallest "
    "estimate wins and ties go to the lowest index"
)

# Random clusters built where the case runs (hetero.kvcache's "kvcache.cluster" builder).
# (label, seed, instances, max blocks per instance, id range, empty instances)
_CLUSTERS = [
    ("8x_hot_set", 3001, 8, 60, 80, 0),
    ("8x_wide_ids", 3002, 8, 400, 5000, 0),
    ("4x_two_empty", 3003, 4, 30, 40, 2),
    ("single_instance", 3004, 1, 200, 1000, 0),
    ("16x_small", 3005, 16, 12, 20, 3),
]
CASES = [
    Case(
        f"ex03.effective_capacity_blocks.{label}",
        "effective_capacity_blocks",
        (
            Gen(
                "kvcache.cluster",
                {"seed": seed, "num_instances": n, "max_blocks": m, "id_range": r, "empty_instances": e},
            ),
        ),
        tol_note=COUNT,
        unit="blocks",
        hint=DISTINCT_HINT,
        points=1.0,
    )
    for label, seed, n, m, r, e in _CLUSTERS
]
CASES += [
    Case(
        "ex03.effective_capacity_blocks.unsorted_lists",
        "effective_capacity_blocks",
        ([[30, 4, 17], [4, 2]],),
        tol_note=COUNT,
        unit="blocks",
        hint="blocks 2, 4, 17, 30: 4 distinct; the lists are the caller's: read them, do not sort them in place",
        points=0.5,
    ),
    Case(
        "ex03.effective_capacity_blocks.all_empty",
        "effective_capacity_blocks",
        ([[], [], []],),
        tol_note=COUNT,
        unit="blocks",
        hint="instances that hold nothing hold 0 distinct blocks",
        points=0.5,
        kind="zero result",
    ),
    Case(
        "ex03.effective_capacity_blocks.no_instance",
        "effective_capacity_blocks",
        ([],),
        raises="ValueError",
        hint="a cluster with no instance is invalid: raise ValueError naming instance_blocks",
        points=0.5,
    ),
    Case(
        "ex03.effective_capacity_blocks.duplicate_in_one_instance",
        "effective_capacity_blocks",
        ([[1, 2, 2], [3]],),
        raises="ValueError",
        hint="an instance holds a block at most once: a repeated id in one instance's list is invalid",
        points=0.5,
    ),
    Case(
        "ex03.effective_capacity_blocks.negative_id",
        "effective_capacity_blocks",
        ([[1, -2], [3]],),
        raises="ValueError",
        hint="block ids are ints >= 0",
        points=0.5,
    ),
]
CASES += [
    Case(
        f"ex03.duplication_factor.{label}",
        "duplication_factor",
        (
            Gen(
                "kvcache.cluster",
                {"seed": seed, "num_instances": n, "max_blocks": m, "id_range": r, "empty_instances": e},
            ),
        ),
        rel_tol=1e-9,
        tol_note=RATIO,
        unit="copies per block",
        hint=DUP_HINT,
        points=1.0,
    )
    for label, seed, n, m, r, e in _CLUSTERS
]
CASES += [
    Case(
        "ex03.duplication_factor.disjoint",
        "duplication_factor",
        ([[0, 1], [2, 3, 4], [5]],),
        rel_tol=1e-9,
        tol_note=RATIO,
        unit="copies per block",
        hint="no block is held twice: exactly 1.0",
        points=0.5,
    ),
    Case(
        "ex03.duplication_factor.one_hot_block_everywhere",
        "duplication_factor",
        ([[7], [7, 8], [7, 9], [7]],),
        rel_tol=1e-9,
        tol_note=RATIO,
        unit="copies per block",
        hint="6 held / 3 distinct = 2.0",
        points=0.5,
    ),
    Case(
        "ex03.duplication_factor.unsorted_lists",
        "duplication_factor",
        ([[9, 2, 5], [5, 1], [2]],),
        rel_tol=1e-9,
        tol_note=RATIO,
        unit="copies per block",
        hint="6 held / 4 distinct = 1.5; the lists are the caller's: read them, do not sort them in place",
        points=0.5,
    ),
    Case(
        "ex03.duplication_factor.all_empty",
        "duplication_factor",
        ([[], [], [], []],),
        raises="ValueError",
        hint="nothing held: 0 / 0 is undefined, raise ValueError naming instance_blocks",
        points=0.5,
    ),
    Case(
        "ex03.duplication_factor.bool_id",
        "duplication_factor",
        ([[True, 2]],),
        raises="ValueError",
        hint="block ids are ints >= 0; a bool is not a block id",
        points=0.5,
    ),
]

# Random Conductor decisions (seeded at build time). Queues are multiples of 1/4 and transfer rates
# powers of two, so every estimate is exact in binary floating point.
_rng = np.random.default_rng(303)
_DISPATCH = []
for _k in range(8):
    _n = int(_rng.integers(2, 9))
    _req = int(_rng.integers(4, 60))
    _pool = int(_rng.integers(0, _req + 1)) if _k % 2 else 0
    _hits = [int(h) for h in _rng.integers(0, (_pool if _pool else _req) + 1, size=_n)]
    _queued = [float(q) / 4 for q in _rng.integers(0, 4 * _req, size=_n)]
    _rate = float(2 ** int(_rng.integers(0, 4)))
    _DISPATCH.append((f"random{_k}", _hits, _queued, _req, _pool, _rate))
CASES += [
    Case(
        f"ex03.ttft_dispatch.{label}",
        "ttft_dispatch",
        (hits, queued, req),
        kwargs={"pool_hit_blocks": pool, "transfer_blocks_per_prefill_block": rate},
        tol_note=INDEX,
        unit="instance index",
        hint=TTFT_HINT,
        points=1.0,
    )
    for label, hits, queued, req, pool, rate in _DISPATCH
]
CASES += [
    Case(
        "ex03.ttft_dispatch.default_transfer_rate",
        "ttft_dispatch",
        ([0, 10, 0], [1.0, 3.0, 0.5], 12),
        kwargs={"pool_hit_blocks": 10},
        tol_note=INDEX,
        unit="instance index",
        hint="the default transfer rate is 5 blocks per prefill-block-time: estimates 5, 5, 4.5",
        points=1.0,
        kind="default argument",
    ),
    Case(
        "ex03.ttft_dispatch.free_transfer",
        "ttft_dispatch",
        ([0, 20, 0], [3.0, 2.0, 1.0], 20),
        kwargs={"pool_hit_blocks": 20, "transfer_blocks_per_prefill_block": math.inf},
        tol_note=INDEX,
        unit="instance index",
        hint="with free transfers only the queue matters",
        points=0.5,
        kind="infinity allowed",
    ),
    Case(
        "ex03.ttft_dispatch.all_tied",
        "ttft_dispatch",
        ([2, 2, 2, 2, 2], [1.5] * 5, 9),
        tol_note=INDEX,
        unit="instance index",
        hint="all estimates equal: the lowest index (0) wins",
        points=1.0,
        kind="tie",
    ),
    Case(
        "ex03.ttft_dispatch.fractional_transfer",
        "ttft_dispatch",
        ([0, 0, 3], [0.3, 0.1, 0.0], 4),
        kwargs={"pool_hit_blocks": 3, "transfer_blocks_per_prefill_block": 10.0},
        tol_note=INDEX,
        unit="instance index",
        hint="estimates 1.6, 1.4, 1.0 prefill-block-times: instance 2 (transfer 3 / 10 blocks for the others)",
        points=1.0,
    ),
    Case(
        "ex03.ttft_dispatch.single_instance",
        "ttft_dispatch",
        ([0], [100.0], 3),
        tol_note=INDEX,
        unit="instance index",
        hint="one instance: it is always chosen (index 0)",
        points=0.5,
        kind="smallest valid",
    ),
    Case(
        "ex03.ttft_dispatch.hit_above_request",
        "ttft_dispatch",
        ([5, 0], [0.0, 0.0], 4),
        raises="ValueError",
        hint="a hit count cannot exceed request_blocks: raise ValueError naming hit_blocks",
        points=0.5,
    ),
    Case(
        "ex03.ttft_dispatch.negative_queue",
        "ttft_dispatch",
        ([0, 0], [1.0, -1.0], 4),
        raises="ValueError",
        hint="queued work is >= 0: raise ValueError naming queued_blocks",
        points=0.5,
    ),
    Case(
        "ex03.ttft_dispatch.nan_queue",
        "ttft_dispatch",
        ([0, 0], [float("nan"), 1.0], 4),
        raises="ValueError",
        hint="a NaN queue is invalid (it would compare false with everything)",
        points=0.5,
    ),
    Case(
        "ex03.ttft_dispatch.zero_request",
        "ttft_dispatch",
        ([0], [0.0], 0),
        raises="ValueError",
        hint="request_blocks must be an int >= 1",
        points=0.5,
    ),
    Case(
        "ex03.ttft_dispatch.zero_transfer_rate",
        "ttft_dispatch",
        ([0, 4], [0.0, 0.0], 4),
        kwargs={"pool_hit_blocks": 4, "transfer_blocks_per_prefill_block": 0.0},
        raises="ValueError",
        hint="a transfer rate of 0 is invalid: raise ValueError naming transfer_blocks_per_prefill_block",
        points=0.5,
    ),
    Case(
        "ex03.ttft_dispatch.pool_above_request",
        "ttft_dispatch",
        ([0, 0], [0.0, 0.0], 4),
        kwargs={"pool_hit_blocks": 5},
        raises="ValueError",
        hint="pool_hit_blocks cannot exceed request_blocks: raise ValueError naming pool_hit_blocks",
        points=0.5,
    ),
    Case(
        "ex03.ttft_dispatch.no_instance",
        "ttft_dispatch",
        ([], [], 4),
        raises="ValueError",
        hint="at least one instance is needed: raise ValueError naming hit_blocks",
        points=0.5,
    ),
]

# The simulator driven by the submitted functions (hetero.kvcache harnesses, small hidden workloads).
CASES += [
    Case(
        f"ex03.simulator.ttft_dispatch_{label}",
        "ttft_dispatch",
        (seed,),
        kwargs=kwargs,
        harness="kvcache.dispatch",
        uses=("ttft_dispatch",),
        rel_tol=1e-9,
        tol_note=SIM,
        unit="hit rate, transfer fraction, work ratio, prefill-block-times, requests",
        hint="the global pool dispatched by your ttft_dispatch differs from the reference: " + TTFT_HINT,
        points=3.0,
    )
    for label, seed, kwargs in (
        ("4_instances", 9101, {}),
        (
            "8_instances_hot",
            9102,
            {
                "num_instances": 8,
                "zipf_s": 1.3,
                "instance_capacity_blocks": 80,
                "transfer_blocks_per_prefill_block": 8.0,
            },
        ),
        ("3_instances_busy", 9103, {"num_instances": 3, "load": 2.0, "num_documents": 30}),
    )
]
CASES += [
    Case(
        f"ex03.simulator.capacity_{label}",
        "effective_capacity_blocks",
        (seed,),
        kwargs=kwargs,
        harness="kvcache.capacity",
        uses=("effective_capacity_blocks", "duplication_factor"),
        rel_tol=1e-9,
        tol_note=SIM,
        unit="blocks, fraction, copies per block",
        hint="the cache contents measured by your effective_capacity_blocks / duplication_factor differ: "
        + DISTINCT_HINT
        + "; "
        + DUP_HINT,
        points=2.0,
    )
    for label, seed, kwargs in (
        ("local_round_robin", 9201, {}),
        ("local_sticky", 9202, {"dispatch": "local_sticky", "num_instances": 6}),
    )
]

# Boundaries: a one-block prompt is valid (request_blocks >= 1), and queues so long that adding
# TIE_TOLERANCE to the best estimate no longer changes the float (above ~1.7e7 block-times) must still
# return the minimum: compare with `<=` (or a difference), never with a strict `<` against best + tolerance.
CASES += [
    Case(
        "ex03.ttft_dispatch.one_block_request",
        "ttft_dispatch",
        ([0, 1], [0.5, 0.8], 1),
        tol_note=INDEX,
        unit="instance index",
        hint="request_blocks = 1 is valid (>= 1); " + TTFT_HINT,
        points=0.5,
        kind="smallest valid",
    ),
    Case(
        "ex03.ttft_dispatch.one_block_pool_hit",
        "ttft_dispatch",
        ([0, 0, 1], [0.4, 0.2, 0.9], 1),
        kwargs={"pool_hit_blocks": 1},
        tol_note=INDEX,
        unit="instance index",
        hint="request_blocks = 1 is valid (>= 1); " + TTFT_HINT,
        points=0.5,
        kind="smallest valid",
    ),
    Case(
        "ex03.ttft_dispatch.huge_backlog",
        "ttft_dispatch",
        ([0, 0, 0], [3e8, 1e8, 2e8], 4),
        tol_note=INDEX,
        unit="instance index",
        hint="the instance with the smallest estimate must win even when best + TIE_TOLERANCE rounds to best "
        "(1e8 + 1e-9 == 1e8 in float64): test estimate <= best + TIE_TOLERANCE",
        points=0.5,
        kind="tolerance",
    ),
    Case(
        "ex03.ttft_dispatch.near_tie_four_instances",
        "ttft_dispatch",
        ([3, 0, 3, 3], [1.75 + 3e-10, 4.0, 1.75, 1.75 + 2e-10], 7),
        tol_note=INDEX,
        unit="instance index",
        hint="estimates within TIE_TOLERANCE (1e-9 block-times) of the smallest count as tied, and a tie goes to "
        "the lowest index: do not pick the exact minimum (min / index of min) when another estimate is within "
        "the tolerance",
        points=0.5,
        kind="tolerance",
    ),
]

# Transfers that change the decision, and queues that do too: the instance with the smallest estimate
# is neither the idlest one (which must fetch the pooled prefix: it would win if fetches were free) nor
# the lowest- or highest-index instance among those holding the most of the prefix themselves (one of
# which a dispatch blind to the queues picks), so a submission must count both the transfer and the
# queue to pass. (The cases above all pick the same instance with or without the transfer term.) Rates
# are powers of two or the default 5, so estimates are exact.
TRANSFER_HINT = (
    "pool fetches are not free: add the transfer time (pool blocks the instance lacks / "
    "transfer_blocks_per_prefill_block) to its estimate; " + TTFT_HINT
)
CASES += [
    Case(
        "ex03.ttft_dispatch.slow_link_own_hits",
        "ttft_dispatch",
        ([0, 12, 0, 10], [0.0, 6.5, 1.0, 0.5], 16),
        kwargs={"pool_hit_blocks": 12, "transfer_blocks_per_prefill_block": 2.0},
        tol_note=INDEX,
        unit="instance index",
        hint="estimates 10, 10.5, 11, 5.5 prefill-block-times (instance 1 holds all 12 pooled blocks but has "
        "6.5 queued; instance 3 holds 10 and fetches 2); " + TRANSFER_HINT,
        points=1.0,
    ),
    Case(
        "ex03.ttft_dispatch.default_rate_own_hits",
        "ttft_dispatch",
        ([30, 0, 30, 30], [5.0, 0.0, 2.5, 4.0], 40),
        kwargs={"pool_hit_blocks": 30},
        tol_note=INDEX,
        unit="instance index",
        hint="estimates 15, 16, 12.5, 14 prefill-block-times at the default 5 blocks per block-time (three "
        "instances hold the 30 pooled blocks; their queues decide among them); " + TRANSFER_HINT,
        points=1.0,
    ),
    Case(
        "ex03.ttft_dispatch.six_instances_three_holders",
        "ttft_dispatch",
        ([24, 24, 0, 0, 0, 24], [4.0, 2.0, 1.0, 0.5, 0.0, 3.0], 32),
        kwargs={"pool_hit_blocks": 24, "transfer_blocks_per_prefill_block": 4.0},
        tol_note=INDEX,
        unit="instance index",
        hint="estimates 12, 10, 15, 14.5, 14, 11 prefill-block-times (instances 0, 1 and 5 hold the 24 pooled "
        "blocks; their queues decide among them); " + TRANSFER_HINT,
        points=1.0,
    ),
]
