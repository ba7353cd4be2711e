"""The prefix caches of the KV cache pool (lecture §2.2): LRU, LFU and an infinite cache, one block per
512-token block of a prompt, with Mooncake's prefix-reuse semantics.

A request names its prompt's blocks in prefix order. It reuses the longest prefix of its blocks that
is cached; a block after the first miss is recomputed even if it happens to be cached. Afterwards all
of its blocks are inserted or refreshed, then the cache evicts down to its capacity (in blocks).
Policies: LRU (least recently used first) and LFU (fewest accesses while resident first, least
recently used among equals); the blocks of the request being served are evicted only if that request
alone exceeds the capacity. `access` is each cache's only mutator and returns the reused prefix length.
"""

from __future__ import annotations

import math
from collections import OrderedDict
from collections.abc import Sequence
from itertools import takewhile

POLICIES = ("lru", "lfu")


def _check_capacity(capacity_blocks: int) -> None:
    if isinstance(capacity_blocks, bool) or not isinstance(capacity_blocks, int) or capacity_blocks < 1:
        raise ValueError(f"capacity_blocks must be an int >= 1, got {capacity_blocks!r}")


class LRUCache:
    """Prefix cache evicting the least recently used block. `access` is the only mutator."""

    def __init__(self, capacity_blocks: int):
        _check_capacity(capacity_blocks)
        self.capacity_blocks = capacity_blocks
        self._order: OrderedDict[int, None] = OrderedDict()  # oldest first

    def __len__(self) -> int:
        return len(self._order)

    def __contains__(self, block: int) -> bool:
        return block in self._order

    def blocks(self) -> list[int]:
        return list(self._order)

    def access(self, blocks: Sequence[int]) -> int:
        """Serve one request: return its cached-prefix length (blocks), then insert/refresh them all."""
        order = self._order
        move = order.move_to_end
        hit = 0
        prefix = True  # still inside the cached prefix (membership before this request)
        # One pass per block: a cached block is refreshed (and counted while the prefix lasts), a
        # missing one is appended; the request's last block ends up most recent. Measured faster in
        # CPython than bulk OrderedDict.update / map(move_to_end) (benchmarks/bench_kvcache.py).
        for block in blocks:
            if block in order:
                move(block)
                if prefix:
                    hit += 1
            else:
                prefix = False
                order[block] = None
        if len(order) > self.capacity_blocks:
            pop = order.popitem
            for _ in range(len(order) - self.capacity_blocks):
                pop(False)
        return hit


class LFUCache:
    """Prefix cache evicting the block with the fewest accesses while resident (then the oldest)."""

    def __init__(self, capacity_blocks: int):
        _check_capacity(capacity_blocks)
        self.capacity_blocks = capacity_blocks
        self._freq: dict[int, int] = {}  # block -> accesses since it was inserted
        self._buckets: dict[int, OrderedDict[int, None]] = {}  # access count -> blocks, oldest first

    def __len__(self) -> int:
        return len(self._freq)

    def __contains__(self, block: int) -> bool:
        return block in self._freq

    def blocks(self) -> list[int]:
        return list(self._freq)

    def access(self, blocks: Sequence[int]) -> int:
        """Serve one request: return its cached-prefix length (blocks), then insert/refresh them all."""
        freq, buckets = self._freq, self._buckets
        hit = len(list(takewhile(freq.__contains__, blocks)))
        for block in blocks:
            count = freq.get(block, 0)
            if count:
                bucket = buckets[count]
                del bucket[block]
                if not bucket:
                    del buckets[count]
            freq[block] = count + 1
            target = buckets.get(count + 1)
            if target is None:
                target = buckets[count + 1] = OrderedDict()
            target[block] = None
        excess = len(freq) - self.capacity_blocks
        if excess > 0:
            excess = self._evict(excess, set(blocks))
            if excess > 0:
                self._evict(excess, frozenset())
        return hit

    def _evict(self, count: int, protected: set[int] | frozenset[int]) -> int:
        """Evict up to `count` unprotected blocks, fewest accesses first; return how many are left to evict.

        Inside a bucket the current request's blocks are the most recent, so meeting one means the
        rest of that bucket is protected too.
        """
        freq, buckets = self._freq, self._buckets
        for level in sorted(buckets):
            bucket = buckets[level]
            while count and bucket:
                oldest = next(iter(bucket))
                if oldest in protected:
                    break
                bucket.popitem(last=False)
                del freq[oldest]
                count -= 1
            if not bucket:
                del buckets[level]
            if not count:
                break
        return count


class InfiniteCache:
    """A cache that never evicts: the upper bound on the hit rate of a trace."""

    capacity_blocks = math.inf

    def __init__(self) -> None:
        self._held: set[int] = set()

    def __len__(self) -> int:
        return len(self._held)

    def __contains__(self, block: int) -> bool:
        return block in self._held

    def blocks(self) -> list[int]:
        return list(self._held)

    def access(self, blocks: Sequence[int]) -> int:
        hit = len(list(takewhile(self._held.__contains__, blocks)))
        self._held.update(blocks)
        return hit


def make_cache(policy: str, capacity_blocks: int | None) -> LRUCache | LFUCache | InfiniteCache:
    """A cache of `capacity_blocks` blocks (None: infinite) with eviction `policy` ("lru" or "lfu")."""
    if policy not in POLICIES:
        raise ValueError(f"policy must be one of {', '.join(POLICIES)}, got {policy!r}")
    if capacity_blocks is None:
        return InfiniteCache()
    return LRUCache(capacity_blocks) if policy == "lru" else LFUCache(capacity_blocks)
