"""Mooncake's KV cache pool (lecture §2.2-§2.3): a block-level prefix cache, the local-vs-global
experiment of script 02 part 1, and trace replay.

Cache semantics (prefix reuse, as in Mooncake): a request names its prompt's 512-token blocks in
prefix order. It reuses the longest prefix of its blocks that is cached; a block after the first
miss is recomputed even if it happens to be cached. Afterwards all of its blocks are inserted or
refreshed, then the cache evicts down to its capacity (in blocks). Policies: LRU (least recently
used first) and LFU (fewest accesses while resident first, least recently used among equals); the
blocks of the request being served are evicted only if that request alone exceeds the capacity.

The experiment (`PARTS`, key "cache_pool"): 8 prefill instances serve 20,000 requests over 400 long
documents with Zipf popularity; each request is a document's blocks followed by a short question.
Four ways to cache and dispatch:
  local_round_robin   each instance caches what it computed; requests go round-robin;
  local_sticky        local caches; every request for a document goes to the same instance;
  global_round_robin  one pool of the same total size that every instance reads (a block held by
                      another instance costs a cross-machine transfer); requests go round-robin;
  global_ttft         the global pool, with each request sent where the student's ex03
                      `ttft_dispatch` estimates the smallest time to first token.
Work and time are in prefill-block-times (the time one instance prefills one block); each instance
serves its queue first come, first served.

Trace replay (`replay_trace`, `capacity_sweep`) runs a trace through one cache per capacity; LRU at
several capacities comes from one pass over the trace by LRU stack depths (`hetero.stackdist`),
with the same numbers.

CLI: `python -m hetero.kvcache TRACE.jsonl --capacities 1000,5000,10000,20000,50000
[--policy lru|lfu] [--json]` prints block and token hit rates per capacity and with an infinite cache.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import textwrap
from collections import Counter, OrderedDict
from dataclasses import asdict, dataclass
from itertools import takewhile
from pathlib import Path
from typing import Any, Callable, Sequence

import numpy as np

from hetero import catalog, plotting
from hetero.impl import exercise_function
from hetero.parts import Part
from hetero.stackdist import lru_stack_sweep
from hetero.traces import BLOCK_TOKENS, SAMPLE_TRACE, TraceError, TraceRequest, read_trace

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


# ---------------------------------------------------------------------------------------------
# Trace replay.

def replay_trace(requests: Sequence[TraceRequest], capacity_blocks: int | None,
                 policy: str = "lru") -> dict[str, float]:
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
    return {"block_hit_rate": block_hits / blocks if blocks else 0.0,
            "token_hit_rate": token_hits / tokens,
            "block_hits": block_hits, "blocks": blocks, "token_hits": token_hits, "tokens": tokens}


def capacity_sweep(requests: Sequence[TraceRequest], capacities: Sequence[int],
                   policies: Sequence[str] = POLICIES) -> dict[str, Any]:
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
        result[policy] = {"block_hit_rate": [r["block_hit_rate"] for r in rows],
                          "token_hit_rate": [r["token_hit_rate"] for r in rows]}
    inf = replay_trace(requests, None)
    result["infinite"] = {"block_hit_rate": inf["block_hit_rate"], "token_hit_rate": inf["token_hit_rate"]}
    return result


# ---------------------------------------------------------------------------------------------
# The document workload of experiment 02 part 1.

@dataclass(frozen=True)
class WorkloadConfig:
    num_instances: int = 8
    num_requests: int = 20_000
    num_documents: int = 400
    zipf_s: float = 1.0  # popularity of the document of rank r is proportional to r ** -zipf_s
    doc_blocks_min: int = 8  # documents are 4K-20K tokens (the lecture's Kimi mean input: 8,590 tokens)
    doc_blocks_max: int = 40
    question_tokens_min: int = 32  # the unique question after the document
    question_tokens_max: int = 1024
    # Per-instance cache: 600 blocks (about 25 documents) per instance, 4,800 in total, half of the
    # ~9,600 document blocks; small enough that one local cache cannot hold the hot set, large
    # enough that the pooled 4,800 hold most of the popularity mass.
    instance_capacity_blocks: int = 600
    load: float = 1.2  # arrival rate x mean prompt blocks / instances: utilisation if nothing were cached
    transfer_blocks_per_prefill_block: float = 5.0  # §2.4: one 200 Gb/s NIC fetches ~5x faster
    hot_fraction: float = 0.025  # the 10 most popular of 400 documents are "hot" (copies per hot block)
    warmup_fraction: float = 0.25  # requests before the first capacity snapshot
    snapshots: int = 8  # capacity snapshots, evenly spaced after the warm-up


@dataclass(frozen=True)
class Workload:
    config: WorkloadConfig
    documents: np.ndarray  # (num_requests,) document index of each request
    request_blocks: tuple[tuple[int, ...], ...]  # per request, its block ids in prefix order
    doc_blocks: np.ndarray  # (num_requests,) blocks of the document part of each request
    tokens: np.ndarray  # (num_requests,) prompt tokens
    arrivals: np.ndarray  # (num_requests,) arrival times, prefill-block-times, non-decreasing
    hot_blocks: frozenset[int]  # blocks of the `hot_fraction` most popular documents


def generate_workload(rng: np.random.Generator, config: WorkloadConfig = WorkloadConfig()) -> Workload:
    """Requests over `num_documents` documents with Zipf popularity (seeded by `rng`)."""
    c = config
    if c.num_instances < 1 or c.num_requests < 1 or c.num_documents < 1:
        raise ValueError("num_instances, num_requests and num_documents must be >= 1")
    lengths = rng.integers(c.doc_blocks_min, c.doc_blocks_max + 1, size=c.num_documents)  # (docs,) blocks
    starts = np.concatenate([[0], np.cumsum(lengths)[:-1]])  # (docs,) first block id of each document
    ranks = rng.permutation(c.num_documents)  # popularity rank of each document (0 = hottest)
    weights = (ranks + 1.0) ** -c.zipf_s
    documents = rng.choice(c.num_documents, size=c.num_requests, p=weights / weights.sum())
    q_tokens = rng.integers(c.question_tokens_min, c.question_tokens_max + 1, size=c.num_requests)
    q_blocks = -(-q_tokens // BLOCK_TOKENS)  # (requests,) blocks of each question
    next_id = int(lengths.sum())  # question blocks get fresh ids after all document blocks
    request_blocks = []
    for d, nq in zip(documents.tolist(), q_blocks.tolist()):
        start = int(starts[d])
        request_blocks.append(tuple(range(start, start + int(lengths[d]))) + tuple(range(next_id, next_id + nq)))
        next_id += nq
    doc_blocks = lengths[documents]
    tokens = doc_blocks * BLOCK_TOKENS + q_tokens
    mean_blocks = float(np.mean(doc_blocks + q_blocks))
    rate = c.load * c.num_instances / mean_blocks  # requests per prefill-block-time
    arrivals = np.cumsum(rng.exponential(1.0 / rate, size=c.num_requests))
    hot = np.flatnonzero(ranks < max(1, int(round(c.hot_fraction * c.num_documents))))
    hot_blocks = frozenset(b for d in hot.tolist() for b in range(int(starts[d]), int(starts[d] + lengths[d])))
    return Workload(c, documents, tuple(request_blocks), doc_blocks, tokens, arrivals, hot_blocks)


def attention_equal_tokens(model_name: str = "LLaMA-3-70B") -> float:
    """Context length at which a token's attention FLOPs equal its weight FLOPs.

    Per token at position p: weights 2 x params FLOPs, attention 4 x layers x attn_dim x p FLOPs
    (QK^T and AV). LLaMA-3-70B: 2 x 70.6e9 / (4 x 80 x 8192) = 53,800 tokens.
    """
    m = catalog.model(model_name)
    return 2.0 * m.num_params / (4.0 * m.num_layers * m.attn_dim)


def prefill_cost(reused_tokens: np.ndarray, tokens: np.ndarray, equal_tokens: float) -> np.ndarray:
    """Prefill FLOPs of positions [reused, tokens), in units of one token's weight FLOPs."""
    r, n = reused_tokens.astype(np.float64), tokens.astype(np.float64)
    return (n - r) + (n * n - r * r) / (2.0 * equal_tokens)


DISPATCHES = ("local_round_robin", "local_sticky", "global_round_robin", "global_ttft")
LABELS = {"local_round_robin": "local + round-robin", "local_sticky": "local + document-sticky",
          "global_round_robin": "global pool + round-robin", "global_ttft": "global pool + TTFT-aware"}

SHORT_LABELS = {"local_round_robin": "local\nround-robin", "local_sticky": "local\nsticky",
                "global_round_robin": "global\nround-robin", "global_ttft": "global\nTTFT-aware"}

ClusterFn = Callable[[list[list[int]]], Any]


def simulate_cluster(workload: Workload, dispatch: str, *, cache_policy: str = "lru",
                     ttft_dispatch: Callable[..., int] | None = None,
                     effective_capacity: ClusterFn | None = None,
                     duplication: ClusterFn | None = None) -> dict[str, Any]:
    """Serve `workload` with one of `DISPATCHES`; all figures plain data.

    ttft_dispatch: ex03's rule, required by "global_ttft".
    effective_capacity / duplication: ex03's cluster functions; when given, the cache contents are
    snapshotted `config.snapshots` times after the warm-up and the means are reported.
    """
    if dispatch not in DISPATCHES:
        raise ValueError(f"dispatch must be one of {', '.join(DISPATCHES)}, got {dispatch!r}")
    if dispatch == "global_ttft" and ttft_dispatch is None:
        raise ValueError("dispatch 'global_ttft' needs the ex03 ttft_dispatch function")
    c = workload.config
    n_inst = c.num_instances
    is_global = dispatch.startswith("global")
    if is_global:
        pool = make_cache(cache_policy, c.instance_capacity_blocks * n_inst)
        home: dict[int, int] = {}  # block -> instance whose memory holds it (where it was computed)
    else:
        caches = [make_cache(cache_policy, c.instance_capacity_blocks) for _ in range(n_inst)]
    ratio = c.transfer_blocks_per_prefill_block
    n = c.num_requests
    reused = np.zeros(n, dtype=np.int64)  # (requests,) prefix blocks not recomputed
    transferred = np.zeros(n, dtype=np.int64)  # (requests,) of those, fetched from another instance
    chosen = np.zeros(n, dtype=np.int64)  # (requests,) instance index
    ttft = np.zeros(n, dtype=np.float64)  # (requests,) prefill-block-times, queue wait + own work
    work = np.zeros(n_inst, dtype=np.float64)  # per instance, prefill-block-times done
    backlog = [0.0] * n_inst  # per instance, queued work at the current time
    now = 0.0
    first_snapshot = int(c.warmup_fraction * n)
    step = max(1, (n - first_snapshot) // max(c.snapshots, 1))
    snapshot_at = set(range(first_snapshot + step - 1, n, step)) if effective_capacity else set()
    eff_samples: list[float] = []
    dup_samples: list[float] = []
    hot_dup_samples: list[float] = []
    arrivals = workload.arrivals.tolist()
    documents = workload.documents.tolist()
    for i, blocks in enumerate(workload.request_blocks):
        elapsed = arrivals[i] - now
        now = arrivals[i]
        backlog = [b - elapsed if b > elapsed else 0.0 for b in backlog]
        if is_global:
            hit = pool.access(blocks)
            local = Counter(home[b] for b in blocks[:hit]) if hit else Counter()
            if dispatch == "global_round_robin":
                inst = i % n_inst
            else:
                inst = ttft_dispatch([local.get(k, 0) for k in range(n_inst)], list(backlog), len(blocks),
                                     hit, ratio)
            moved = hit - local.get(inst, 0)
            for b in blocks[hit:]:
                home[b] = inst
        else:
            inst = i % n_inst if dispatch == "local_round_robin" else documents[i] % n_inst
            hit = caches[inst].access(blocks)
            moved = 0
        cost = (len(blocks) - hit) + moved / ratio  # prefill-block-times
        backlog[inst] += cost
        work[inst] += cost
        ttft[i] = backlog[inst]
        reused[i], transferred[i], chosen[i] = hit, moved, inst
        if i in snapshot_at:
            if is_global:
                held: list[list[int]] = [[] for _ in range(n_inst)]
                for b in pool.blocks():
                    held[home[b]].append(b)
            else:
                held = [cache.blocks() for cache in caches]
            eff_samples.append(float(effective_capacity(held)))
            if duplication is not None:
                dup_samples.append(float(duplication(held)))
                hot = [[b for b in blocks_held if b in workload.hot_blocks] for blocks_held in held]
                if any(hot):
                    hot_dup_samples.append(float(duplication(hot)))
    blocks_total = int(sum(len(b) for b in workload.request_blocks))
    reused_tokens = np.minimum(reused * BLOCK_TOKENS, workload.tokens)
    eq = attention_equal_tokens()
    saved = 1.0 - float(prefill_cost(reused_tokens, workload.tokens, eq).sum()
                        / prefill_cost(np.zeros(n, dtype=np.int64), workload.tokens, eq).sum())
    requests_per_inst = np.bincount(chosen, minlength=n_inst)
    result: dict[str, Any] = {
        "block_hit_rate": float(reused.sum() / blocks_total),
        "token_hit_rate": float(reused_tokens.sum() / workload.tokens.sum()),
        "compute_saved": saved,
        "transferred_fraction": float(transferred.sum() / max(int(reused.sum()), 1)),
        "work_imbalance": float(work.max() / work.mean()),
        "request_imbalance": float(requests_per_inst.max() / requests_per_inst.mean()),
        "ttft_mean_blocks": float(ttft.mean()),
        "ttft_p99_blocks": float(np.percentile(ttft, 99)),
        "requests_per_instance": [int(x) for x in requests_per_inst],
    }
    if eff_samples:
        total = c.instance_capacity_blocks * n_inst
        result["effective_capacity_blocks"] = float(np.mean(eff_samples))
        result["capacity_fraction"] = float(np.mean(eff_samples)) / total
    if dup_samples:
        result["duplication_factor"] = float(np.mean(dup_samples))
    if hot_dup_samples:
        result["hot_duplication_factor"] = float(np.mean(hot_dup_samples))
    return result


def single_cache_hit_rate(workload: Workload, capacity_blocks: int, cache_policy: str = "lru") -> float:
    """Block hit rate of the whole workload served from one cache of `capacity_blocks` (a fraction)."""
    access = make_cache(cache_policy, capacity_blocks).access
    hits = sum(map(access, workload.request_blocks))
    return hits / sum(map(len, workload.request_blocks))


def hit_equivalent_capacity(workload: Workload, hit_rate: float, capacities: Sequence[int],
                            cache_policy: str = "lru") -> dict[str, Any]:
    """The capacity (blocks) one shared cache needs to reach `hit_rate` on this workload.

    Measured at `capacities` (ascending) and interpolated linearly in log(capacity); a rate outside
    the measured range is clamped to the nearest end (`bracketed` says whether it was inside).
    """
    rates = [single_cache_hit_rate(workload, int(c), cache_policy) for c in capacities]
    log_caps = np.log(np.asarray(capacities, dtype=np.float64))
    equivalent = float(np.exp(np.interp(hit_rate, rates, log_caps)))
    return {"capacities_blocks": [int(c) for c in capacities], "hit_rates": rates,
            "equivalent_capacity_blocks": equivalent, "bracketed": bool(rates[0] <= hit_rate <= rates[-1])}


# ---------------------------------------------------------------------------------------------
# ---------------------------------------------------------------------------------------------
# Hot blocks in the global pool (lecture §2.2: hot blocks must be replicated to avoid transfer
# congestion; Mooncake §6.2: hot-spot migration with a KV-cache balancing threshold).

@dataclass(frozen=True)
class HotBlockConfig:
    """One way to serve remote hits of the global pool (see `simulate_hot_blocks`)."""

    name: str
    # Each holder's NIC sends at transfer_blocks_per_prefill_block and serves one fetch after another;
    # False: every fetch gets the full rate however many fetch from the same holder at once.
    sender_limited: bool = True
    # Fetched blocks are kept in the fetching instance's cache (a replica), so a later request there
    # hits them locally and other instances can fetch them from either holder.
    replicate: bool = False
    # Mooncake's rule: fetch the remote part of a prefix only if best_prefix / local_prefix exceeds the
    # threshold (a local prefix of 0 always fetches); otherwise recompute from the local prefix. The
    # paper tunes it by hand and gives no value; 1 fetches whenever a longer prefix exists elsewhere.
    balancing_threshold: float = 1.0


# Fixed before the first run: the pool as the experiment above models it (no sender limit, no
# replicas), the same pool with sender-side bandwidth, then replication at three thresholds.
HOT_BLOCK_CONFIGS: tuple[HotBlockConfig, ...] = (
    HotBlockConfig("no sender limit", sender_limited=False),
    HotBlockConfig("sender-limited, no replication"),
    HotBlockConfig("replication, threshold 1", replicate=True),
    HotBlockConfig("replication, threshold 2", replicate=True, balancing_threshold=2.0),
    HotBlockConfig("replication, threshold 4", replicate=True, balancing_threshold=4.0),
)


def simulate_hot_blocks(workload: Workload, config: HotBlockConfig) -> dict[str, Any]:
    """Serve `workload` round-robin over instances whose caches (LRU, `instance_capacity_blocks` each)
    form one global pool in which a block may be held by several instances.

    A request at instance i reuses i's cached prefix; if another instance holds a longer prefix and the
    balancing threshold allows, the missing blocks are fetched, each from the holder whose NIC frees
    first (with `sender_limited`, a holder's fetches queue behind each other at
    `transfer_blocks_per_prefill_block` blocks per prefill-block-time). The transfer starts at arrival,
    beside the request's wait in i's queue; i prefills the blocks not reused once both are done. The
    receiver's NIC is not a limit. Times in prefill-block-times; requests go round-robin so that a hot
    document's requests reach every instance (the case replication is for)."""
    c = workload.config
    if not (math.isfinite(config.balancing_threshold) and config.balancing_threshold >= 1.0):
        raise ValueError(f"balancing_threshold must be a finite number >= 1, got {config.balancing_threshold}")
    n_inst, cap, rate = c.num_instances, c.instance_capacity_blocks, c.transfer_blocks_per_prefill_block
    caches: list[OrderedDict[int, None]] = [OrderedDict() for _ in range(n_inst)]
    holders: dict[int, set[int]] = {}  # block -> instances whose cache holds it
    send_free = [0.0] * n_inst  # when each instance's NIC has sent everything asked of it so far
    backlog = [0.0] * n_inst
    sent = [0] * n_inst  # blocks each instance sent
    n = c.num_requests
    ttft = np.zeros(n, dtype=np.float64)  # (requests,) arrival to prefill end
    wait_transfer = np.zeros(n, dtype=np.float64)  # (requests,) arrival to the end of its fetches
    reused = np.zeros(n, dtype=np.int64)  # (requests,) prefix blocks not recomputed
    fetched = np.zeros(n, dtype=np.int64)  # (requests,) of those, fetched from other instances
    hot_fetched = 0
    now = 0.0
    arrivals = workload.arrivals.tolist()
    hot_blocks = workload.hot_blocks

    def insert(inst: int, block: int) -> None:
        cache = caches[inst]
        if block in cache:
            cache.move_to_end(block)
            return
        cache[block] = None
        holders.setdefault(block, set()).add(inst)
        while len(cache) > cap:
            old, _ = cache.popitem(last=False)
            owners = holders[old]
            owners.discard(inst)
            if not owners:
                del holders[old]

    for i, blocks in enumerate(workload.request_blocks):
        elapsed = arrivals[i] - now
        now = arrivals[i]
        backlog = [b - elapsed if b > elapsed else 0.0 for b in backlog]
        inst = i % n_inst
        mine = caches[inst]
        local = sum(1 for _ in takewhile(mine.__contains__, blocks))
        best = local + sum(1 for _ in takewhile(holders.__contains__, blocks[local:]))
        use_remote = best > local and (local == 0 or best / local > config.balancing_threshold)
        used = best if use_remote else local
        done_transfer = now
        if use_remote:
            per_holder: Counter[int] = Counter()
            for b in blocks[local:used]:
                owners = holders[b]
                h = min(owners, key=lambda k: (send_free[k], k)) if len(owners) > 1 else next(iter(owners))
                per_holder[h] += 1
                caches[h].move_to_end(b)  # the holder's copy was used: refresh it
                if b in hot_blocks:
                    hot_fetched += 1
            for h, count in sorted(per_holder.items()):
                start = max(now, send_free[h]) if config.sender_limited else now
                finish = start + count / rate
                if config.sender_limited:
                    send_free[h] = finish
                sent[h] += count
                done_transfer = max(done_transfer, finish)
        compute = len(blocks) - used
        end = max(now + backlog[inst], done_transfer) + compute
        backlog[inst] = end - now
        ttft[i] = end - now
        wait_transfer[i] = done_transfer - now
        reused[i], fetched[i] = used, used - local
        for b in blocks[:local]:
            mine.move_to_end(b)
        if config.replicate:
            for b in blocks[local:used]:
                insert(inst, b)
        for b in blocks[used:]:
            insert(inst, b)
    blocks_total = int(sum(len(b) for b in workload.request_blocks))
    total_sent = max(1, sum(sent))
    held = sum(len(cache) for cache in caches)
    return {
        "name": config.name, "config": asdict(config),
        "block_hit_rate": float(reused.sum() / blocks_total),
        "local_hit_rate": float((reused - fetched).sum() / blocks_total),
        "remote_blocks_per_request": float(fetched.mean()),
        "remote_fraction_of_hits": float(fetched.sum() / max(1, int(reused.sum()))),
        "hot_fraction_of_remote": hot_fetched / total_sent,
        "busiest_sender_share": max(sent) / total_sent,
        "transfer_wait_mean": float(wait_transfer.mean()),
        "transfer_wait_p99": float(np.percentile(wait_transfer, 99)),
        "ttft_mean": float(ttft.mean()),
        "ttft_p99": float(np.percentile(ttft, 99)),
        "copies_per_block": held / max(1, len(holders)),
    }


def run_hot_blocks(impl: str) -> dict[str, Any]:
    """Experiment part "hot_blocks" (needs no exercise; `impl` is unused)."""
    config = WorkloadConfig()
    workload = generate_workload(np.random.default_rng(WORKLOAD_SEED), config)
    return {"config": asdict(config), "rows": [simulate_hot_blocks(workload, c) for c in HOT_BLOCK_CONFIGS]}


def render_hot_blocks(figures: dict[str, Any]) -> str:
    c = figures["config"]
    lines = [f"{c['num_instances']} instances x {c['instance_capacity_blocks']} blocks (LRU) forming one pool, "
             f"round-robin; a NIC sends {c['transfer_blocks_per_prefill_block']:g} blocks per prefill-block-time; "
             "times in prefill-block-times",
             f"{'configuration':32s} {'hit':>6s} {'local':>6s} {'remote':>7s} {'hot share':>9s} {'busiest':>8s} "
             f"{'fetch wait':>10s} {'fetch wait':>10s} {'TTFT':>7s} {'TTFT':>7s} {'copies':>7s}",
             f"{'':32s} {'rate':>6s} {'hits':>6s} {'blk/req':>7s} {'of remote':>9s} {'sender':>8s} "
             f"{'mean':>10s} {'p99':>10s} {'mean':>7s} {'p99':>7s} {'/block':>7s}"]
    for r in figures["rows"]:
        lines.append(f"{r['name']:32s} {r['block_hit_rate']:6.1%} {r['local_hit_rate']:6.1%} "
                     f"{r['remote_blocks_per_request']:7.2f} {r['hot_fraction_of_remote']:9.1%} "
                     f"{r['busiest_sender_share']:8.1%} {r['transfer_wait_mean']:10.2f} {r['transfer_wait_p99']:10.2f} "
                     f"{r['ttft_mean']:7.1f} {r['ttft_p99']:7.1f} {r['copies_per_block']:7.2f}")
    lines.append("(busiest sender: its share of all blocks sent; remote: blocks fetched per request; "
                 "fetch wait: arrival to the end of a request's fetches)")
    return "\n".join(lines)


def plot_hot_blocks(figures: dict[str, Any], outdir: Path) -> list[Path]:
    plt = plotting.pyplot()

    rows = figures["rows"]
    names = [textwrap.fill(r["name"].replace(",", ""), 14) for r in rows]
    fig, axes = plt.subplots(1, 3, figsize=(13, 3.8))
    for ax, (keys, label) in zip(axes, ((("ttft_mean", "ttft_p99"), "TTFT (prefill-block-times)"),
                                        (("remote_blocks_per_request",), "remote blocks fetched per request"),
                                        (("busiest_sender_share",), "busiest sender's share of traffic"))):
        width = 0.8 / len(keys)
        for j, key in enumerate(keys):
            ax.bar(np.arange(len(rows)) + j * width, [r[key] for r in rows], width=width,
                   label=key.replace("ttft_", "TTFT "))
        ax.set_xticks(np.arange(len(rows)) + 0.4 - width / 2)
        ax.set_xticklabels(names, fontsize=7)
        ax.set_ylabel(label)
        if len(keys) > 1:
            ax.legend(fontsize=8)
    fig.suptitle("Hot blocks in the global pool: sender-side bandwidth and replication", fontsize=10)
    path = plotting.save(fig, outdir, "cache_pool_hot_blocks.png", dpi=110)
    return [path]


# ---------------------------------------------------------------------------------------------
# The experiment part.

WORKLOAD_SEED = 2024_02_01
SWEEP_CAPACITIES = (100, 200, 500, 1000, 2000, 5000)  # blocks, for the 2,000-request sample trace


def run(impl: str) -> dict[str, Any]:
    """Experiment 02 part 1 with the ex03 functions of `impl` (raises MissingExercise for stubs)."""
    effective = exercise_function("ex03", "effective_capacity_blocks", impl)
    duplication = exercise_function("ex03", "duplication_factor", impl)
    dispatch = exercise_function("ex03", "ttft_dispatch", impl)
    config = WorkloadConfig()
    workload = generate_workload(np.random.default_rng(WORKLOAD_SEED), config)
    policies = {name: simulate_cluster(workload, name, ttft_dispatch=dispatch, effective_capacity=effective,
                                       duplication=duplication)
                for name in DISPATCHES}
    local, pooled = policies["local_round_robin"], policies["global_round_robin"]
    per_instance = config.instance_capacity_blocks
    equivalent = hit_equivalent_capacity(workload, local["block_hit_rate"],
                                         (per_instance // 2, per_instance, 2 * per_instance))
    return {
        "config": asdict(config),
        "policies": policies,
        "local_over_global_capacity": local["effective_capacity_blocks"] / pooled["effective_capacity_blocks"],
        "local_hit_equivalent": {**equivalent, "pool_capacity_blocks": per_instance * config.num_instances,
                                 "fraction_of_pool": equivalent["equivalent_capacity_blocks"]
                                 / (per_instance * config.num_instances)},
        "sweep": {"trace": SAMPLE_TRACE.name, **capacity_sweep(read_trace(SAMPLE_TRACE), SWEEP_CAPACITIES)},
    }


def render_sweep(sweep: dict[str, Any]) -> str:
    policies = [p for p in POLICIES if p in sweep]
    head = f"{'capacity (blocks)':>18s}" + "".join(f"  {p.upper() + ' block':>10s}  {p.upper() + ' token':>10s}"
                                                   for p in policies)
    lines = [head]
    for j, cap in enumerate(sweep["capacities_blocks"]):
        lines.append(f"{cap:18d}" + "".join(f"  {sweep[p]['block_hit_rate'][j]:10.1%}  "
                                            f"{sweep[p]['token_hit_rate'][j]:10.1%}" for p in policies))
    inf = sweep["infinite"]
    lines.append(f"{'infinite':>18s}  {inf['block_hit_rate']:10.1%}  {inf['token_hit_rate']:10.1%}")
    return "\n".join(lines)


def render(figures: dict[str, Any]) -> str:
    c = figures["config"]
    lines = [f"{c['num_instances']} prefill instances x {c['instance_capacity_blocks']} blocks (LRU); "
             f"{c['num_requests']:,} requests over {c['num_documents']} documents (Zipf s={c['zipf_s']}); "
             f"work and TTFT in prefill-block-times",
             f"{'policy':26s} {'hit rate':>8s} {'compute':>8s} {'work':>8s} {'requests':>8s} "
             f"{'distinct':>8s} {'copies':>7s} {'copies':>7s} {'remote':>7s} {'TTFT':>6s} {'TTFT':>6s}",
             f"{'':26s} {'(blocks)':>8s} {'saved':>8s} {'max/mean':>8s} {'max/mean':>8s} "
             f"{'blocks':>8s} {'/block':>7s} {'/hot':>7s} {'hits':>7s} {'mean':>6s} {'p99':>6s}"]
    for name, p in figures["policies"].items():
        lines.append(f"{LABELS[name]:26s} {p['block_hit_rate']:8.1%} {p['compute_saved']:8.1%} "
                     f"{p['work_imbalance']:8.2f} {p['request_imbalance']:8.2f} "
                     f"{p['effective_capacity_blocks']:8,.0f} {p['duplication_factor']:7.2f} "
                     f"{p.get('hot_duplication_factor', float('nan')):7.2f} "
                     f"{p['transferred_fraction']:7.1%} {p['ttft_mean_blocks']:6.1f} {p['ttft_p99_blocks']:6.1f}")
    eq = figures["local_hit_equivalent"]
    rates = ", ".join(f"{cap:,} blocks {rate:.1%}" for cap, rate in zip(eq["capacities_blocks"], eq["hit_rates"]))
    lines += [
        f"effective capacity of local + round-robin: one shared cache reaches its hit rate with "
        f"{eq['equivalent_capacity_blocks']:,.0f} blocks = {eq['fraction_of_pool']:.3f} of the "
        f"{eq['pool_capacity_blocks']:,}-block pool (1/{1 / eq['fraction_of_pool']:.1f}; lecture §7 Q3: about 1/8)",
        f"  (one shared cache: {rates}); hot-document blocks are held {figures['policies']['local_round_robin'].get('hot_duplication_factor', float('nan')):.1f} times;",
        f"  distinct blocks held: {figures['local_over_global_capacity']:.3f} of the pool's (cold blocks, used once, "
        "are held once and fill the rest of each cache)",
        "",
        f"hit rate vs capacity on the shipped sample trace ({figures['sweep']['trace']}):",
        render_sweep(figures["sweep"]),
    ]
    return "\n".join(lines)


def plot(figures: dict[str, Any], outdir: Path) -> list[Path]:
    """Hit rate vs capacity (LRU, LFU, infinite) and the policy comparison, as PNGs in `outdir`."""
    plt = plotting.pyplot()
    sweep = figures["sweep"]
    fig, ax = plt.subplots(figsize=(6, 4))
    for policy, marker in zip(POLICIES, "os"):
        ax.plot(sweep["capacities_blocks"], [100 * x for x in sweep[policy]["block_hit_rate"]],
                marker=marker, label=policy.upper())
    ax.axhline(100 * sweep["infinite"]["block_hit_rate"], color="gray", linestyle="--", label="infinite cache")
    ax.set_xscale("log")
    ax.set_xlabel("cache capacity (512-token blocks)")
    ax.set_ylabel("block hit rate (%)")
    ax.set_title(f"Prefix-cache hit rate vs capacity ({sweep['trace']})")
    ax.legend()
    sweep_png = plotting.save(fig, outdir, "cache_pool_hit_rate_vs_capacity.png")

    names = list(figures["policies"])
    fig, axes = plt.subplots(1, 3, figsize=(11, 3.6))
    panels = (("block_hit_rate", "block hit rate (%)", 100.0), ("work_imbalance", "prefill work max/mean (ratio)", 1.0),
              ("effective_capacity_blocks", "distinct blocks held (blocks)", 1.0))
    for ax, (key, label, scale) in zip(axes, panels):
        ax.bar(range(len(names)), [scale * figures["policies"][n][key] for n in names])
        ax.set_xticks(range(len(names)))
        ax.set_xticklabels([SHORT_LABELS[n] for n in names], fontsize=8)
        ax.set_ylabel(label)
    fig.suptitle("Local caches vs the global pool (8 instances, 20,000 requests)")
    policy_png = plotting.save(fig, outdir, "cache_pool_policies.png")
    return [sweep_png, policy_png]


PARTS = [Part(key="cache_pool", title="Global KV cache pool vs local caches", lecture="§2.2-§2.3",
              needs=("ex03",), run=run, render=render, plot=plot),
         Part(key="hot_blocks", title="Hot blocks in the global pool: sender bandwidth and replication",
              lecture="§2.2", needs=(), run=run_hot_blocks, render=render_hot_blocks, plot=plot_hot_blocks)]


# ---------------------------------------------------------------------------------------------
# CLI: trace replay.

def _capacities(text: str) -> list[int]:
    try:
        values = [int(v) for v in text.split(",") if v.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(f"capacities must be comma-separated integers, got {text!r}") from None
    if not values or any(v < 1 for v in values):
        raise argparse.ArgumentTypeError(f"capacities must be integers >= 1 (blocks), got {text!r}")
    return values


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m hetero.kvcache",
                                     description="Replay a Mooncake trace through a prefix KV cache.")
    parser.add_argument("trace", type=Path, help="JSONL trace (timestamp, input_length, output_length, hash_ids)")
    parser.add_argument("--capacities", type=_capacities, default=[1000, 5000, 10000, 20000, 50000],
                        help="cache capacities in 512-token blocks, comma-separated")
    parser.add_argument("--policy", choices=POLICIES, default="lru")
    parser.add_argument("--json", action="store_true", help="print JSON instead of a table")
    args = parser.parse_args(argv)
    try:
        requests = read_trace(args.trace)
    except (TraceError, OSError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    sweep = {"trace": str(args.trace), "requests": len(requests),
             **capacity_sweep(requests, args.capacities, (args.policy,))}
    if args.json:
        print(json.dumps(sweep, indent=2))
    else:
        print(f"{args.trace}: {len(requests):,} requests, policy {args.policy.upper()}")
        print(render_sweep(sweep))
    return 0


if __name__ == "__main__":
    sys.exit(main())
