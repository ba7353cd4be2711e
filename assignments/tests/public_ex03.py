"""Public cases for ex03 (local vs global KV cache): the §7 Q3 picture and hand-checkable Conductor decisions."""

from hetero.checks import Case

COUNT = "a count of blocks: an int, compared exactly"
RATIO = "one division of two counts: correct code agrees to ~1e-16; 1e-9 allows only float rounding"
INDEX = "an instance index: an int, compared exactly"

CASES = [
    Case("ex03.effective_capacity_blocks.same_document_on_8", "effective_capacity_blocks",
         ([[10, 11, 12, 13]] * 8,), expect=4, tol_note=COUNT, unit="blocks",
         hint="§7 Q3: 8 instances each holding the same 4-block document hold 4 distinct blocks, not 32; "
              "count distinct block ids (a set), not the total"),
    Case("ex03.effective_capacity_blocks.overlap_and_empty", "effective_capacity_blocks",
         ([[1, 2, 3], [3, 4], []],), expect=4, tol_note=COUNT, unit="blocks",
         hint="blocks 1, 2, 3, 4 are held; block 3 is on two instances but counts once; an empty instance is fine"),
    Case("ex03.duplication_factor.same_document_on_8", "duplication_factor",
         ([[10, 11, 12, 13]] * 8,), expect=8.0, rel_tol=1e-9, tol_note=RATIO, unit="copies per block",
         hint="32 blocks held / 4 distinct = 8.0; 0.125 means the ratio is upside down (distinct / total)"),
    Case("ex03.duplication_factor.partial_overlap", "duplication_factor",
         ([[1, 2], [2, 3]],), expect=4 / 3, rel_tol=1e-9, tol_note=RATIO, unit="copies per block",
         hint="4 blocks held (2 + 2) over 3 distinct ids = 1.333..."),
    Case("ex03.ttft_dispatch.cache_vs_queue", "ttft_dispatch",
         ([10, 0, 0], [30.0, 0.0, 5.0], 12), expect=1, tol_note=INDEX, unit="instance index",
         hint="estimates are 30 + 2 = 32, 0 + 12 = 12, 5 + 12 = 17 prefill-block-times: instance 1. "
              "Answering 0 means the queue was ignored (pure cache affinity)"),
    Case("ex03.ttft_dispatch.global_pool_tie", "ttft_dispatch",
         ([0, 8, 0, 0], [2.0, 6.0, 0.0, 0.0], 10),
         kwargs={"pool_hit_blocks": 8, "transfer_blocks_per_prefill_block": 4.0}, expect=2,
         tol_note=INDEX, unit="instance index",
         hint="every instance reuses the 8 pooled blocks; instances without them transfer 8 / 4 = 2 "
              "block-times: estimates 6, 8, 4, 4; the tie between 2 and 3 goes to the LOWER index. "
              "Transfers cost blocks / rate (not blocks x rate)"),
    Case("ex03.ttft_dispatch.own_hits_beat_a_fetch", "ttft_dispatch",
         ([20, 0], [3.0, 0.0], 24), kwargs={"pool_hit_blocks": 20}, expect=0,
         tol_note=INDEX, unit="instance index",
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
    Case("ex03.duplication_factor.empty_cluster", "duplication_factor", ([[], []],), raises="ValueError",
         hint="a cluster that holds no block has no duplication factor (0 / 0): raise ValueError naming "
              "instance_blocks"),
    Case("ex03.ttft_dispatch.mismatched_lengths", "ttft_dispatch", ([0, 0], [1.0], 4), raises="ValueError",
         hint="hit_blocks and queued_blocks must list the same instances: raise ValueError naming queued_blocks"),
]
