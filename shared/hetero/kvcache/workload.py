"""The document workload of experiment 02 part 1: requests over long documents with Zipf popularity,
each a document's blocks followed by a short question, arriving as a Poisson process.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from hetero.traces import BLOCK_TOKENS


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
    for d, nq in zip(documents.tolist(), q_blocks.tolist(), strict=True):
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
