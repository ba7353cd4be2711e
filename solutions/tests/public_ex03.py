"""Public cases for ex03 (local vs global KV cache): the §7 Q3 picture and hand-checkable Conductor decisions."""

import math

from hetero.checks import Case

COUNT = "a count of blocks: an int, compared exactly"
RATIO = "one division of two counts: correct code agrees to ~1e-16; 1e-9 allows only float rounding"
INDEX = "an instance index: an int, compared exactly"


def invalid(func: str, label: str, args: tuple, argument: str, why: str, **kwargs) -> Case:
    """An invalid input of `func`: it must raise ValueError naming `argument`."""
    return Case(f"ex03.{func}.{label}", func, args, kwargs=kwargs, raises="ValueError",
                hint=f"{why}; raise ValueError naming {argument}")


CASES = [
    Case("ex03.effective_capacity_blocks.same_document_on_8", "effective_capacity_blocks",
         ([[10, 11, 12, 13]] * 8,), expect=4, tol_note=COUNT, unit="blocks",
         hint="§7 Q3: 8 instances each holding the same 4-block document hold 4 distinct blocks, not 32; "
              "count distinct block ids (a set), not the total"),
    Case("ex03.effective_capacity_blocks.overlap_and_empty", "effective_capacity_blocks",
         ([[3, 0, 2], [4, 3], []],), expect=4, tol_note=COUNT, unit="blocks",
         hint="blocks 0, 2, 3, 4 are held (0 is a valid id: ids are >= 0); block 3 is on two instances but counts "
              "once; an empty instance is fine (and the lists are the caller's: do not sort them in place)"),
    Case("ex03.effective_capacity_blocks.nothing_held", "effective_capacity_blocks",
         ([[], []],), expect=0, tol_note=COUNT, unit="blocks", kind="zero result",
         hint="two empty instances hold 0 distinct blocks: valid (only a cluster with no instance is invalid)"),
    Case("ex03.duplication_factor.same_document_on_8", "duplication_factor",
         ([[10, 11, 12, 13]] * 8,), expect=8.0, rel_tol=1e-9, tol_note=RATIO, unit="copies per block",
         hint="32 blocks held / 4 distinct = 8.0; 0.125 means the ratio is upside down (distinct / total)"),
    Case("ex03.duplication_factor.partial_overlap", "duplication_factor",
         ([[2, 1], [3, 2]],), expect=4 / 3, rel_tol=1e-9, tol_note=RATIO, unit="copies per block",
         hint="4 blocks held (2 + 2) over 3 distinct ids = 1.333... (the lists are the caller's: do not sort them "
              "in place)"),
    Case("ex03.ttft_dispatch.cache_vs_queue", "ttft_dispatch",
         ([10, 0, 0], [30.0, 0.0, 5.0], 12), expect=1, tol_note=INDEX, unit="instance index",
         hint="estimates are 30 + 2 = 32, 0 + 12 = 12, 5 + 12 = 17 prefill-block-times: instance 1. "
              "Answering 0 means the queue was ignored (pure cache affinity)"),
    Case("ex03.ttft_dispatch.global_pool_tie", "ttft_dispatch",
         ([0, 8, 0, 0], [2.0, 6.0, 0.0, 0.0], 10),
         kwargs={"pool_hit_blocks": 8, "transfer_blocks_per_prefill_block": 4.0}, expect=2,
         tol_note=INDEX, unit="instance index", kind="tie",
         hint="every instance reuses the 8 pooled blocks; instances without them transfer 8 / 4 = 2 "
              "block-times: estimates 6, 8, 4, 4; the tie between 2 and 3 goes to the LOWER index. "
              "Transfers cost blocks / rate (not blocks x rate)"),
    Case("ex03.ttft_dispatch.own_hits_beat_a_fetch", "ttft_dispatch",
         ([20, 0], [3.0, 0.0], 24), kwargs={"pool_hit_blocks": 20}, expect=0,
         tol_note=INDEX, unit="instance index", kind="default argument",
         hint="instance 0 holds the 20 pooled blocks itself: 3 queued + 4 to prefill = 7; instance 1 must first "
              "fetch those 20 blocks at the default 5 per block-time: 0 + 20 / 5 + 4 = 8, so instance 0. "
              "Answering 1 means pool fetches are not free: add the transfer time (pool blocks the instance "
              "lacks / transfer_blocks_per_prefill_block) to its estimate"),
    Case("ex03.ttft_dispatch.cached_prefix_beats_an_idle_instance", "ttft_dispatch",
         ([0, 8], [0.0, 5.0], 10), expect=1,
         tol_note=INDEX, unit="instance index",
         hint="instance 1 reuses 8 of the 10 blocks: 5 queued + 2 to prefill = 7 beats instance 0's 0 + 10 = 10. "
              "Answering 0 means the terms are not added up: ttft = queued + transfer + (request_blocks - reused), "
              "the blocks NOT reused are the ones to prefill"),
    Case("ex03.ttft_dispatch.transfers_cost_nothing", "ttft_dispatch", ([0, 6], [2.0, 3.0], 8),
         kwargs={"pool_hit_blocks": 6, "transfer_blocks_per_prefill_block": math.inf}, expect=0,
         tol_note=INDEX, unit="instance index", kind="infinity allowed",
         hint="math.inf blocks per block-time means free transfers (valid: the rule is > 0): fetching the 6 pooled "
              "blocks costs 6 / inf = 0, so the estimates are 2 + 0 + 2 = 4 and 3 + 0 + 2 = 5: instance 0"),
    Case("ex03.ttft_dispatch.one_instance_one_block", "ttft_dispatch", ([1], [0.0], 1), expect=0,
         tol_note=INDEX, unit="instance index", kind="smallest valid",
         hint="one instance and a one-block request are valid (at least 1 of each): the answer is instance 0"),
    Case("ex03.ttft_dispatch.within_tie_tolerance", "ttft_dispatch",
         ([2, 2, 2], [0.5 + 4e-10, 0.5, 0.5 + 2e-10], 6), expect=0, tol_note=INDEX, unit="instance index",
         kind="tolerance",
         hint="estimates 4.5000000004, 4.5 and 4.5000000002 block-times: all within TIE_TOLERANCE (1e-9) of the "
              "smallest, so all three tie and the lowest index, 0, wins; answering 1 means the exact minimum was "
              "taken (min, list.index) instead of every estimate <= best + TIE_TOLERANCE"),
    Case("ex03.ttft_dispatch.whole_prompt_pooled", "ttft_dispatch", ([0, 4], [1.0, 0.0], 4),
         kwargs={"pool_hit_blocks": 4}, expect=1, tol_note=INDEX, unit="instance index", kind="largest valid",
         hint="pool_hit_blocks = request_blocks is valid (the whole prompt is in the pool): instance 0 fetches 4 "
              "blocks, 1 + 4 / 5 + 0 = 1.8; instance 1 holds them, 0 + 0 + 0 = 0: instance 1"),
    Case("ex03.ttft_dispatch.long_queues", "ttft_dispatch", ([0, 0], [4e8, 2e8], 2), expect=1,
         tol_note=INDEX, unit="instance index", kind="tolerance",
         hint="at 2e8 block-times, best + TIE_TOLERANCE rounds to best itself (1e-9 is below a float's step there), so "
              "the smallest estimate must still pass the test: estimate <= best + TIE_TOLERANCE, not <"),
    Case("ex03.ttft_dispatch.slow_link", "ttft_dispatch", ([1, 7, 5], [1.0, 3.0, 1.0], 8),
         kwargs={"pool_hit_blocks": 7, "transfer_blocks_per_prefill_block": 0.5}, expect=1,
         tol_note=INDEX, unit="instance index",
         hint="a slow link moves half a block per block-time, so a fetch costs blocks / 0.5 = twice the blocks: "
              "estimates 1 + 12 + 1 = 14, 3 + 0 + 1 = 4, 1 + 4 + 1 = 6: instance 1. Answering 2 means the blocks "
              "were multiplied by the rate (a rate is not a cost); 0 means fetches were free"),
    # Invalid input: every argument, every rule of the docstrings.
    invalid("effective_capacity_blocks", "empty_cluster_list", ((),), "instance_blocks",
            "a cluster needs at least one instance (an instance may be empty, the cluster may not)"),
    invalid("effective_capacity_blocks", "id_below_zero", ([[4, 5], [-1]],), "instance_blocks",
            "block ids are ints >= 0"),
    invalid("effective_capacity_blocks", "same_id_twice", ([[7, 7]],), "instance_blocks",
            "an instance holds a block at most once: the same id twice in one instance's list is invalid"),
    invalid("duplication_factor", "empty_cluster", ([[], []],), "instance_blocks",
            "a cluster that holds no block has no duplication factor (0 / 0)"),
    invalid("duplication_factor", "false_as_id", ([[0, 1], [False]],), "instance_blocks",
            "block ids are ints >= 0, and a bool is not a block id (isinstance(False, int) is True: test for bool "
            "first)"),
    invalid("ttft_dispatch", "mismatched_lengths", ([0, 0], [1.0], 4), "queued_blocks",
            "hit_blocks and queued_blocks must list the same instances"),
    invalid("ttft_dispatch", "empty_lists", ([], [], 2), "hit_blocks", "at least one instance is needed"),
    invalid("ttft_dispatch", "nine_hits_of_eight", ([0, 9], [0.0, 0.0], 8), "hit_blocks",
            "an instance cannot reuse 9 blocks of an 8-block request: hit counts lie in [0, request_blocks]"),
    invalid("ttft_dispatch", "queue_below_zero", ([0, 0], [1.0, -0.5], 4), "queued_blocks",
            "queued work is >= 0"),
    invalid("ttft_dispatch", "infinite_queue", ([0, 0], [math.inf, 1.0], 4), "queued_blocks",
            "queues are finite numbers: test math.isfinite"),
    invalid("ttft_dispatch", "negative_request", ([0], [0.0], -1), "request_blocks",
            "request_blocks must be an int >= 1"),
    invalid("ttft_dispatch", "empty_request", ([0, 0], [1.0, 0.0], 0), "request_blocks",
            "a request of 0 blocks is invalid: request_blocks >= 1"),
    invalid("ttft_dispatch", "negative_pool_hits", ([0, 0], [0.0, 0.0], 4), "pool_hit_blocks",
            "pool_hit_blocks lies in [0, request_blocks]", pool_hit_blocks=-1),
    invalid("ttft_dispatch", "negative_transfer_rate", ([0, 4], [0.0, 0.0], 4), "transfer_blocks_per_prefill_block",
            "the transfer rate must be > 0", pool_hit_blocks=4, transfer_blocks_per_prefill_block=-5.0),
    invalid("ttft_dispatch", "transfer_rate_zero", ([0, 2], [0.0, 0.0], 2), "transfer_blocks_per_prefill_block",
            "a link that moves nothing is invalid: the rule is > 0, not >= 0", pool_hit_blocks=2,
            transfer_blocks_per_prefill_block=0.0),
]
