"""The prefill cluster of experiment 02 part 1 (lecture §2.2-§2.3): instances with local caches or one
global pool, four ways to dispatch, and each instance serving its queue first come, first served.

Dispatches (`DISPATCHES`):
  local_round_robin   each instance caches what it computed; requests go round-robin;
  local_sticky        local caches; every request for a document goes to the same instance;
  global_round_robin  one pool of the same total size that every instance reads (a block held by
                      another instance costs a cross-machine transfer); requests go round-robin;
  global_ttft         the global pool, with each request sent where the student's ex03
                      `ttft_dispatch` estimates the smallest time to first token.
Work and time are in prefill-block-times (the time one instance prefills one block).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from hetero.kvcache.caches import make_cache
from hetero.kvcache.cost import attention_equal_tokens, prefill_cost
from hetero.kvcache.workload import Workload
from hetero.traces import BLOCK_TOKENS

DISPATCHES = ("local_round_robin", "local_sticky", "global_round_robin", "global_ttft")

ClusterFn = Callable[[list[list[int]]], Any]


def simulate_cluster(
    workload: Workload,
    dispatch: str,
    *,
    cache_policy: str = "lru",
    ttft_dispatch: Callable[..., int] | None = None,
    effective_capacity: ClusterFn | None = None,
    duplication: ClusterFn | None = None,
) -> dict[str, Any]:
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
                assert ttft_dispatch is not None  # required for "global_ttft", checked on entry
                inst = ttft_dispatch([local.get(k, 0) for k in range(n_inst)], list(backlog), len(blocks), hit, ratio)
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
            assert effective_capacity is not None  # snapshots are taken only when it is given
            eff_samples.append(float(effective_capacity(held)))
            if duplication is not None:
                dup_samples.append(float(duplication(held)))
                hot = [[b for b in blocks_held if b in workload.hot_blocks] for blocks_held in held]
                if any(hot):
                    hot_dup_samples.append(float(duplication(hot)))
    blocks_total = int(sum(len(b) for b in workload.request_blocks))
    reused_tokens = np.minimum(reused * BLOCK_TOKENS, workload.tokens)
    eq = attention_equal_tokens()
    saved = 1.0 - float(
        prefill_cost(reused_tokens, workload.tokens, eq).sum()
        / prefill_cost(np.zeros(n, dtype=np.int64), workload.tokens, eq).sum()
    )
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


def hit_equivalent_capacity(
    workload: Workload, hit_rate: float, capacities: Sequence[int], cache_policy: str = "lru"
) -> dict[str, Any]:
    """The capacity (blocks) one shared cache needs to reach `hit_rate` on this workload.

    Measured at `capacities` (ascending) and interpolated linearly in log(capacity); a rate outside
    the measured range is clamped to the nearest end (`bracketed` says whether it was inside).
    """
    rates = [single_cache_hit_rate(workload, int(c), cache_policy) for c in capacities]
    log_caps = np.log(np.asarray(capacities, dtype=np.float64))
    equivalent = float(np.exp(np.interp(hit_rate, rates, log_caps)))
    return {
        "capacities_blocks": [int(c) for c in capacities],
        "hit_rates": rates,
        "equivalent_capacity_blocks": equivalent,
        "bracketed": bool(rates[0] <= hit_rate <= rates[-1]),
    }
