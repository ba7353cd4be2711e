"""Hot blocks in the global pool (lecture §2.2: hot blocks must be replicated to avoid transfer
congestion; Mooncake §6.2: hot-spot migration with a KV-cache balancing threshold): a pool whose
blocks may be held by several instances, with sender-side NIC bandwidth, replication and the threshold.
"""

from __future__ import annotations

import math
from collections import Counter, OrderedDict
from dataclasses import asdict, dataclass
from itertools import takewhile
from typing import Any

import numpy as np

from hetero.kvcache.workload import Workload


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


# Fixed before the first run: the pool as `hetero.kvcache.cluster` models it (no sender limit, no
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
        "name": config.name,
        "config": asdict(config),
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
