"""Grading glue of ex03 (§2.2-§2.3): the global-pool simulator driven by a student's ex03 module, and
random cache contents as inputs."""

from __future__ import annotations

from typing import Any

import numpy as np

from hetero.kvcache.cluster import simulate_cluster
from hetero.kvcache.workload import WorkloadConfig, generate_workload

__all__ = ["dispatch", "capacity", "cluster"]


def _small_config(
    num_requests: int,
    num_documents: int,
    num_instances: int,
    instance_capacity_blocks: int,
    zipf_s: float,
    load: float,
    transfer_blocks_per_prefill_block: float,
) -> WorkloadConfig:
    return WorkloadConfig(
        num_instances=num_instances,
        num_requests=num_requests,
        num_documents=num_documents,
        zipf_s=zipf_s,
        instance_capacity_blocks=instance_capacity_blocks,
        load=load,
        transfer_blocks_per_prefill_block=transfer_blocks_per_prefill_block,
    )


def dispatch(
    module: Any,
    seed: int,
    num_requests: int = 2000,
    num_documents: int = 60,
    num_instances: int = 4,
    instance_capacity_blocks: int = 150,
    zipf_s: float = 1.0,
    load: float = 0.9,
    transfer_blocks_per_prefill_block: float = 4.0,
) -> dict[str, Any]:
    """A small global-pool workload dispatched by `module.ttft_dispatch`: hit rate, imbalance, TTFT, choices."""
    config = _small_config(
        num_requests,
        num_documents,
        num_instances,
        instance_capacity_blocks,
        zipf_s,
        load,
        transfer_blocks_per_prefill_block,
    )
    workload = generate_workload(np.random.default_rng(seed), config)
    result = simulate_cluster(workload, "global_ttft", ttft_dispatch=module.ttft_dispatch)
    keys = ("block_hit_rate", "transferred_fraction", "work_imbalance", "ttft_mean_blocks", "requests_per_instance")
    return {k: result[k] for k in keys}


def capacity(
    module: Any,
    seed: int,
    dispatch: str = "local_round_robin",
    num_requests: int = 2000,
    num_documents: int = 60,
    num_instances: int = 4,
    instance_capacity_blocks: int = 150,
    zipf_s: float = 1.0,
) -> dict[str, float]:
    """A small workload's cache contents measured by the module's effective_capacity_blocks / duplication_factor."""
    config = _small_config(num_requests, num_documents, num_instances, instance_capacity_blocks, zipf_s, 0.9, 4.0)
    workload = generate_workload(np.random.default_rng(seed), config)
    result = simulate_cluster(
        workload, dispatch, effective_capacity=module.effective_capacity_blocks, duplication=module.duplication_factor
    )
    return {k: result[k] for k in ("effective_capacity_blocks", "capacity_fraction", "duplication_factor")}


def cluster(seed: int, num_instances: int, max_blocks: int, id_range: int, empty_instances: int = 0) -> list[list[int]]:
    """Random cache contents: per instance up to `max_blocks` distinct ids from [0, id_range);
    the first `empty_instances` instances hold nothing. Ids repeat across instances (duplication)."""
    rng = np.random.default_rng(seed)
    contents = []
    for i in range(num_instances):
        size = 0 if i < empty_instances else int(rng.integers(1, min(max_blocks, id_range) + 1))
        contents.append(sorted(int(b) for b in rng.choice(id_range, size=size, replace=False)))
    return contents
