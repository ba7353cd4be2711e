"""Exercise ex03: local vs global KV cache, duplication, effective capacity, TTFT-aware dispatch
(lecture §2.1, §2.3, §7 Q3).

Mooncake keeps reusable KV cache in 512-token blocks, named by a hash of the prefix they end. In
experiment 02 part 1 (8 prefill instances, 20,000 requests over 400 long documents with Zipf
popularity) each instance either keeps its own cache (local) or all instances share one pool
(global). With local caches and round-robin dispatch every instance ends up holding the same hot
documents, so the cluster holds each block about 8 times: its effective capacity is about 1/8 of
the global pool's (§7 Q3). Mooncake's Conductor picks the prefill instance whose estimated time to
first token (TTFT) is smallest: queued work + transfer of the prefix it lacks + prefill of the rest.

A cluster's cache contents are given as `instance_blocks`: one list per instance of the block ids
(ints >= 0) that instance holds. An instance holds a block at most once; the same id on several
instances is duplication.

Work and time are counted in prefill-block-times: the time one instance needs to prefill one
512-token block. `hetero.kvcache` calls these functions in experiment 02 part "cache_pool".
Invalid input raises ValueError with a message naming the argument.
"""

from __future__ import annotations

import math


def _check_cluster(instance_blocks: list[list[int]]) -> None:
    """Validate `instance_blocks` for both cluster functions; raise ValueError naming it.

    Rules: a non-empty list (one entry per instance); each entry a list of ints >= 0 (not bool);
    no id listed twice by the same instance.
    """
    # BEGIN SOLUTION
    if not isinstance(instance_blocks, (list, tuple)) or len(instance_blocks) == 0:
        raise ValueError("instance_blocks must be a non-empty list with one list of block ids per instance")
    for i, blocks in enumerate(instance_blocks):
        if not isinstance(blocks, (list, tuple)):
            raise ValueError(f"instance_blocks[{i}] must be a list of block ids, got {type(blocks).__name__}")
        for b in blocks:
            if isinstance(b, bool) or not isinstance(b, int) or b < 0:
                raise ValueError(f"instance_blocks[{i}] holds {b!r}; block ids are ints >= 0")
        if len(set(blocks)) != len(blocks):
            raise ValueError(f"instance_blocks[{i}] lists a block twice; an instance holds a block at most once")
    # END SOLUTION


def effective_capacity_blocks(instance_blocks: list[list[int]]) -> int:
    """Distinct blocks held across the cluster (lecture §2.3, §7 Q3).

    instance_blocks: one list of block ids per instance (at least one instance; an instance may be
                     empty). A block held by several instances counts once: copies do not add
                     capacity.
    Returns:         number of distinct block ids (blocks, int).
    Raises ValueError naming instance_blocks: no instance, an id that is not an int >= 0, or an id
    listed twice by the same instance.
    """
    # BEGIN SOLUTION
    _check_cluster(instance_blocks)
    distinct: set[int] = set()
    for blocks in instance_blocks:
        distinct.update(blocks)
    return len(distinct)
    # END SOLUTION


def duplication_factor(instance_blocks: list[list[int]]) -> float:
    """Copies per distinct block: total blocks held / distinct blocks held (lecture §2.3, §7 Q3).

    instance_blocks: as in `effective_capacity_blocks`.
    Returns:         a float >= 1.0 (1.0: no block is held twice; 8.0: every block is on all of 8
                     instances, so the cluster's effective capacity is 1/8 of its memory).
    Raises ValueError naming instance_blocks for the invalid inputs of `effective_capacity_blocks`,
    and when the cluster holds no block at all (the ratio is undefined).
    """
    # BEGIN SOLUTION
    _check_cluster(instance_blocks)
    total = sum(len(blocks) for blocks in instance_blocks)
    if total == 0:
        raise ValueError("instance_blocks holds no block; the duplication factor is undefined")
    distinct: set[int] = set()
    for blocks in instance_blocks:
        distinct.update(blocks)
    return total / len(distinct)
    # END SOLUTION


TIE_TOLERANCE = 1e-9  # prefill-block-times: estimates this close to the minimum count as tied


def ttft_dispatch(hit_blocks: list[int], queued_blocks: list[float], request_blocks: int,
                  pool_hit_blocks: int = 0, transfer_blocks_per_prefill_block: float = 5.0) -> int:
    """Mooncake's Conductor: the prefill instance with the smallest estimated TTFT (lecture §2.1).

    hit_blocks:        per instance, how many of the request's prefix blocks that instance can reuse
                       without a transfer (blocks, ints in [0, request_blocks]).
    queued_blocks:     per instance, prefill work already waiting there (prefill-block-times,
                       finite floats >= 0); same length as hit_blocks, at least one instance.
    request_blocks:    blocks in the request's prompt (int >= 1).
    pool_hit_blocks:   prefix blocks found in the global pool (blocks, int in [0, request_blocks]);
                       0 when there is no global pool.
    transfer_blocks_per_prefill_block: blocks one transfer link moves in the time of one block's
                       prefill (> 0; 5.0 = a single 200 Gb/s NIC, §2.4: fetching is ~5x faster than
                       recomputing; math.inf = free transfers).
    Estimate for instance i, in prefill-block-times:
        reused_i   = max(hit_blocks[i], pool_hit_blocks)
        transfer_i = (reused_i - hit_blocks[i]) / transfer_blocks_per_prefill_block
        ttft_i     = queued_blocks[i] + transfer_i + (request_blocks - reused_i)
    Returns: the index of the instance with the smallest ttft_i (int). Estimates within
    TIE_TOLERANCE of the smallest count as tied; ties go to the lowest index.
    Raises ValueError naming the argument: empty or mismatched lists, a hit count outside
    [0, request_blocks] or not an int, a negative or non-finite queue, request_blocks not an
    int >= 1, pool_hit_blocks outside [0, request_blocks], transfer rate not > 0.
    """
    # BEGIN SOLUTION
    if isinstance(request_blocks, bool) or not isinstance(request_blocks, int) or request_blocks < 1:
        raise ValueError(f"request_blocks must be an int >= 1, got {request_blocks!r}")
    if len(hit_blocks) == 0:
        raise ValueError("hit_blocks must list at least one instance")
    if len(queued_blocks) != len(hit_blocks):
        raise ValueError(f"queued_blocks has {len(queued_blocks)} entries but hit_blocks has {len(hit_blocks)}")
    for i, hit in enumerate(hit_blocks):
        if isinstance(hit, bool) or not isinstance(hit, int) or not 0 <= hit <= request_blocks:
            raise ValueError(f"hit_blocks[{i}] must be an int in [0, {request_blocks}], got {hit!r}")
    for i, queued in enumerate(queued_blocks):
        if not (math.isfinite(queued) and queued >= 0):
            raise ValueError(f"queued_blocks[{i}] must be a finite number >= 0, got {queued!r}")
    if isinstance(pool_hit_blocks, bool) or not isinstance(pool_hit_blocks, int) \
            or not 0 <= pool_hit_blocks <= request_blocks:
        raise ValueError(f"pool_hit_blocks must be an int in [0, {request_blocks}], got {pool_hit_blocks!r}")
    if not transfer_blocks_per_prefill_block > 0:
        raise ValueError(f"transfer_blocks_per_prefill_block must be > 0, got {transfer_blocks_per_prefill_block!r}")
    estimates = []
    for hit, queued in zip(hit_blocks, queued_blocks):
        reused = max(hit, pool_hit_blocks)
        transfer = (reused - hit) / transfer_blocks_per_prefill_block
        estimates.append(queued + transfer + (request_blocks - reused))
    best = min(estimates)
    return next(i for i, estimate in enumerate(estimates) if estimate <= best + TIE_TOLERANCE)
    # END SOLUTION
