"""LRU at every capacity in one pass over a trace, by LRU stack depths (Mattson et al., 1970).

LRU is a stack algorithm: order every block ever used by its last use, most recent first (the LRU
stack); an LRU cache of C blocks then holds exactly the top C blocks of that stack. For
`hetero.kvcache.LRUCache` this holds between requests: a request refreshes its blocks in prefix
order (each one moves to the top), and the eviction that follows keeps the C most recent blocks,
the request's own last C blocks when the request alone exceeds the capacity.

The depth of a block at the start of a request is the number of distinct blocks used since its
last use (0: the most recently used block; Mattson's 1-based stack distance is depth + 1). The
block is cached in a C-block LRU cache at that moment exactly when depth < C. Prefix semantics (a
request reuses the longest prefix of its blocks that is cached when it arrives) then give the
hits of one request at every capacity at once: with m_j the largest depth among its first j + 1
blocks, it reuses #{j : m_j < C} blocks in a cache of C blocks. A block the request names twice
has the same depth both times (its state at the request's start), as `LRUCache.access` counts it.

The depths are computed for the whole trace at once with numpy, offline, with no Python loop per
block. Each block access gets a time 0 .. T - 1 (T the trace's block accesses); prev[t] is the time
of the previous use of t's block (-1: none; from a stable sort of the accesses by block), and for
an access of a request that starts at time s, p is its block's last use before s. The distinct
blocks used in (p, s) are the accesses there whose previous use is at or before p, so

    depth = #{t in (p, s) : prev[t] <= p} = (s - p - 1) - #{t in (p, s) : prev[t] > p},

a two-dimensional range count, and two facts leave few of them to count. A request's blocks from
its first block never used before on are cached at no capacity. And when a request's next block
was last used at p + 1, just after the previous block's p (the request repeats a run of blocks of
an earlier request, the usual case in Mooncake traces), its depth is one less: the block used at
p + 1 is among the blocks used since p, and not among those used since p + 1. A request's cached
prefix thus splits into runs, each a head whose depth is counted followed by depths falling by one,
and m_j is constant on a run. The heads' counts (1,918 for the 77,953 cached look-ups of Mooncake's
synthetic trace, 16,708 for the 105,710 of its conversation trace) are answered together by a
wavelet matrix over prev of the accesses with prev >= 0: for each bit of the times, highest first,
a stable partition by that bit and a prefix count of its zeros, down which all the queries move
with vectorised gathers; O(T log T) time, O(T) memory (one level is held at a time). The sweep then
sorts the runs by their m_j and reads every capacity off cumulative sums of their blocks and tokens.

For the depths of Mooncake's conversation and synthetic traces a pure-Python Fenwick tree (this
module's first version) took 0.43 s and 0.26 s, and a prefix-count array with a bisect buffer of
recent marks (the second) 0.29 s and 0.16 s; this takes 0.063 s and 0.027 s, a quarter of which
is reading the hash ids into numpy (quiet 2-core machine, best of 10). The whole `lru_stack_sweep`
takes 0.08 s and 0.03 s in `benchmarks/bench_kvcache_vs_mooncake.py` (docs/figures_kvcache.md).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from itertools import chain

import numpy as np

from hetero.traces import BLOCK_TOKENS, TraceRequest


@dataclass(frozen=True)
class _Runs:
    """The cached prefixes of a trace's requests, as runs of depths falling by one (module docstring)."""

    starts: np.ndarray  # (R + 1,) int64: each request's first access time, then T
    request: np.ndarray  # (K,) int64: each run's request, non-decreasing
    head: np.ndarray  # (K,) int64: access time of the run's first block
    end: np.ndarray  # (K,) int64: access time after its last block
    depth: np.ndarray  # (K,) int64: stack depth of the head; the block at time head + i has depth - i


def _flatten(requests: Sequence[TraceRequest]) -> tuple[np.ndarray, np.ndarray]:
    """Every hash id in access order, (T,) int64, and each request's first access time with T after them, (R + 1,)."""
    lengths = np.fromiter((len(r.hash_ids) for r in requests), dtype=np.int64, count=len(requests))
    starts = np.zeros(len(requests) + 1, dtype=np.int64)
    np.cumsum(lengths, out=starts[1:])
    total = int(starts[-1])
    try:
        ids = np.fromiter(chain.from_iterable(r.hash_ids for r in requests), dtype=np.int64, count=total)
    except OverflowError:  # an id beyond int64: only equality matters, so number the ids in order of appearance
        number: dict[int, int] = {}
        blocks = chain.from_iterable(r.hash_ids for r in requests)
        ids = np.fromiter((number.setdefault(b, len(number)) for b in blocks), dtype=np.int64, count=total)
    return ids, starts


def _count_below(values: np.ndarray, lo: np.ndarray, hi: np.ndarray, bound: np.ndarray) -> np.ndarray:
    """#{i in [lo[k], hi[k]) : values[i] < bound[k]} for every k (values and bounds ints >= 0), by a wavelet matrix.

    Level by level from the highest bit, the values are partitioned stably by that bit (zeros first)
    and each query's range is carried into the partition: where its bound has a 1 the range's zeros
    are below the bound (counted) and the range moves to the ones, else to the zeros. The levels
    are walked as they are built, so only one is held at a time.
    """
    count = np.zeros(len(lo), dtype=np.int64)
    zeros_before = np.zeros(len(values) + 1, dtype=np.int64)  # zeros_before[i]: zero bits among values[:i]
    for level in reversed(range(int(max(values.max(initial=0), bound.max(initial=0))).bit_length())):
        one = (values >> level) & 1 == 1
        zero = ~one
        np.cumsum(zero, out=zeros_before[1:])
        zeros_lo, zeros_hi = zeros_before[lo], zeros_before[hi]
        bit = (bound >> level) & 1 == 1
        count += np.where(bit, zeros_hi - zeros_lo, 0)
        lo = np.where(bit, zeros_before[-1] + lo - zeros_lo, zeros_lo)
        hi = np.where(bit, zeros_before[-1] + hi - zeros_hi, zeros_hi)
        values = np.concatenate([np.compress(zero, values), np.compress(one, values)])
    return count


def _runs(requests: Sequence[TraceRequest]) -> _Runs:
    """The runs of the requests' cached prefixes, each with its head's depth (module docstring)."""
    ids, starts = _flatten(requests)
    total = len(ids)
    order = np.argsort(ids, kind="stable")
    same = ids[order[1:]] == ids[order[:-1]]
    prev = np.full(total, -1, dtype=np.int64)  # the previous use of each access's block, -1 if none
    prev[order[1:][same]] = order[:-1][same]
    # The last use before the request's start: for a block named again in its request, its first
    # occurrence's (the previous uses are followed back, by pointer jumping).
    last = prev.copy()
    request_start = np.repeat(starts[:-1], np.diff(starts))
    inside = np.flatnonzero(last >= request_start)
    while inside.size:
        last[inside] = last[last[inside]]
        inside = inside[last[inside] >= request_start[inside]]
    # Request r's cached prefix: times starts[r] up to its first block never used before.
    new = np.flatnonzero(last < 0)
    cached_end = np.minimum(starts[1:], np.append(new, total)[np.searchsorted(new, starts[:-1])])
    # Run heads: cached blocks first in their request or whose last use does not follow the previous block's.
    breaks = np.ones(total, dtype=bool)
    breaks[1:] = last[1:] != last[:-1] + 1
    breaks[request_start] = True
    head = np.flatnonzero(breaks & (last >= 0))
    request = np.searchsorted(starts, head, side="right") - 1
    keep = head < cached_end[request]
    head, request = head[keep], request[keep]
    end = np.minimum(np.append(head[1:], total), cached_end[request])
    # depth = (s - p - 1) - #{t in (p, s) : prev[t] > p}, counted among the accesses with prev >= 0.
    p, s = last[head], starts[request]
    reused = np.flatnonzero(prev >= 0)
    lo, hi = np.searchsorted(reused, p + 1), np.searchsorted(reused, s)
    depth = (s - p - 1) - (hi - lo) + _count_below(prev[reused], lo, hi, p + 1)
    return _Runs(starts, request, head, end, depth)


def request_depths(requests: Sequence[TraceRequest], limit: int | None = None) -> Iterator[list[int]]:
    """For each request in order, the LRU stack depths (at its start) of its cached prefix.

    The list for a request stops before its first block never used before, or, with `limit`,
    after the first block whose depth is >= limit (no cache of `limit` blocks or fewer reuses
    anything from there on), so it is the list of depths that decide its prefix hits.
    """
    runs = _runs(requests)
    length = runs.end - runs.head
    run_of = np.repeat(np.arange(len(length)), length)  # the run of every cached block, in time order
    depths = runs.depth[run_of] - (np.arange(len(run_of)) - (np.cumsum(length) - length)[run_of])
    bounds = np.searchsorted(runs.request[run_of], np.arange(len(requests) + 1))
    for a, b in zip(bounds[:-1].tolist(), bounds[1:].tolist(), strict=True):
        row = depths[a:b]
        if limit is not None:
            over = np.flatnonzero(row >= limit)
            if over.size:
                row = row[: over[0] + 1]
        yield row.tolist()


def _check_capacities(capacities: Sequence[int]) -> list[int]:
    caps = list(capacities)
    for c in caps:
        if isinstance(c, bool) or not isinstance(c, int) or c < 1:
            raise ValueError(f"capacity_blocks must be an int >= 1, got {c!r}")
    return caps


def lru_stack_sweep(requests: Sequence[TraceRequest], capacities: Sequence[int]) -> dict[str, list]:
    """LRU prefix-cache hits of a trace at every capacity in `capacities` (blocks), in one pass.

    Returns the keys of `hetero.kvcache.replay_trace`, each a list aligned with `capacities`:
    block_hit_rate, token_hit_rate (fractions), block_hits, blocks, token_hits, tokens; the
    numbers equal those of one `replay_trace(requests, c, "lru")` per capacity c. As there, a
    request's token hits are min(512 x its block hits, input_length) (its last block may be partial).
    """
    caps = _check_capacities(capacities)
    runs = _runs(requests)
    blocks = int(runs.starts[-1])
    inputs = np.fromiter((r.input_length for r in requests), dtype=np.int64, count=len(requests))
    tokens = int(inputs.sum())
    # m_j of each run, a running maximum per request (depths are below `blocks`, so each request's
    # offset lifts it above all the requests before it).
    offset = runs.request * blocks
    maxima = np.maximum.accumulate(runs.depth + offset) - offset
    # A request that reuses h blocks reuses min(512 h, input_length) tokens: its runs' shares telescope.
    start, length = runs.starts[runs.request], inputs[runs.request]
    run_tokens = np.minimum(length, BLOCK_TOKENS * (runs.end - start)) - np.minimum(
        length, BLOCK_TOKENS * (runs.head - start)
    )
    order = np.argsort(maxima, kind="stable")
    # Depths are below `blocks`, so larger capacities count alike (and fit int64).
    reused = np.searchsorted(maxima[order], np.asarray([min(c, blocks) for c in caps], dtype=np.int64), side="left")
    block_hits = np.concatenate([[0], np.cumsum((runs.end - runs.head)[order])])[reused].tolist()
    token_hits = np.concatenate([[0], np.cumsum(run_tokens[order])])[reused].tolist()
    return {
        "block_hit_rate": [h / blocks if blocks else 0.0 for h in block_hits],
        "token_hit_rate": [t / tokens if tokens else 0.0 for t in token_hits],
        "block_hits": block_hits,
        "blocks": [blocks] * len(caps),
        "token_hits": token_hits,
        "tokens": [tokens] * len(caps),
    }
