"""Mooncake's KV cache pool (lecture §2.2-§2.3): a block-level prefix cache, the local-vs-global
experiment of script 02 part 1, hot blocks in the pool, and trace replay.

One job per module, in the order they build on each other:
  caches      LRU, LFU and infinite prefix caches (`make_cache`), Mooncake's prefix-reuse semantics
  replay      a trace through one cache per capacity; the hit-rate-vs-capacity sweep and its table;
              how unevenly its blocks are used
  workload    the document workload of experiment 02 part 1 (Zipf popularity, Poisson arrivals)
  cost        prefill FLOPs of a prompt with a reused prefix
  cluster     local caches or one global pool under four dispatches (`simulate_cluster`)
  hotblocks   the global pool with sender-side bandwidth, replication and a balancing threshold
  experiment  the lecture parts "cache_pool" and "hot_blocks" (`PARTS`: run, render, plot)
  cli         `python -m hetero.kvcache TRACE.jsonl --capacities ... [--policy lru|lfu] [--json]`

This package re-exports the names other code uses (`from hetero import kvcache; kvcache.X`).
"""

from hetero.kvcache.caches import POLICIES, LRUCache, make_cache
from hetero.kvcache.cli import main
from hetero.kvcache.cluster import DISPATCHES, simulate_cluster
from hetero.kvcache.experiment import PARTS, plot, render, render_hot_blocks, run
from hetero.kvcache.hotblocks import HOT_BLOCK_CONFIGS, HotBlockConfig, simulate_hot_blocks
from hetero.kvcache.replay import block_popularity, capacity_sweep, replay_trace
from hetero.kvcache.workload import Workload, WorkloadConfig, generate_workload

__all__ = [
    "DISPATCHES",
    "HOT_BLOCK_CONFIGS",
    "PARTS",
    "POLICIES",
    "HotBlockConfig",
    "LRUCache",
    "Workload",
    "WorkloadConfig",
    "block_popularity",
    "capacity_sweep",
    "generate_workload",
    "main",
    "make_cache",
    "plot",
    "render",
    "render_hot_blocks",
    "replay_trace",
    "run",
    "simulate_cluster",
    "simulate_hot_blocks",
]
