"""Trace replay (lecture §2.3, real traces): a Mooncake trace through one prefix cache per capacity, the
hit-rate-vs-capacity sweep and its table, and how unevenly the trace's blocks are used (§2.2).

LRU at several capacities comes from one pass over the trace by LRU stack depths (`hetero.stackdist`),
with the same numbers as one replay per capacity; LFU, which is no stack algorithm, is replayed per
capacity.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from typing import Any

from hetero.kvcache.caches import POLICIES, make_cache
from hetero.stackdist import lru_stack_sweep
from hetero.traces import BLOCK_TOKENS, TraceRequest


def replay_trace(
    requests: Sequence[TraceRequest], capacity_blocks: int | None, policy: str = "lru"
) -> dict[str, float]:
    """Replay a trace through one cache; block and token hit rates (fractions) and the counts."""
    cache = make_cache(policy, capacity_blocks)
    access = cache.access
    block_hits = blocks = token_hits = tokens = 0
    for r in requests:
        hit = access(r.hash_ids)
        block_hits += hit
        blocks += len(r.hash_ids)
        token_hits += min(hit * BLOCK_TOKENS, r.input_length)  # the last block may be partial
        tokens += r.input_length
    return {
        "block_hit_rate": block_hits / blocks if blocks else 0.0,
        "token_hit_rate": token_hits / tokens,
        "block_hits": block_hits,
        "blocks": blocks,
        "token_hits": token_hits,
        "tokens": tokens,
    }


def capacity_sweep(
    requests: Sequence[TraceRequest], capacities: Sequence[int], policies: Sequence[str] = POLICIES
) -> dict[str, Any]:
    """Hit rate vs capacity for each policy, plus the infinite-capacity rate (all fractions).

    LRU at more than one capacity comes from one pass over the trace (`hetero.stackdist`, the same
    numbers as one replay per capacity); LFU, which is no stack algorithm, is replayed per capacity.
    """
    caps = [int(c) for c in capacities]
    result: dict[str, Any] = {"capacities_blocks": caps}
    for policy in policies:
        if policy == "lru" and len(caps) > 1:
            sweep = lru_stack_sweep(requests, caps)
            result[policy] = {"block_hit_rate": sweep["block_hit_rate"], "token_hit_rate": sweep["token_hit_rate"]}
            continue
        rows = [replay_trace(requests, c, policy) for c in caps]
        result[policy] = {
            "block_hit_rate": [r["block_hit_rate"] for r in rows],
            "token_hit_rate": [r["token_hit_rate"] for r in rows],
        }
    inf = replay_trace(requests, None)
    result["infinite"] = {"block_hit_rate": inf["block_hit_rate"], "token_hit_rate": inf["token_hit_rate"]}
    return result


POPULARITY_THRESHOLDS = (100, 1_000, 10_000)  # "a few blocks are accessed over 10,000 times" (lecture §2.2)


def block_popularity(requests: Sequence[TraceRequest], top: int = 5) -> dict[str, Any]:
    """How many requests use each distinct block (a block named twice by one request counts once).

    Returns distinct_blocks, used_by_one_request and used_by_one_request_share (the blocks never reused
    by another request: their count and share), blocks_used_by_more_than (a count per
    POPULARITY_THRESHOLDS entry, keyed by its string) and top_request_counts (the `top` largest counts).
    """
    uses = Counter(b for r in requests for b in set(r.hash_ids))
    distinct = len(uses)
    once = sum(1 for n in uses.values() if n == 1)
    return {
        "distinct_blocks": distinct,
        "used_by_one_request": once,
        "used_by_one_request_share": once / distinct if distinct else 0.0,
        "blocks_used_by_more_than": {str(k): sum(1 for n in uses.values() if n > k) for k in POPULARITY_THRESHOLDS},
        "top_request_counts": sorted(uses.values(), reverse=True)[:top],
    }


def render_popularity(popularity: dict[str, Any]) -> str:
    more = ", ".join(f"{v:,} by more than {int(k):,}" for k, v in popularity["blocks_used_by_more_than"].items())
    top = ", ".join(f"{n:,}" for n in popularity["top_request_counts"])
    return (
        f"{popularity['distinct_blocks']:,} distinct blocks: {popularity['used_by_one_request_share']:.1%} used by "
        f"one request only; {more} requests; the most used: {top} requests"
    )


def render_sweep(sweep: dict[str, Any]) -> str:
    policies = [p for p in POLICIES if p in sweep]
    head = f"{'capacity (blocks)':>18s}" + "".join(
        f"  {p.upper() + ' block':>10s}  {p.upper() + ' token':>10s}" for p in policies
    )
    lines = [head]
    for j, cap in enumerate(sweep["capacities_blocks"]):
        lines.append(
            f"{cap:18d}"
            + "".join(
                f"  {sweep[p]['block_hit_rate'][j]:10.1%}  {sweep[p]['token_hit_rate'][j]:10.1%}" for p in policies
            )
        )
    inf = sweep["infinite"]
    lines.append(f"{'infinite':>18s}  {inf['block_hit_rate']:10.1%}  {inf['token_hit_rate']:10.1%}")
    return "\n".join(lines)
